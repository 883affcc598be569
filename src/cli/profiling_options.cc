#include "cli/profiling_options.h"

#include "common/defaults.h"
#include "profiler/cache.h"

namespace saturn {

void AddProfilingOptions(CLI::App* cmd, const ProfilingTargets& to, ProfilingCommand command) {
  const bool profile = command == ProfilingCommand::kProfile;
  cmd->add_option("--cache", to.profiler->cache_path,
                  profile ? "Profile cache file (default: " + ProfileCache::DefaultPath() + ")"
                          : std::string("Profile cache file"));
  cmd->add_option("--trial-timeout", to.profiler->trial_timeout_s,
                  "Seconds before a trial is killed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  ProfilerOptions* profiler = to.profiler;
  cmd->add_option_function<std::string>(
         "--types",
         [profiler](const std::string& v) { profiler->estimate_types = v == "estimate"; },
         "Several GPU types: measure = every configuration on every type; estimate = every "
         "configuration on one reference type (the largest node's), one per task on each other "
         "type, the rest scaled by that speed ratio (docs/types.md). No effect on one type")
      ->check(CLI::IsMember({"measure", "estimate"}))
      ->default_str("measure");
  cmd->add_flag_callback(
      "--estimate", [profiler] { profiler->estimate = "always"; },
      "Estimate every trial analytically from the model's shape and the nodes' gpu_type (or "
      "tflops, link_gb_s) instead of measuring it; without it only trials that cannot run on "
      "this machine are estimated. Estimated rows say so (estimated_from)");
  cmd->add_option("--checkpoint-every", *to.checkpoint_every,
                  profile ? "Runtimes count the checkpoints `saturn run --checkpoint-every` writes "
                            "(default: a tenth of each task)"
                          : "Steps between checkpoints (default: auto)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--backend", *to.backend,
                  profile ? "Where trials run: local (this machine) or slurm (job steps in the "
                            "allocation)"
                          : "Where workers run: local (this machine) or slurm")
      ->capture_default_str();
  cmd->add_option("--max-tasks", *to.max_tasks,
                  "Most tasks a workload may expand to (default: its max_tasks, else " +
                      std::to_string(defaults::kMaxWorkloadTasks) + ")")
      ->check(CLI::PositiveNumber);
}

}  // namespace saturn
