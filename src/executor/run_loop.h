// The loop of `saturn run` and `saturn serve` (run.h):
// each turn polls the workers, re-plans in the background, starts what the
// plan lets start and saves the run clock; the service adds its requests,
// arrivals and views through hooks.
//
//   RunLoop loop(run, dispatcher, replanner);
//   loop.Run({.stop = [&] { return run.AllDone() || StopRequested(); }});
//   if (StopRequested()) loop.Drain();   // workers checkpoint, run_interrupted
//   loop.Finish();
#pragma once

#include <functional>

namespace saturn {

struct RunContext;
class Dispatcher;
class Replanner;

// What a caller adds to each turn of the loop; every hook may be empty.
struct LoopHooks {
  // First in every turn (the service: requests from its HTTP threads).
  std::function<void()> before;
  // After the workers are polled (the service: arrivals profiled).
  std::function<void()> after_poll;
  // Whether to leave the loop now (checked after after_poll).
  std::function<bool()> stop;
  // Whether a re-plan may start or be applied now (the service: not while
  // arrivals are being planned in).
  std::function<bool()> may_replan;
  // Last in every turn (progress lines; the service's views and stream).
  std::function<void()> after;
};

class RunLoop {
 public:
  RunLoop(RunContext& run, Dispatcher& dispatcher, Replanner& replanner)
      : run_(run), dispatcher_(dispatcher), replanner_(replanner) {}

  // Turns until hooks.stop() says so.
  void Run(const LoopHooks& hooks);
  // Stops every worker the way a plan switch does (they checkpoint), waits
  // for them, and logs run_interrupted: the run is left resumable.
  void Drain();
  // Lets a re-plan in flight finish and saves the run clock.
  void Finish();

 private:
  void SaveClock();

  RunContext& run_;
  Dispatcher& dispatcher_;
  Replanner& replanner_;
  double last_save_ = -1e9;
};

}  // namespace saturn
