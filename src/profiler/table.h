// The profile table from a profiler run's trials (profiler.h, RunProfiler's
// last step): one row per feasible configuration of each task, less those
// that measured faster than a simpler one only within noise
// (LeaveOutWithinNoise).
#pragma once

#include <functional>
#include <string>

#include "profiler/profiler.h"

namespace saturn {

// How simple `technique` is for `task`: lower is simpler.
using TechniqueRank = std::function<int(const WorkloadTask& task, const std::string& technique)>;

// Fills run.table and run.within_noise from run.trials. InputError for a
// task with no feasible configuration: its first line says what the task
// needs against what the devices have and what would make it fit (LoRA,
// bf16, more or larger devices), the lines after it each configuration's
// reason (InfeasibleReason).
void BuildTable(const Workload& workload, const ProfilerOptions& options, const TechniqueRank& rank,
                ProfileRun& run);

// Why a configuration is infeasible, as the error and the summary say it:
// an out-of-memory reason always as "out of memory: needs X per device,
// has Y (...)", the device's capacity added where the worker's reason does
// not know it (an allocation past the hard limit: "needs more than X");
// any other reason as the worker gave it.
std::string InfeasibleReason(const Trial& t);

// The trial's result as the planner sees the task: step_s with evaluation's
// share (StepWithEvaluation); and the task's runtime from it (RuntimeEstimate).
WorkerSearchResult PlannedResult(const WorkloadTask& task, const Trial& t);
double PlannedRuntime(const WorkloadTask& task, const Trial& t, long checkpoint_every);

}  // namespace saturn
