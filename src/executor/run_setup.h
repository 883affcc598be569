// Setting up a run (part of `saturn run`, executor.h): checks that can refuse
// the run come before anything is written; a new run profiles and plans, a
// resumed one (--resume) reloads its state, restores every task from its
// last checkpoint, and plans the rest afresh when it resumes on other nodes.
//
//   RunContext run(options, clock);
//   SetUpRun(run);   // InputError on bad input or a run that cannot resume
#pragma once

#include "executor/run_context.h"

namespace saturn {

void SetUpRun(RunContext& run);

// Every task from the state after a crash or a stop: finished ones stay
// finished; any other continues from its newest checkpoint (a worker left
// from before is killed first).
void RestoreTasks(RunContext& run);
// Each task's folder and its task.json (kept if it exists).
void WriteTaskFolders(const RunContext& run);

}  // namespace saturn
