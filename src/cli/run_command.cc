// saturn run: profile, plan, train and re-plan a workload end to end
// (executor/executor.h).
#include <cstdio>
#include <memory>

#include "cli/commands.h"
#include "common/format.h"
#include "executor/executor.h"
#include "planner/registry.h"

namespace saturn {
namespace {

int RunRun(const RunOptions& o) {
  BuiltinSolvers().Get(o.solver);
  RunSummary s = RunWorkload(o);
  if (s.interrupted) {
    std::fprintf(
        stderr,
        "run interrupted; every task checkpointed. Continue with: saturn run %s --resume%s\n",
        o.workload_path.c_str(), o.run_dir.empty() ? "" : (" --run-dir " + o.run_dir).c_str());
    return 130;
  }
  std::fprintf(stderr,
               "run %s: %d finished, %d failed; makespan %s (first plan %s, ratio %.2f), %d plan "
               "switches; report: %s/report.html\n",
               s.failed ? "ended with failures" : "complete", s.finished, s.failed,
               FormatDuration(s.makespan_s).c_str(), FormatDuration(s.planned_makespan_s).c_str(),
               s.planned_makespan_s > 0 ? s.makespan_s / s.planned_makespan_s : 0.0,
               s.plan_switches, s.run_dir.c_str());
  return s.failed ? 1 : 0;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* status) {
  auto o = std::make_shared<RunOptions>();
  auto no_introspection = std::make_shared<bool>(false);
  CLI::App* cmd =
      app.add_subcommand("run", "Profile, plan and train a workload, re-planning as it runs");
  cmd->add_option("workload", o->workload_path, "Workload file (YAML, Contract 5)")->required();
  cmd->add_option("--run-dir", o->run_dir, "Run directory (default: saturn-runs/<workload file>)");
  cmd->add_flag("--resume", o->resume, "Continue the run found in the run directory");
  cmd->add_option("--solver", o->solver, "Solver for planning and re-planning")
      ->capture_default_str();
  cmd->add_option("--time-limit", o->time_limit_s, "Solver time limit per plan, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", o->seed, "Solver seed");
  cmd->add_flag("--no-introspection", *no_introspection, "Follow the first plan to the end");
  cmd->add_option("--interval", o->interval_s,
                  "Seconds between re-planning checks (default: auto, a tenth of the planned "
                  "makespan within [10, 1000] s)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--threshold", o->threshold_s,
                  "Switch only if the plan ends this much sooner (s) (default: auto, 2% of the "
                  "planned makespan and at least two switch costs)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--switch-cost", o->switch_cost_s, "Estimated checkpoint + restart seconds")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--max-retries", o->max_retries, "Retries of a failing task before giving up")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--checkpoint-every", o->checkpoint_every,
                  "Steps between checkpoints (default: auto)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--profile", o->profile_path, "Use this profile table instead of profiling");
  cmd->add_option("--plugin", o->plugins, "Technique plug-in (shared library); repeatable");
  cmd->add_option("--backend", o->backend, "Where workers run: local (this machine) or slurm")
      ->capture_default_str();
  cmd->add_option("--stop-grace", o->stop_grace_s,
                  "Seconds a pre-empted worker may take to checkpoint before it is killed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--cache", o->profiler.cache_path, "Profile cache file");
  cmd->add_option("--trial-timeout", o->profiler.trial_timeout_s,
                  "Seconds before a trial is killed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->callback([o, no_introspection, status] {
    o->introspection = !*no_introspection;
    *status = RunRun(*o);
  });
}

}  // namespace saturn
