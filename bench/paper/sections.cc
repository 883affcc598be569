#include "bench/paper/sections.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <stdexcept>

#include "bench/common/arrivals.h"
#include "bench/common/gavel_types.h"
#include "bench/paper/charts.h"
#include "bench/paper/table.h"
#include "common/fs.h"
#include "planner/flow_milp.h"
#include "planner/planner.h"

namespace saturn::bench {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double Mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v)
    sum += x;
  return v.empty() ? kNaN : sum / v.size();
}

std::string Hours(double seconds) {
  return Fmt("%.2f", seconds / 3600);
}
std::string Ratio(double r) {
  return std::isnan(r) ? "-" : Fmt("%.3f", r);
}
std::string Times(double r) {
  return std::isnan(r) ? "-" : Fmt("%.2fx", r);
}

void Heading(Report& report, const std::string& title, const std::string& intro) {
  std::printf("\n== %s ==\n%s\n", title.c_str(), intro.c_str());
  report.markdown += "\n## " + title + "\n\n" + intro + "\n\n";
}

void Emit(Report& report, const Table& table) {
  std::printf("%s", table.Text().c_str());
  std::fflush(stdout);
  report.markdown += table.Markdown() + "\n";
}

std::vector<std::pair<double, double>> InHours(std::vector<std::pair<double, double>> points) {
  for (auto& p : points)
    p.first /= 3600;
  return points;
}

// auto with introspection at the harness's interval and threshold,
// against seed's truth.
RunSpec AutoWithIntrospection(const Config& cfg, uint64_t seed) {
  return {.solver = "auto",
          .introspection = true,
          .interval_s = cfg.interval_s,
          .threshold_s = cfg.threshold_s,
          .seed = seed};
}

void Log(const std::string& line) {
  std::fprintf(stderr, "  .. %s\n", line.c_str());
}

struct Shape {
  std::string label;
  std::vector<int> nodes;
};

// One node, four nodes and the heterogeneous cluster; quick mode: one node.
std::vector<Shape> Shapes(const Config& cfg) {
  std::vector<Shape> shapes = {{"1x8", {8}}, {"4x8", {8, 8, 8, 8}}, {"2+2+4+8", {2, 2, 4, 8}}};
  if (cfg.quick()) shapes.resize(1);
  return shapes;
}

const std::vector<GavelJob>& GavelJobs() {
  static const std::vector<GavelJob> jobs =
      LoadGavelThroughputs(SourceDir() + "/bench/data/gavel_v100.csv");
  return jobs;
}

std::vector<Prepared> SaturnInstances(const Lab& lab) {
  std::vector<Prepared> out;
  for (Workload w : {Workload::kText, Workload::kImage}) {
    for (const Shape& s : Shapes(lab.config())) {
      out.push_back(lab.Prepare((w == Workload::kText ? "txt-" : "img-") + s.label,
                                SaturnLikeInstance(w, s.nodes, 1)));
    }
  }
  return out;
}

// Gavel-derived tasks at the planner benchmark's density, 12 per 8 GPUs, on
// each cluster shape (GavelInstance builds equal nodes; the heterogeneous one
// gets its sizes afterwards, every row fitting its 8-GPU node).
std::vector<Prepared> GavelInstances(const Lab& lab) {
  std::vector<Prepared> out;
  for (const Shape& s : Shapes(lab.config())) {
    int gpus = 0;
    for (int g : s.nodes)
      gpus += g;
    int tasks = 12 * gpus / 8;
    Instance inst = GavelInstance(GavelJobs(), tasks, static_cast<int>(s.nodes.size()), 8, 1);
    for (size_t n = 0; n < s.nodes.size(); ++n)
      inst.cluster.nodes[n].gpus = s.nodes[n];
    out.push_back(lab.Prepare("gavel" + std::to_string(tasks) + "-" + s.label, std::move(inst)));
  }
  return out;
}

// The paper's formulation has about 2 x configurations x GPUs x tasks^2
// constraints (its own size estimate); beyond a few million CBC cannot even
// build it here. The resource-flow model has its own size estimate.
bool TooLarge(const std::string& solver, const Problem& p) {
  if (solver == "saturn-milp") {
    double options = 0;
    for (const Task& t : p.tasks)
      options += static_cast<double>(t.options.size());
    double per_task = options / std::max(1, p.NumTasks());
    return 2.0 * per_task * p.TotalGpus() * p.NumTasks() * p.NumTasks() > 3e6;
  }
  if (solver == "milp") return FlowMilpSize(p) > 300'000;
  return false;
}

