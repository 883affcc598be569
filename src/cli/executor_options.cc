#include "cli/executor_options.h"

#include "cli/profiling_options.h"

namespace saturn {

void AddExecutorOptions(CLI::App* cmd, RunOptions* o, bool* no_introspection) {
  cmd->add_option("--solver", o->solve.solver, "Solver for planning and re-planning")
      ->capture_default_str();
  cmd->add_option("--time-limit", o->solve.time_limit_s, "Solver time limit per plan, seconds")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--seed", o->solve.seed, "Solver seed")->capture_default_str();
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
  cmd->add_option("--keep-checkpoints", o->keep_checkpoints,
                  "Checkpoints kept per task, the newest (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--stop-grace", o->stop_grace_s,
                  "Seconds a pre-empted worker may take to checkpoint before it is killed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  AddProfilingOptions(cmd, {&o->profiler, &o->checkpoint_every, &o->backend, &o->max_tasks},
                      ProfilingCommand::kRun);
}

}  // namespace saturn
