// saturn simulate: replay plans against "true" runtimes on a simulated
// cluster, with the executor's introspection (sim/simulator.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/defaults.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "common/progress.h"
#include "contracts/cluster.h"
#include "contracts/profile.h"
#include "contracts/workload.h"
#include "planner/pack_search.h"
#include "planner/packing.h"
#include "planner/registry.h"
#include "report/gantt.h"
#include "sim/simulator.h"

namespace saturn {
namespace {

struct SimulateOptions {
  std::string cluster, profile, truth, output, gantt, events;
  std::string workload, evaluations;  // early stopping: its rule, and what tasks report
  double noise = 0.0;
  double config_noise = 0.0;
  std::string solver = "auto";
  double interval_s = defaults::kPaperIntervalS;
  double threshold_s = defaults::kPaperThresholdS;
  double switch_cost_s = defaults::kSwitchCostS;
  bool no_introspection = false;
  bool no_pack = false;
  double time_limit_s = defaults::kSolverTimeLimitS;
  uint64_t seed = 0;
};

// arrival_s per problem task from the profile's optional arrival_s column.
std::vector<double> Arrivals(const ProfileTable& profile, const Problem& problem,
                             const std::string& source) {
  std::map<std::string, double> by_name = ArrivalTimes(profile, source);
  std::vector<double> arrival(problem.NumTasks(), 0.0);
  for (int j = 0; j < problem.NumTasks(); ++j) {
    auto it = by_name.find(problem.tasks[j].name);
    if (it != by_name.end()) arrival[j] = it->second;
  }
  return arrival;
}

nlohmann::json ResultJson(const SimResult& r) {
  nlohmann::json tasks = nlohmann::json::array();
  for (const SimTaskResult& t : r.tasks) {
    tasks.push_back({{"task", t.name},
                     {"status", std::string(ToString(t.status))},
                     {"arrival_s", t.arrival_s},
                     {"start_s", t.start_s},
                     {"end_s", t.end_s},
                     {"busy_s", t.busy_s},
                     {"restart_s", t.dead_s},
                     {"attempts", t.attempts},
                     {"technique", t.technique},
                     {"gpus", t.gpus}});
    if (!t.pack.empty()) tasks.back()["pack"] = t.pack;
  }
  nlohmann::json events = nlohmann::json::array();
  for (const Event& e : r.events)
    events.push_back(nlohmann::json::parse(EventToJsonLine(e)));
  nlohmann::json utilization = nlohmann::json::array();
  // Rounded: 1, not 0.9999999999999994; 1862.37 s, not 1862.3700000000001.
  for (const auto& [t, u] : r.utilization)
    utilization.push_back({std::round(t * 1e3) / 1e3, std::round(u * 1e6) / 1e6});
  return {{"makespan_s", r.makespan_s},
          {"planned_makespan_s", r.initial_plan.makespan_s},
          {"mean_jct_s", r.mean_jct_s},
          {"p99_jct_s", r.p99_jct_s},
          {"replans", r.replans},
          {"plan_switches", r.plan_switches},
          {"preemptions", r.preemptions},
          {"planning_wall_s", r.planning_wall_s},
          {"gpu_s", r.gpu_s},
          {"tasks", tasks},
          {"utilization", utilization},
          {"events", events}};
}

// Simulates with a progress line on stderr (common/progress.h: redrawn on a
// terminal, every 5 s in logs): tasks done of all, the time left, how far
// simulated time has got and the re-planning so far.
SimResult SimulateShowingProgress(const Problem& believed,
                                  const std::vector<std::vector<double>>& truth,
                                  const std::vector<double>& arrival, SimOptions options) {
  auto where = [](double now_s, int replans, int switches) {
    return "at " + FormatDuration(now_s) + " simulated, " + Plural(replans, "re-plan") + ", " +
           Plural(switches, "switch");
  };
  Progress shown("simulated", believed.NumTasks());
  SteadyClock clock;
  double last = -1e300;
  options.on_progress = [&](const SimProgress& p) {
    if (clock.Now() - last < 0.5) return;  // callbacks come per task: keep them cheap
    last = clock.Now();
    shown.Update(p.finished, where(p.now_s, p.replans, p.plan_switches));
  };
  SimResult r = Simulate(believed, truth, arrival, options);
  shown.Finish(where(r.makespan_s, r.replans, r.plan_switches));
  return r;
}

int RunSimulate(const SimulateOptions& o) {
  Cluster cluster = LoadClusterFile(o.cluster);
  ProfileTable profile = LoadProfileFile(o.profile, cluster);
  Problem believed = ProblemFromProfile(profile, cluster);
  BuiltinSolvers().Get(o.solver);
  if (!o.truth.empty() && o.noise > 0) {
    throw InputError("", 0, "--truth", "give either --truth or --noise, not both");
  }
  if (o.noise < 0 || o.noise >= 1) {
    throw InputError("", 0, "--noise", "expected a fraction in [0, 1), e.g. 0.3 for +-30%");
  }
  if (o.config_noise < 0 || o.config_noise >= 1) {
    throw InputError("", 0, "--config-noise", "expected a fraction in [0, 1)");
  }
  std::vector<std::vector<double>> truth;
  if (!o.truth.empty()) {
    truth = TruthFromProfile(believed, LoadProfileFile(o.truth, cluster), o.truth);
  } else if (o.noise > 0 || o.config_noise > 0) {
    truth = TruthWithNoise(believed, o.noise, o.config_noise, o.seed);
  } else {
    truth = TruthEqualsBelief(believed);
  }
  std::vector<double> arrival = Arrivals(profile, believed, o.profile);
  SimOptions options;
  if (!o.evaluations.empty() && o.workload.empty()) {
    throw InputError("", 0, "--evaluations", "needs --workload (whose early_stop: they feed)");
  }
  if (!o.workload.empty()) {
    Workload w = LoadWorkloadFile(o.workload);
    // Its tasks are the profile's by name: one that is not is left out.
    std::set<std::string> profiled;
    for (const Task& t : believed.tasks)
      profiled.insert(t.name);
    std::vector<std::string> missing;
    for (const WorkloadTask& t : w.tasks)
      if (!profiled.count(t.name)) missing.push_back(t.name);
    if (missing.size() == w.tasks.size()) {
      throw InputError(o.workload, 0, "tasks",
                       "none of its tasks is in --profile " + o.profile + " (e.g. " +
                           Quote(missing.front()) +
                           "): tasks are matched by name; give the workload the profile was made "
                           "from");
    }
    if (!missing.empty()) {
      std::fprintf(stderr, "--workload %s: %s not in the profile, left out: %s%s\n",
                   o.workload.c_str(), Plural(static_cast<long>(missing.size()), "task").c_str(),
                   Quote(missing.front()).c_str(), missing.size() > 1 ? ", ..." : "");
    }
    std::optional<std::vector<Event>> evaluations;
    if (!o.evaluations.empty())
      evaluations = ParseEventLines(ReadFile(o.evaluations), o.evaluations);
    options.early_stop = EarlyStopsFromWorkload(
        believed, profile, w, evaluations ? &*evaluations : nullptr, o.evaluations, o.seed);
  }
  PackTerms terms = PackTermsFromProfile(profile, believed, o.profile);
  if (!o.no_pack && terms.Any()) {
    PlanRequest request;
    request.solver = o.solver;
    request.time_limit_s = o.time_limit_s;
    request.seed = o.seed;
    std::string described;
    options.packs = ChooseSimPacks(believed, std::move(terms), options.early_stop, arrival, request,
                                   &described);
    std::fputs(described.c_str(), stderr);
  }
  options.policy.solver = o.solver;
  options.policy.time_limit_s = o.time_limit_s;
  options.policy.seed = o.seed;
  options.policy.threshold_s = o.threshold_s;
  options.policy.switch_cost_s = o.switch_cost_s;
  options.introspection = !o.no_introspection;
  options.interval_s = o.interval_s;
  std::fprintf(
      stderr, "simulating %s on %s with %s%s\n", Plural(believed.NumTasks(), "task").c_str(),
      Plural(cluster.TotalGpus(), "GPU").c_str(), o.solver.c_str(),
      o.no_introspection ? ", no introspection"
                         : (", introspection every " + FormatDuration(o.interval_s)).c_str());
  SimResult r = SimulateShowingProgress(believed, truth, arrival, std::move(options));

  std::string json = ResultJson(r).dump(2) + "\n";
  std::string svg;
  if (!o.gantt.empty()) {
    GanttChart chart;
    chart.title = "Saturn simulated run";
    chart.subtitle = "makespan " + FormatDuration(r.makespan_s) + " (planned " +
                     FormatDuration(r.initial_plan.makespan_s) + "), " +
                     Plural(r.plan_switches, "plan switch") + "; dashed: first plan";
    chart.nodes = cluster.nodes;
    std::map<std::string, std::string> pack_of;  // a pack's members on one bar
    for (const SimTaskResult& t : r.tasks) {
      if (!t.pack.empty()) pack_of[t.name] = t.pack;
    }
    chart.bars = GanttFromRun(BusyIntervals(r.events, r.makespan_s), pack_of);
    for (GanttBar bar : GanttFromPlan(r.initial_plan, cluster, "").bars) {
      bar.outline_only = true;
      chart.bars.push_back(std::move(bar));
    }
    svg = RenderGanttSvg(chart);
  }
  std::string events;
  if (!o.events.empty()) {
    for (const Event& e : r.events)
      events += EventToJsonLine(e);
  }
  if (o.output.empty()) {
    std::cout << json;
  } else {
    WriteFileAtomic(o.output, json);
  }
  if (!o.gantt.empty()) WriteFileAtomic(o.gantt, svg);
  if (!o.events.empty()) WriteFileAtomic(o.events, events);
  std::fprintf(
      stderr, "simulated makespan %s (first plan %s), mean JCT %s, p99 JCT %s, %s, %s\n",
      FormatDuration(r.makespan_s).c_str(), FormatDuration(r.initial_plan.makespan_s).c_str(),
      FormatDuration(r.mean_jct_s).c_str(), FormatDuration(r.p99_jct_s).c_str(),
      Plural(r.plan_switches, "switch").c_str(), Plural(r.preemptions, "pre-emption").c_str());
  // Under a rule: what it stopped, and (packs) how many of those left a pack.
  int stopped = 0, left_packs = 0;
  for (const SimTaskResult& t : r.tasks) {
    if (t.status != TaskStatus::kStopped) continue;
    ++stopped;
    left_packs += t.pack.empty() ? 0 : 1;
  }
  if (stopped > 0) {
    std::fprintf(stderr, "the early_stop rule stopped %s of %s%s\n",
                 Plural(stopped, "task").c_str(), std::to_string(r.tasks.size()).c_str(),
                 left_packs > 0 ? (", " + std::to_string(left_packs) +
                                   " of them members that left their pack, the rest training on")
                                      .c_str()
                                : "");
  }
  return 0;
}

}  // namespace

void AddSimulateCommand(CLI::App& app, int* status) {
  auto o = std::make_shared<SimulateOptions>();
  CLI::App* cmd = app.add_subcommand("simulate", "Simulate a cluster running Saturn's plans");
  cmd->add_option("--cluster", o->cluster, "Cluster file (YAML)")->required();
  cmd->add_option("--profile", o->profile,
                  "What the planner believes (profile CSV; optional arrival_s column)")
      ->required();
  cmd->add_flag("--no-pack", o->no_pack,
                "Never train tasks in packs (several LoRA tasks on one base in one worker)");
  cmd->add_option("--truth", o->truth, "What tasks really take (another profile CSV)");
  cmd->add_option("--noise", o->noise, "Truth = profile x U(1-SIGMA, 1+SIGMA) per task")
      ->capture_default_str();
  cmd->add_option("--config-noise", o->config_noise,
                  "... x U(1-SIGMA, 1+SIGMA) per configuration on top")
      ->capture_default_str();
  cmd->add_option("--solver", o->solver, "Solver for planning and re-planning")
      ->capture_default_str();
  cmd->add_option("--interval", o->interval_s, "Seconds between introspection checks")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--threshold", o->threshold_s,
                  "Switch plans only if they finish this much sooner (s)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--switch-cost", o->switch_cost_s, "Seconds to checkpoint and restart a task")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--no-introspection", o->no_introspection, "Follow the first plan to the end");
  cmd->add_option("--time-limit", o->time_limit_s, "Solver time limit per (re-)plan, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed for noise and solvers")->capture_default_str();
  cmd->add_option("--workload", o->workload,
                  "The tasks' workload: its early_stop rule decides when they stop");
  cmd->add_option("--evaluations", o->evaluations,
                  "A run's events.jsonl: the metric each task reports at each evaluation "
                  "(default: a fixed quality per task, drawn from --seed)");
  cmd->add_option("--output", o->output, "Write the result JSON here (default: stdout)");
  cmd->add_option("--gantt", o->gantt, "Write a Gantt chart of the simulated run (SVG)");
  cmd->add_option("--events", o->events, "Write the event trace (JSON lines)");
  cmd->callback([o, status] { *status = RunSimulate(*o); });
}

}  // namespace saturn