struct Planned {
  bool ok = false;
  double makespan_s = 0, solve_s = 0;
  std::string status;  // the plan's status, or how the solve died
};

// Plans in a forked child: CBC 2.10 sometimes crashes when its time limit
// strikes (see bench/paper/README.md), and a crash should cost one table
// cell, not the whole run.
Planned PlanInChild(const Problem& problem, const PlanRequest& request) {
  Planned out;
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::fflush(stdout);
  std::fflush(stderr);
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    PlanResult r = RunPlanner(problem, request);
    std::string line =
        Fmt("%.17g %.17g %s", r.plan.makespan_s, r.plan.solve_time_s, r.plan.status.c_str());
    ssize_t written = write(fds[1], line.data(), line.size());
    _exit(written == static_cast<ssize_t>(line.size()) ? 0 : 1);
  }
  close(fds[1]);
  std::string text;
  char buf[256];
  for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<size_t>(got));
  close(fds[0]);
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  char status[64] = "";
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0 &&
      std::sscanf(text.c_str(), "%lf %lf %63s", &out.makespan_s, &out.solve_s, status) == 3) {
    out.ok = true;
    out.status = status;
  } else if (WIFSIGNALED(wstatus)) {
    out.status = Fmt("crashed (signal %d)", WTERMSIG(wstatus));
  } else {
    out.status = "failed";
  }
  return out;
}

std::vector<uint64_t> Seeds(int count) {
  std::vector<uint64_t> seeds;
  for (int s = 1; s <= count; ++s)
    seeds.push_back(static_cast<uint64_t>(s));
  return seeds;
}

const std::vector<std::string>& Solvers() {
  static const std::vector<std::string> solvers = {
      "auto", "milp", "saturn-milp", "current-practice", "max", "min", "random", "optimus"};
  return solvers;
}

}  // namespace

void Report::Chart(const Config& config, const std::string& file, const std::string& svg) {
  WriteFileAtomic(config.out_dir + "/" + file, svg);
  charts.push_back(file);
}

void Fig5Section(Lab& lab, Report& report) {
  const Config& cfg = lab.config();
  Heading(report, "Fig. 5: plan quality of every solver",
          Fmt("Planned makespan of each solver (time limit %g s, seed 1) on the Saturn-like "
              "and Gavel-derived instances, as a multiple of the lower bound, and auto's "
              "speed-up over each (its makespan / auto's). No estimation noise here.",
              cfg.solve_limit_s));
  std::vector<Prepared> instances = SaturnInstances(lab);
  for (Prepared& g : GavelInstances(lab))
    instances.push_back(std::move(g));

  std::vector<std::string> header = {"instance", "bound h"};
  for (const std::string& s : Solvers())
    header.push_back(s);
  Table bound(header);
  header = {"instance", "auto h"};
  for (size_t i = 1; i < Solvers().size(); ++i)
    header.push_back("vs " + Solvers()[i]);
  Table speedup(header);
  BarChart bound_chart{.title = "Makespan / lower bound per solver",
                       .subtitle = "planned, no noise; lower is better; missing bar: skipped",
                       .y_label = "makespan / lower bound"};
  BarChart speed_chart{.title = "auto's speed-up over each solver",
                       .subtitle = "solver's planned makespan / auto's; above 1: auto is faster",
                       .y_label = "speed-up of auto"};
  for (const std::string& s : Solvers()) {
    bound_chart.series.push_back({s, {}});
    if (s != "auto") speed_chart.series.push_back({s, {}});
  }
  speed_chart.reference = 1.0;
  bound_chart.reference = 1.0;

  for (const Prepared& b : instances) {
    Table detail({"solver", "makespan h", "/bound", "auto speed-up", "solve s", "status"});
    std::map<std::string, double> makespan;
    std::map<std::string, std::vector<std::string>> cells;
    for (const std::string& solver : Solvers()) {
      if (TooLarge(solver, b.problem)) {
        makespan[solver] = kNaN;
        cells[solver] = {solver, "-", "-", "-", "-", "skipped: model too large for CBC here"};
        continue;
      }
      PlanRequest request;
      request.solver = solver;
      request.time_limit_s = cfg.solve_limit_s;
      request.seed = 1;
      Planned r = PlanInChild(b.problem, request);
      if (!r.ok) {
        makespan[solver] = kNaN;
        cells[solver] = {solver, "-", "-", "-", "-", r.status};
        continue;
      }
      makespan[solver] = r.makespan_s;
      cells[solver] = {solver, Hours(r.makespan_s),    Ratio(r.makespan_s / b.lower_bound),
                       "",     Fmt("%.2f", r.solve_s), r.status};
    }
    const double base = makespan["auto"];
    std::vector<std::string> bound_row = {b.label, Hours(b.lower_bound)};
    std::vector<std::string> speed_row = {b.label, Hours(base)};
    for (size_t i = 0; i < Solvers().size(); ++i) {
      const std::string& solver = Solvers()[i];
      double m = makespan[solver];
      if (!std::isnan(m)) cells[solver][3] = Times(m / base);
      detail.Add(cells[solver]);
      bound_row.push_back(Ratio(m / b.lower_bound));
      bound_chart.series[i].values.push_back(m / b.lower_bound);
      if (i > 0) {
        speed_row.push_back(Times(m / base));
        speed_chart.series[i - 1].values.push_back(m / base);
      }
    }
    bound.Add(bound_row);
    speedup.Add(speed_row);
    bound_chart.groups.push_back(b.label);
    speed_chart.groups.push_back(b.label);
    std::printf("\n%s: %d tasks on %d GPUs, lower bound %s h\n%s", b.label.c_str(),
                b.problem.NumTasks(), b.problem.TotalGpus(), Hours(b.lower_bound).c_str(),
                detail.Text().c_str());
    std::fflush(stdout);
  }
  std::printf("\nmakespan / lower bound:\n");
  Emit(report, bound);
  std::printf("auto's speed-up over each solver:\n");
  Emit(report, speedup);
  report.Chart(cfg, "fig5_bound.svg", RenderBarChart(bound_chart));
  report.Chart(cfg, "fig5_speedup.svg", RenderBarChart(speed_chart));
}

