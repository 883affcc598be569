// saturn-worker's body: runs search or execute of one task, as the launcher
// of rank processes or as one rank (docs/worker.md), and maps failures to the
// protocol's exit statuses.
//
//   int status = RunWorker(ReadCommandLine(argc, argv));
#pragma once

#include "worker/options.h"

namespace saturn::worker {

int RunWorker(const WorkerRequest& request);

}  // namespace saturn::worker
