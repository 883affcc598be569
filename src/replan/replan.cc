#include "replan/replan.h"

#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <set>

#include "common/format.h"
#include "planner/list_scheduler.h"
#include "planner/lower_bound.h"
#include "planner/planner.h"
#include "planner/timeline.h"

namespace saturn {
namespace {

// Shifts a relative plan to absolute time `now`.
Plan Absolute(Plan plan, double now) {
  for (PlanTask& t : plan.tasks) {
    t.start_s += now;
    t.end_s += now;
  }
  plan.makespan_s += now;
  plan.lower_bound_s += now;
  return plan;
}

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

}  // namespace

RemainingProblem BuildRemainingProblem(const Problem& base,
                                       const std::vector<TaskProgress>& progress,
                                       const ReplanPolicy& policy) {
  RemainingProblem r;
  r.problem.nodes = base.nodes;
  for (int j = 0; j < base.NumTasks(); ++j) {
    const TaskProgress& p = progress[j];
    if (!p.arrived || p.finished) continue;
    const Task& task = base.tasks[j];
    double left = std::max(0.0, 1.0 - p.done) * p.slowdown;
    Task t;
    t.name = task.name;
    int keep = -1;
    bool pinned_only = p.running && !policy.allow_preemption;
    for (int o = 0; o < static_cast<int>(task.options.size()) && !pinned_only; ++o) {
      Option opt = task.options[o];
      if (opt.starts_now) continue;
      bool restarts = p.running || p.has_checkpoint || p.done > 0;
      opt.runtime_s = left * opt.runtime_s + (restarts ? policy.switch_cost_s : 0.0);
      opt.runtime_s = std::max(opt.runtime_s, 1e-3);
      t.options.push_back(std::move(opt));
    }
    if (p.running) {
      Option keep_running = task.options[p.running->option];
      keep_running.runtime_s = std::max(left * keep_running.runtime_s, 1e-3);
      keep_running.node = p.running->node;
      keep_running.starts_now = true;
      keep_running.gpu_ids = p.running->gpu_ids;
      keep = static_cast<int>(t.options.size());
      t.options.push_back(std::move(keep_running));
    }
    r.problem.tasks.push_back(std::move(t));
    r.base_index.push_back(j);
    r.keep_option.push_back(keep);
  }
  return r;
}

Schedule RetimePlan(const RemainingProblem& remaining, const Plan& current) {
  const Problem& problem = remaining.problem;
  std::map<std::string, const PlanTask*> planned;
  for (const PlanTask& t : current.tasks)
    planned[t.task] = &t;
  std::map<std::string, int> node_index;
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
    int option = -1, node = -1;
    if (it != planned.end() && node_index.count(it->second->node)) {
      node = node_index[it->second->node];
      for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
        const Option& c = task.options[o];
        if (!c.starts_now && c.technique == it->second->technique && c.gpus == it->second->gpus &&
            problem.Fits(c, node)) {
          option = o;
          break;
        }
      }
    }
    if (option < 0) {
      unknown.push_back(k);
      continue;
    }
    schedule[k] = {option, node, it->second->start_s};
    known.push_back(k);
  }
  // Planned tasks keep their order and nodes; Compact moves them as early as
  // the new runtimes allow (pinned ones stay at 0 on their devices).
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
      double s = timelines[n].EarliestStart(0.0, o.runtime_s, o.gpus);
      if (s < best_start) {
        best_start = s;
        best_node = n;
      }
    }
    place(k, option, best_node);
  }
  return schedule;
}

ReplanDecision Replan(const Problem& base, const std::vector<TaskProgress>& progress,
                      const Plan& current, double now, const ReplanPolicy& policy) {
  ReplanDecision d;
  RemainingProblem remaining = BuildRemainingProblem(base, progress, policy);
  if (remaining.problem.tasks.empty()) {
    d.plan = current;
    d.plan.tasks.clear();
    d.summary = "nothing left to plan";
    return d;
  }
  Schedule retimed = RetimePlan(remaining, current);
  double current_span = Makespan(remaining.problem, retimed);
  d.current_end_s = now + current_span;

  // New tasks (arrivals) are not in the current plan: the re-timed plan only
  // appends them, so the fresh plan (which solved for them, warm-started
  // from it) is adopted whenever it is no worse; otherwise switch only for a
  // gain above the threshold.
  bool arrivals = false;
  {
    std::set<std::string> planned;
    for (const PlanTask& t : current.tasks)
      planned.insert(t.task);
    for (const Task& t : remaining.problem.tasks)
      arrivals = arrivals || !planned.count(t.name);
  }
  // Incremental: no plan can end before the lower bound, so when the
  // re-timed plan is within the threshold of it no solve can make a switch
  // worth it; and when progress matched the plan within noise (if the policy
  // says so), the plan was already searched from this state. Either way keep
  // the plan, in milliseconds, without running the solver.
  if (!arrivals) {
    double bound = MakespanLowerBound(remaining.problem);
    const char* why = nullptr;
    if (current_span - policy.threshold_s <= bound) {
      why = "within the threshold of the lower bound";
    } else if (policy.unchanged_tolerance > 0 &&
               d.current_end_s <=
                   current.makespan_s +
                       policy.unchanged_tolerance * std::max(0.0, current.makespan_s - now)) {
      why = "progress as planned within noise";
    }
    if (why) {
      d.new_end_s = d.current_end_s;
      d.plan = Absolute(ScheduleToPlan(remaining.problem, retimed, current.solver,
                                       SolveStatus::kFeasible, std::min(bound, current_span), 0.0),
                        now);
      for (int k = 0; k < remaining.problem.NumTasks(); ++k) {
        if (remaining.keep_option[k] >= 0 && retimed[k].option != remaining.keep_option[k]) {
          d.preempted.push_back(remaining.problem.tasks[k].name);
        }
      }
      d.summary = "keep: current plan ends at " + FormatDuration(d.current_end_s) + ", " + why +
                  " (bound " + FormatDuration(now + bound) + "); no solve";
      return d;
    }
  }
  PlanRequest request;
  request.solver = policy.solver;
  request.time_limit_s = policy.time_limit_s;
  request.seed = policy.seed;
  request.work_scale = policy.work_scale;
  request.warm_start = retimed;
  PlanResult fresh = RunPlanner(remaining.problem, request);
  double fresh_span = fresh.plan.makespan_s;
  d.new_end_s = now + fresh_span;

  d.switch_plan =
      arrivals ? fresh_span <= current_span : fresh_span < current_span - policy.threshold_s;
  const Schedule& chosen = d.switch_plan ? fresh.schedule : retimed;
  d.plan = Absolute(
      ScheduleToPlan(remaining.problem, chosen, d.switch_plan ? fresh.plan.solver : current.solver,
                     d.switch_plan ? fresh.status : SolveStatus::kFeasible,
                     std::min(fresh.plan.lower_bound_s, Makespan(remaining.problem, chosen)),
                     fresh.plan.solve_time_s),
      now);
  for (int k = 0; k < remaining.problem.NumTasks(); ++k) {
    if (remaining.keep_option[k] >= 0 && chosen[k].option != remaining.keep_option[k]) {
      d.preempted.push_back(remaining.problem.tasks[k].name);
    }
  }
  d.summary = std::string(d.switch_plan ? "switch" : "keep") + ": current plan ends at " +
              FormatDuration(d.current_end_s) + ", fresh plan at " + FormatDuration(d.new_end_s) +
              (d.preempted.empty() ? "" : ", pre-empting " + std::to_string(d.preempted.size()));
  return d;
}

}  // namespace saturn
