// saturn-worker's command line: the worker request (protocol/worker_request.h,
// docs/worker.md) as this process reads it, with what only a running worker
// can fill in: `--help`, and the rank of a process Slurm started
// (--rank-from-env). Torch-free.
//
//   WorkerRequest r = ReadCommandLine(argc, argv);   // InputError on bad flags
//   if (!r.IsRank()) ...;                            // the launcher
#pragma once

#include "protocol/worker_request.h"

namespace saturn::worker {

// Parses argv (argv[0] is the program; ParseWorkerRequest). `--help` or
// `-h` prints the usage and exits 0. With --rank-from-env the rank and the
// group's size come from SLURM_PROCID and SLURM_NTASKS. Throws
// saturn::InputError for bad or inconsistent flags.
WorkerRequest ReadCommandLine(int argc, const char* const* argv);

}  // namespace saturn::worker
