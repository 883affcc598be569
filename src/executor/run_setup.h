// Setting up a Run (part of the executor, run.h): checks that can refuse
// the run come before anything is written. A new run profiles and plans; a
// resumed run (--resume) and a restarted service continue from their state
// through the same code (run_resume.cc): every task from its last
// checkpoint, the rest planned afresh when they resume on other nodes.
//
//   RunContext run(options, clock);
//   SetUpRun(run);   // InputError on bad input or a run that cannot resume
#pragma once

#include <set>
#include <string>
#include <vector>

#include "executor/run_context.h"

namespace saturn {

// `saturn run`: a new run, a resumed one, or one moved aside (--fresh). A
// new run refused before it trained (a task fits nowhere) removes what it
// wrote, so the same command can use the folder again.
void SetUpRun(RunContext& run);
// `saturn serve`: opens the service's state folder on the source's cluster
// (a Slurm allocation's where it says `from: slurm`) and, for a service
// restarted there, brings back every stored submission. Returns the tasks
// to profile again (submitted but not profiled before the restart).
std::vector<WorkloadTask> SetUpService(RunContext& run, const ServiceSource& source);

// --- Continuing from the state (run_resume.cc) ---
// Loads the saved profile (limited to the nodes the run resumes on), keeps
// the workload's tasks but `dropped`, restores the plan and every task, logs
// `resumed`. Returns whether the run resumes on other nodes than it ran on.
bool ContinueFromState(RunContext& run, const std::set<std::string>& dropped);
// Plans the work left: afresh for other nodes (`moved`), or for tasks the
// plan followed lacks.
void PlanTheRest(RunContext& run, bool moved);
// `saturn run --resume` on the workload `workload_text` (which may add tasks).
void ResumeWorkload(RunContext& run, const std::string& workload_text);
// A service restarted on its state: see SetUpService.
std::vector<WorkloadTask> RestartService(RunContext& run);
// A submission stored by the service, read on the run's cluster (run_tasks.cc).
Workload ParseStoredSubmission(const RunContext& run, const Submission& submission);

// Every task from the state after a crash or a stop: finished ones stay
// finished; any other continues from its newest checkpoint (a worker left
// from before is killed first).
void RestoreTasks(RunContext& run);
// Each task's folder and its task.json (kept if it exists).
void WriteTaskFolders(const RunContext& run);

}  // namespace saturn
