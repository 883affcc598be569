#include "engine/phases.h"

#include "common/clock.h"

namespace saturn::engine {

const char* PhaseName(Phase phase) {
  switch (phase) {
    case Phase::kData:
      return "data";
    case Phase::kForward:
      return "forward";
    case Phase::kBackward:
      return "backward";
    case Phase::kOptimizer:
      return "optimizer";
    case Phase::kCommunication:
      return "communication";
    case Phase::kBookkeeping:
      return "bookkeeping";
  }
  return "?";
}

PhaseRecorder& PhaseRecorder::Get() {
  static PhaseRecorder recorder;
  return recorder;
}

bool PhaseRecorder::Recording() const {
  return recording_.load(std::memory_order_relaxed) && std::this_thread::get_id() == owner_;
}

void PhaseRecorder::BeginStep(std::function<void()> sync) {
  owner_ = std::this_thread::get_id();
  sync_ = std::move(sync);
  stack_.assign(1, Phase::kBookkeeping);
  times_ = PhaseTimes{};
  if (sync_) sync_();
  since_ = MonotonicSeconds();
  recording_.store(true);
}

void PhaseRecorder::Charge() {
  if (sync_) sync_();
  double now = MonotonicSeconds();
  times_[stack_.back()] += now - since_;
  since_ = now;
}

void PhaseRecorder::Enter(Phase phase) {
  Charge();
  stack_.push_back(phase);
}

void PhaseRecorder::Leave() {
  Charge();
  if (stack_.size() > 1) stack_.pop_back();
}

PhaseTimes PhaseRecorder::EndStep() {
  if (!recording_.load()) return times_;
  Charge();
  recording_.store(false);
  return times_;
}

}  // namespace saturn::engine
