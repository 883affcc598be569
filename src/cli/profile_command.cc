// saturn profile: workload -> profile table (Contract 2), by running trials
// in worker processes, with a persistent cache (profiler/profiler.h).
#include <cstdio>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "cli/profiling_options.h"
#include "common/defaults.h"
#include "common/error.h"
#include "common/fs.h"
#include "contracts/workload.h"
#include "launch/backend.h"
#include "launch/worker.h"
#include "profiler/profiler.h"

namespace saturn {
namespace {

// `saturn profile`'s options: the profiler's own bind straight into
// `profiler`; the rest say what to profile, where, and where the table goes.
struct ProfileOptions {
  std::string workload;
  std::string output;
  std::vector<std::string> plugins;
  long max_tasks = 0;  // 0: the workload's max_tasks or the default
  std::string backend = "local";
  ProfilerOptions profiler;
};

int RunProfile(const ProfileOptions& o) {
  PrefetchTechniques(o.profiler.worker, o.plugins);  // while a table's CSV is read
  Workload workload = LoadWorkloadFile(o.workload, o.plugins, o.max_tasks);
  std::unique_ptr<LaunchBackend> backend = MakeBackend(o.backend);
  UseBackendAllocation(workload, *backend);
  ProfilerOptions options = o.profiler;
  options.backend = backend.get();
  if (!options.work_dir.empty()) {
    MakeDirectories(options.work_dir);
    backend->CheckSharedDir(options.work_dir, workload.cluster);
  } else if (o.backend != "local") {
    throw InputError("", 0, "--work-dir",
                     "trials on " + o.backend +
                         " run on other nodes: give a folder they all see (shared storage)");
  }
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
  ProfilerOptions* p = &o->profiler;
  CLI::App* cmd =
      app.add_subcommand("profile", "Measure every task under every technique and GPU count");
  cmd->add_option("workload", o->workload, "Workload file (YAML, Contract 5)")->required();
  cmd->add_option("--output", o->output, "Write the profile CSV here (default: stdout)");
  cmd->add_flag("--refresh", p->refresh, "Re-measure every trial, replacing cached results");
  p->packs = true;
  cmd->add_flag_callback(
      "--no-pack", [p] { p->packs = false; },
      "Measure no packs (LoRA tasks sharing a base): the profile gets no pack columns");
  cmd->add_flag_callback(
      "--no-cache", [p] { p->use_cache = false; }, "Neither read nor write the profile cache");
  cmd->add_option("--parallel", p->parallel, "Trials at once (1: exact timings on shared cores)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--warmup", p->warmup, "Steps before timing")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--measure", p->measure, "Steps timed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  AddProfilingOptions(cmd, {p, &p->checkpoint_every, &o->backend, &o->max_tasks},
                      ProfilingCommand::kProfile);
  cmd->add_option("--plugin", o->plugins, "Technique plug-in (shared library); repeatable");
  cmd->add_option("--work-dir", p->work_dir,
                  "Folder for the trials' files (default: a temporary one; with --backend slurm, "
                  "required and on storage every node sees)");
  cmd->callback([o, status] { *status = RunProfile(*o); });
}

}  // namespace saturn
