// The options `saturn run` and `saturn serve` share: how to plan and
// re-plan, retries, checkpoints, pre-emption, where workers run, profiling.
// Defaults come from common/defaults.h and show in --help.
//
//   AddExecutorOptions(cmd, &options, &no_introspection);
#pragma once

#include <CLI/CLI.hpp>

#include "executor/run_options.h"

namespace saturn {

void AddExecutorOptions(CLI::App* cmd, RunOptions* o, bool* no_introspection);

// `--types measure|estimate` (ProfilerOptions::estimate_types), for every
// command that profiles.
void AddTypesOption(CLI::App* cmd, bool* estimate_types);

}  // namespace saturn
