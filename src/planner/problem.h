// The SPASE problem as the solvers see it.
//
// Every task has options (technique, GPU count, runtime); every node has GPU
// slots. A solution picks for every task one option, one node with enough
// GPUs, and a start time, so that on every node the GPUs in use never exceed
// its slots; GPU ids are given afterwards (schedule.h), which is exact: an
// interval schedule within capacity can always be coloured without moving a
// start. Re-planning adds two things to options: `node` pins an option to one
// node and `starts_now` forces it to start at time 0 on `gpu_ids` (a running
// task that keeps its devices).
//
//   Problem p = ProblemFromProfile(profile, cluster);
//   for (int j = 0; j < p.NumTasks(); ++j)
//     for (int o : UsefulOptions(p.tasks[j])) ...   // non-dominated options
#pragma once

#include <string>
#include <vector>

#include "contracts/cluster.h"
#include "contracts/profile.h"

namespace saturn {

struct Option {
  std::string technique;
  int gpus = 1;
  double runtime_s = 0.0;
  int node = -1;             // -1: any node with enough GPUs; else only this node
  bool starts_now = false;   // must start at time 0 (on `gpu_ids`, on `node`)
  std::vector<int> gpu_ids;  // devices a starts_now option keeps
  int type = -1;             // index into Problem::types: only nodes of that type; -1: any
};

struct Task {
  std::string name;
  std::vector<Option> options;
};

struct NodeSlots {
  std::string name;
  int gpus = 0;
  int type = 0;  // index into Problem::types
};

struct Problem {
  std::vector<Task> tasks;
  std::vector<NodeSlots> nodes;
  // GPU type names (ClusterNode::gpu_type; "" for a cluster's unnamed one);
  // empty for a problem built without types (every node of type 0).
  std::vector<std::string> types;

  int NumTasks() const { return static_cast<int>(tasks.size()); }
  int NumNodes() const { return static_cast<int>(nodes.size()); }
  int TotalGpus() const;
  int MaxNodeGpus() const;
  // Whether `option` may run on node `node`.
  bool Fits(const Option& option, int node) const {
    return option.gpus <= nodes[node].gpus && (option.node < 0 || option.node == node) &&
           (option.type < 0 || option.type == nodes[node].type);
  }
  // The type name of an option's nodes ("" for untyped), and of a node.
  const std::string& TypeName(int type) const;
  // Whether nodes are of more than one type.
  bool Mixed() const { return types.size() > 1; }
  // Whether any node can run `option`.
  bool FitsSomewhere(const Option& option) const;
};

// One task per profile task (in order of first appearance), one option per
// feasible row (of the row's GPU type); one node per cluster node.
Problem ProblemFromProfile(const ProfileTable& profile, const Cluster& cluster);

// Indices of the options of `task` that no other option dominates (another
// option of the same type with no more GPUs and no longer runtime). Pinned
// options (node or starts_now set) are always kept and never dominate others.
std::vector<int> UsefulOptions(const Task& task);

// The fastest option using exactly `gpus` GPUs (ties: first), or -1.
int FastestOptionWithGpus(const Task& task, int gpus);
// The fastest option among those with the largest GPU count <= `max_gpus`
// that the task has, or -1 if every option needs more.
int FastestOptionAtMost(const Task& task, int max_gpus);
// The fastest option that runs on node `node` among those with the largest
// GPU count it has there (its whole node where it can), or -1.
int FastestOptionOnNode(const Problem& problem, const Task& task, int node);
// The option with the fewest GPUs (ties: fastest), or -1 if none fits anywhere.
int SmallestOption(const Problem& problem, const Task& task);
// A copy of `problem` for a search looking for a plan shorter than
// `makespan`: no such plan can use an option that runs at least that long,
// so those options run at least 2 x `makespan` instead and the search stops
// trying them (option indices are kept, so schedules carry over: a plan of
// the copy is a plan of `problem`, whose runtimes are no longer). A task
// with no shorter option keeps its options as they are.
Problem WithoutOptionsAtLeast(const Problem& problem, double makespan);
// The task's starts_now option (a running task that keeps its devices), or -1.
// Baseline solvers keep such tasks running.
int PinnedOption(const Task& task);

}  // namespace saturn
