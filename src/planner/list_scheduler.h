// Constructive schedulers shared by the solvers.
//
// SerialDecoder is the workhorse: given an order of tasks and an option per
// task, it places each task at the earliest time any fitting node has its GPUs
// free (backfilling into gaps; ties go to the smallest node that fits, keeping
// big nodes for big tasks). Tasks whose option starts_now are placed first.
// It reuses its buffers, so local search can call it thousands of times.
// On very large instances (thousands of tasks on hundreds of nodes) it
// appends instead of backfilling: each node keeps its GPUs' free times and a
// task starts when its g-th GPU frees up, O(nodes x GPUs) per task; Compact
// (always backfilling, on fixed nodes) then closes the gaps.
//
//   SerialDecoder decoder(problem);
//   Schedule s;
//   double makespan = decoder.Decode(order, option_of_task, &s);
#pragma once

#include <vector>

#include "planner/problem.h"
#include "planner/schedule.h"
#include "planner/timeline.h"

namespace saturn {

class SerialDecoder {
 public:
  enum class Mode { kBackfill, kAppend };
  // Backfills unless the instance is very large (see PreferredMode).
  explicit SerialDecoder(const Problem& problem);
  SerialDecoder(const Problem& problem, Mode mode);
  static Mode PreferredMode(const Problem& problem);
  // Returns the makespan; writes the schedule if `out` is not null. Returns
  // +inf if a starts_now option cannot start at 0 (conflicting pins).
  double Decode(const std::vector<int>& order, const std::vector<int>& option_of_task,
                Schedule* out);
  // Places tasks in start order of `schedule`, keeping their options and
  // nodes, each as early as possible: never later than in `schedule`. Cleans
  // up schedules from LP solvers (tiny overlaps, needless gaps).
  Schedule Compact(const Schedule& schedule);

 private:
  // Start on node n for `o` in append mode: when o.gpus of its GPUs are free.
  double AppendStart(int n, const Option& o) const;
  void AppendPlace(int n, const Option& o, double start);

  const Problem& problem_;
  Mode mode_;
  std::vector<NodeTimeline> timelines_;
  std::vector<std::vector<double>> gpu_free_;  // append mode: per node, ascending
  std::vector<int> node_order_;                // nodes by size ascending, for best-fit ties
};

// Tasks sorted by the runtime of their chosen option, longest first (LPT);
// ties keep input order.
std::vector<int> LongestFirst(const Problem& problem, const std::vector<int>& option_of_task);

// The "one task per node" schedule of current practice: tasks in `order`, each
// on the node where it finishes first, holding all of that node's GPUs, with
// its fastest option at the largest GPU count the node has room for.
Schedule WholeNodeSchedule(const Problem& problem, const std::vector<int>& order);

}  // namespace saturn