void NoiseSection(Lab& lab, Report& report) {
  const Config& cfg = lab.config();
  Heading(report, "Estimation noise: introspection against the clairvoyant plan",
          Fmt("Every task's true runtime is its profiled one x U(%.1f, %.1f) (one factor per "
              "task, %d seeds). Clairvoyant: auto planned with the truth as its profile (planned "
              "makespan). auto+intro: auto planned on the profile, simulated against the truth "
              "with introspection every %g s, threshold %g s; auto fixed: the same without "
              "introspection. Speed-up e2e: current-practice simulated against the same truth / "
              "auto+intro. Ceiling: current-practice's planned makespan / lower bound, the most "
              "any plan could gain without noise. Ratios are means over seeds of per-seed ratios.",
              1 - cfg.noise, 1 + cfg.noise, cfg.seeds, cfg.interval_s, cfg.threshold_s));
  Table t({"instance", "clairvoyant h", "auto+intro h", "/clairvoyant", "worst seed",
           "auto fixed /clairvoyant", "current-practice h", "speed-up e2e", "ceiling"});
  BarChart vs{.title = "auto under +-30% noise, relative to the clairvoyant plan",
              .subtitle =
                  "simulated makespan / makespan planned knowing the truth; mean over seeds; "
                  "dashed: the 5% target",
              .y_label = "makespan / clairvoyant",
              .groups = {},
              .series = {{"auto + introspection", {}}, {"auto, no introspection", {}}},
              .reference = 1.05};
  BarChart sp{.title = "End-to-end speed-up over current practice (simulated, +-30% noise)",
              .subtitle =
                  "current-practice makespan / auto+introspection makespan; ceiling: "
                  "current practice / lower bound; dashed: the 1.6x target",
              .y_label = "speed-up",
              .groups = {},
              .series = {{"auto + introspection", {}}, {"ceiling (no noise)", {}}},
              .reference = 1.6};
  double worst_mean = 0, worst_run = 0, txt_speedup = kNaN, txt_ceiling = kNaN;
  std::string worst_label;
  std::vector<double> all_ratios;
  for (const Prepared& b : SaturnInstances(lab)) {
    std::vector<double> clair, intro, fixed, cp, r_intro, r_fixed, speed;
    for (uint64_t seed : Seeds(cfg.seeds)) {
      RunSpec spec = AutoWithIntrospection(cfg, seed);
      double c = lab.Clairvoyant(b, seed);
      const RunStats& a = lab.Run(b, spec);
      spec.introspection = false;
      const RunStats& f = lab.Run(b, spec);
      spec.solver = "current-practice";
      const RunStats& p = lab.Run(b, spec);
      clair.push_back(c);
      intro.push_back(a.makespan_s);
      fixed.push_back(f.makespan_s);
      cp.push_back(p.makespan_s);
      r_intro.push_back(a.makespan_s / c);
      r_fixed.push_back(f.makespan_s / c);
      speed.push_back(p.makespan_s / a.makespan_s);
      worst_run = std::max(worst_run, a.makespan_s / c);
      all_ratios.push_back(a.makespan_s / c);
    }
    PlanRequest request;
    request.solver = "current-practice";
    double ceiling = RunPlanner(b.problem, request).plan.makespan_s / b.lower_bound;
    double mean_ratio = Mean(r_intro);
    if (mean_ratio > worst_mean) {
      worst_mean = mean_ratio;
      worst_label = b.label;
    }
    if (b.label == "txt-1x8") {
      txt_speedup = Mean(speed);
      txt_ceiling = ceiling;
    }
    t.Add({b.label, Hours(Mean(clair)), Hours(Mean(intro)), Ratio(mean_ratio),
           Ratio(*std::max_element(r_intro.begin(), r_intro.end())), Ratio(Mean(r_fixed)),
           Hours(Mean(cp)), Times(Mean(speed)), Times(ceiling)});
    vs.groups.push_back(b.label);
    vs.series[0].values.push_back(mean_ratio);
    vs.series[1].values.push_back(Mean(r_fixed));
    sp.groups.push_back(b.label);
    sp.series[0].values.push_back(Mean(speed));
    sp.series[1].values.push_back(ceiling);
    Log(Fmt("noise: %s done (simulator %.0f s so far)", b.label.c_str(), lab.sim_wall_s()));
  }
  Emit(report, t);
  report.Chart(cfg, "noise_vs_clairvoyant.svg", RenderBarChart(vs));
  report.Chart(cfg, "speedup_e2e.svg", RenderBarChart(sp));

  // Utilisation over time of seed 1's runs, one chart per instance.
  for (const Prepared& b : SaturnInstances(lab)) {
    RunSpec spec = AutoWithIntrospection(cfg, 1);
    LineChart u{.title = "GPU utilisation over time, " + b.label + " (seed 1, +-30% noise)",
                .subtitle = "GPUs running a task / all GPUs, averaged over 1/200 of each run",
                .x_label = "simulated time (h)",
                .y_label = "utilisation",
                .series = {{"auto + introspection", InHours(lab.Run(b, spec).utilization)}},
                .y_min = 0,
                .y_max = 1};
    spec.introspection = false;
    spec.solver = "current-practice";
    u.series.push_back({"current-practice", InHours(lab.Run(b, spec).utilization)});
    report.Chart(cfg, "utilization_" + b.label + ".svg", RenderLineChart(u));
  }

  report.targets.push_back(
      {"auto + introspection within 5% of the clairvoyant plan under +-30% noise (Saturn-like)",
       worst_mean <= 1.05,
       Fmt("worst of %zu instances: %s at %+.1f%% (mean of %d seeds); all instances and seeds "
           "%+.1f%%; worst single run %+.1f%%",
           all_ratios.size() / cfg.seeds, worst_label.c_str(), 100 * (worst_mean - 1), cfg.seeds,
           100 * (Mean(all_ratios) - 1), 100 * (worst_run - 1))});
  report.targets.push_back(
      {">= 1.6x faster than current-practice end to end on Saturn-like TXT 1x8 (paper: 1.64x)",
       txt_speedup >= 1.6,
       Fmt("%.2fx (mean over %d seeds); no plan can beat current practice by more than %.2fx on "
           "this instance (its planned makespan / the lower bound)",
           txt_speedup, cfg.seeds, txt_ceiling)});
}

