// Table tasks in the worker (docs/groups.md). A fused array (engine/array.h): a pack task file
// whose members all train table data. Search measures the array's step time (its longest member's
// first warm-up + measured steps); execute trains every member to its own steps from step 0 and
// writes each member's model.pt
// (<save-model's folder>/<member>/model.pt), losses and held-out loss into
// the result's members. Arrays train on one device (technique single); they
// keep no checkpoint yet, so a stopped array's members start again from
// step 0 (docs/groups.md).
//
// A table task alone that does not evaluate during training gets its
// held-out loss at its end all the same, over all its held-out rows, as an
// array's member does: PrintHeldOutAtEnd.
//
//   if (task.array) return RunArrayJob(request, task, &stop_flag);
//   PrintHeldOutAtEnd(ctx, done.checkpoint, done.completed_steps);  // after Execute
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "engine/task.h"
#include "engine/technique.h"
#include "protocol/worker_protocol.h"
#include "worker/options.h"

namespace saturn::worker {

int RunArrayJob(const WorkerRequest& o, const engine::TaskSpec& task,
                const std::atomic<bool>* stop);

// Search of a table task alone with --pack-sizes, after its own search:
// arrays of K copies of it, for each K, in this process (one start-up for
// every size), smallest first; a size that does not fit ends the list (its
// entry says so), one that fails otherwise ends it without an entry (the
// error on stderr); the task's own search stands whatever its arrays do.
std::vector<WorkerSearchResult> MeasureArraySizes(const WorkerRequest& o,
                                                  const engine::TaskSpec& task,
                                                  const engine::Device& device);

// An evaluation line of the held-out loss (and accuracy) over all of a
// table task's held-out rows with the weights of `checkpoint`, when the
// task trains table data, does not evaluate on its own, and has ended.
void PrintHeldOutAtEnd(const engine::TrainContext& ctx, const std::string& checkpoint,
                       int64_t completed_steps);

}  // namespace saturn::worker
