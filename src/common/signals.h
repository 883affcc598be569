// SIGTERM and SIGINT as a request to stop gracefully: long-running commands
// (saturn run, saturn serve) poll the flag, stop their workers (which
// checkpoint) and exit.
//
//   CatchStopSignals();
//   while (!StopRequested()) work();
#pragma once

#include <atomic>

namespace saturn {

void CatchStopSignals();
// Set once SIGTERM or SIGINT has arrived since CatchStopSignals.
const std::atomic<bool>& StopRequested();

}  // namespace saturn