void LadderSection(Lab& lab, Report& report) {
  const Config& cfg = lab.config();
  Heading(
      report, "Table 5: ablation ladder",
      Fmt("Each rung adds one of Saturn's choices; all simulated against the same noisy "
          "truths (+-%.0f%%, %d seeds); rungs 1-4 without introspection, rung 5 with it "
          "(every %g s, threshold %g s); rung 6 adds Megatron-style tensor parallelism (tp) and "
          "its hybrids (tp-ddp, pipeline-tp) to the choices (our runtime model, bench/README.md; "
          "the paper has no such rung). "
          "Speed-up: rung 1's makespan / the rung's (mean of per-seed ratios). The paper's "
          "column is its 1-node TXT ladder.",
          100 * cfg.noise, cfg.seeds, cfg.interval_s, cfg.threshold_s));
  struct Rung {
    std::string name;
    std::string solver;
    Choices choices;
    bool introspection;
    double paper;
    bool tensor_parallel = false;  // on the instance with tp rows (same tasks, same truths)
  };
  const std::vector<Rung> rungs = {
      {"1 fixed allocation + FIFO", "current-practice", Choices::kFsdpWholeNode, false, 1.0},
      {"2 + optimised ordering", "auto", Choices::kFsdpWholeNode, false, 1.1},
      {"3 + allocation", "auto", Choices::kFsdp, false, 1.33},
      {"4 + parallelism selection", "auto", Choices::kAll, false, 1.95},
      {"5 + introspection", "auto", Choices::kAll, true, 2.27},
      {"6 + tensor and hybrid parallelism", "auto", Choices::kAll, true, kNaN, true}};
  std::vector<Prepared> instances;
  for (Prepared& b : SaturnInstances(lab)) {
    if (b.label == "txt-1x8" || b.label == "img-1x8") instances.push_back(std::move(b));
  }
  // Rung 6's instances: the same tasks with tp rows too, run against the
  // same per-task truths (bench/common's runtime model).
  std::vector<Prepared> with_tp;
  for (const Prepared& b : instances) {
    with_tp.push_back(lab.Prepare(
        b.label + "+tp",
        SaturnLikeInstance(b.label.rfind("txt", 0) == 0 ? Workload::kText : Workload::kImage, {8},
                           1, /*tensor_parallel=*/true)));
    with_tp.back().truth_of = b.label;
  }
  std::vector<std::string> header = {"rung"};
  BarChart chart{.title = "Ablation ladder: cumulative speed-up over rung 1",
                 .subtitle = "rung 1: fsdp on a whole node, FIFO; +-30% noise, mean over seeds",
                 .y_label = "speed-up over rung 1"};
  for (const Prepared& b : instances) {
    header.push_back(b.label + " h");
    header.push_back(b.label + " speed-up");
    chart.series.push_back({b.label, {}});
  }
  header.push_back("paper (TXT 1x8)");
  chart.series.push_back({"paper (TXT 1x8)", {}});
  chart.reference = 1.0;
  Table t(header);
  for (const Rung& rung : rungs) {
    std::vector<std::string> row = {rung.name};
    for (size_t i = 0; i < instances.size(); ++i) {
      std::vector<double> makespan, speed;
      for (uint64_t seed : Seeds(cfg.seeds)) {
        RunSpec spec{.solver = rung.solver,
                     .choices = rung.choices,
                     .introspection = rung.introspection,
                     .interval_s = cfg.interval_s,
                     .threshold_s = cfg.threshold_s,
                     .seed = seed};
        double m = lab.Run(rung.tensor_parallel ? with_tp[i] : instances[i], spec).makespan_s;
        spec = {.solver = rungs[0].solver,
                .choices = rungs[0].choices,
                .introspection = false,
                .interval_s = cfg.interval_s,
                .threshold_s = cfg.threshold_s,
                .seed = seed};
        double first = lab.Run(instances[i], spec).makespan_s;
        makespan.push_back(m);
        speed.push_back(first / m);
      }
      row.push_back(Hours(Mean(makespan)));
      row.push_back(Times(Mean(speed)));
      chart.series[i].values.push_back(Mean(speed));
    }
    row.push_back(Times(rung.paper));
    chart.series.back().values.push_back(rung.paper);
    chart.groups.push_back(rung.name);
    t.Add(row);
    Log(Fmt("ladder: %s done (simulator %.0f s so far)", rung.name.c_str(), lab.sim_wall_s()));
  }
  Emit(report, t);
  report.Chart(cfg, "ladder.svg", RenderBarChart(chart));
}

