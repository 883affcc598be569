#include "common/signals.h"

#include <signal.h>

namespace saturn {
namespace {

std::atomic<bool> g_stop{false};

void OnStop(int) {
  g_stop = true;
}

}  // namespace

void CatchStopSignals() {
  struct sigaction action {};
  action.sa_handler = OnStop;
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
}

const std::atomic<bool>& StopRequested() {
  return g_stop;
}

}  // namespace saturn
