#include "cli/executor_options.h"

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
  cmd->add_option("--checkpoint-every", o->checkpoint_every,
                  "Steps between checkpoints (default: auto)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--keep-checkpoints", o->keep_checkpoints,
                  "Checkpoints kept per task, the newest (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--backend", o->backend, "Where workers run: local (this machine) or slurm")
      ->capture_default_str();
  cmd->add_option("--stop-grace", o->stop_grace_s,
                  "Seconds a pre-empted worker may take to checkpoint before it is killed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--max-tasks", o->max_tasks,
                  "Most tasks a workload may expand to (default: its max_tasks, else " +
                      std::to_string(defaults::kMaxWorkloadTasks) + ")")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--cache", o->profiler.cache_path, "Profile cache file");
  cmd->add_option("--trial-timeout", o->profiler.trial_timeout_s,
                  "Seconds before a trial is killed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  AddTypesOption(cmd, &o->profiler.estimate_types);
}

void AddTypesOption(CLI::App* cmd, bool* estimate_types) {
  cmd->add_option_function<std::string>(
         "--types", [estimate_types](const std::string& v) { *estimate_types = v == "estimate"; },
         "Several GPU types: measure = every configuration on every type; estimate = every "
         "configuration on one reference type (the largest node's), one per task on each other "
         "type, the rest scaled by that speed ratio (docs/types.md). No effect on one type")
      ->check(CLI::IsMember({"measure", "estimate"}))
      ->default_str("measure");
}

}  // namespace saturn
