// The orchestrators' side of the worker protocol (docs/worker.md): where the
// saturn-worker binary is, the command line for a search or an execute, and
// the results it writes.
//
//   WorkerCall call;
//   call.mode = WorkerCall::kSearch; call.task_path = "t.json"; call.technique = "fsdp";
//   call.gpus = 2; call.out_path = "r.json";
//   std::vector<std::string> argv = WorkerArgv(FindWorkerBinary(), call);
//   SearchResult r = ReadSearchResult("r.json");
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace saturn {

struct Workload;

constexpr int kWorkerProtocol = 1;

// Exit codes of the worker (docs/worker.md).
enum WorkerExit {
  kWorkerOk = 0,
  kWorkerInternal = 1,
  kWorkerBadInput = 2,
  kWorkerOom = 3,
  kWorkerPeerFailure = 4
};

struct WorkerCall {
  enum Mode { kSearch, kExecute } mode = kSearch;
  std::string task_path;
  std::string technique;
  int gpus = 1;
  std::string out_path;
  std::string device_kind = "cpu";
  std::vector<int> device_ids;  // empty: 0..gpus-1
  double memory_gib = 0.0;      // 0: no declared capacity
  int threads = 1;
  double timeout_s = 120.0;  // collectives and rendezvous
  std::vector<std::string> plugins;
  // Ranks started by the launch backend (srun --ntasks): each reads its rank
  // from the environment and meets the others in `rendezvous`.
  bool rank_from_env = false;
  std::string rendezvous;
  // search
  int warmup = -1;  // -1: the worker's default
  int measure = -1;
  // execute
  long from_step = 0;
  long to_step = 0;
  std::string checkpoint_dir;
  std::string knobs_json;  // from the search, "" for defaults
  long checkpoint_every = 0;
  std::string save_model;
};

// SATURN_WORKER if set, else saturn-worker next to this executable, else the
// build tree's src/worker/saturn-worker (seen from src/cli/, bench/<name>/ or
// tests/<name>/). Throws
// std::runtime_error naming the places looked at if none exists.
std::string FindWorkerBinary();

std::vector<std::string> WorkerArgv(const std::string& worker, const WorkerCall& call);

// Environment for worker processes: one BLAS thread each (unless the user set
// OPENBLAS_NUM_THREADS), since LibTorch's own threads do the parallel work and
// two thread pools would fight over the device's cores.
std::map<std::string, std::string> WorkerEnv();

// A technique a worker can train with (`saturn-worker techniques`).
struct WorkerTechnique {
  std::string name;
  bool one_process = false;  // runs on exactly one device
  std::string plugin;        // the plug-in that provides it; "" if built in
};

// The techniques a workload's engine tasks may use: the built-ins, plus, when
// it lists plug-ins, those the worker reports after loading them (the worker
// is run once, so a plug-in it refuses stops everything before any trial or
// training). Then checks every task's `techniques` list against them.
// Throws InputError naming the workload field (a refused plug-in, an unknown
// technique), std::runtime_error if the worker cannot run.
std::vector<WorkerTechnique> AvailableTechniques(const Workload& workload,
                                                 const std::string& worker);
// Names of `techniques`.
std::vector<std::string> TechniqueNames(const std::vector<WorkerTechnique>& techniques);

struct SearchResult {
  bool feasible = false;
  std::string reason;
  double step_s = 0.0;
  std::vector<double> step_samples_s;
  std::vector<double> warmup_step_s;  // warm-up steps: what a fresh start costs extra
  // A launch's fixed costs, besides the steps: from asking for the process
  // to its first step (process start, rendezvous, model and data, building
  // the trainer), and writing one checkpoint.
  double ready_unix_s = 0.0;  // when the worker was ready to build its trainer
  double setup_s = 0.0;       // building the chosen setting's trainer
  double done_unix_s = 0.0;   // when it had written its result (then shut down)
  double launch_s = 0.0;      // set by the launcher: SetLaunchCost
  double checkpoint_s = 0.0;
  std::vector<double> peak_memory_bytes;
  nlohmann::json knobs = nlohmann::json::object();
};

struct ExecuteResult {
  long completed_steps = 0;
  double final_loss = 0.0;
  bool preempted = false;
  std::string checkpoint;
  std::vector<double> peak_memory_bytes;
};

// Fills r.launch_s for a worker asked to start at `spawned_unix_s` and seen
// to end at `ended_unix_s`: start-up to ready, building the trainer, and
// shutting down after its result.
void SetLaunchCost(SearchResult& r, double spawned_unix_s, double ended_unix_s);

// Steps between periodic checkpoints of a task of `steps` steps: `every`, or
// a tenth of the task when 0 (what `saturn run --checkpoint-every` means).
long CheckpointInterval(long steps, long every);
// Checkpoints an uninterrupted run of the task writes: the periodic ones,
// the last one, and the trained model.
long CheckpointWrites(long steps, long every);

// Throw std::runtime_error (the worker broke the protocol) on a missing file,
// bad JSON or a foreign protocol version.
SearchResult ReadSearchResult(const std::string& path);
ExecuteResult ReadExecuteResult(const std::string& path);
nlohmann::json SearchResultToJson(const SearchResult& r);
SearchResult SearchResultFromJson(const nlohmann::json& j);

// A progress line "saturn: step=N loss=X step_s=Y [peak_mem_gib=Z]"; false if
// the line is not one.
struct StepReport {
  long step = -1;
  double loss = 0.0;
  double step_s = 0.0;
  double peak_mem_gib = -1.0;
};
bool ParseStepLine(const std::string& line, StepReport* report);

}  // namespace saturn
