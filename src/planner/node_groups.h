// Large-neighbourhood search over groups of nodes: auto's search at scale.
//
// A task runs on one node, so a schedule is one independent schedule per
// node and the makespan is the latest node's end. Each step takes the node
// that ends last (the critical one) and one to three others (the least
// loaded, or random ones), cuts out the problem of just those nodes and
// their tasks, and re-optimises it with the same local search as the whole
// problem (construct.h, local_search.h): tasks may change node within the
// group, option and order. The result replaces the group's part of the
// schedule when the group's last end moves earlier (or stays and the group's
// ends sum less). A group of 3 nodes and their ~30 tasks decodes ~100x faster
// than 300 tasks on 32 nodes, so the search tries far more plans where it
// matters. Nodes of different sizes mix freely; pinned options (node,
// starts_now) keep their node. Re-planning draws partners from the nodes
// where progress moved (`focus`), so it searches where something changed.
//
//   NodeGroupSearch lns(problem, deadline, {.target = bound, .seed = 3, .focus = {}});
//   Schedule better = lns.Improve(schedule, /*work_limit=*/-1, on_improved);
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "common/clock.h"
#include "planner/problem.h"
#include "planner/schedule.h"

namespace saturn {

struct NodeGroupOptions {
  double target = 0.0;  // stop once the makespan is at most this
  uint64_t seed = 0;
  // Nodes to search around (re-planning: where progress moved): half of a
  // group's partners of the critical node come from here when it is not empty.
  std::vector<int> focus;
};

class NodeGroupSearch {
 public:
  NodeGroupSearch(const Problem& problem, const Deadline& deadline, NodeGroupOptions options);

  // Improves `schedule` (feasible) until `work_limit` work units are spent
  // (< 0: no limit), the deadline, the target, or a stall (many groups in a
  // row without improvement); `on_improved(makespan)` is called whenever the
  // makespan drops. Returns the best schedule.
  Schedule Improve(Schedule schedule, double work_limit,
                   const std::function<void(double)>& on_improved = nullptr);

  double work() const { return work_; }
  long groups_tried() const { return groups_tried_; }
  long groups_improved() const { return groups_improved_; }

 private:
  std::vector<int> PickGroup(const std::vector<double>& node_end);
  // Re-optimises the group's part of `schedule`; returns whether it improved.
  bool ImproveGroup(const std::vector<int>& group, Schedule& schedule,
                    std::vector<double>& node_end);

  const Problem& problem_;
  const Deadline& deadline_;
  NodeGroupOptions options_;
  std::mt19937_64 rng_;
  double work_ = 0.0;
  long groups_tried_ = 0;
  long groups_improved_ = 0;
};

}  // namespace saturn
