// Where a training step's time goes: data, forward, backward, optimizer,
// communication, and the rest ("bookkeeping": block boundaries, memory
// metering, hooks, Python-free glue). Search turns recording on for its
// measured steps and reports the mean seconds per phase next to the step
// time, so a gap to another implementation is explained by measurement.
//
// Phases are exclusive: a PhaseScope opened inside another (a gradient
// all-reduce waited for inside backward) charges its time to itself and
// pauses the outer one, so the phases of a step add up to its wall time.
// Only the thread that began the step records; scopes cost two clock reads
// while recording and one relaxed load otherwise.
//
//   PhaseRecorder::Get().BeginStep();
//   { PhaseScope s(Phase::kForward); ... }
//   PhaseTimes t = PhaseRecorder::Get().EndStep();   // t.seconds[kForward]
#pragma once

#include <array>
#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace saturn::engine {

enum class Phase { kData, kForward, kBackward, kOptimizer, kCommunication, kBookkeeping };
constexpr int kPhaseCount = 6;
const char* PhaseName(Phase phase);

struct PhaseTimes {
  std::array<double, kPhaseCount> seconds{};
  double& operator[](Phase phase) { return seconds[static_cast<int>(phase)]; }
  double operator[](Phase phase) const { return seconds[static_cast<int>(phase)]; }
};

class PhaseRecorder {
 public:
  static PhaseRecorder& Get();
  // `sync` (may be empty) runs before every clock read: a CUDA device's
  // synchronize, so that phases mean device time there.
  void BeginStep(std::function<void()> sync = {});
  PhaseTimes EndStep();
  bool Recording() const;
  void Enter(Phase phase);
  void Leave();

 private:
  void Charge();
  std::atomic<bool> recording_{false};
  std::thread::id owner_;
  std::function<void()> sync_;
  std::vector<Phase> stack_;
  double since_ = 0.0;
  PhaseTimes times_;
};

class PhaseScope {
 public:
  explicit PhaseScope(Phase phase) : active_(PhaseRecorder::Get().Recording()) {
    if (active_) PhaseRecorder::Get().Enter(phase);
  }
  ~PhaseScope() {
    if (active_) PhaseRecorder::Get().Leave();
  }
  PhaseScope(const PhaseScope&) = delete;
  PhaseScope& operator=(const PhaseScope&) = delete;

 private:
  bool active_;
};

}  // namespace saturn::engine