void SensitivitySection(Lab& lab, Report& report) {
  const Config& cfg = lab.config();
  std::vector<double> intervals = {600, 1800, 3600, 7200};
  if (cfg.quick()) intervals.erase(intervals.begin());
  const std::vector<double> thresholds = {0, 500, 2000};
  Heading(report, "Fig. 7: introspection's sensitivity to interval and threshold",
          Fmt("txt-1x8 under +-%.0f%% noise: makespan with introspection / makespan of the "
              "same plan without it (mean of per-seed ratios over %d seeds; below 1: "
              "introspection helps), and the mean number of plan switches.",
              100 * cfg.noise, cfg.sensitivity_seeds));
  Prepared b;
  for (Prepared& p : SaturnInstances(lab)) {
    if (p.label == "txt-1x8") b = std::move(p);
  }
  std::vector<std::string> header = {"interval"};
  LineChart chart{.title = "Introspection sensitivity, txt-1x8",
                  .subtitle = "makespan / makespan without introspection; mean over seeds",
                  .x_label = "introspection interval (simulated seconds)",
                  .y_label = "relative makespan",
                  .markers = true,
                  .reference = 1.0};
  for (double th : thresholds) {
    header.push_back(Fmt("threshold %g s", th));
    chart.series.push_back({Fmt("threshold %g s", th), {}});
  }
  Table t(header);
  for (double interval : intervals) {
    std::vector<std::string> row = {Fmt("%g s", interval)};
    for (size_t k = 0; k < thresholds.size(); ++k) {
      std::vector<double> rel, switches;
      for (uint64_t seed : Seeds(cfg.sensitivity_seeds)) {
        RunSpec spec{.solver = "auto",
                     .introspection = true,
                     .interval_s = interval,
                     .threshold_s = thresholds[k],
                     .seed = seed};
        const RunStats& with = lab.Run(b, spec);
        spec.introspection = false;
        spec.interval_s = cfg.interval_s;
        spec.threshold_s = cfg.threshold_s;
        const RunStats& without = lab.Run(b, spec);
        rel.push_back(with.makespan_s / without.makespan_s);
        switches.push_back(with.switches);
      }
      row.push_back(Fmt("%.3f (%.1f switches)", Mean(rel), Mean(switches)));
      chart.series[k].points.push_back({interval, Mean(rel)});
    }
    t.Add(row);
    Log(Fmt("sensitivity: interval %g s done (simulator %.0f s so far)", interval,
            lab.sim_wall_s()));
  }
  Emit(report, t);
  report.Chart(cfg, "sensitivity.svg", RenderLineChart(chart));
}

