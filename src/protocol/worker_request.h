// One worker request: what the orchestrators (the profiler's trials, the
// executor's tasks, benches) ask saturn-worker to do, and what the worker
// reads back from its command line (docs/worker.md, "Invocation"). One
// record, one set of defaults, one table of flags behind both directions:
//
//   WorkerRequest r;                       // launcher side
//   r.mode = WorkerMode::kSearch; r.task_path = "t.json"; r.technique = "fsdp";
//   r.gpus = 2; r.out_path = "r.json";
//   std::vector<std::string> args = ToArgv(r);  // {"search", "--task", "t.json", ...}
//   WorkerRequest back = ParseWorkerRequest(args);  // worker side; back == r
//
// ToArgv writes the flags of the request's mode only, and only those away
// from their defaults (the required ones always): a search request that
// carries execute fields (a command task's steps, launch/command_task.h)
// loses them on the way, and the worker never sees them. Torch-free.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace saturn {

// Steps a search runs before it starts timing: the first steps allocate
// and initialise lazily, and their extra time is reported apart
// (warmup_step_s) as a launch's start cost.
inline constexpr int kDefaultWarmupSteps = 2;
// Steps a search times. Step times on CPU devices are right-skewed (a slow
// step every few); the mean of 10 is within ~5% of a 600-step run's mean
// where the median of 5 was 20-30% low (bench/executor).
inline constexpr int kDefaultMeasureSteps = 10;
// The largest array --pack-sizes measures (the profiler's largest is 1024).
inline constexpr int kMaxPackSize = 65536;
// How long a collective or the rendezvous waits before the rank fails as a
// peer failure (exit 4). 300 s, not less: a slow-but-alive peer must not
// fail a task, and some legitimate waits are long — the other ranks wait
// while rank 0 re-reads and verifies a checkpoint (a GPT-2 XL's is ~6 GiB),
// evaluates on held-out data, or while srun starts ranks on a busy cluster.
// A timeout there fails every retry the same way, so the task would never
// finish; a dead peer, by contrast, is noticed at once by the worker's
// launcher (its ranks are supervised), so the timeout only bounds real
// hangs, where waiting 5 minutes instead of 2 costs little. The engine's
// own default (engine/comm.h) is the same. The profiler asks for less
// (half its trial timeout): a trial is killed at that timeout anyway.
inline constexpr double kDefaultWorkerTimeoutS = 300.0;

enum class WorkerMode { kSearch, kExecute, kTechniques };

// "search", "execute", "techniques": the mode as the command line names it.
const char* WorkerModeName(WorkerMode mode);

struct WorkerRequest {
  WorkerMode mode = WorkerMode::kSearch;
  // Every mode (techniques: only plugins).
  std::vector<std::string> plugins;  // technique plug-ins to load (engine/plugin.h)
  // search and execute
  std::string task_path;  // the task's JSON (Contract 5 fields)
  std::string technique;
  int gpus = 1;
  std::string out_path;  // the result JSON, written atomically by rank 0
  std::string device_kind = "cpu";
  std::vector<int> device_ids;  // one per device; empty: 0 .. gpus-1
  double memory_gib = 0.0;      // declared capacity; 0: none (cpu) / the device's size (cuda)
  int threads = 1;              // intra-op threads per device
  double timeout_s = kDefaultWorkerTimeoutS;  // collectives and rendezvous
  // A rank process of a group: -1 for the launcher, which starts the ranks
  // (the worker's own launcher sets rank, world_size and rendezvous).
  int rank = -1;
  int world_size = 0;
  std::string rendezvous;  // a fresh folder the ranks share
  // The ranks were started by the launch backend (srun --ntasks): each
  // reads its rank and the group's size from Slurm's environment.
  bool rank_from_env = false;
  // search
  int warmup = kDefaultWarmupSteps;
  int measure = kDefaultMeasureSteps;
  // Analytic estimates (engine/estimate.h) instead of measuring: "" never,
  // "auto" where the trial cannot run on this machine (its devices' memory
  // together is more than the host has), "always". The device the estimate
  // is for: its dense peak at the task's precision (TFLOP/s; 0: unknown,
  // nothing can be estimated) and its link bandwidth (GB/s, one way).
  std::string estimate;
  double peak_tflops = 0.0;
  double link_gb_s = 0.0;
  // A table task alone (single, one device): after its own search, fused
  // arrays of K copies of it for each K, ascending, in the same process:
  // one start-up for every size (WorkerSearchResult::pack_sizes).
  std::vector<int> pack_sizes;
  // execute
  int64_t from_step = 0;
  int64_t to_step = 0;
  std::string checkpoint_dir;
  std::string knobs;             // JSON text (from the search), or a file holding it; "": defaults
  int64_t checkpoint_every = 0;  // steps; 0: only at to_step and on SIGTERM
  int keep_checkpoints = 0;      // the newest N; 0: keep every checkpoint
  std::string save_model;        // also write the final weights here
  // The model of the best evaluation so far, kept in this folder
  // (protocol/best_model.h); "": not kept. Ranked by `select`.
  std::string best_dir;
  std::string select = "eval_loss:min";  // METRIC:min|max

  bool IsRank() const { return rank >= 0; }
  // The device a rank uses: device_ids[rank], or the rank itself.
  int DeviceId(int rank_index) const;
  // memory_gib in bytes (0: none declared).
  int64_t CapacityBytes() const;

  bool operator==(const WorkerRequest&) const = default;
};

// The worker's arguments for `request` (argv after the program's name).
std::vector<std::string> ToArgv(const WorkerRequest& request);

// The request an argument list stands for (argv after the program's name),
// checked. Every flag of docs/worker.md, as `--flag value` or
// `--flag=value`; `--plugin` and `--device-ids` may repeat. Throws
// InputError naming the flag and what was expected: an unknown flag (with
// the closest known one), a flag of another mode, a missing value or
// required flag, a value that is not what the flag takes, a flag given
// twice, inconsistent flags (CheckWorkerRequest). Does not read the
// environment: a request with rank_from_env keeps rank -1 (the worker
// fills it in from Slurm's environment).
WorkerRequest ParseWorkerRequest(const std::vector<std::string>& args);
// The same from main's argc/argv (argv[0] is the program).
WorkerRequest ParseWorkerRequest(int argc, const char* const* argv);

// Throws InputError naming the flag of the first field out of range or
// inconsistent with another (e.g. --device-ids not one per device).
void CheckWorkerRequest(const WorkerRequest& request);

// saturn-worker's usage text, from the same table of flags (`--help`).
std::string WorkerUsage();

}  // namespace saturn
