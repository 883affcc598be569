#include "replan/replan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "common/format.h"
#include "planner/lower_bound.h"
#include "planner/node_groups.h"
#include "planner/planner.h"
#include "planner/validate.h"
#include "replan/packed.h"

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

// The key under which a plan's extra keeps each node's end in the plan last
// searched (absolute times): a kept plan is re-timed at every check, and
// comparing with the previous check's ends would let a slow drift pass
// unnoticed (0.5 s a check, below the noise each time).
constexpr const char* kSearchedEnds = "searched_node_ends_s";

// What moved since `current` was searched: the tasks it does not know
// (arrivals), the nodes whose re-timed end is off the searched one by more
// than the noise or that got an arrival, and the nodes where a task ended
// and left devices idle (below).
struct Changes {
  std::vector<int> arrived;  // remaining tasks the plan does not know
  std::vector<int> nodes;
  std::vector<double> searched_ends;  // each node's end in the plan last searched
};

using NodeIndex = std::unordered_map<std::string_view, int>;

NodeIndex IndexNodes(const Problem& problem) {
  NodeIndex index;
  for (int n = 0; n < problem.NumNodes(); ++n)
    index[problem.nodes[n].name] = n;
  return index;
}

// Each node's end in the plan last searched: `plan`'s own task ends unless it
// carries the searched ones (absolute; -inf for a node without tasks).
std::vector<double> NodeEnds(const Problem& problem, const NodeIndex& nodes, const Plan& plan) {
  std::vector<double> ends(problem.NumNodes(), -std::numeric_limits<double>::infinity());
  for (const PlanTask& t : plan.tasks) {
    auto it = nodes.find(t.node);
    if (it != nodes.end()) ends[it->second] = std::max(ends[it->second], t.end_s);
  }
  auto searched = plan.extra.find(kSearchedEnds);
  if (searched == plan.extra.end() || !searched->is_object()) return ends;
  for (const auto& [name, end] : searched->items()) {
    auto it = nodes.find(name);
    if (it != nodes.end() && end.is_number()) ends[it->second] = end.get<double>();
  }
  return ends;
}

void KeepSearchedEnds(const Problem& problem, const std::vector<double>& ends, Plan& plan) {
  nlohmann::json out = nlohmann::json::object();
  for (int n = 0; n < problem.NumNodes(); ++n)
    if (std::isfinite(ends[n])) out[problem.nodes[n].name] = ends[n];
  plan.extra[kSearchedEnds] = std::move(out);
}

Changes WhatChanged(const RemainingProblem& remaining, const Plan& current, const Schedule& retimed,
                    const std::vector<int>& appended, double now, double tolerance) {
  const Problem& problem = remaining.problem;
  const NodeIndex node_index = IndexNodes(problem);
  // Searched ends count every task of the plan (a node whose tasks all ended
  // early ends early), re-timed ends no earlier than now.
  const double none = -std::numeric_limits<double>::infinity();
  Changes changes;
  changes.searched_ends = NodeEnds(problem, node_index, current);
  const std::vector<double>& planned = changes.searched_ends;
  std::vector<double> now_end(problem.NumNodes(), none);
  for (int k = 0; k < problem.NumTasks(); ++k) {
    double end = now + EndOf(problem, retimed, k);
    now_end[retimed[k].node] = std::max(now_end[retimed[k].node], end);
  }
  changes.arrived = appended;
  std::vector<bool> changed(problem.NumNodes(), false);
  for (int k : appended)
    changed[retimed[k].node] = true;
  // Noise: each node's end may move by `tolerance` of its own time left
  // (tasks that run that much off their profile move it so far), and by a
  // second whatever that is.
  for (int n = 0; n < problem.NumNodes(); ++n) {
    if (planned[n] == none && now_end[n] == none) continue;
    double was = std::max(planned[n], now), is = std::max(now_end[n], now);
    if (std::abs(is - was) > tolerance * (was - now) + 1.0) changed[n] = true;
  }
  // A task of the plan that ended since (it is not left) freed its devices:
  // when the re-timed plan leaves some of them idle now while the node is
  // busy beyond the noise, another task may be better off there (a running
  // one on more devices) though the node's end did not move.
  std::unordered_set<std::string_view> left;
  for (const Task& t : problem.tasks)
    left.insert(t.name);
  std::vector<int> busy_now(problem.NumNodes(), 0);
  for (int k = 0; k < problem.NumTasks(); ++k) {
    if (retimed[k].start <= 1e-9)
      busy_now[retimed[k].node] += problem.tasks[k].options[retimed[k].option].gpus;
  }
  for (const PlanTask& t : current.tasks) {
    auto node = node_index.find(t.node);
    if (node == node_index.end() || left.count(t.task)) continue;
    const int n = node->second;
    double busy_for = now_end[n] - now;
    if (busy_now[n] < problem.nodes[n].gpus && busy_for > tolerance * busy_for + 1.0)
      changed[n] = true;
  }
  for (int n = 0; n < problem.NumNodes(); ++n) {
    if (changed[n]) changes.nodes.push_back(n);
  }
  return changes;
}

