// Following a plan at run time: which task may start now, on which devices.
//
// A plan fixes, for every GPU, the order of the tasks that will use it. A
// task starts as soon as it is next on every one of its GPUs and all of them
// are free (a gang start), not at its planned time: when work runs faster
// than planned, everything behind it moves up, and when it runs slower
// nothing overtakes it (no two tasks ever share a device). The executor and
// the simulator both dispatch through this class.
//
//   PlanQueues q;
//   q.Adopt(problem, plan, is_running);
//   for (int j : q.Order()) if (q.CanStart(j, gpu_free, is_finished)) start(j, *q.Get(j));
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "contracts/plan.h"
#include "planner/problem.h"

namespace saturn {

struct Assignment {
  int option = -1;  // index into the base problem's task options
  int node = -1;
  std::vector<int> gpu_ids;
  double planned_start = 0.0;
};

class PlanQueues {
 public:
  // Builds the per-GPU orders of `plan` (running tasks first on their GPUs,
  // then by planned start). Throws std::logic_error if the plan names an
  // unknown task, node or configuration. Costs O(plan tasks) beside a sort:
  // the index of task and node names is kept between calls (rebuilt when
  // `base` is not the problem it was built for).
  void Adopt(const Problem& base, const Plan& plan, const std::function<bool(int)>& is_running);
  // The task's assignment in the current plan, or nullptr if it has none.
  const Assignment* Get(int task) const;
  // Planned tasks in the order they were queued.
  const std::vector<int>& Order() const { return order_; }
  // Whether `task` is next on all its GPUs and they are all free.
  bool CanStart(int task, const std::function<bool(int node, int gpu)>& gpu_free,
                const std::function<bool(int)>& is_finished);
  // The task queued next on a GPU (skipping finished ones), or -1.
  int Next(int node, int gpu, const std::function<bool(int)>& is_finished);

 private:
  // Index of base task (and node) names; whether it is still `base`'s is
  // checked on every look-up, so a grown or different problem rebuilds it.
  int TaskIndex(const Problem& base, const std::string& name);
  int NodeIndex(const Problem& base, const std::string& name);

  std::unordered_map<std::string, int> task_index_, node_index_;
  std::vector<Assignment> assignment_;                // per base task; option -1 if unplanned
  std::vector<std::vector<std::vector<int>>> queue_;  // [node][gpu] -> tasks
  std::vector<std::vector<size_t>> head_;
  std::vector<int> order_;
};

}  // namespace saturn
