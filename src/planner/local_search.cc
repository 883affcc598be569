#include "planner/local_search.h"

#include <algorithm>

namespace saturn {

LocalSearch::LocalSearch(const Problem& problem, const Deadline& deadline, double lower_bound,
                         uint64_t seed)
    : problem_(problem),
      decoder_(problem),
      deadline_(deadline),
      lower_bound_(lower_bound),
      rng_(seed) {
  for (const Task& t : problem.tasks) {
    std::vector<int> useful;
    for (int o : UsefulOptions(t)) {
      if (problem.FitsSomewhere(t.options[o])) useful.push_back(o);
    }
    std::stable_sort(useful.begin(), useful.end(),
                     [&](int a, int b) { return t.options[a].gpus < t.options[b].gpus; });
    useful_.push_back(std::move(useful));
  }
}

Cost LocalSearch::Evaluate(const Candidate& c, Schedule* schedule) {
  if (!schedule) schedule = &scratch_;
  double makespan = decoder_.Decode(c.order, c.option, schedule);
  double total = 0.0;
  for (size_t j = 0; j < schedule->size(); ++j)
    total += EndOf(problem_, *schedule, j);
  ++evaluations_;
  return {makespan, schedule->empty() ? 0.0 : total / schedule->size()};
}

void LocalSearch::Run(Candidate start, long iterations, Candidate* best, Cost* best_cost) {
  const int T = problem_.NumTasks();
  Candidate cur = std::move(start);
  Schedule cur_schedule, cand_schedule;
  Cost cur_cost = Evaluate(cur, &cur_schedule);
  Consider(cur, cur_cost, best, best_cost);
  constexpr int kHistory = 50;
  std::vector<double> history(kHistory, cur_cost.Scalar());
  std::vector<int> critical;
  for (long it = 0; it < iterations; ++it) {
    if ((it & 63) == 0 && (deadline_.Expired() || Optimal(*best_cost))) {
      stopped_by_time_ = stopped_by_time_ || deadline_.Expired();
      return;
    }
    critical.clear();
    for (int j = 0; j < T; ++j) {
      if (EndOf(problem_, cur_schedule, j) >= cur_cost.makespan * (1 - 1e-12)) {
        critical.push_back(j);
      }
    }
    Undo undo = Move(cur, critical);
    if (undo.kind == Undo::kNone) continue;
    Cost cand_cost = Evaluate(cur, &cand_schedule);
    double& slot = history[it % kHistory];
    if (cand_cost.Scalar() <= slot || cand_cost.Scalar() <= cur_cost.Scalar()) {
      cur_cost = cand_cost;
      std::swap(cur_schedule, cand_schedule);
      Consider(cur, cur_cost, best, best_cost);
    } else {
      Revert(cur, undo);
    }
    if (cur_cost.Scalar() < slot) slot = cur_cost.Scalar();
  }
}

Candidate LocalSearch::Perturb(Candidate c, int moves) {
  for (int k = 0; k < moves; ++k)
    Move(c, {});
  return c;
}

LocalSearch::Undo LocalSearch::Move(Candidate& c, const std::vector<int>& critical) {
  const int T = problem_.NumTasks();
  bool focus = !critical.empty() && Uniform(2) == 0;
  int task = focus ? critical[Uniform(static_cast<int>(critical.size()))] : Uniform(T);
  int kind = Uniform(3);
  if (kind == 0 && useful_[task].size() > 1) {
    int old = c.option[task];
    const std::vector<int>& opts = useful_[task];
    int pick;
    if (Uniform(2) == 0) {
      // A neighbouring GPU count (useful options are sorted by GPUs).
      int at = static_cast<int>(std::find(opts.begin(), opts.end(), old) - opts.begin());
      int step = Uniform(2) == 0 ? -1 : 1;
      int next = at + step;
      if (at >= static_cast<int>(opts.size()) || next < 0 ||
          next >= static_cast<int>(opts.size())) {
        next = at - step;
      }
      if (next < 0 || next >= static_cast<int>(opts.size())) return {};
      pick = opts[next];
    } else {
      pick = opts[Uniform(static_cast<int>(opts.size()))];
    }
    if (pick == old) return {};
    c.option[task] = pick;
    return {Undo::kOption, task, old};
  }
  if (T < 2) return {};
  int from = static_cast<int>(std::find(c.order.begin(), c.order.end(), task) - c.order.begin());
  if (kind == 1 || kind == 0) {
    if (from == 0) return {};
    int to = Uniform(from);  // strictly earlier
    MoveElement(c.order, from, to);
    return {Undo::kMove, to, from};
  }
  int other = Uniform(T);
  if (other == from) return {};
  std::swap(c.order[from], c.order[other]);
  return {Undo::kSwap, from, other};
}

void LocalSearch::MoveElement(std::vector<int>& v, int from, int to) {
  int x = v[from];
  if (from > to) {
    std::move_backward(v.begin() + to, v.begin() + from, v.begin() + from + 1);
  } else {
    std::move(v.begin() + from + 1, v.begin() + to + 1, v.begin() + from);
  }
  v[to] = x;
}

void LocalSearch::Revert(Candidate& c, const Undo& u) {
  switch (u.kind) {
    case Undo::kOption:
      c.option[u.a] = u.b;
      break;
    case Undo::kMove:
      MoveElement(c.order, u.a, u.b);
      break;
    case Undo::kSwap:
      std::swap(c.order[u.a], c.order[u.b]);
      break;
    case Undo::kNone:
      break;
  }
}

void LocalSearch::Consider(const Candidate& c, const Cost& cost, Candidate* best, Cost* best_cost) {
  if (best->order.empty() || cost.BetterThan(*best_cost)) {
    *best = c;
    best->makespan = cost.makespan;
    *best_cost = cost;
  }
}

}  // namespace saturn
