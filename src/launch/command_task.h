// Tasks that are the user's own programs (`type: command` in the workload):
// any training program, one command template per technique it supports.
//
// Saturn fills the placeholders {gpus}, {gpu_ids} (comma list), {steps} (the
// step to stop at), {start_step} (the step to resume from), {checkpoint_dir}
// and {node}, and also passes them as SATURN_GPUS, SATURN_GPU_IDS,
// SATURN_STEPS, SATURN_START_STEP, SATURN_CHECKPOINT_DIR, SATURN_NODE,
// SATURN_TECHNIQUE and SATURN_SEED (the task's seed, swept like any task's);
// on GPUs the devices come as CUDA_VISIBLE_DEVICES. The program runs under
// /bin/sh -c in the workload's folder, after kShellPreamble.
//
// The program's side of the contract (docs/byo.md): print a line
// "saturn: step=N loss=X step_s=Y [peak_mem_gib=Z]" after each step (or
// nothing, and Saturn times the whole run from outside); exit 0 when it
// reaches {steps}; on SIGTERM, save a checkpoint in {checkpoint_dir} and exit
// 0 (it is then restarted with {start_step} = the last step it reported).
//
//   CommandCall c{.technique = "ddp", .gpus = 2, .gpu_ids = {0, 1}, .steps = 100};
//   WorkerJob job = CommandJob(task.spec, c);
#pragma once

#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "launch/backend.h"
#include "launch/worker.h"

namespace saturn {

struct CommandCall {
  std::string technique;
  int gpus = 1;
  std::vector<int> gpu_ids;
  std::string node;
  long start_step = 0;
  long steps = 0;
  std::string checkpoint_dir;
  std::string device_kind = "cpu";
};

// The template for `technique` with its placeholders filled in.
std::string ExpandCommand(const std::string& templ, const CommandCall& call);

// What the shell runs before the template: on SIGTERM it waits for the
// command in flight and exits with its status (no later command runs).
inline constexpr const char* kShellPreamble = "trap 'exit $?' TERM; ";

// A job running the task's program (spec: the task's JSON, type command).
WorkerJob CommandJob(const nlohmann::json& spec, const CommandCall& call);

// The one test for a user's program: the task JSON says `type: command`.
bool IsCommandTask(const nlohmann::json& spec);

// Where a task's job runs: a node's devices, and how many processes the
// launch backend starts for it.
struct JobTarget {
  std::string node;  // "": the backend picks one
  std::vector<int> gpu_ids;
  int ranks = 1;
  // What a user's program is told its node is ({node}, SATURN_NODE) when
  // `node` is empty.
  std::string node_label;
};

// The one way the profiler and the executor call a task: the engine's
// worker for `request` (search or execute), or, for a command task, the
// user's program in the command contract's terms (technique, GPUs, steps
// [request.from_step, request.to_step), checkpoint folder). Paths for
// stdout and stderr are the caller's.
WorkerJob TaskJob(const nlohmann::json& spec, const std::string& worker,
                  const WorkerRequest& request, const JobTarget& target);

// The outcome of a profiling run of a program that ran `steps` steps
// (`warmup` of them untimed) in `wall_s` seconds with output in `log`.
WorkerSearchResult CommandSearchResult(const std::string& log, int exit_status, double wall_s,
                                       long steps, int warmup);
// The same from the output itself.
WorkerSearchResult CommandSearchResult(std::istream& output, int exit_status, double wall_s,
                                       long steps, int warmup);

}  // namespace saturn
