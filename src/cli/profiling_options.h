// The flags `saturn profile`, `saturn run` and `saturn serve` share, each
// declared once here: the profile cache, trial timeout and GPU types
// (bound straight into a ProfilerOptions), the checkpoint interval runtimes
// count, where workers run, and how many tasks a workload may expand to.
// Where profile's help says what the flag means for measuring and run's
// for training, the flag picks the wording by `command`; name, check and
// default are one.
//
//   AddProfilingOptions(cmd, {&o->profiler, &o->profiler.checkpoint_every, &o->backend,
//                             &o->max_tasks}, ProfilingCommand::kProfile);
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "profiler/profiler.h"

namespace saturn {

enum class ProfilingCommand { kProfile, kRun };

// Where each shared flag's value goes.
struct ProfilingTargets {
  ProfilerOptions* profiler;  // --cache, --trial-timeout, --types, --estimate
  long* checkpoint_every;     // --checkpoint-every (profile: its ProfilerOptions')
  std::string* backend;       // --backend
  long* max_tasks;            // --max-tasks
};

void AddProfilingOptions(CLI::App* cmd, const ProfilingTargets& to, ProfilingCommand command);

}  // namespace saturn
