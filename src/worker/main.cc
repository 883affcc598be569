// saturn-worker: runs one task's search or execute on given devices for the
// profiler and the executor. Internal; the protocol is docs/worker.md.
#include <signal.h>

#include <cstdio>

#include "common/error.h"
#include "worker/worker.h"

int main(int argc, char** argv) {
  // Past a file-size limit a write fails (EFBIG) like one to a full disk, and
  // the worker fails the attempt with that message instead of being killed.
  ::signal(SIGXFSZ, SIG_IGN);
  saturn::WorkerRequest request;
  try {
    request = saturn::worker::ReadCommandLine(argc, argv);
  } catch (const saturn::InputError& e) {
    std::fprintf(stderr, "saturn-worker: error: %s\n", e.what());
    return 2;
  }
  return saturn::worker::RunWorker(request);
}
