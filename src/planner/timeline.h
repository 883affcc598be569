// GPU usage of one node over time: a step function, used by every
// constructive scheduler to place a task at the earliest time its GPUs are
// free (with backfilling into earlier gaps).
//
//   NodeTimeline t(8);
//   double s = t.EarliestStart(/*ready=*/0, /*duration=*/100, /*gpus=*/4);
//   t.Add(s, s + 100, 4);
#pragma once

#include <cstddef>
#include <vector>

namespace saturn {

class NodeTimeline {
 public:
  explicit NodeTimeline(int capacity);

  int capacity() const { return capacity_; }
  // Earliest t >= ready such that `gpus` more GPUs are free on [t, t+duration).
  // Requires gpus <= capacity.
  double EarliestStart(double ready, double duration, int gpus) const;
  // The same if it is before `cutoff`, else +inf, found without scanning
  // past `cutoff` (a decoder looking for a node better than its best so far).
  double EarliestStartBefore(double ready, double duration, int gpus, double cutoff) const;
  // GPUs in use at time t.
  int UsedAt(double t) const;
  // Marks `gpus` GPUs busy on [start, end).
  void Add(double start, double end, int gpus);
  // The time after which the node is idle forever.
  double LastEnd() const;
  void Clear();

 private:
  struct Step {
    double time;  // usage `used` holds from `time` to the next step's time
    int used;
  };
  // Index of the step containing time t (the last step with time <= t).
  std::size_t StepAt(double t) const;
  // Ensures a step starts exactly at t; returns its index.
  std::size_t SplitAt(double t);

  int capacity_;
  std::vector<Step> steps_;  // steps_[0].time == 0, last step has used == 0
  double full_until_ = 0.0;  // every GPU is busy on [0, full_until_)
};

}  // namespace saturn
