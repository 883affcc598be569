// saturn plan: profile table + cluster -> plan JSON (and a Gantt chart).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "cli/commands.h"
#include "common/defaults.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "contracts/cluster.h"
#include "contracts/plan_status.h"
#include "contracts/profile.h"
#include "contracts/yaml_fields.h"
#include "planner/baselines.h"
#include "planner/pack_search.h"
#include "planner/planner.h"
#include "report/gantt.h"

namespace saturn {
namespace {

struct PlanOptions {
  std::string cluster;
  std::string profile;
  std::string solver = "auto";
  double time_limit_s = defaults::kSolverTimeLimitS;
  double gap = 0.0;
  double work_limit = 0.0;
  bool log = false;
  uint64_t seed = 0;
  int threads = 1;
  std::string output;
  std::string gantt;
  bool no_pack = false;
};

// On a cluster of several GPU types, what the plan gives each type: "on
// A100 (1 node, 8 GPUs): 5 tasks, 2h10m GPU-time (68% of its GPUs until
// the makespan)", a line per type, so what was decided per type shows.
std::string PerTypeLines(const Plan& plan, const Cluster& cluster) {
  if (!cluster.Mixed()) return "";
  std::string out;
  for (const std::string& type : cluster.GpuTypes()) {
    int nodes = 0, gpus = 0, tasks = 0;
    double gpu_s = 0.0;
    for (const ClusterNode& n : cluster.nodes) {
      if (n.gpu_type != type) continue;
      ++nodes;
      gpus += n.gpus;
    }
    std::map<std::string, const PlanTask*> longest;  // a pack holds its GPUs once
    for (const PlanTask& t : plan.tasks) {
      int node = cluster.NodeIndex(t.node);
      if (node < 0 || cluster.nodes[static_cast<size_t>(node)].gpu_type != type) continue;
      ++tasks;
      if (t.pack.empty()) {
        gpu_s += t.gpus * (t.end_s - t.start_s);
      } else if (!longest[t.pack] || longest[t.pack]->end_s < t.end_s) {
        longest[t.pack] = &t;
      }
    }
    for (const auto& [pack, t] : longest)
      gpu_s += t->gpus * (t->end_s - t->start_s);
    double capacity = gpus * plan.makespan_s;
    out +=
        "  on " + GpuTypeLabel(type) + " (" + Plural(nodes, "node") + ", " + Plural(gpus, "GPU") +
        "): " + Plural(tasks, "task") + ", " + FormatDuration(gpu_s) + " GPU-time" +
        (capacity > 0
             ? " (" + FormatFixed(100.0 * gpu_s / capacity, 0) + "% of its GPUs until the makespan)"
             : "") +
        "\n";
  }
  return out;
}

// The plan's tasks whose rows the profile estimated rather than measured
// (its estimated_from column): "note: 4 of the plan's 4 tasks run on
// estimated rows, not measured runtimes (the first: analytic: ...)".
std::string EstimatedLine(const Plan& plan, const ProfileTable& profile, const Cluster& cluster) {
  if (profile.ExtraColumn("estimated_from") < 0) return "";
  int estimated = 0;
  std::string first;
  for (const PlanTask& t : plan.tasks) {
    int node = cluster.NodeIndex(t.node);
    std::string type =
        node < 0 || !profile.Typed() ? "" : cluster.nodes[static_cast<size_t>(node)].gpu_type;
    const ProfileRow* row = profile.Find(t.task, t.technique, t.gpus, type);
    std::string from = row ? profile.Extra(*row, "estimated_from") : "";
    if (from.empty()) continue;
    if (first.empty()) first = from;
    ++estimated;
  }
  if (estimated == 0) return "";
  return "note: " + std::to_string(estimated) + " of the plan's " +
         Plural(static_cast<long>(plan.tasks.size()), "task") +
         " run on estimated rows, not measured runtimes (" + (estimated > 1 ? "the first: " : "") +
         first + ")\n";
}

// --cluster: a cluster file (Contract 1), or a workload file, whose
// `cluster:` section is used (a cluster file beside the workload, or its
// nodes written inline), with a line on stderr saying so.
Cluster LoadPlanCluster(const std::string& path) {
  YAML::Node root = ParseYamlText(ReadFile(path), path);
  if (!root.IsMap() || root["nodes"] || !(root["cluster"] || root["tasks"])) {
    return ParseCluster(root, path);
  }
  if (!root["cluster"]) {
    throw InputError(path, 0, "cluster",
                     "--cluster got a workload file without a cluster: section; give the "
                     "cluster file (Contract 1: nodes:) the workload runs on");
  }
  const YAML::Node section = root["cluster"];
  Cluster cluster;
  std::string from;
  if (section.IsScalar()) {
    namespace fs = std::filesystem;
    from = (fs::path(path).parent_path() / section.Scalar()).lexically_normal().string();
    std::error_code ec;
    if (!fs::is_regular_file(from, ec)) {
      throw InputError(path, YamlLine(section), "cluster", "no such cluster file: " + from);
    }
    cluster = LoadClusterFile(from);
  } else if (section.IsMap() && section["from"]) {
    throw InputError(path, YamlLine(section), "cluster.from",
                     "the workload's cluster comes from a Slurm allocation, which saturn plan "
                     "does not have; give a cluster file with its nodes (Contract 1)");
  } else {
    cluster = ParseCluster(section, path, "cluster");
    from = "its cluster: section";
  }
  std::fprintf(stderr, "--cluster %s is a workload: planning for %s\n", path.c_str(), from.c_str());
  return cluster;
}

int RunPlan(const PlanOptions& o) {
  Cluster cluster = LoadPlanCluster(o.cluster);
  ProfileTable profile = LoadProfileFile(o.profile, cluster);
  Problem problem = ProblemFromProfile(profile, cluster);
  PlanRequest request;
  request.solver = o.solver;
  request.time_limit_s = o.time_limit_s;
  request.seed = o.seed;
  request.threads = o.threads;
  // Anytime: auto uses the time limit while the gap is open; a work limit
  // makes it deterministic instead (the same plan on any machine).
  request.anytime = o.work_limit <= 0;
  request.work_limit = o.work_limit;
  request.gap = o.gap;
  if (o.log) {
    request.on_progress = [](double makespan, double bound) {
      std::fprintf(stderr, "  incumbent %s, bound %s (gap %.2f%%)\n",
                   FormatDuration(makespan).c_str(), FormatDuration(bound).c_str(),
                   makespan > 0 ? 100.0 * (makespan - bound) / makespan : 0.0);
    };
  }
  BuiltinSolvers().Get(o.solver);  // unknown name: exit 2 before any work
  std::fprintf(stderr, "planning %s on %s (%s) with %s, limit %s\n",
               Plural(problem.NumTasks(), "task").c_str(),
               Plural(cluster.TotalGpus(), "GPU").c_str(),
               Plural(static_cast<long>(cluster.nodes.size()), "node").c_str(), o.solver.c_str(),
               FormatDuration(o.time_limit_s).c_str());
  PackTerms terms = PackTermsFromProfile(profile, problem, o.profile);
  PackedPlanResult packed = PlanWithPacks(problem, terms, request, !o.no_pack);
  PlanResult& result = packed.result;
  result.plan.extra["baselines"] = BaselineMakespans(problem, result.plan.lower_bound_s);
  const Plan& plan = result.plan;
  std::string json = PlanToJson(plan).dump(2) + "\n";
  std::string svg;
  if (!o.gantt.empty()) svg = RenderGanttSvg(GanttFromPlan(plan, cluster, "Saturn plan"));
  if (o.output.empty()) {
    std::cout << json;
  } else {
    WriteFileAtomic(o.output, json);
  }
  if (!o.gantt.empty()) WriteFileAtomic(o.gantt, svg);
  // "within 0.1% of the lower bound 1m40s": never "gap 0.0%" beside "not
  // proven optimal" (the dashboard says it alike).
  std::string bound = plan.lower_bound_s > 0
                          ? DescribeGapToBound(plan.makespan_s, plan.lower_bound_s) + " " +
                                FormatDuration(plan.lower_bound_s)
                          : "lower bound " + FormatDuration(plan.lower_bound_s);
  // With packs the bound is of the chosen packing: none over every packing is known.
  if (plan.extra.contains("lower_bound_of"))
    bound += " of " + plan.extra["lower_bound_of"].get<std::string>();
  std::fprintf(stderr, "plan: %s, makespan %s, %s, solved in %s\n",
               DescribePlanStatus(plan.status).c_str(), FormatDuration(plan.makespan_s).c_str(),
               bound.c_str(), FormatDuration(plan.solve_time_s).c_str());
  std::fputs(PerTypeLines(plan, cluster).c_str(), stderr);
  std::fputs(DescribePacks(problem, terms, packed, o.no_pack).c_str(), stderr);
  std::fputs(EstimatedLine(plan, profile, cluster).c_str(), stderr);
  if (std::string line = BaselineLine(plan); !line.empty())
    std::fprintf(stderr, "%s\n", line.c_str());
  return 0;
}

}  // namespace

void AddPlanCommand(CLI::App& app, int* status) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd =
      app.add_subcommand("plan", "Solve SPASE: choose technique, GPUs and start of every task");
  cmd->add_option("--cluster", o->cluster,
                  "Cluster file (YAML, Contract 1), or a workload file: its cluster: section")
      ->required();
  cmd->add_option("--profile", o->profile, "Profile table (CSV, Contract 2)")->required();
  cmd->add_option("--solver", o->solver,
                  "auto | milp | saturn-milp | current-practice | max | min | random | optimus")
      ->capture_default_str();
  cmd->add_option("--time-limit", o->time_limit_s,
                  "Solver time limit in wall seconds (auto uses it while the gap to the bound "
                  "is open)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--gap", o->gap,
                  "Stop once (makespan - lower bound) / makespan is at most this (0.01 = 1%; "
                  "0: only at the bound)")
      ->check(CLI::Range(0.0, 0.99))
      ->capture_default_str();
  cmd->add_option("--work-limit", o->work_limit,
                  "Deterministic effort in work units (10^6 placements tried, ~20 a second "
                  "here): the same plan on any machine for a seed; 0: anytime, use the time "
                  "limit")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_flag("--log", o->log, "Print the incumbent and bound to stderr as they improve");
  cmd->add_option("--seed", o->seed, "Random seed (solvers are deterministic for a seed)")
      ->capture_default_str();
  cmd->add_option("--threads", o->threads, "Solver threads")->check(CLI::Range(1, 256));
  cmd->add_flag("--no-pack", o->no_pack,
                "Never train tasks in packs (several LoRA tasks on one base in one worker); "
                "every task alone, as before packs");
  cmd->add_option("--output", o->output, "Write the plan JSON here (default: stdout)");
  cmd->add_option("--gantt", o->gantt, "Write a Gantt chart of the plan (SVG)");
  cmd->callback([o, status] { *status = RunPlan(*o); });
}

}  // namespace saturn
