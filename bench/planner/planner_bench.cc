// bench/planner: plan quality and solve time of every solver on the paper's
// instance families. Prints one table; see bench/README.md for the runtime
// model and what each column means. `auto` runs anytime, as `saturn plan`
// does: it uses its limit while the gap to the bound is open.
//
// Where an instance has a proven optimum (golden.h: bench/planner/golden/),
// every row also says the plan's gap to it.
//
//   planner_bench                       # full run (long limit 60 s, auto 2 s)
//   planner_bench --quick               # 5 s long limit, small instances only
//   planner_bench --write txt-8 DIR     # write an instance's cluster.yaml + profile.csv
//   planner_bench --prove txt-8+8 [--prove-limit S]   # prove optima, write golden folders
//                                       # (auto for --long-limit s, then milp up to S, default
//                                       3600)

#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "bench/common/instances.h"
#include "bench/common/resources.h"
#include "bench/planner/golden.h"
#include "common/format.h"
#include "common/fs.h"
#include "planner/flow_milp.h"
#include "planner/lower_bound.h"
#include "planner/planner.h"

namespace saturn::bench {
namespace {

struct Run {
  std::string solver;
  double limit;
};

// Rough size of the paper's model, to skip it where CBC could not even load it.
long SaturnMilpRows(const Problem& p) {
  long options = 0;
  for (const Task& t : p.tasks)
    options += static_cast<long>(t.options.size());
  long per_gpu =
      static_cast<long>(p.NumTasks()) * p.NumTasks() * 2 * options / std::max(1, p.NumTasks());
  return per_gpu * p.TotalGpus();
}

int WriteInstance(const std::string& which, const std::string& dir) {
  for (const Instance& inst : PlannerBenchInstances(false)) {
    if (inst.name.rfind(which, 0) != 0) continue;
    WriteFileAtomic(dir + "/cluster.yaml", ClusterToYaml(inst.cluster));
    WriteFileAtomic(dir + "/profile.csv", ProfileToCsv(inst.profile));
    std::printf("wrote %s to %s\n", inst.name.c_str(), dir.c_str());
    return 0;
  }
  std::fprintf(stderr, "no instance named %s*\n", which.c_str());
  return 2;
}

// "2026-12-03" (UTC).
std::string Today() {
  std::time_t now = std::time(nullptr);
  char text[16];
  std::strftime(text, sizeof text, "%Y-%m-%d", std::gmtime(&now));
  return text;
}

// Proves the optimum of each instance whose name starts with `which`: auto
// (anytime, `warm_limit` s) for a good plan, then the exact MILP (`milp`,
// CBC) warm-started from it for up to `limit` s. Writes a golden folder
// into `dir` for each optimum proven; says the gap left for the others.
int Prove(const std::string& which, double warm_limit, double limit, const std::string& dir) {
  int tried = 0, proven = 0;
  std::vector<Instance> candidates = PlannerBenchInstances(false);
  for (Instance& small : SmallInstances(8))
    candidates.push_back(std::move(small));
  for (const Instance& inst : candidates) {
    if (inst.name.rfind(which, 0) != 0) continue;
    ++tried;
    Problem problem = ProblemFromProfile(inst.profile, inst.cluster);
    PlanRequest warm;
    warm.solver = "auto";
    warm.time_limit_s = warm_limit;
    warm.seed = 1;
    warm.anytime = true;
    double cpu_before = CpuSeconds();
    PlanResult start = RunPlanner(problem, warm);
    double cpu = CpuSeconds() - cpu_before;
    std::printf("%-22s auto@%gs: makespan %.1f, bound %.1f, %s\n", inst.name.c_str(), warm_limit,
                start.plan.makespan_s, start.plan.lower_bound_s, start.plan.status.c_str());
    std::fflush(stdout);
    PlanResult r = start;
    std::string how =
        "auto's plan (anytime, " + FormatNumber(warm_limit) + " s) meets the lower bound";
    if (start.plan.status != "optimal") {
      PlanRequest exact;
      exact.solver = "milp";
      exact.time_limit_s = limit;
      exact.seed = 1;
      exact.warm_start = start.schedule;
      exact.known_lower_bound_s = start.plan.lower_bound_s;
      cpu_before = CpuSeconds();
      r = RunPlanner(problem, exact);
      cpu = CpuSeconds() - cpu_before;
      how = "milp (CBC, one thread) proved it optimal, warm-started from auto's plan (anytime, " +
            FormatNumber(warm_limit) + " s, makespan " + FormatNumber(start.plan.makespan_s) +
            " s); " + r.plan.extra.value("note", std::string());
      std::printf(
          "%-22s milp@%gs: makespan %.1f, bound %.1f (gap %.2f%%), %s in %.1f s (%.1f s CPU)\n",
          inst.name.c_str(), limit, r.plan.makespan_s, r.plan.lower_bound_s,
          100.0 * (r.plan.makespan_s - r.plan.lower_bound_s) / r.plan.makespan_s,
          r.plan.status.c_str(), r.plan.solve_time_s, cpu);
    }
    if (r.plan.status == "optimal") {
      nlohmann::json meta = {
          {"proven_by", how},
          {"solve_time_s", r.plan.solve_time_s},
          {"cpu_s", cpu},
          {"warm_start_makespan_s", start.plan.makespan_s},
          {"combinatorial_lower_bound_s", MakespanLowerBound(problem)},
          {"command", "planner_bench --prove " + inst.name + " --long-limit " +
                          FormatNumber(warm_limit) + " --prove-limit " + FormatNumber(limit)},
          {"date", Today()}};
      WriteGolden(dir, inst, r.plan, meta);
      std::printf("%-22s wrote %s/%s\n", inst.name.c_str(), dir.c_str(), inst.name.c_str());
      ++proven;
    }
    std::fflush(stdout);
  }
  if (tried == 0) {
    std::fprintf(stderr, "no instance named %s*\n", which.c_str());
    return 2;
  }
  std::printf("proved %d of %d\n", proven, tried);
  return 0;
}

int Main(int argc, char** argv) {
  bool quick = false;
  double long_limit = 60, auto_limit = 2, prove_limit = 3600;
  std::string prove, golden_dir = GoldenDir();
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      quick = true;
      long_limit = 5;
    } else if (!std::strcmp(argv[i], "--long-limit") && i + 1 < argc) {
      long_limit = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--write") && i + 2 < argc) {
      return WriteInstance(argv[i + 1], argv[i + 2]);
    } else if (!std::strcmp(argv[i], "--prove") && i + 1 < argc) {
      prove = argv[++i];
    } else if (!std::strcmp(argv[i], "--prove-limit") && i + 1 < argc) {
      prove_limit = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--golden") && i + 1 < argc) {
      golden_dir = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: planner_bench [--quick] [--long-limit S] [--write NAME DIR] [--golden "
                   "DIR]\n       planner_bench --prove NAME [--long-limit S] [--prove-limit S] "
                   "[--golden DIR]\n");
      return 2;
    }
  }
  if (!prove.empty()) return Prove(prove, long_limit, prove_limit, golden_dir);
  const std::vector<Run> runs = {{"current-practice", long_limit},
                                 {"max", long_limit},
                                 {"min", long_limit},
                                 {"random", long_limit},
                                 {"optimus", long_limit},
                                 {"saturn-milp", long_limit},
                                 {"milp", long_limit},
                                 {"auto", long_limit},
                                 {"auto", auto_limit}};
  std::printf("%-22s %-16s %6s %12s %9s %9s %9s %9s  %s\n", "instance", "solver", "limit",
              "makespan_s", "/bound", "/optimum", "speedup", "solve_s", "status");
  for (const Instance& inst : PlannerBenchInstances(quick)) {
    Problem problem = ProblemFromProfile(inst.profile, inst.cluster);
    double bound = MakespanLowerBound(problem);
    // The proven optimum, where one is kept for this very instance.
    std::optional<Golden> golden = FindGolden(inst.name, golden_dir);
    double optimum = golden && SameInstance(*golden, inst) ? golden->optimum_s : 0;
    if (golden && optimum == 0) {
      std::printf("%-22s golden optimum in %s is stale (the instance changed): no gaps to it\n",
                  inst.name.c_str(), golden->dir.c_str());
    }
    auto to_optimum = [&](double makespan) {
      char text[32] = "-";
      if (optimum > 0) std::snprintf(text, sizeof text, "%.4f", makespan / optimum);
      return std::string(text);
    };
    double current = 0, best_long = 1e300, auto_short = 0, saturn_long = 0;
    for (const Run& run : runs) {
      std::string label = run.solver;
      bool too_big = (run.solver == "saturn-milp" && SaturnMilpRows(problem) > 3'000'000) ||
                     (run.solver == "milp" && FlowMilpSize(problem) > 300'000);
      if (too_big) {
        std::printf("%-22s %-16s %6.0f %12s\n", inst.name.c_str(), label.c_str(), run.limit,
                    "skipped (model too large for CBC here)");
        continue;
      }
      PlanRequest req;
      req.solver = run.solver;
      req.time_limit_s = run.limit;
      req.seed = 1;
      req.anytime = true;  // as saturn plan: auto uses its limit while the gap is open
      PlanResult r = RunPlanner(problem, req);
      const Plan& plan = r.plan;
      if (run.solver == "current-practice") current = plan.makespan_s;
      if (run.limit == long_limit) best_long = std::min(best_long, plan.makespan_s);
      if (run.solver == "auto" && run.limit == auto_limit) auto_short = plan.makespan_s;
      if (run.solver == "saturn-milp") saturn_long = plan.makespan_s;
      std::printf("%-22s %-16s %6.0f %12.1f %9.4f %9s %9.3f %9.3f  %s\n", inst.name.c_str(),
                  label.c_str(), run.limit, plan.makespan_s, plan.makespan_s / bound,
                  to_optimum(plan.makespan_s).c_str(), current / plan.makespan_s, plan.solve_time_s,
                  plan.status.c_str());
      std::fflush(stdout);
    }
    std::printf("%-22s => auto@%gs vs best@%gs: %+.2f%%", inst.name.c_str(), auto_limit, long_limit,
                100.0 * (auto_short / best_long - 1));
    if (optimum > 0) {
      std::printf(", vs the proven optimum %.1f: %+.2f%% (best@%gs %+.2f%%)", optimum,
                  100.0 * (auto_short / optimum - 1), long_limit,
                  100.0 * (best_long / optimum - 1));
    }
    if (saturn_long > 0) {
      std::printf(", auto@%gs / saturn-milp@%gs = %.3f", auto_limit, long_limit,
                  auto_short / saturn_long);
    }
    std::printf(", speed-up over current practice %.2fx, lower bound %.1f\n", current / auto_short,
                bound);
    // The paper's "current practice" is stricter than ours: FSDP on a whole
    // node for every model (ours picks each model's best technique there).
    ProfileTable fsdp_only = inst.profile;
    std::erase_if(fsdp_only.rows, [](const ProfileRow& r) { return r.technique != "fsdp"; });
    std::set<std::string> covered;
    for (const ProfileRow& r : fsdp_only.rows)
      covered.insert(r.task);
    if (!fsdp_only.rows.empty() && covered.size() == problem.tasks.size()) {
      PlanRequest req;
      req.solver = "current-practice";
      double paper_current =
          RunPlanner(ProblemFromProfile(fsdp_only, inst.cluster), req).plan.makespan_s;
      std::printf(
          "%-22s => the paper's current practice (FSDP on whole nodes): %.1f s, auto is "
          "%.2fx faster\n",
          inst.name.c_str(), paper_current, paper_current / auto_short);
    }
    std::printf("\n");
  }
  std::printf("peak memory of this process: %.0f MiB\n", PeakRssMib());
  return 0;
}

}  // namespace
}  // namespace saturn::bench

int main(int argc, char** argv) {
  return saturn::bench::Main(argc, argv);
}
