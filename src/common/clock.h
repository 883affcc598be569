// Injected time: everything that plans, simulates or supervises reads time
// through a Clock, so tests can drive it by hand and stay deterministic.
//
//   SteadyClock wall;                 // real elapsed seconds
//   ManualClock fake; fake.Advance(5);
//   wall.Sleep(0.1);                  // fake.Sleep(0.1) advances fake instead
//   Deadline d(wall, 2.0);            // 2 s from now
//   while (!d.Expired()) work();
#pragma once

#include <chrono>
#include <limits>
#include <thread>

namespace saturn {

class Clock {
 public:
  virtual ~Clock() = default;
  // Seconds since an arbitrary fixed origin.
  virtual double Now() const = 0;
  // Waits `seconds` on this clock (a ManualClock moves on instead).
  virtual void Sleep(double seconds) const {
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }
};

// Seconds on the steady clock (for timing inside one process, where no
// Clock is injected: the engine's step and phase timers).
inline double MonotonicSeconds() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

class SteadyClock final : public Clock {
 public:
  double Now() const override { return MonotonicSeconds(); }
};

// Seconds since the Unix epoch: comparable across processes (and, with
// synchronised clocks, machines), e.g. when a launch was asked for and when
// the launched program was ready.
class UnixClock final : public Clock {
 public:
  double Now() const override {
    using namespace std::chrono;
    return duration<double>(system_clock::now().time_since_epoch()).count();
  }
};

class ManualClock final : public Clock {
 public:
  double Now() const override { return now_; }
  // Time moves on by `seconds` at once: a loop that waits on this clock
  // runs its turns in simulated time.
  void Sleep(double seconds) const override { now_ += seconds; }
  void Advance(double seconds) { now_ += seconds; }
  void Set(double seconds) { now_ = seconds; }

 private:
  mutable double now_ = 0.0;
};

// A point in time on a clock; an infinite budget never expires.
class Deadline {
 public:
  Deadline(const Clock& clock, double budget_s) : clock_(&clock), end_(clock.Now() + budget_s) {}
  static Deadline Never(const Clock& clock) {
    return Deadline(clock, std::numeric_limits<double>::infinity());
  }
  bool Expired() const { return clock_->Now() >= end_; }
  double Remaining() const { return end_ - clock_->Now(); }

 private:
  const Clock* clock_;
  double end_;
};

}  // namespace saturn
