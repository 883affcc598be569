// auto (the default): the best plan we can find within the limits.
//
// 1. Constructive plans (construct.h): dual-approximation allotments for
//    several target makespans around the lower bound, each list-scheduled in
//    two orders; a caller's warm start joins them. The plans of the baselines
//    in auto's registry are computed too, so auto is never worse than any of
//    them.
// 2. Local search on (task order, option per task), decoded by the serial
//    list scheduler: late-acceptance hill climbing (LAHC), which needs no
//    temperature tuning, from the best few constructive plans. Moves change a
//    task's option, move a task earlier in the order, or swap two tasks;
//    half of them target a task that ends at the makespan (the critical one).
//    Ties in makespan are broken by the mean end time, so the search keeps
//    moving work earlier on plateaus.
// 3. When the instance is small enough, the exact resource-flow MILP
//    (flow_milp.h), warm-started with the best plan, to prove it optimal or
//    improve it.
// It stops early when the plan meets the lower bound. Effort is counted in
// decoder evaluations and MILP nodes (deterministic for a seed); the time
// limit only cuts it short, and the status then says time_limit.
#include <algorithm>
#include <cmath>
#include <random>

#include "planner/construct.h"
#include "planner/flow_milp.h"
#include "planner/list_scheduler.h"
#include "planner/registry.h"
#include "planner/solver.h"

namespace saturn {
namespace {

// Solutions compare by makespan, then by mean end time.
struct Cost {
  double makespan = 0.0;
  double mean_end = 0.0;
  double Scalar() const { return makespan + 1e-3 * mean_end; }
  bool BetterThan(const Cost& o) const {
    if (makespan < o.makespan * (1 - 1e-12)) return true;
    if (makespan > o.makespan * (1 + 1e-12)) return false;
    return mean_end < o.mean_end * (1 - 1e-12);
  }
};

class LocalSearch {
 public:
  LocalSearch(const Problem& problem, const Deadline& deadline, double lower_bound, uint64_t seed)
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

  Cost Evaluate(const Candidate& c, Schedule* schedule) {
    double makespan = decoder_.Decode(c.order, c.option, schedule);
    double total = 0.0;
    for (size_t j = 0; j < schedule->size(); ++j)
      total += EndOf(problem_, *schedule, j);
    ++evaluations_;
    return {makespan, schedule->empty() ? 0.0 : total / schedule->size()};
  }

