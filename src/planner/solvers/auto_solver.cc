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
// Steps 1-3 are the default effort (bounded: deterministic for a seed, about
// 2 s here at any size); on 8 or more nodes half of it goes to step 4.
// Anytime (ctx.anytime) or with a work limit, half of it goes to step 4 on
// any cluster, and step 4 follows with the rest:
// 4. Rounds of large-neighbourhood search over groups of nodes
//    (node_groups.h: the critical node and a few others re-optimised as a
//    small problem, ~100x cheaper per plan than the whole) and global climbs
//    from its plan, until the time limit or the work limit. They search only
//    the options that can be in a plan better than the best so far
//    (WithoutOptionsAtLeast): a plan whose makespan is one task's runtime
//    otherwise holds the search there.
// It stops early when the plan meets the lower bound or the gap target
// (ctx.gap). Effort is counted in work units (solver.h) and MILP nodes; the
// time limit only cuts it short, and the status then says time_limit. The
// incumbent's history goes to SolveResult::improvements and the note.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>

#include "common/format.h"
#include "planner/construct.h"
#include "planner/flow_milp.h"
#include "planner/list_scheduler.h"
#include "planner/local_search.h"
#include "planner/node_groups.h"
#include "planner/registry.h"
#include "planner/solver.h"

namespace saturn {
namespace {

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
    if (problem.NumTasks() == 0) return {SolveStatus::kOptimal, {}, 0.0, "", {}, 0.0};
    Progress progress(ctx, clock, problem);

    std::vector<Candidate> seeds = ConstructiveCandidates(problem, ctx.lower_bound);
    if (!ctx.warm_start.empty()) {
      seeds.insert(seeds.begin(), CandidateFromSchedule(problem, ctx.warm_start));
    }
    LocalSearch search(problem, deadline, progress.Target(), ctx.seed);
    Scored best = BestSeed(search, seeds);
    progress.Improved(best.cost.makespan, search.evaluations());

    // Phase 1: the default effort (deterministic), capped by a work limit.
    const Budget budget = BudgetFor(problem, ctx);
    Climb(problem, deadline, seeds, search, progress, budget.first, best);

    SerialDecoder decoder(problem);
    SolveResult result;
    decoder.Decode(best.plan.order, best.plan.option, &result.schedule);
    if (KeepBestBaseline(problem, ctx, result.schedule)) {
      best.plan = CandidateFromSchedule(problem, result.schedule);
      best.cost = search.Evaluate(best.plan, nullptr);
    }
    progress.Improved(Makespan(problem, result.schedule), search.evaluations());
    result.lower_bound = ctx.lower_bound;

    // The exact model proves optimality of small instances within seconds; on
    // larger ones CBC rarely improves on the search in the time auto has.
    bool proven = progress.Reached(Makespan(problem, result.schedule), ctx.lower_bound);
    bool exact_fits = problem.NumTasks() <= kMaxExactTasks &&
                      FlowMilpSize(problem) <= kMaxExactVariables &&
                      ctx.work_scale >= kMinExactWorkScale;
    std::string exact_note;
    if (!proven && exact_fits && deadline.Remaining() > 0.1) {
      proven = ImproveExactly(problem, ctx, deadline, result, exact_note);
      progress.SetBound(result.lower_bound);
      progress.Improved(Makespan(problem, result.schedule), search.evaluations());
      if (!proven)
        proven = progress.Reached(Makespan(problem, result.schedule), result.lower_bound);
    }

    // Phase 2 (anytime, a work limit, or a bounded run on kGroupNodes+
    // nodes): keep improving the best plan until the gap closes or time or
    // work ends.
    std::string anytime_note;
    if (!proven && budget.second > 0 && !deadline.Expired()) {
      proven = Anytime(problem, deadline, search, progress, budget.second, result, anytime_note);
    }