void OnlineSection(Lab& lab, Report& report) {
  const Config& cfg = lab.config();
  Heading(
      report, "Online arrivals (Philly-like)",
      Fmt("%d jobs arriving over time (bench/common/arrivals.h: bursty MMPP arrivals, 93%% "
          "one-GPU jobs, lognormal durations, moldable Gavel job types) on %d nodes x 8 GPUs at "
          "offered load %.2f, +-%.0f%% noise, %d seeds (each its own workload and truth). auto: "
          "introspection every %g s, threshold %g s, re-planning on every arrival. "
          "current-practice and optimus: no introspection; on every arrival they re-plan the "
          "waiting jobs with their own rule (running jobs keep their GPUs): current-practice in "
          "arrival order, optimus longest first (its own order). Ratios: the baseline's figure / "
          "auto's, mean over seeds.",
          cfg.online_jobs, cfg.online_nodes, cfg.online_load, 100 * cfg.noise, cfg.seeds,
          cfg.interval_s, cfg.threshold_s));
  struct Who {
    std::string solver;
    bool introspection;
    double threshold_s;
  };
  // A negative threshold that nothing beats: a baseline always takes its own
  // fresh plan on arrival instead of the re-timed old one.
  const std::vector<Who> who = {{"auto", true, cfg.threshold_s},
                                {"current-practice", false, -1e30},
                                {"optimus", false, -1e30}};
  std::vector<std::vector<double>> mean_jct(who.size()), p99(who.size()), makespan(who.size());
  std::vector<std::vector<double>> r_mean(who.size()), r_p99(who.size()), r_makespan(who.size());
  Table shape({"seed", "jobs", "1-GPU share", "median duration s", "arrival window h",
               "busiest hour (jobs)", "mean jobs/hour", "hourly IDC"});
  LineChart util{.title = "GPU utilisation over time, online arrivals (seed 1)",
                 .subtitle = "GPUs running a job / all GPUs, averaged over 1/200 of each run",
                 .x_label = "simulated time (h)",
                 .y_label = "utilisation",
                 .y_min = 0,
                 .y_max = 1};
  for (uint64_t seed : Seeds(cfg.seeds)) {
    ArrivalOptions options{.jobs = cfg.online_jobs,
                           .nodes = cfg.online_nodes,
                           .gpus_per_node = 8,
                           .load = cfg.online_load,
                           .seed = seed};
    Prepared b =
        lab.Prepare("philly-s" + std::to_string(seed), PhillyLikeInstance(GavelJobs(), options));
    b.arrival = ArrivalTimes(b.instance.profile);
    {
      int col_req = b.instance.profile.ExtraColumn("requested_gpus");
      std::map<std::string, std::pair<int, double>> asked;  // task -> (gpus, runtime there)
      for (const ProfileRow& r : b.instance.profile.rows) {
        if (std::to_string(r.gpus) == r.extra[col_req]) asked[r.task] = {r.gpus, r.runtime_s};
      }
      int one = 0;
      std::vector<double> durations;
      for (const auto& [task, a] : asked) {
        one += a.first == 1;
        durations.push_back(a.second);
      }
      std::sort(durations.begin(), durations.end());
      // Burstiness: the index of dispersion of hourly arrival counts (1 for
      // a Poisson process; the Philly trace: 161 over its 109 days).
      double window = *std::max_element(b.arrival.begin(), b.arrival.end());
      std::vector<double> per_hour(static_cast<size_t>(window / 3600) + 1, 0.0);
      for (double a : b.arrival)
        ++per_hour[static_cast<size_t>(a / 3600)];
      double mean = Mean(per_hour), var = 0;
      for (double n : per_hour)
        var += (n - mean) * (n - mean) / per_hour.size();
      shape.Add({std::to_string(seed), std::to_string(b.problem.NumTasks()),
                 Fmt("%.1f%%", 100.0 * one / std::max<size_t>(1, asked.size())),
                 Fmt("%.0f", durations.empty() ? 0.0 : durations[durations.size() / 2]),
                 Hours(window), Fmt("%.0f", *std::max_element(per_hour.begin(), per_hour.end())),
                 Fmt("%.1f", mean), Fmt("%.1f", var / mean)});
    }
    std::vector<const RunStats*> runs;
    for (const Who& w : who) {
      RunSpec spec{.solver = w.solver,
                   .introspection = w.introspection,
                   .interval_s = cfg.interval_s,
                   .threshold_s = w.threshold_s,
                   .seed = seed};
      runs.push_back(&lab.Run(b, spec));
      if (seed == 1) util.series.push_back({w.solver, InHours(runs.back()->utilization)});
    }
    for (size_t i = 0; i < who.size(); ++i) {
      mean_jct[i].push_back(runs[i]->mean_jct_s);
      p99[i].push_back(runs[i]->p99_jct_s);
      makespan[i].push_back(runs[i]->makespan_s);
      r_mean[i].push_back(runs[i]->mean_jct_s / runs[0]->mean_jct_s);
      r_p99[i].push_back(runs[i]->p99_jct_s / runs[0]->p99_jct_s);
      r_makespan[i].push_back(runs[i]->makespan_s / runs[0]->makespan_s);
    }
    Log(Fmt("online: seed %d done (simulator %.0f s so far)", static_cast<int>(seed),
            lab.sim_wall_s()));
  }
  std::printf("workloads drawn:\n");
  Emit(report, shape);
  Table t({"solver", "mean JCT h", "p99 JCT h", "makespan h", "mean JCT / auto", "p99 / auto",
           "makespan / auto"});
  BarChart chart{.title = "Online arrivals: each solver relative to auto",
                 .subtitle = "baseline's figure / auto's, mean over seeds; above 1: auto is better",
                 .y_label = "relative to auto",
                 .groups = {"mean JCT", "p99 JCT", "makespan"},
                 .series = {},
                 .reference = 1.0};
  for (size_t i = 0; i < who.size(); ++i) {
    t.Add({who[i].solver, Hours(Mean(mean_jct[i])), Hours(Mean(p99[i])), Hours(Mean(makespan[i])),
           Ratio(Mean(r_mean[i])), Ratio(Mean(r_p99[i])), Ratio(Mean(r_makespan[i]))});
    chart.series.push_back({who[i].solver, {Mean(r_mean[i]), Mean(r_p99[i]), Mean(r_makespan[i])}});
  }
  Emit(report, t);
  report.Chart(cfg, "online.svg", RenderBarChart(chart));
  report.Chart(cfg, "utilization_online.svg", RenderLineChart(util));
}

}  // namespace saturn::bench

