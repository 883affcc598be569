// saturn profile: workload -> profile table (Contract 2), by running trials
// in worker processes, with a persistent cache (profiler/profiler.h).
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/executor_options.h"
#include "common/defaults.h"
#include "common/error.h"
#include "common/fs.h"
#include "launch/backend.h"
#include "profiler/cache.h"
#include "profiler/profiler.h"
#include "contracts/workload.h"

namespace saturn {
namespace {

struct ProfileOptions {
  std::string workload;
  std::string output;
  std::string cache;
  bool refresh = false;
  bool no_cache = false;
  bool estimate_types = false;
  double trial_timeout_s = defaults::kTrialTimeoutS;
  int parallel = 1;
  int warmup = -1;
  int measure = kDefaultMeasureSteps;
  long checkpoint_every = 0;
  std::vector<std::string> plugins;
  long max_tasks = 0;  // 0: the workload's max_tasks or the default
  std::string backend = "local";
  std::string work_dir;
};

int RunProfile(const ProfileOptions& o) {
  Workload workload = LoadWorkloadFile(o.workload, o.plugins, o.max_tasks);
  std::unique_ptr<LaunchBackend> backend = MakeBackend(o.backend);
  UseBackendAllocation(workload, *backend);
  ProfilerOptions options;
  options.backend = backend.get();
  options.work_dir = o.work_dir;
  if (!o.work_dir.empty()) {
    MakeDirectories(o.work_dir);
    backend->CheckSharedDir(o.work_dir, workload.cluster);
  } else if (o.backend != "local") {
    throw InputError("", 0, "--work-dir",
                     "trials on " + o.backend +
                         " run on other nodes: give a folder they all see (shared storage)");
  }
  options.cache_path = o.cache;
  options.use_cache = !o.no_cache;
  options.refresh = o.refresh;
  options.trial_timeout_s = o.trial_timeout_s;
  options.parallel = o.parallel;
  options.warmup = o.warmup;
  options.measure = o.measure;
  options.checkpoint_every = o.checkpoint_every;
  options.estimate_types = o.estimate_types;
  ProfileRun run = RunProfiler(workload, options);
  std::string csv = ProfileToCsv(run.table);
  if (o.output.empty()) {
    std::cout << csv;
  } else {
    WriteFileAtomic(o.output, csv);
  }
  std::fputs(ProfileSummary(workload, run).c_str(), stderr);
  return 0;
}

}  // namespace

void AddProfileCommand(CLI::App& app, int* status) {
  auto o = std::make_shared<ProfileOptions>();
  CLI::App* cmd =
      app.add_subcommand("profile", "Measure every task under every technique and GPU count");
  cmd->add_option("workload", o->workload, "Workload file (YAML, Contract 5)")->required();
  cmd->add_option("--output", o->output, "Write the profile CSV here (default: stdout)");
  cmd->add_flag("--refresh", o->refresh, "Re-measure every trial, replacing cached results");
  cmd->add_option("--cache", o->cache,
                  "Profile cache file (default: " + ProfileCache::DefaultPath() + ")");
  cmd->add_flag("--no-cache", o->no_cache, "Neither read nor write the profile cache");
  cmd->add_option("--trial-timeout", o->trial_timeout_s, "Seconds before a trial is killed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--parallel", o->parallel, "Trials at once (1: exact timings on shared cores)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--warmup", o->warmup, "Steps before timing (default: the worker's)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--measure", o->measure, "Steps timed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--checkpoint-every", o->checkpoint_every,
                  "Runtimes count the checkpoints `saturn run --checkpoint-every` writes "
                  "(default: a tenth of each task)")
      ->check(CLI::PositiveNumber);
  AddTypesOption(cmd, &o->estimate_types);
  cmd->add_option("--plugin", o->plugins, "Technique plug-in (shared library); repeatable");
  cmd->add_option("--max-tasks", o->max_tasks,
                  "Most tasks a workload may expand to (default: its max_tasks, else " +
                      std::to_string(defaults::kMaxWorkloadTasks) + ")")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--backend", o->backend,
                  "Where trials run: local (this machine) or slurm (job steps in the allocation)")
      ->capture_default_str();
  cmd->add_option("--work-dir", o->work_dir,
                  "Folder for the trials' files (default: a temporary one; with --backend slurm, "
                  "required and on storage every node sees)");
  cmd->callback([o, status] { *status = RunProfile(*o); });
}

}  // namespace saturn
