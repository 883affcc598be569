// The remaining problem and the re-timed current plan (replan.h).
#include <algorithm>
#include <limits>
#include <string_view>
#include <unordered_map>

#include "planner/timeline.h"
#include "replan/replan.h"

namespace saturn {
namespace {

int LeastAreaOption(const Problem& problem, const Task& task) {
  int best = -1;
  for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
    const Option& c = task.options[o];
    if (c.starts_now || !problem.FitsSomewhere(c)) continue;
    if (best < 0 || c.gpus * c.runtime_s < task.options[best].gpus * task.options[best].runtime_s) {
      best = o;
    }
  }
  return best;
}

// The option of `task` that runs the planned configuration on `node`, or -1.
int PlannedOption(const Problem& problem, const Task& task, const PlanTask& planned, int node) {
  for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
    const Option& c = task.options[o];
    if (!c.starts_now && c.gpus == planned.gpus && c.technique == planned.technique &&
        problem.Fits(c, node)) {
      return o;
    }
  }
  return -1;
}

}  // namespace

RemainingProblem BuildRemainingProblem(const Problem& base,
                                       const std::vector<TaskProgress>& progress,
                                       const ReplanPolicy& policy) {
  RemainingProblem r;
  r.problem.nodes = base.nodes;
  r.problem.types = base.types;
  for (int j = 0; j < base.NumTasks(); ++j) {
    const TaskProgress& p = progress[j];
    if (!p.arrived || p.finished) continue;
    const Task& task = base.tasks[j];
    double left = std::max(0.0, std::min(1.0, p.expected) - p.done) * p.slowdown;
    Task t;
    t.name = task.name;
    t.options.reserve(task.options.size() + (p.running ? 1 : 0));
    int keep = -1;
    bool pinned_only = p.running && !policy.allow_preemption;
    bool restarts = p.running || p.has_checkpoint || p.done > 0;
    for (int o = 0; o < static_cast<int>(task.options.size()) && !pinned_only; ++o) {
      if (task.options[o].starts_now) continue;
      Option& opt = t.options.emplace_back(task.options[o]);
      opt.runtime_s = left * opt.runtime_s + (restarts ? policy.switch_cost_s : 0.0);
      opt.runtime_s = std::max(opt.runtime_s, 1e-3);
    }
    if (p.running) {
      Option& keep_running = t.options.emplace_back(task.options[p.running->option]);
      keep_running.runtime_s = std::max(left * keep_running.runtime_s, 1e-3);
      keep_running.node = p.running->node;
      keep_running.starts_now = true;
      keep_running.gpu_ids = p.running->gpu_ids;
      keep = static_cast<int>(t.options.size()) - 1;
    }
    r.problem.tasks.push_back(std::move(t));
    r.base_index.push_back(j);
    r.keep_option.push_back(keep);
  }
  return r;
}

Schedule RetimePlan(const RemainingProblem& remaining, const Plan& current,
                    std::vector<int>* appended) {
  const Problem& problem = remaining.problem;
  std::unordered_map<std::string_view, const PlanTask*> planned;
  planned.reserve(current.tasks.size());
  for (const PlanTask& t : current.tasks)
    planned[t.task] = &t;
  std::unordered_map<std::string_view, int> node_index;
  for (int n = 0; n < problem.NumNodes(); ++n)
    node_index[problem.nodes[n].name] = n;

  Schedule schedule(problem.NumTasks());
  std::vector<int> known, unknown;
  for (int k = 0; k < problem.NumTasks(); ++k) {
    const Task& task = problem.tasks[k];
    if (remaining.keep_option[k] >= 0) {
      schedule[k] = {remaining.keep_option[k], task.options[remaining.keep_option[k]].node, 0.0};
      known.push_back(k);
      continue;
    }
    auto it = planned.find(task.name);
    auto node = it == planned.end() ? node_index.end() : node_index.find(it->second->node);
    int option =
        node == node_index.end() ? -1 : PlannedOption(problem, task, *it->second, node->second);
    if (option < 0) {
      unknown.push_back(k);
      continue;
    }
    schedule[k] = {option, node->second, it->second->start_s};
    known.push_back(k);
  }
  // Planned tasks keep their order and nodes; each moves as early as the new
  // runtimes allow (pinned ones stay at 0 on their devices).
  std::vector<NodeTimeline> timelines;
  for (const NodeSlots& n : problem.nodes)
    timelines.emplace_back(n.gpus);
  std::stable_sort(known.begin(), known.end(), [&](int a, int b) {
    bool pa = remaining.keep_option[a] >= 0, pb = remaining.keep_option[b] >= 0;
    if (pa != pb) return pa;
    return schedule[a].start < schedule[b].start;
  });
  auto place = [&](int k, int option, int node) {
    const Option& o = problem.tasks[k].options[option];
    double s = o.starts_now ? 0.0 : timelines[node].EarliestStart(0.0, o.runtime_s, o.gpus);
    timelines[node].Add(s, s + o.runtime_s, o.gpus);
    schedule[k] = {option, node, s};
  };
  for (int k : known)
    place(k, schedule[k].option, schedule[k].node);
  // New tasks: least-area option, on the node where they can start first.
  for (int k : unknown) {
    int option = LeastAreaOption(problem, problem.tasks[k]);
    const Option& o = problem.tasks[k].options[option];
    int best_node = -1;
    double best_start = std::numeric_limits<double>::infinity();
    for (int n = 0; n < problem.NumNodes(); ++n) {
      if (!problem.Fits(o, n)) continue;
      double s = timelines[n].EarliestStartBefore(0.0, o.runtime_s, o.gpus, best_start);
      if (s < best_start) {
        best_start = s;
        best_node = n;
      }
    }
    place(k, option, best_node);
  }
  if (appended) *appended = std::move(unknown);
  return schedule;
}

}  // namespace saturn
