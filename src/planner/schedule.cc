#include "planner/schedule.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "planner/timeline.h"

namespace saturn {

double EndOf(const Problem& problem, const Schedule& schedule, int task) {
  const Placement& p = schedule[task];
  return p.start + problem.tasks[task].options[p.option].runtime_s;
}

double Makespan(const Problem& problem, const Schedule& schedule) {
  double makespan = 0.0;
  for (int j = 0; j < static_cast<int>(schedule.size()); ++j) {
    makespan = std::max(makespan, EndOf(problem, schedule, j));
  }
  return makespan;
}

std::string CheckSchedule(const Problem& problem, const Schedule& schedule) {
  if (static_cast<int>(schedule.size()) != problem.NumTasks()) return "wrong number of tasks";
  for (int j = 0; j < problem.NumTasks(); ++j) {
    const Placement& p = schedule[j];
    const Task& task = problem.tasks[j];
    if (p.option < 0 || p.option >= static_cast<int>(task.options.size())) {
      return "task " + task.name + " has no option";
    }
    if (p.node < 0 || p.node >= problem.NumNodes()) return "task " + task.name + " has no node";
    const Option& o = task.options[p.option];
    if (!problem.Fits(o, p.node)) return "task " + task.name + " does not fit its node";
    if (p.start < 0) return "task " + task.name + " starts before 0";
    if (o.starts_now && p.start != 0.0) return "task " + task.name + " must start now";
  }
  // Capacity: sweep the events of each node.
  std::vector<std::vector<std::pair<double, int>>> events(problem.NumNodes());
  for (int j = 0; j < problem.NumTasks(); ++j) {
    int g = problem.tasks[j].options[schedule[j].option].gpus;
    events[schedule[j].node].push_back({schedule[j].start, g});  // (time, +gpus / -gpus)
    events[schedule[j].node].push_back({EndOf(problem, schedule, j), -g});
  }
  for (int n = 0; n < problem.NumNodes(); ++n) {
    std::sort(events[n].begin(), events[n].end());  // ends sort first at equal times
    int used = 0;
    for (const auto& [time, delta] : events[n]) {
      used += delta;
      if (used > problem.nodes[n].gpus) {
        return "node " + problem.nodes[n].name + " over capacity at t=" + std::to_string(time);
      }
    }
  }
  return "";
}

namespace {

// `count` GPUs free at `start` (free_at[g] <= start): the tightest run of
// consecutive free ids that holds them (contiguous sets read better and keep
// a node's free GPUs together), else the most recently freed ones. Empty if
// too few are free.
std::vector<int> PickGpus(const std::vector<double>& free_at, double start, int count) {
  const int n = static_cast<int>(free_at.size());
  int best_begin = -1, best_length = n + 1;
  for (int g = 0; g < n;) {
    if (free_at[g] > start) {
      ++g;
      continue;
    }
    int end = g;
    while (end < n && free_at[end] <= start)
      ++end;
    if (end - g >= count && end - g < best_length) {
      best_begin = g;
      best_length = end - g;
    }
    g = end;
  }
  std::vector<int> picked;
  if (best_begin >= 0) {
    for (int g = best_begin; g < best_begin + count; ++g)
      picked.push_back(g);
    return picked;
  }
  for (int g = 0; g < n; ++g) {
    if (free_at[g] <= start) picked.push_back(g);
  }
  if (static_cast<int>(picked.size()) < count) return {};
  std::stable_sort(picked.begin(), picked.end(),
                   [&](int a, int b) { return free_at[a] > free_at[b]; });
  picked.resize(count);
  std::sort(picked.begin(), picked.end());
  return picked;
}

}  // namespace

std::vector<std::vector<int>> AssignGpuIds(const Problem& problem, const Schedule& schedule) {
  int count = problem.NumTasks();
  std::vector<std::vector<int>> ids(count);
  std::vector<int> order(count);
  std::iota(order.begin(), order.end(), 0);
  auto pinned = [&](int j) { return problem.tasks[j].options[schedule[j].option].starts_now; };
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    if (schedule[a].start != schedule[b].start) return schedule[a].start < schedule[b].start;
    return pinned(a) && !pinned(b);
  });
  // free_at[n][g]: when GPU g of node n becomes free.
  std::vector<std::vector<double>> free_at(problem.NumNodes());
  for (int n = 0; n < problem.NumNodes(); ++n)
    free_at[n].assign(problem.nodes[n].gpus, 0.0);
  for (int j : order) {
    const Placement& p = schedule[j];
    const Option& o = problem.tasks[j].options[p.option];
    std::vector<double>& gpus = free_at[p.node];
    double end = p.start + o.runtime_s;
    if (o.starts_now) {
      if (static_cast<int>(o.gpu_ids.size()) != o.gpus) {
        throw std::logic_error("starts_now option of " + problem.tasks[j].name +
                               " lists the wrong number of GPUs");
      }
      for (int g : o.gpu_ids) {
        if (g < 0 || g >= static_cast<int>(gpus.size()) || gpus[g] > p.start) {
          throw std::logic_error("pinned GPU of " + problem.tasks[j].name + " is not free");
        }
        gpus[g] = end;
      }
      ids[j] = o.gpu_ids;
      continue;
    }
    std::vector<int> candidates = PickGpus(gpus, p.start, o.gpus);
    if (candidates.empty()) {
      throw std::logic_error("schedule exceeds the GPUs of node " + problem.nodes[p.node].name +
                             " when " + problem.tasks[j].name + " starts");
    }
    for (int g : candidates)
      gpus[g] = end;
    ids[j] = std::move(candidates);
  }
  return ids;
}

const char* SolveStatusName(SolveStatus status) {
  switch (status) {
    case SolveStatus::kOptimal:
      return "optimal";
    case SolveStatus::kFeasible:
      return "feasible";
    case SolveStatus::kTimeLimit:
      return "time_limit";
    case SolveStatus::kInfeasible:
      return "infeasible";
  }
  return "infeasible";
}

Plan ScheduleToPlan(const Problem& problem, const Schedule& schedule, const std::string& solver,
                    SolveStatus status, double lower_bound_s, double solve_time_s) {
  Plan plan;
  plan.solver = solver;
  plan.status = SolveStatusName(status);
  plan.lower_bound_s = lower_bound_s;
  plan.solve_time_s = solve_time_s;
  if (status == SolveStatus::kInfeasible) return plan;
  std::vector<std::vector<int>> ids = AssignGpuIds(problem, schedule);
  for (int j = 0; j < problem.NumTasks(); ++j) {
    const Placement& p = schedule[j];
    const Option& o = problem.tasks[j].options[p.option];
    PlanTask t;
    t.task = problem.tasks[j].name;
    t.technique = o.technique;
    t.gpus = o.gpus;
    t.node = problem.nodes[p.node].name;
    t.gpu_ids = std::move(ids[j]);
    t.start_s = p.start;
    t.end_s = p.start + o.runtime_s;
    t.gpu_type = problem.TypeName(problem.nodes[p.node].type);
    plan.makespan_s = std::max(plan.makespan_s, t.end_s);
    plan.tasks.push_back(std::move(t));
  }
  return plan;
}

}  // namespace saturn