std::vector<std::string> Preempted(const RemainingProblem& remaining, const Schedule& chosen) {
  std::vector<std::string> out;
  for (int k = 0; k < remaining.problem.NumTasks(); ++k) {
    if (remaining.keep_option[k] >= 0 && chosen[k].option != remaining.keep_option[k]) {
      out.push_back(remaining.problem.tasks[k].name);
    }
  }
  return out;
}

// The incremental search: node groups (node_groups.h) from the re-timed plan,
// their partners drawn from the nodes that changed. Deterministic for a seed
// (effort in work units; the time limit is a safety net).
Schedule SearchAround(const Problem& problem, const Schedule& retimed, const Changes& changes,
                      double bound, const ReplanPolicy& policy) {
  SteadyClock clock;
  Deadline deadline(clock, policy.time_limit_s);
  NodeGroupOptions options;
  options.target = bound;
  options.seed = policy.seed * 7919 + 17;
  options.focus = changes.nodes;
  NodeGroupSearch search(problem, deadline, options);
  return search.Improve(retimed, policy.work_scale * kIncrementalWorkUnits);
}

// A fresh plan of the whole remaining problem (auto, warm-started).
PlanResult SolveAfresh(const Problem& problem, const Schedule& retimed,
                       const ReplanPolicy& policy) {
  PlanRequest request(policy);
  request.warm_start = retimed;
  return RunPlanner(problem, request);
}

// Every plan a re-plan returns, kept or switched to, passes the independent
// checker, as every solve does (planner/validate.h).
Plan Checked(const Problem& problem, Plan plan, const char* what) {
  std::vector<std::string> errors = ValidatePlan(problem, plan);
  if (!errors.empty()) {
    throw std::logic_error(std::string("re-plan: the ") + what + " is invalid: " + errors.front());
  }
  return plan;
}

}  // namespace

bool SearchesIncrementally(const Problem& problem, const ReplanPolicy& policy) {
  return policy.incremental_nodes > 0 && problem.NumNodes() >= policy.incremental_nodes &&
         policy.solver == "auto";
}

