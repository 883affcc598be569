// The orchestrators' side of the worker protocol (docs/worker.md): where the
// saturn-worker binary is, its environment, the techniques it offers, and
// what a launch costs. The request itself, and its command line, is
// protocol/worker_request.h; the results, protocol/worker_protocol.h.
//
//   WorkerRequest r;
//   r.mode = WorkerMode::kSearch; r.task_path = "t.json"; r.technique = "fsdp";
//   r.gpus = 2; r.out_path = "r.json";
//   std::vector<std::string> argv = ToArgv(r);
//   argv.insert(argv.begin(), FindWorkerBinary());
//   WorkerSearchResult result = ReadSearchResult("r.json");
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "protocol/worker_protocol.h"
#include "protocol/worker_request.h"

namespace saturn {

struct Workload;

// The saturn-worker program: $SATURN_WORKER if set (it must exist), else
// the first that exists of WorkerCandidates(the running program's folder):
// beside it, <prefix>/libexec/saturn/ of an installed tree (bin/saturn), and
// the build tree's src/worker/ seen from src/cli/, bench/<name>/ or
// tests/<name>/. Throws std::runtime_error naming every place looked at.
std::string FindWorkerBinary();
std::string FindWorkerBinaryFrom(const std::string& exe_dir, const char* saturn_worker_env);
std::vector<std::string> WorkerCandidates(const std::string& exe_dir);

// Environment for worker processes (unless the user set these): one BLAS
// thread to start with (the worker gives OpenBLAS its device's budget), and
// OMP_WAIT_POLICY=PASSIVE. LibTorch's OpenMP threads and OpenBLAS's own
// pthreads take turns on a device's cores; spinning OpenMP threads keep the
// cores from the BLAS threads between ops. Measured (bench/engine, GPT 4 x
// 256, seq 128, 2 threads): 0.87-1.0 s per step spinning, 0.46 s passive,
// where 1 thread takes 0.56 s. libgomp reads it only at start-up, so it must
// be in the environment the worker starts with.
std::map<std::string, std::string> WorkerEnv();

// The techniques a workload's engine tasks may use, as the worker reports
// them after loading the workload's plug-ins (the worker runs once per
// worker and plug-in list in a process, so a plug-in it refuses stops
// everything before any trial or training). Then checks every task against
// them: each name in its `techniques` is known, and a task allowed only
// batch-splitting techniques has a sample for each of its GPUs.
// Throws InputError naming the workload's file, line and field (a refused
// plug-in, an unknown technique, a batch too small), std::runtime_error if
// the worker cannot run.
std::vector<WorkerTechnique> AvailableTechniques(const Workload& workload,
                                                 const std::string& worker);
// Starts asking `worker` for its techniques (with `plugins`) in the
// background, so that AvailableTechniques for that worker and plug-in list
// finds them ready: the worker's start-up (~0.8 s) overlaps reading the
// workload (a table's CSV). A failed ask is asked again by
// AvailableTechniques, whose error names the workload. An empty `worker`:
// FindWorkerBinary's, if there is one.
void PrefetchTechniques(std::string worker, const std::vector<std::string>& plugins);

// The GPU counts from [lo, hi] that `technique` can run on.
std::vector<int> GpuCounts(const WorkerTechnique& technique, int lo, int hi);
// Names of `techniques`.
std::vector<std::string> TechniqueNames(const std::vector<WorkerTechnique>& techniques);

// Fills r.launch_s for a worker asked to start at `spawned_unix_s` and seen
// to end at `ended_unix_s`: start-up to ready, building the trainer, and
// shutting down after its result.
void SetLaunchCost(WorkerSearchResult& r, double spawned_unix_s, double ended_unix_s);

// Steps between periodic checkpoints of a task of `steps` steps: `every`, or
// a tenth of the task when 0 (what `saturn run --checkpoint-every` means).
long CheckpointInterval(long steps, long every);
// Checkpoints an uninterrupted run of the task writes: the periodic ones,
// the last one, and the trained model.
long CheckpointWrites(long steps, long every);

}  // namespace saturn
