// Command line of saturn-worker (docs/worker.md; the messages and the protocol
// version are in protocol/worker_protocol.h), parsed
// and checked without LibTorch.
//
//   WorkerOptions o = ParseWorkerOptions(argc, argv);   // InputError on bad flags
//   if (o.IsLauncher()) ...;
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace saturn::worker {

enum class Mode { kSearch, kExecute, kTechniques };

struct WorkerOptions {
  Mode mode = Mode::kSearch;
  std::string task_path;
  std::string technique;
  int gpus = 1;
  std::string out;
  std::string device_kind = "cpu";
  std::vector<int> device_ids;  // empty: 0 .. gpus-1
  double memory_gib = 0.0;      // 0: unlimited (cpu) / the device's size (cuda)
  int threads = 1;
  double timeout_s = 300.0;
  std::vector<std::string> plugins;  // technique plug-ins to load (engine/plugin.h)
  // Set on rank processes (by the launcher, or from Slurm's environment).
  int rank = -1;
  int world_size = 0;
  std::string rendezvous;
  bool rank_from_env = false;
  // search
  int warmup = 2;
  int measure = 5;
  // execute
  int64_t from_step = 0;
  int64_t to_step = 0;
  std::string checkpoint_dir;
  std::string knobs;  // JSON text, or a path to a JSON file
  int64_t checkpoint_every = 0;
  int keep_checkpoints = 0;  // 0: keep every checkpoint
  std::string save_model;

  std::vector<std::string> args;  // argv[1..], for starting rank processes

  bool IsRank() const { return rank >= 0; }
  int DeviceId(int rank_index) const;
  int64_t CapacityBytes() const;
};

// Parses argv (argv[0] is the program). `--help` prints usage and exits 0.
// Throws saturn::InputError for bad or inconsistent flags.
WorkerOptions ParseWorkerOptions(int argc, const char* const* argv);

}  // namespace saturn::worker
