#include "executor/run_loop.h"

#include "common/defaults.h"
#include "executor/dispatcher.h"
#include "executor/replanner.h"
#include "executor/run_context.h"

namespace saturn {

void RunLoop::Run(const LoopHooks& hooks) {
  while (true) {
    if (hooks.before) hooks.before();
    dispatcher_.Poll();
    if (hooks.after_poll) hooks.after_poll();
    if (hooks.stop && hooks.stop()) break;
    if (run_.NumTasks() > 0 && !run_.AllDone() && (!hooks.may_replan || hooks.may_replan())) {
      replanner_.Poll();
    }
    dispatcher_.Dispatch();
    if (run_.Now() - last_save_ >= defaults::kClockSaveS) SaveClock();
    if (hooks.after) hooks.after();
    run_.clock.base().Sleep(defaults::kLoopPauseS);
  }
}

void RunLoop::Drain() {
  for (int j = 0; j < run_.NumTasks(); ++j)
    dispatcher_.Preempt(j);
  while (true) {
    dispatcher_.Poll();
    if (!dispatcher_.AnyRunning()) break;
    run_.clock.base().Sleep(defaults::kLoopPauseS);
  }
  run_.Emit(events::RunInterrupted(run_.Now()));
  SaveClock();
}

void RunLoop::Finish() {
  replanner_.Wait();
  SaveClock();
}

void RunLoop::SaveClock() {
  last_save_ = run_.Now();
  run_.site.state->Set(meta::kClockS, last_save_);
}

}  // namespace saturn