    result.work = progress.Work(search.evaluations());
    result.improvements = progress.history();
    result.note = std::to_string(search.evaluations()) + " plans evaluated (" +
                  FormatWork(result.work) + " work units)" + exact_note + anytime_note +
                  progress.Summary();
    bool optimal = Makespan(problem, result.schedule) <= result.lower_bound * (1 + 1e-9);
    if (optimal || (proven && ctx.gap <= 0)) {
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
  static constexpr int kGroupNodes = 8;
  static constexpr double kWalkSlack = 0.002;
  static constexpr const char* kBaselines[] = {"current-practice", "max", "min", "optimus",
                                               "random"};

  // The incumbent's history and the stopping rule (bound and gap target).
  class Progress {
   public:
    Progress(const SolveContext& ctx, const Clock& clock, const Problem& problem)
        : ctx_(ctx),
          clock_(clock),
          started_(clock.Now()),
          size_(static_cast<double>(problem.NumTasks()) * problem.NumNodes()),
          bound_(ctx.lower_bound) {}

    // The makespan at which search may stop: the bound, or the gap target.
    double Target() const {
      return ctx_.gap > 0 ? bound_ / (1 - std::min(ctx_.gap, 0.99)) : bound_;
    }
    bool Reached(double makespan, double bound) const {
      double target = ctx_.gap > 0 ? bound / (1 - std::min(ctx_.gap, 0.99)) : bound;
      return makespan <= target * (1 + 1e-9);
    }
    uint64_t seed() const { return ctx_.seed; }
    void SetBound(double bound) { bound_ = std::max(bound_, bound); }
    // Work units: the main search's evaluations plus work done elsewhere.
    double Work(long evaluations) const { return evaluations * size_ / 1e6 + extra_work_; }
    void SetExtraWork(double work) { extra_work_ = work; }

    void Improved(double makespan, long evaluations) {
      if (!history_.empty() && makespan >= history_.back().makespan * (1 - 1e-12)) return;
      history_.push_back({clock_.Now() - started_, Work(evaluations), makespan, bound_});
      if (ctx_.on_progress) ctx_.on_progress(makespan, bound_);
    }
    const std::vector<Improvement>& history() const { return history_; }

    // "; incumbent 1.047x the bound at 0.9 s, 1.012x at 28 s", first and last steps.
    std::string Summary() const {
      if (history_.size() < 2 || bound_ <= 0) return "";
      auto step = [&](const Improvement& i) {
        return FormatFixed(i.makespan / bound_, 4) + "x at " + FormatFixed(i.time_s, 1) + " s";
      };
      return "; incumbent " + step(history_.front()) + " -> " + step(history_.back()) + " (" +
             std::to_string(history_.size()) + " improvements)";
    }

   private:
    const SolveContext& ctx_;
    const Clock& clock_;
    double started_;
    double size_;
    double bound_;
    double extra_work_ = 0.0;
    std::vector<Improvement> history_;
  };

  static std::string FormatWork(double work) { return FormatFixed(work, work < 10 ? 2 : 0); }

  struct Scored {
    Candidate plan;
    Cost cost;
  };

  // Phase 1's decoder evaluations (the default effort: evaluations scale
  // inversely with the size of one, tasks x nodes, about 2 s on one core of a
  // 2-core machine for any size) and phase 2's work units (+inf: until the
  // deadline; 0: no phase 2). Half of the default effort goes to phase 2 on
  // kGroupNodes or more nodes, whose node-group search improves such plans
  // far more per unit of work than whole-plan climbs (bench/planner), and
  // in open-ended runs (anytime, work limit) on any cluster.
  using Budget = std::pair<long, double>;
  static Budget BudgetFor(const Problem& problem, const SolveContext& ctx) {
    const double size = static_cast<double>(problem.NumTasks()) * problem.NumNodes();
    long first = static_cast<long>(ctx.work_scale * std::clamp(4e7 / size, 300.0, 4e6));
    if (ctx.work_limit > 0) first = std::min(first, static_cast<long>(ctx.work_limit * 1e6 / size));
    first = std::max(1L, first);
    // Open-ended runs (anytime, work limit) on fewer nodes hand half on too:
    // there phase 2's capped climbs find plans phase 1's do not (img-8+4:
    // 1.6% shorter by 50 work units, 80 without the share). Bounded runs
    // there (the executor's and the simulator's re-plans) keep all of it:
    // a share changed their plans, and in one simulator test introspection
    // then ended later than the blind run.
    const bool open_ended = ctx.anytime || ctx.work_limit > 0;
    const long handed_on = problem.NumNodes() >= kGroupNodes || open_ended ? first / 2 : 0;
    first -= handed_on;
    if (ctx.work_limit > 0) return {first, std::max(0.0, ctx.work_limit - first * size / 1e6)};
    if (ctx.anytime) return {first, std::numeric_limits<double>::infinity()};
    return {first, handed_on * size / 1e6};
  }

  // What phase 2 searches: the problem without the options that cannot be
  // in a plan better than the best one (WithoutOptionsAtLeast), with its own
  // searches, rebuilt each time the best plan improves. Without it the search
  // stalls where one task's option sets the makespan (measured at 300 tasks
  // on 32 nodes: a GPT-J task on 5 GPUs whose runtime alone is the makespan;
  // every better plan gives it 6 GPUs and moves other work away first).
  class CappedSearch {
   public:
    CappedSearch(const Problem& problem, const Deadline& deadline, const Progress& progress)
        : problem_(problem), deadline_(deadline), progress_(progress) {}

    // Caps at `makespan` if that is below the current cap; returns whether it did.
    bool CapAt(double makespan) {
      if (capped_ && makespan >= cap_ * (1 - 1e-12)) return false;
      // The same problem (no option runs between the two caps): keep the
      // searches and their state.
      if (capped_ && !AnyOptionBetween(makespan, cap_)) {
        cap_ = makespan;
        return false;
      }
      if (capped_) {
        retired_work_ += groups_->work() + climb_->evaluations() * Size() / 1e6;
        tried_ += groups_->groups_tried();
        improved_ += groups_->groups_improved();
      }
      cap_ = makespan;
      capped_ = std::make_unique<Problem>(WithoutOptionsAtLeast(problem_, makespan));
      const uint64_t seed = progress_.seed() * 7919 + 1 + 104729 * rebuilds_++;
      climb_ = std::make_unique<LocalSearch>(*capped_, deadline_, progress_.Target(), seed);
      groups_ = std::make_unique<NodeGroupSearch>(*capped_, deadline_,
                                                  NodeGroupOptions{progress_.Target(), seed, {}});
      return true;
    }
    const Problem& problem() const { return *capped_; }
    LocalSearch& climb() { return *climb_; }
    NodeGroupSearch& groups() { return *groups_; }
    // Work units of every search so far but the current climb's evaluations.
    double WorkBesideClimb() const { return retired_work_ + groups_->work(); }
    long groups_tried() const { return tried_ + groups_->groups_tried(); }
    long groups_improved() const { return improved_ + groups_->groups_improved(); }

   private:
    double Size() const { return static_cast<double>(problem_.NumTasks()) * problem_.NumNodes(); }
    bool AnyOptionBetween(double low, double high) const {
      for (const Task& task : problem_.tasks) {
        for (const Option& o : task.options) {
          if (o.runtime_s >= low * (1 - 1e-12) && o.runtime_s < high * (1 - 1e-12)) return true;
        }
      }
      return false;
    }
    const Problem& problem_;
    const Deadline& deadline_;
    const Progress& progress_;
    double cap_ = 0.0;
    std::unique_ptr<Problem> capped_;
    std::unique_ptr<LocalSearch> climb_;
    std::unique_ptr<NodeGroupSearch> groups_;
    double retired_work_ = 0.0;
    long tried_ = 0, improved_ = 0;
    uint64_t rebuilds_ = 0;
  };

  // Phase 2: rounds of node-group search (node_groups.h; on 3+ nodes) and
  // global climbs from its plan, on the capped problem (CappedSearch), until
  // `work` units are spent, the deadline, or the target. The search walks
  // from plan to plan; the best plan so far stays in `result`. Returns
  // whether the target was reached.
  static bool Anytime(const Problem& problem, const Deadline& deadline, LocalSearch& search,
                      Progress& progress, double work, SolveResult& result, std::string& note) {
    CappedSearch capped(problem, deadline, progress);
    const double main_work = progress.Work(search.evaluations());  // phase 1's
    // Progress counts work as (the current climb's evaluations, the rest).
    auto spent = [&] {
      progress.SetExtraWork(main_work + capped.WorkBesideClimb());
      return progress.Work(capped.climb().evaluations());
    };
    auto cap = [&] {
      bool changed = capped.CapAt(Makespan(problem, result.schedule));
      spent();
      return changed;
    };
    auto best = [&] { return Makespan(problem, result.schedule); };
    auto keep_if_better = [&](const Schedule& walk) {
      if (Makespan(problem, walk) < best() * (1 - 1e-12)) result.schedule = walk;
    };
    cap();
    const double end = spent() + work;
    auto reached = [&] { return progress.Reached(best(), result.lower_bound); };
    Schedule walk = result.schedule;
    while (spent() < end && !deadline.Expired() && !reached()) {
      cap();
      if (problem.NumNodes() >= 3) {
        walk = capped.groups().Improve(walk, end - spent(), [&](double makespan) {
          spent();
          progress.Improved(makespan, capped.climb().evaluations());
        });
        keep_if_better(walk);
        if (spent() >= end || deadline.Expired() || reached()) break;
        // When a new cap takes options of the walk away, the groups repair
        // it where they were (a global climb from such a walk scatters the
        // plan, measured: 1.08x the best after 20 work units).
        cap();
        if (Makespan(capped.problem(), walk) > Makespan(problem, walk)) continue;
      }
      // A global climb from the walk (and kicks of it) moves work between
      // groups the node-group search never pairs.
      const Problem& sp = capped.problem();
      Scored from;
      from.plan = CandidateFromSchedule(sp, walk);
      from.cost = capped.climb().Evaluate(from.plan, nullptr);
      const double size = static_cast<double>(problem.NumTasks()) * problem.NumNodes();
      long evaluations =
          std::max(1L, static_cast<long>(std::min(end - spent(), 20.0) * 1e6 / size));
      Climb(sp, deadline, {from.plan}, capped.climb(), progress, evaluations, from);
      SerialDecoder decoder(sp);
      Schedule climbed;
      decoder.Decode(from.plan.order, from.plan.option, &climbed);
      if (Makespan(sp, climbed) < Makespan(sp, walk)) walk = std::move(climbed);
      keep_if_better(walk);
    }
    // From here on Progress counts phase 1's evaluations again (the caller's).
    progress.SetExtraWork(spent() - main_work);
    note = "; node groups: " + std::to_string(capped.groups_improved()) + " of " +
           std::to_string(capped.groups_tried()) + " improved";
    return reached();
  }

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
  // `evaluations` < 0: until the deadline.
  static void Climb(const Problem& problem, const Deadline& deadline,
                    const std::vector<Candidate>& seeds, LocalSearch& search, Progress& progress,
                    long evaluations, Scored& best) {
    (void)problem;
    const long end =
        evaluations < 0 ? std::numeric_limits<long>::max() : search.evaluations() + evaluations;
    // The walk moves between local optima: a climb's result replaces it when
    // no more than kWalkSlack worse, so the search can cross small ridges.
    Scored walk = best;
    for (long r = 0;
         search.evaluations() < end && !search.Optimal(best.cost) && !deadline.Expired(); ++r) {
      Candidate start;
      if (r < static_cast<long>(std::min<size_t>(3, seeds.size()))) {
        start = seeds[r];
      } else if (r % 3 == 0) {
        start = search.Perturb(seeds[r % seeds.size()], 3 + static_cast<int>(r % 5));
      } else {
        start = search.Perturb(walk.plan, 2 + static_cast<int>(r % 4));
      }
      Scored found;
      const long climb = std::min<long>(end - search.evaluations(), kClimbEvaluations);
      search.Run(std::move(start), climb, &found.plan, &found.cost);
      if (found.cost.BetterThan(best.cost)) {
        best = found;
        progress.Improved(best.cost.makespan, search.evaluations());
      }
      if (found.cost.makespan <= walk.cost.makespan * (1 + kWalkSlack)) walk = std::move(found);
    }
  }

  // Auto is never worse than a baseline in its registry: takes the best of
  // their plans. Returns whether one was better.
  bool KeepBestBaseline(const Problem& problem, const SolveContext& ctx, Schedule& schedule) const {
    bool replaced = false;
    for (const char* name : kBaselines) {
      const Solver* solver = registry_.Find(name);
      if (!solver) continue;
      SolveResult baseline = solver->Solve(problem, ctx);
      if (Makespan(problem, baseline.schedule) < Makespan(problem, schedule)) {
        schedule = std::move(baseline.schedule);
        replaced = true;
      }
    }
    return replaced;
  }

  // The exact MILP, warm-started with the plan; returns whether it proved it optimal.
  static bool ImproveExactly(const Problem& problem, const SolveContext& ctx,
                             const Deadline& deadline, SolveResult& result, std::string& note) {
    MipOptions options;
    options.time_limit_s = deadline.Remaining();
    options.threads = ctx.threads;
    options.max_nodes = static_cast<long>(ctx.work_scale * 5000);
    FlowMilpOutcome exact = SolveFlowMilp(problem, result.schedule, ctx.lower_bound, options);
    if (Makespan(problem, exact.schedule) < Makespan(problem, result.schedule)) {
      result.schedule = exact.schedule;
    }
    result.lower_bound = std::max(result.lower_bound, exact.bound);
    note = "; exact MILP: " + std::to_string(exact.nodes) + " nodes" +
           (exact.optimal ? ", proven optimal" : "");
    return exact.optimal;
  }

  const SolverRegistry& registry_;
};

}  // namespace

std::unique_ptr<Solver> MakeAutoSolver(const SolverRegistry& registry) {
  return std::make_unique<AutoSolver>(registry);
}

}  // namespace saturn
