// Writes a sample run's report.json and report.html into DIR, for looking at
// the pictures in a browser (report_browser_check.py screenshots it): a
// sweep of four learning rates that evaluate, a sweep of six seeds (fifteen
// tasks in all, so the palette comes round with dashes), tasks alone, a task
// on GPUs 0, 1 and 7 of a node, one that failed and one cancelled before it
// started, and current practice's plan beneath. The vit sweep's names are
// long (the legend wraps them whole), its tasks and mlp carry their
// hyper-parameters, every task its disk use, and the tasks trained about
// 2.6x slower than profiled (the report warns).
//
// With --groups N, a run of a table's N groups instead (docs/groups.md),
// each trained alone one after another on a node of two GPUs, as `saturn
// run --no-pack` trains them: Zipf-sized groups (the largest 60,000
// training rows, most a few dozen), held-out losses spread over about four
// decades, every 53rd group failed and every 211th cancelled before it
// started (no held-out loss), one that diverged (an infinite held-out
// loss), and beside the table one pooled model of all the rows.
//
//   report_sample DIR [--groups N]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "report/run_report.h"

namespace saturn {
namespace {

PlanTask Placed(const std::string& task, const std::string& technique, const std::string& node,
                std::vector<int> ids, double start, double end) {
  PlanTask t;
  t.task = task;
  t.technique = technique;
  t.gpus = static_cast<int>(ids.size());
  t.node = node;
  t.gpu_ids = std::move(ids);
  t.start_s = start;
  t.end_s = end;
  return t;
}

Event At(double t, EventKind kind, const PlanTask& where) {
  Event e;
  e.t = t;
  e.kind = kind;
  e.task = where.task;
  e.technique = where.technique;
  e.gpus = where.gpus;
  e.node = where.node;
  e.gpu_ids = where.gpu_ids;
  return e;
}

// A plausible loss curve: from `start` down towards `floor`.
std::vector<std::pair<long, double>> Curve(double start, double floor, long steps, double rate) {
  std::vector<std::pair<long, double>> points;
  for (long s = 0; s <= steps; s += steps / 50) {
    double x = static_cast<double>(s) / static_cast<double>(steps);
    points.push_back({s, floor + (start - floor) * std::exp(-rate * x) + 0.03 * std::sin(s * 0.7)});
  }
  return points;
}

RunReportInput Sample(const std::string& dir) {
  RunReportInput in;
  in.workload = "sweeps.yaml";
  in.run_dir = dir;
  in.cluster.nodes.resize(2);
  in.cluster.nodes[0].name = "node0";
  in.cluster.nodes[0].gpus = 8;
  in.cluster.nodes[1].name = "node1";
  in.cluster.nodes[1].gpus = 4;
  in.first_plan.solver = "auto";
  in.first_plan.status = "time_limit";
  struct Spec {
    const char* name;
    const char* sweep;
    PlanTask place;
    double start_loss, floor, rate;
  };
  const std::vector<Spec> specs = {
      {"gpt-lr1e-3", "gpt", Placed("gpt-lr1e-3", "fsdp", "node0", {0, 1, 7}, 0, 5400), 7, 3.1, 3},
      {"gpt-lr3e-3", "gpt", Placed("gpt-lr3e-3", "ddp", "node0", {2, 3}, 0, 4200), 7, 2.8, 4},
      {"gpt-lr1e-2", "gpt", Placed("gpt-lr1e-2", "ddp", "node0", {4, 5}, 0, 4300), 7, 3.4, 6},
      {"gpt-lr3.0e-3", "gpt", Placed("gpt-lr3.0e-3", "single", "node0", {6}, 0, 6100), 7, 2.9, 4},
      {"mlp", "", Placed("mlp", "single", "node1", {0}, 0, 900), 2.3, 0.4, 5},
      {"vit-base-patch16-lr3.0e-3-rank16", "vit",
       Placed("vit-base-patch16-lr3.0e-3-rank16", "ddp", "node1", {1, 2}, 0, 3000), 4.6, 1.2, 3},
      {"vit-base-patch16-lr1.0e-3-rank16", "vit",
       Placed("vit-base-patch16-lr1.0e-3-rank16", "ddp", "node1", {1, 2}, 3000, 6000), 4.6, 1.0, 4},
      {"resnet", "", Placed("resnet", "single", "node1", {3}, 0, 2500), 6.9, 1.6, 2},
  };
  for (const Spec& s : specs) {
    RunReportTask t;
    t.name = s.name;
    t.sweep = s.sweep;
    t.status = TaskStatus::kFinished;
    t.technique = s.place.technique;
    t.gpus = s.place.gpus;
    t.node = s.place.node;
    t.start_s = s.place.start_s;
    t.end_s = s.place.end_s * 1.04;
    t.steps = t.steps_done = 1000;
    t.losses = Curve(s.start_loss, s.floor, 1000, s.rate);
    t.final_loss = t.losses.back().second;
    t.attempts = 1;
    t.disk_bytes = 4404019LL * static_cast<long long>(in.tasks.size() + 1);
    // Profiled 2.6x faster than it trained.
    t.profiled = {{t.technique, t.gpus, t.node, (t.end_s - t.start_s) / 1000 / 2.6}};
    if (std::string(s.sweep) == "vit") {
      const double lr = t.name.find("lr3.0e-3") != std::string::npos ? 3e-3 : 1e-3;
      t.hyperparameters = {{"optimizer.lr", lr}, {"finetune.lora.rank", 16}};
    }
    if (t.name == "mlp") t.settings = {{"optimizer", {{"type", "adamw"}, {"lr", 0.01}}}};
    in.tasks.push_back(t);
    in.first_plan.tasks.push_back(s.place);
    Event started = At(s.place.start_s, EventKind::kTaskStarted, s.place);
    started.extra = {{"step", 0}};
    in.events.push_back(started);
    Event finished = At(t.end_s, EventKind::kTaskFinished, s.place);
    finished.extra = {{"steps", 1000}};
    in.events.push_back(finished);
    if (std::string(s.sweep) == "gpt" || std::string(s.sweep) == "vit") {
      for (long step = 200; step <= 1000; step += 200) {
        Event e = At(t.end_s * step / 1000, EventKind::kTaskEvaluated, s.place);
        e.extra = {{"step", step},
                   {"eval_loss",
                    s.floor + 0.25 + (s.start_loss - s.floor) * std::exp(-s.rate * step / 1000.0)}};
        in.events.push_back(e);
      }
    }
  }
  for (int seed = 0; seed < 6; ++seed) {  // tasks 9-14: the palette comes round
    PlanTask place = Placed("bert-seed" + std::to_string(seed), "single", "node1", {seed % 4},
                            6300 + 800 * (seed / 4), 7100 + 800 * (seed / 4));
    RunReportTask t;
    t.name = place.task;
    t.sweep = "bert";
    t.status = seed == 5 ? TaskStatus::kFailed : TaskStatus::kFinished;
    t.technique = place.technique;
    t.gpus = 1;
    t.node = place.node;
    t.start_s = place.start_s;
    t.end_s = place.end_s;
    t.steps = 1000;
    t.steps_done = seed == 5 ? 400 : 1000;
    t.losses = Curve(3.2 + 0.1 * seed, 1.1 + 0.05 * seed, t.steps_done, 3);
    t.final_loss = t.losses.back().second;
    t.attempts = seed == 5 ? 3 : 1;
    t.failures = seed == 5 ? 3 : 0;
    if (seed == 5) t.error = "worker exited with signal 9 (host out of memory)";
    in.tasks.push_back(t);
    in.first_plan.tasks.push_back(place);
    in.events.push_back(At(place.start_s, EventKind::kTaskStarted, place));
    in.events.push_back(
        At(t.end_s, seed == 5 ? EventKind::kTaskFailed : EventKind::kTaskFinished, place));
  }
  RunReportTask late;  // cancelled before it started: the plan had placed it
  late.name = "late-arrival";
  late.status = TaskStatus::kCancelled;
  late.technique = "ddp";
  late.gpus = 2;
  late.node = "node0";
  late.steps = 500;
  in.tasks.push_back(late);
  in.first_plan.makespan_s = 7900;
  in.first_plan.lower_bound_s = 7400;
  in.makespan_s = 8100;
  in.profiling_s = 140;
  in.planning_s = 30;
  Plan practice = in.first_plan;
  practice.solver = "current-practice";
  double t = 0;
  for (PlanTask& p : practice.tasks) {
    p.node = "node0";
    p.gpu_ids = {0, 1, 2, 3, 4, 5, 6, 7};
    p.gpus = 8;
    p.start_s = t;
    p.end_s = t += 1500;
  }
  practice.makespan_s = t;
  in.first_plan.extra["baselines"] = {
      {"current-practice", {{"makespan_s", t}, {"plan", PlanToJson(practice)}}}};
  return in;
}

// A deterministic generator (a 64-bit LCG): uniform in (0, 1).
struct Draws {
  unsigned long long state;
  double Uniform() {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (static_cast<double>(state >> 11) + 0.5) / 9007199254740992.0;
  }
  double Normal() {  // Box-Muller
    return std::sqrt(-2 * std::log(Uniform())) * std::cos(6.283185307179586 * Uniform());
  }
};

// One task trained alone on `gpu` of node0 from `start` for `wall` seconds:
// its plan entry (planned 10% shorter), its events and its report row.
struct Trained {
  RunReportTask task;
  PlanTask place;
};

Trained TrainAlone(const std::string& name, int gpu, double start, double wall, long steps,
                   double loss, std::vector<Event>& events) {
  Trained out;
  out.place = Placed(name, "single", "node0", {gpu}, start, start + wall / 1.1);
  RunReportTask& t = out.task;
  t.name = name;
  t.status = TaskStatus::kFinished;
  t.technique = "single";
  t.gpus = 1;
  t.node = "node0";
  t.gpu_ids = {gpu};
  t.start_s = start;
  t.end_s = start + wall;
  t.steps = t.steps_done = steps;
  t.losses = {{0, loss * 6}, {steps / 4, loss * 2}, {steps / 2, loss * 1.3}, {steps, loss}};
  t.final_loss = loss;
  t.attempts = 1;
  t.profiled = {{"single", 1, "node0", wall / 1.1 / static_cast<double>(steps), 0.0}};
  Event started = At(start, EventKind::kTaskStarted, out.place);
  started.extra = {{"step", 0}};
  events.push_back(started);
  Event finished = At(t.end_s, EventKind::kTaskFinished, out.place);
  finished.extra = {{"steps", steps}};
  events.push_back(finished);
  return out;
}

RunReportInput GroupsSample(const std::string& dir, long n) {
  RunReportInput in;
  in.workload = "stores.yaml";
  in.run_dir = dir;
  in.cluster.nodes.resize(1);
  in.cluster.nodes[0].name = "node0";
  in.cluster.nodes[0].gpus = 2;
  in.first_plan.solver = "auto";
  in.first_plan.status = "time_limit";
  Draws draw{45};
  // Zipf ranks in a shuffled order, so that no column comes sorted.
  std::vector<long> rank(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i)
    rank[static_cast<size_t>(i)] = i + 1;
  for (long i = n - 1; i > 0; --i)
    std::swap(rank[static_cast<size_t>(i)],
              rank[static_cast<size_t>(draw.Uniform() * static_cast<double>(i + 1))]);
  double free_at[2] = {0, 0};
  Trained pooled = TrainAlone("pooled", 0, 0, 900, 25000, 0.31, in.events);
  free_at[0] = pooled.task.end_s;
  in.tasks.push_back(pooled.task);
  in.first_plan.tasks.push_back(pooled.place);
  for (long i = 0; i < n; ++i) {
    char group[32];
    std::snprintf(group, sizeof group, "store-%05ld", i + 1);
    const long rows =
        std::max(8L, std::lround(60000 / std::pow(rank[static_cast<size_t>(i)], 0.85)));
    const long steps = 5 * ((rows + 63) / 64);
    const double loss = std::pow(10.0, -1.2 + 0.65 * draw.Normal());
    const int gpu = free_at[0] <= free_at[1] ? 0 : 1;
    Trained g = TrainAlone(std::string("stores-") + group, gpu, free_at[gpu],
                           1.2 + 0.004 * static_cast<double>(steps), steps, loss * 0.9, in.events);
    g.task.group = group;
    g.task.sweep = std::string("stores@") + group;
    g.task.train_rows = rows;
    in.first_plan.tasks.push_back(g.place);
    if (i % 211 == 210) {  // cancelled before it started: no events, no place
      in.events.resize(in.events.size() - 2);
      g.task.status = TaskStatus::kCancelled;
      g.task.attempts = 0;
      g.task.steps_done = 0;
      g.task.start_s = g.task.end_s = -1;
      g.task.losses.clear();
      in.tasks.push_back(g.task);
      continue;
    }
    free_at[gpu] = g.task.end_s;
    if (i % 53 == 52) {  // failed halfway: no held-out loss
      g.task.status = TaskStatus::kFailed;
      g.task.steps_done = steps / 2;
      g.task.losses.resize(3);
      g.task.failures = g.task.attempts = 3;
      g.task.error = "worker exited with signal 9 (host out of memory)";
      in.events.back().kind = EventKind::kTaskFailed;
      in.tasks.push_back(g.task);
      continue;
    }
    Event held_out = At(g.task.end_s, EventKind::kTaskEvaluated, g.place);
    held_out.extra = {{"step", steps}, {"eval_loss", i == 7 ? INFINITY : loss}};
    in.events.push_back(held_out);
    in.tasks.push_back(g.task);
  }
  std::stable_sort(in.events.begin(), in.events.end(),
                   [](const Event& a, const Event& b) { return a.t < b.t; });
  in.makespan_s = std::max(free_at[0], free_at[1]);
  in.first_plan.makespan_s = in.makespan_s / 1.1;
  in.first_plan.lower_bound_s = in.first_plan.makespan_s * 0.97;
  in.profiling_s = 40;
  in.planning_s = 6;
  // Current practice: each task alone on both GPUs, one after another.
  Plan practice = in.first_plan;
  practice.solver = "current-practice";
  double t = 0;
  for (PlanTask& p : practice.tasks) {
    p.gpu_ids = {0, 1};
    p.gpus = 2;
    p.end_s = t + (p.end_s - p.start_s) * 0.8;
    p.start_s = t;
    t = p.end_s;
  }
  practice.makespan_s = t;
  in.first_plan.extra["baselines"] = {
      {"current-practice", {{"makespan_s", t}, {"plan", PlanToJson(practice)}}}};
  return in;
}
}  // namespace
}  // namespace saturn

int main(int argc, char** argv) {
  const bool groups = argc == 4 && std::string(argv[2]) == "--groups";
  if (argc != 2 && !groups) {
    std::fprintf(stderr, "usage: report_sample DIR [--groups N]\n");
    return 2;
  }
  const long n = groups ? std::atol(argv[3]) : 0;
  if (groups && n < 1) {
    std::fprintf(stderr, "report_sample: --groups wants a number of groups from 1\n");
    return 2;
  }
  std::filesystem::create_directories(argv[1]);
  saturn::WriteRunReport(groups ? saturn::GroupsSample(argv[1], n) : saturn::Sample(argv[1]));
  std::printf("%s/report.html\n", argv[1]);
  return 0;
}