namespace saturn::bench {

// Mixed GPU types: Gavel's jobs with their measured throughputs on K80,
// P100 and V100 nodes (bench/common/gavel_types.h), under the same noise.
// auto re-plans (introspection); Gavel's makespan policy and type-blind
// Saturn run as planned, as current practice does.
void TypesSection(Lab& lab, Report& report) {
  const Config& cfg = lab.config();
  static const TypedThroughputs jobs =
      LoadGavelTypedThroughputs(SourceDir() + "/bench/data/gavel_types.csv");
  struct TypedShape {
    std::string label;
    int nodes_per_type;
    int tasks;
  };
  std::vector<TypedShape> shapes = {{"3x1x4", 1, 30}, {"3x4x4", 4, 120}};
  if (cfg.quick()) shapes.resize(1);
  Heading(report, "Mixed GPU types: against Gavel's policy and type-blind Saturn",
          Fmt("Gavel's jobs (its measured throughputs on K80, P100 and V100 at 1/2/4/8 GPUs, its "
              "job mix and durations) on N nodes of 4 GPUs of each type, every task's truth its "
              "profiled runtime x U(%.1f, %.1f) (%d seeds). auto+intro: introspection every %g "
              "s. gavel: Gavel's heterogeneity-aware makespan policy (an LP over each job's "
              "time on each type, rounded into a schedule); type-blind: Saturn planning as if "
              "every GPU were the median type; both and current practice run as planned. "
              "Ratios: their simulated makespan / auto+intro's, means over seeds.",
              1 - cfg.noise, 1 + cfg.noise, cfg.seeds, cfg.interval_s));
  Table t({"instance", "auto+intro h", "gavel h", "type-blind h", "current-practice h",
           "gavel / auto", "type-blind / auto", "current practice / auto"});
  BarChart chart{.title = "Mixed GPU types: each baseline's makespan over auto's",
                 .subtitle =
                     "simulated under +-30% noise, mean over seeds; above 1: auto "
                     "finishes first; dashed: 1",
                 .y_label = "makespan / auto+introspection",
                 .groups = {},
                 .series = {{"gavel", {}}, {"type-blind", {}}, {"current-practice", {}}},
                 .reference = 1.0};
  double worst_gavel = kNaN, worst_blind = kNaN;
  for (const TypedShape& s : shapes) {
    Prepared b = lab.Prepare(
        "gavel-types-" + s.label,
        GavelTypedInstance(
            jobs, s.tasks,
            {{"k80", s.nodes_per_type}, {"p100", s.nodes_per_type}, {"v100", s.nodes_per_type}}, 4,
            1));
    std::vector<double> mine, gavel, blind, cp, r_gavel, r_blind, r_cp;
    for (uint64_t seed : Seeds(cfg.seeds)) {
      RunSpec spec = AutoWithIntrospection(cfg, seed);
      const double a = lab.Run(b, spec).makespan_s;
      spec.introspection = false;
      spec.solver = "gavel";
      const double g = lab.Run(b, spec).makespan_s;
      spec.solver = "type-blind";
      const double tb = lab.Run(b, spec).makespan_s;
      spec.solver = "current-practice";
      const double c = lab.Run(b, spec).makespan_s;
      mine.push_back(a);
      gavel.push_back(g);
      blind.push_back(tb);
      cp.push_back(c);
      r_gavel.push_back(g / a);
      r_blind.push_back(tb / a);
      r_cp.push_back(c / a);
    }
    t.Add({b.label, Hours(Mean(mine)), Hours(Mean(gavel)), Hours(Mean(blind)), Hours(Mean(cp)),
           Times(Mean(r_gavel)), Times(Mean(r_blind)), Times(Mean(r_cp))});
    chart.groups.push_back(b.label);
    chart.series[0].values.push_back(Mean(r_gavel));
    chart.series[1].values.push_back(Mean(r_blind));
    chart.series[2].values.push_back(Mean(r_cp));
    worst_gavel = std::isnan(worst_gavel) ? Mean(r_gavel) : std::min(worst_gavel, Mean(r_gavel));
    worst_blind = std::isnan(worst_blind) ? Mean(r_blind) : std::min(worst_blind, Mean(r_blind));
    Log(Fmt("types: %s done (simulator %.0f s so far)", b.label.c_str(), lab.sim_wall_s()));
  }
  Emit(report, t);
  report.Chart(cfg, "types_vs_baselines.svg", RenderBarChart(chart));
  report.targets.push_back({"mixed GPU types: auto's makespan <= Gavel's makespan policy's",
                            worst_gavel >= 1.0,
                            Fmt("gavel / auto %.2fx on the closest instance", worst_gavel)});
  report.targets.push_back({"mixed GPU types: type-blind Saturn >= 2x auto's makespan",
                            worst_blind >= 2.0,
                            Fmt("type-blind / auto %.2fx on the closest instance", worst_blind)});
}

}  // namespace saturn::bench
