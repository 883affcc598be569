// The worker's result files (docs/worker.md): written atomically, and an
// infeasible search's result; shared by worker.cc and array_job.cc.
//
//   WriteResult(request.out_path, Infeasible(request, "does not fit"));
#pragma once

#include <string>

#include "common/fs.h"
#include "protocol/worker_protocol.h"
#include "worker/options.h"

namespace saturn::worker {

template <typename Message>
void WriteResult(const std::string& path, const Message& message) {
  WriteFileAtomic(path, ToJson(message).dump(2) + "\n");
}

// An infeasible search result; a feasible one fills in the measurements.
inline WorkerSearchResult Infeasible(const WorkerRequest& o, const std::string& reason) {
  WorkerSearchResult r;
  r.technique = o.technique;
  r.gpus = o.gpus;
  r.reason = reason;
  return r;
}

}  // namespace saturn::worker