namespace {

// Replan on the remaining problem as built; `chosen_out` (if not null) gets
// the schedule the decision's plan follows, `as_planned` (if not null)
// whether the plan was kept because progress matched it.
ReplanDecision ReplanRemaining(const RemainingProblem& remaining, const Plan& current, double now,
                               const ReplanPolicy& policy, Schedule* chosen_out = nullptr,
                               bool* as_planned = nullptr) {
  ReplanDecision d;
  const Problem& problem = remaining.problem;
  if (problem.tasks.empty()) {
    d.plan = current;
    d.plan.tasks.clear();
    d.summary = "nothing left to plan";
    return d;
  }
  std::vector<int> appended;
  Schedule retimed = RetimePlan(remaining, current, &appended);
  const double current_span = Makespan(problem, retimed);
  d.current_end_s = now + current_span;
  const Changes changes =
      WhatChanged(remaining, current, retimed, appended, now, policy.unchanged_tolerance);
  const bool arrivals = !changes.arrived.empty();
  const double bound = MakespanLowerBound(problem);

  // Incremental: without arrivals, keep the plan in milliseconds when
  // progress matched it within noise (it was searched from this state
  // already), or when it is within the threshold of the lower bound (no plan
  // can be worth a switch).
  const char* why = nullptr;
  if (!arrivals && policy.unchanged_tolerance > 0 && changes.nodes.empty()) {
    why = "progress as planned within noise";
    if (as_planned) *as_planned = true;
  } else if (!arrivals && current_span - policy.threshold_s <= bound) {
    why = "within the threshold of the lower bound";
  }
  if (why) {
    d.new_end_s = d.current_end_s;
    d.plan =
        Absolute(Checked(problem,
                         ScheduleToPlan(problem, retimed, current.solver, SolveStatus::kFeasible,
                                        std::min(bound, current_span), 0.0),
                         "kept plan"),
                 now);
    KeepSearchedEnds(problem, changes.searched_ends, d.plan);
    d.preempted = Preempted(remaining, retimed);
    if (chosen_out) *chosen_out = retimed;
    d.summary = "keep: current plan ends at " + FormatDuration(d.current_end_s) + ", " + why +
                " (bound " + FormatDuration(now + bound) + "); no solve";
    return d;
  }

  // Search: around what changed on large clusters, else afresh.
  SteadyClock clock;
  const double started = clock.Now();
  d.searched = true;
  Schedule fresh;
  std::string solver = policy.solver;
  SolveStatus status = SolveStatus::kFeasible;
  double fresh_bound = bound;
  std::string how = "solved afresh";
  if (SearchesIncrementally(problem, policy)) {
    how = "searched around " + std::to_string(changes.nodes.size()) + " of " +
          std::to_string(problem.NumNodes()) + " nodes";
    fresh = SearchAround(problem, retimed, changes, bound, policy);
  } else {
    PlanResult r = SolveAfresh(problem, retimed, policy);
    fresh = std::move(r.schedule);
    solver = r.plan.solver;
    status = r.status;
    fresh_bound = std::max(bound, r.plan.lower_bound_s);
  }
  const double fresh_span = Makespan(problem, fresh);
  d.new_end_s = now + fresh_span;
  // New tasks are not in the current plan: the re-timed plan only appends
  // them, so the fresh plan (which searched with them) is adopted whenever
  // it is no worse; otherwise switch only for a gain above the threshold.
  d.switch_plan =
      arrivals ? fresh_span <= current_span : fresh_span < current_span - policy.threshold_s;
  const Schedule& chosen = d.switch_plan ? fresh : retimed;
  d.plan = Absolute(Checked(problem,
                            ScheduleToPlan(problem, chosen, d.switch_plan ? solver : current.solver,
                                           d.switch_plan ? status : SolveStatus::kFeasible,
                                           std::min(fresh_bound, Makespan(problem, chosen)),
                                           clock.Now() - started),
                            d.switch_plan ? "new plan" : "kept plan"),
                    now);
  KeepSearchedEnds(problem, NodeEnds(problem, IndexNodes(problem), d.plan), d.plan);
  d.preempted = Preempted(remaining, chosen);
  if (chosen_out) *chosen_out = chosen;
  d.summary = std::string(d.switch_plan ? "switch" : "keep") + ": current plan ends at " +
              FormatDuration(d.current_end_s) + ", fresh plan (" + how + ") at " +
              FormatDuration(d.new_end_s) +
              (d.preempted.empty() ? "" : ", pre-empting " + std::to_string(d.preempted.size()));
  return d;
}

// Replan with the packs `grouped` gives, each one task (replan/packed.h).
ReplanDecision ReplanPacked(const Problem& base, const PackTerms& terms,
                            const std::vector<TaskProgress>& grouped,
                            const RemainingProblem& remaining, const Plan& current, double now,
                            const ReplanPolicy& policy, bool* as_planned = nullptr) {
  PackedRemaining packed = PackRemaining(base, terms, grouped, remaining, policy);
  Schedule chosen;
  ReplanDecision d = ReplanRemaining(packed.remaining, PackPlan(current, packed), now, policy,
                                     &chosen, as_planned);
  d.plan = UnpackPlan(packed, chosen, std::move(d.plan));
  // A running pack is never pre-empted (its one option keeps it running).
  return d;
}

// The end of the plan a decision follows.
double FollowedEnd(const ReplanDecision& d) {
  return d.switch_plan ? d.new_end_s : d.current_end_s;
}

// Running pack `pack` of `grouped` split: stopped, its members alone or
// (`repack`) in new packs among themselves; nothing when `repack` forms none.
std::optional<ReplanDecision> ReplanSplit(const Problem& base, const PackTerms& terms,
                                          const std::vector<TaskProgress>& grouped,
                                          const std::string& pack, bool repack, const Plan& current,
                                          double now, const ReplanPolicy& policy) {
  std::vector<TaskProgress> split =
      SplitPack(base, terms, current, grouped, pack, repack, policy.packs_numbered_to);
  // "pack-1 split into pack-5 (a, b) and c alone".
  std::map<std::string, std::string> parts;
  for (size_t j = 0; j < grouped.size(); ++j) {
    if (grouped[j].pack != pack || grouped[j].finished) continue;
    std::string& part = parts[split[j].pack];
    part += (part.empty() ? "" : ", ") + base.tasks[j].name;
  }
  if (repack && parts.size() == 1) return std::nullopt;
  std::string how;
  for (const auto& [name, members] : parts)
    how += (how.empty() ? "" : "; ") +
           (name.empty() ? members + " alone" : name + " (" + members + ")");
  RemainingProblem rest = BuildRemainingProblem(base, split, policy);
  ReplanDecision d = AnyPackLeft(split)
                         ? ReplanPacked(base, terms, split, rest, current, now, policy)
                         : ReplanRemaining(rest, current, now, policy);
  for (size_t j = 0; j < grouped.size(); ++j) {
    if (grouped[j].pack != pack || grouped[j].finished) continue;
    d.preempted.push_back(base.tasks[j].name);
    d.split[pack].insert(base.tasks[j].name);
  }
  d.summary = pack + " split into " + how;
  return d;
}

// The running packs tried split at one check: of `packs`, the
// kSplitsTried whose members end last in `plan` (a pack ending early gains
// little from devices freed), so that a check costs at most 2 x
// kSplitsTried more solves however many packs run.
constexpr size_t kSplitsTried = 2;
std::vector<std::string> PacksToSplit(std::vector<std::string> packs, const Plan& plan) {
  std::map<std::string, double> end;
  for (const PlanTask& t : plan.tasks)
    if (!t.pack.empty()) end[t.pack] = std::max(end[t.pack], t.end_s);
  std::stable_sort(packs.begin(), packs.end(),
                   [&](const std::string& a, const std::string& b) { return end[a] > end[b]; });
  if (packs.size() > kSplitsTried) packs.resize(kSplitsTried);
  return packs;
}

}  // namespace