  // Runs LAHC from `start` for `iterations`; updates best/best_cost.
  void Run(Candidate start, long iterations, Candidate* best, Cost* best_cost) {
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

  // `moves` random moves away from `c` (the kick of iterated local search).
  Candidate Perturb(Candidate c, int moves) {
    for (int k = 0; k < moves; ++k)
      Move(c, {});
    return c;
  }

  bool Optimal(const Cost& c) const { return c.makespan <= lower_bound_ * (1 + 1e-9); }
  bool stopped_by_time() const { return stopped_by_time_; }
  long evaluations() const { return evaluations_; }

 private:
  struct Undo {
    enum Kind { kNone, kOption, kMove, kSwap } kind = kNone;
    int a = 0, b = 0;  // task and old option, or positions
  };

  int Uniform(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  Undo Move(Candidate& c, const std::vector<int>& critical) {
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

  static void MoveElement(std::vector<int>& v, int from, int to) {
    int x = v[from];
    if (from > to) {
      std::move_backward(v.begin() + to, v.begin() + from, v.begin() + from + 1);
    } else {
      std::move(v.begin() + from + 1, v.begin() + to + 1, v.begin() + from);
    }
    v[to] = x;
  }

  void Revert(Candidate& c, const Undo& u) {
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

  void Consider(const Candidate& c, const Cost& cost, Candidate* best, Cost* best_cost) {
    if (best->order.empty() || cost.BetterThan(*best_cost)) {
      *best = c;
      best->makespan = cost.makespan;
      *best_cost = cost;
    }
  }

  const Problem& problem_;
  SerialDecoder decoder_;
  const Deadline& deadline_;
  double lower_bound_;
  std::mt19937_64 rng_;
  std::vector<std::vector<int>> useful_;
  long evaluations_ = 0;
  bool stopped_by_time_ = false;
};

class AutoSolver final : public Solver {
 public:
  explicit AutoSolver(const SolverRegistry& registry) : registry_(registry) {}

  std::string_view Name() const override { return "auto"; }
  std::string_view Description() const override {
    return "constructive plans + local search + exact MILP when small (default)";
  }

  SolveResult Solve(const Problem& problem, const SolveContext& ctx) const override {
    SteadyClock steady;
    const Clock& clock = ctx.clock ? *ctx.clock : steady;
    Deadline deadline(clock, ctx.time_limit_s);
    if (problem.NumTasks() == 0) return {SolveStatus::kOptimal, {}, 0.0, ""};

    std::vector<Candidate> seeds = ConstructiveCandidates(problem, ctx.lower_bound);
    if (!ctx.warm_start.empty()) {
      seeds.insert(seeds.begin(), CandidateFromSchedule(problem, ctx.warm_start));
    }
    LocalSearch search(problem, deadline, ctx.lower_bound, ctx.seed);
    Scored best = BestSeed(search, seeds);
    Report(ctx, best.cost.makespan, ctx.lower_bound);
    Climb(problem, ctx, deadline, seeds, search, best);
    Report(ctx, best.cost.makespan, ctx.lower_bound);

    SerialDecoder decoder(problem);
    SolveResult result;
    decoder.Decode(best.plan.order, best.plan.option, &result.schedule);
    KeepBestBaseline(problem, ctx, result.schedule);
    result.lower_bound = ctx.lower_bound;
    result.note = std::to_string(search.evaluations()) + " plans evaluated";

    bool proven = Makespan(problem, result.schedule) <= ctx.lower_bound * (1 + 1e-9);
    // The exact model proves optimality of small instances within seconds; on
    // larger ones CBC rarely improves on the search in the time auto has.
    bool exact_fits = problem.NumTasks() <= kMaxExactTasks &&
                      FlowMilpSize(problem) <= kMaxExactVariables &&
                      ctx.work_scale >= kMinExactWorkScale;
    if (!proven && exact_fits && deadline.Remaining() > 0.1) {
      proven = ImproveExactly(problem, ctx, deadline, result);
    }
    if (proven) {
      result.status = SolveStatus::kOptimal;
    } else if (deadline.Expired() || search.stopped_by_time()) {
      result.status = SolveStatus::kTimeLimit;
    } else {
      result.status = SolveStatus::kFeasible;
    }
    return result;
  }

 private:
  static constexpr long kMaxExactVariables = 6000;
  static constexpr int kMaxExactTasks = 8;
  // Below this effort (frequent re-planning, simulations) CBC's root work,
  // which no node limit bounds, would dominate.
  static constexpr double kMinExactWorkScale = 0.2;
  static constexpr long kClimbEvaluations = 2000;
  static constexpr double kWalkSlack = 0.002;
  static constexpr const char* kBaselines[] = {"current-practice", "max", "min", "optimus",
                                               "random"};

  static void Report(const SolveContext& ctx, double best, double bound) {
    if (ctx.on_progress) ctx.on_progress(best, bound);
  }

  struct Scored {
    Candidate plan;
    Cost cost;
  };

  static Scored BestSeed(LocalSearch& search, const std::vector<Candidate>& seeds) {
    Scored best;
    Schedule scratch;
    for (const Candidate& s : seeds) {
      Cost c = search.Evaluate(s, &scratch);
      if (best.plan.order.empty() || c.BetterThan(best.cost)) best = {s, c};
    }
    return best;
  }

  // Short LAHC climbs: first from the best seeds, then iterated local search
  // (kick the walk's plan a few moves away and climb again), every third
  // climb from a kicked seed instead, for diversity. Many short climbs beat a
  // few long ones (measured: a climb stalls within a few thousand evaluations).
  static void Climb(const Problem& problem, const SolveContext& ctx, const Deadline& deadline,
                    const std::vector<Candidate>& seeds, LocalSearch& search, Scored& best) {
    // Effort: evaluations scale inversely with the size of one (tasks x nodes),
    // about 2 s on one core of a 2-core machine for any size.
    const double evaluation_size = static_cast<double>(problem.NumTasks()) * problem.NumNodes();
    long evaluations =
        static_cast<long>(ctx.work_scale * std::clamp(4e7 / evaluation_size, 300.0, 4e6));
    const long climb = std::min<long>(evaluations, kClimbEvaluations);
    const long climbs = std::max<long>(1, evaluations / climb);
    // The walk moves between local optima: a climb's result replaces it when
    // no more than kWalkSlack worse, so the search can cross small ridges.
    Scored walk = best;
    for (long r = 0; r < climbs && !search.Optimal(best.cost) && !deadline.Expired(); ++r) {
      Candidate start;
      if (r < static_cast<long>(std::min<size_t>(3, seeds.size()))) {
        start = seeds[r];
      } else if (r % 3 == 0) {
        start = search.Perturb(seeds[r % seeds.size()], 3 + static_cast<int>(r % 5));
      } else {
        start = search.Perturb(walk.plan, 2 + static_cast<int>(r % 4));
      }
      Scored found;
      search.Run(std::move(start), climb, &found.plan, &found.cost);
      if (found.cost.BetterThan(best.cost)) best = found;
      if (found.cost.makespan <= walk.cost.makespan * (1 + kWalkSlack)) walk = std::move(found);
    }
  }

  // Auto is never worse than a baseline in its registry: takes the best of
  // their plans.
  void KeepBestBaseline(const Problem& problem, const SolveContext& ctx, Schedule& schedule) const {
    for (const char* name : kBaselines) {
      const Solver* solver = registry_.Find(name);
      if (!solver) continue;
      SolveResult baseline = solver->Solve(problem, ctx);
      if (Makespan(problem, baseline.schedule) < Makespan(problem, schedule)) {
        schedule = std::move(baseline.schedule);
      }
    }
  }

  // The exact MILP, warm-started with the plan; returns whether it proved it optimal.
  static bool ImproveExactly(const Problem& problem, const SolveContext& ctx,
                             const Deadline& deadline, SolveResult& result) {
    MipOptions options;
    options.time_limit_s = deadline.Remaining();
    options.threads = ctx.threads;
    options.max_nodes = static_cast<long>(ctx.work_scale * 5000);
    FlowMilpOutcome exact = SolveFlowMilp(problem, result.schedule, ctx.lower_bound, options);
    if (Makespan(problem, exact.schedule) < Makespan(problem, result.schedule)) {
      result.schedule = exact.schedule;
    }
    result.lower_bound = std::max(result.lower_bound, exact.bound);
    result.note += "; exact MILP: " + std::to_string(exact.nodes) + " nodes" +
                   (exact.optimal ? ", proven optimal" : "");
    Report(ctx, Makespan(problem, result.schedule), result.lower_bound);
    return exact.optimal;
  }

  const SolverRegistry& registry_;
};

}  // namespace

std::unique_ptr<Solver> MakeAutoSolver(const SolverRegistry& registry) {
  return std::make_unique<AutoSolver>(registry);
}

}  // namespace saturn
