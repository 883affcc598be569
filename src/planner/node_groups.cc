#include "planner/node_groups.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "planner/construct.h"
#include "planner/local_search.h"
#include "planner/lower_bound.h"

namespace saturn {
namespace {

// The problem of a group of nodes and the tasks placed on them, with the
// way back: sub task k is base task task[k], its option o is base option
// option[k][o]; sub node m is base node node[m].
struct SubProblem {
  Problem problem;
  std::vector<int> task;
  std::vector<std::vector<int>> option;
  std::vector<int> node;
};

SubProblem Cut(const Problem& base, const std::vector<int>& group, const Schedule& schedule) {
  SubProblem sub;
  sub.node = group;
  sub.problem.types = base.types;
  std::vector<int> local(base.nodes.size(), -1);
  for (size_t m = 0; m < group.size(); ++m) {
    local[group[m]] = static_cast<int>(m);
    sub.problem.nodes.push_back(base.nodes[group[m]]);
  }
  for (int j = 0; j < base.NumTasks(); ++j) {
    if (local[schedule[j].node] < 0) continue;
    const Task& task = base.tasks[j];
    Task cut{task.name, {}};
    std::vector<int> back;
    for (size_t o = 0; o < task.options.size(); ++o) {
      Option option = task.options[o];
      if (option.node >= 0) {
        if (local[option.node] < 0) continue;
        option.node = local[option.node];
      }
      cut.options.push_back(std::move(option));
      back.push_back(static_cast<int>(o));
    }
    sub.task.push_back(j);
    sub.option.push_back(std::move(back));
    sub.problem.tasks.push_back(std::move(cut));
  }
  return sub;
}

// The group's part of `schedule` in the sub-problem's indices.
Schedule SubSchedule(const SubProblem& sub, const Schedule& schedule) {
  Schedule out(sub.task.size());
  for (size_t k = 0; k < sub.task.size(); ++k) {
    const Placement& p = schedule[sub.task[k]];
    const std::vector<int>& back = sub.option[k];
    int option = static_cast<int>(std::find(back.begin(), back.end(), p.option) - back.begin());
    int node =
        static_cast<int>(std::find(sub.node.begin(), sub.node.end(), p.node) - sub.node.begin());
    out[k] = {option, node, p.start};
  }
  return out;
}

}  // namespace

NodeGroupSearch::NodeGroupSearch(const Problem& problem, const Deadline& deadline,
                                 NodeGroupOptions options)
    : problem_(problem), deadline_(deadline), options_(options), rng_(options.seed) {}

std::vector<int> NodeGroupSearch::PickGroup(const std::vector<double>& node_end) {
  const int n = problem_.NumNodes();
  auto uniform = [&](int k) { return std::uniform_int_distribution<int>(0, k - 1)(rng_); };
  double latest = *std::max_element(node_end.begin(), node_end.end());
  std::vector<int> critical;
  for (int m = 0; m < n; ++m) {
    if (node_end[m] >= latest * (1 - 1e-12)) critical.push_back(m);
  }
  std::vector<int> group = {critical[uniform(static_cast<int>(critical.size()))]};
  const int size = std::min(n, 2 + uniform(3));
  std::vector<bool> in(n, false);
  in[group[0]] = true;
  std::vector<int> focus;
  for (int m : options_.focus) {
    if (m != group[0]) focus.push_back(m);
  }
  while (static_cast<int>(group.size()) < size) {
    int pick = -1;
    if (!focus.empty() && uniform(2) == 0) {  // a node where something changed
      int k = uniform(static_cast<int>(focus.size()));
      pick = focus[k];
      focus.erase(focus.begin() + k);
      if (in[pick]) continue;
    } else if (uniform(2) == 0) {
      for (int m = 0; m < n; ++m) {  // the least loaded node not yet in
        if (!in[m] && (pick < 0 || node_end[m] < node_end[pick])) pick = m;
      }
    } else {
      do {
        pick = uniform(n);
      } while (in[pick]);
    }
    in[pick] = true;
    group.push_back(pick);
  }
  return group;
}

bool NodeGroupSearch::ImproveGroup(const std::vector<int>& group, Schedule& schedule,
                                   std::vector<double>& node_end) {
  SubProblem sub = Cut(problem_, group, schedule);
  if (sub.task.empty()) return false;
  double old_last = 0.0, old_sum = 0.0;
  for (int m : group) {
    old_last = std::max(old_last, node_end[m]);
    old_sum += node_end[m];
  }
  const Problem& p = sub.problem;
  const double size = static_cast<double>(p.NumTasks()) * p.NumNodes();
  double bound = MakespanLowerBound(p);
  work_ += 10 * size / 1e6;  // cutting and bounding: about ten decodes' worth
  if (old_last <= std::max(bound, options_.target) * (1 + 1e-9)) return false;

  // Start from the group's current plan and the best constructive plan;
  // climb from each, then kick the best a few times (iterated local search).
  LocalSearch search(p, deadline_, std::max(bound, options_.target), rng_());
  std::vector<Candidate> starts = {CandidateFromSchedule(p, SubSchedule(sub, schedule))};
  std::vector<Candidate> built = ConstructiveCandidates(p, bound);
  if (!built.empty()) starts.push_back(built.front());
  constexpr long kClimb = 600;
  constexpr int kKicks = 3;
  Candidate best;
  Cost best_cost;
  for (const Candidate& start : starts)
    search.Run(start, kClimb, &best, &best_cost);
  for (int k = 0; k < kKicks && !search.Optimal(best_cost); ++k) {
    Candidate found;
    Cost found_cost;
    search.Run(search.Perturb(best, 2 + k), kClimb, &found, &found_cost);
    if (found_cost.BetterThan(best_cost)) {
      best = std::move(found);
      best_cost = found_cost;
    }
  }
  work_ += search.evaluations() * size / 1e6;

  Schedule improved;
  search.Evaluate(best, &improved);
  std::vector<double> end(group.size(), 0.0);
  for (size_t k = 0; k < improved.size(); ++k) {
    end[improved[k].node] = std::max(end[improved[k].node], EndOf(p, improved, k));
  }
  double new_last = *std::max_element(end.begin(), end.end());
  double new_sum = std::accumulate(end.begin(), end.end(), 0.0);
  bool better = new_last < old_last * (1 - 1e-12) ||
                (new_last <= old_last * (1 + 1e-12) && new_sum < old_sum * (1 - 1e-9));
  if (!better) return false;
  for (size_t k = 0; k < improved.size(); ++k) {
    const Placement& q = improved[k];
    schedule[sub.task[k]] = {sub.option[k][q.option], sub.node[q.node], q.start};
  }
  for (size_t m = 0; m < group.size(); ++m)
    node_end[group[m]] = end[m];
  return true;
}

Schedule NodeGroupSearch::Improve(Schedule schedule, double work_limit,
                                  const std::function<void(double)>& on_improved) {
  if (problem_.NumNodes() < 2 || schedule.empty()) return schedule;
  std::vector<double> node_end(problem_.nodes.size(), 0.0);
  for (int j = 0; j < problem_.NumTasks(); ++j) {
    node_end[schedule[j].node] = std::max(node_end[schedule[j].node], EndOf(problem_, schedule, j));
  }
  const double end_work =
      work_limit < 0 ? std::numeric_limits<double>::infinity() : work_ + work_limit;
  double makespan = *std::max_element(node_end.begin(), node_end.end());
  // Stalled: this many groups in a row found nothing (the caller then kicks
  // the whole plan with a global search).
  const int stall = std::max(30, 2 * problem_.NumNodes());
  for (int failed = 0; failed < stall && work_ < end_work && !deadline_.Expired() &&
                       makespan > options_.target * (1 + 1e-9);) {
    ++groups_tried_;
    if (!ImproveGroup(PickGroup(node_end), schedule, node_end)) {
      ++failed;
      continue;
    }
    failed = 0;
    ++groups_improved_;
    double now = *std::max_element(node_end.begin(), node_end.end());
    if (now < makespan * (1 - 1e-12) && on_improved) on_improved(now);
    makespan = std::min(makespan, now);
  }
  return schedule;
}

}  // namespace saturn