ReplanDecision Replan(const Problem& base, const std::vector<TaskProgress>& progress,
                      const Plan& current, double now, const ReplanPolicy& policy,
                      const PackTerms* terms) {
  RemainingProblem remaining = BuildRemainingProblem(base, progress, policy);
  if (!terms) return ReplanRemaining(remaining, current, now, policy);
  std::vector<TaskProgress> grouped = progress;
  if (policy.pack_arrivals)
    PackArrivals(base, *terms, current, grouped, false, policy.packs_numbered_to);
  if (!AnyPackLeft(grouped)) return ReplanRemaining(remaining, current, now, policy);
  bool as_planned = false;
  ReplanDecision d =
      ReplanPacked(base, *terms, grouped, remaining, current, now, policy, &as_planned);
  if (as_planned) return d;  // searched from this state already
  // Other groupings, each taken when its plan ends sooner than the best so
  // far by more than the threshold (each decision's end is that of the
  // plan it would follow). A running pack's split is tried even when the
  // plan is within the threshold of its lower bound: that bound holds the
  // pack where it runs.
  std::vector<ReplanDecision> others;
  if (d.searched && policy.pack_arrivals) {
    // Regroup: every task not started packed afresh (packs planned before
    // and arrivals alike), when that packs them otherwise.
    std::vector<TaskProgress> regrouped = progress;
    PackArrivals(base, *terms, current, regrouped, /*regroup=*/true, policy.packs_numbered_to);
    if (PacksNotStarted(regrouped) != PacksNotStarted(grouped)) {
      others.push_back(ReplanPacked(base, *terms, regrouped, remaining, current, now, policy));
      others.back().summary = "packs regrouped";
    }
  }
  if (policy.allow_preemption && policy.split_packs) {
    for (const std::string& pack : PacksToSplit(SplittablePacks(grouped), d.plan)) {
      for (bool repack : {false, true}) {
        if (std::optional<ReplanDecision> r =
                ReplanSplit(base, *terms, grouped, pack, repack, current, now, policy))
          others.push_back(std::move(*r));
      }
    }
  }
  const double current_end = d.current_end_s;
  for (ReplanDecision& r : others) {
    const double end = FollowedEnd(r);
    if (!(end < FollowedEnd(d) - policy.threshold_s)) continue;
    d = std::move(r);
    d.switch_plan = true;
    d.new_end_s = end;
    d.current_end_s = current_end;
    d.summary = "switch: current plan ends at " + FormatDuration(current_end) + ", with " +
                d.summary + " at " + FormatDuration(end) +
                (d.preempted.empty() ? "" : ", pre-empting " + std::to_string(d.preempted.size()));
  }
  return d;
}

}  // namespace saturn
