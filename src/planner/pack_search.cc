#include "planner/pack_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <utility>

#include "common/format.h"
#include "planner/construct.h"
#include "planner/lower_bound.h"

namespace saturn {
namespace {

// Within a class of more than this many packs, a pack tries merging only
// with its nearest neighbours in step count (members of similar length pack
// best: none waits long for the others).
constexpr int kAllPairsUpTo = 16;
constexpr int kNeighbours = 3;

double MaxSteps(const PackTerms& terms, const std::vector<int>& group) {
  double s = 0.0;
  for (int j : group)
    s = std::max(s, terms.tasks[j].steps);
  return s;
}

// Chunked tries every pack count up to this, then counts growing by
// kCountRatio: a class of thousands of table groups (docs/groups.md) is cut
// into a few dozen counts, not thousands, each a constructive plan.
constexpr int kEveryCountUpTo = 32;
constexpr double kCountRatio = 1.2;

// Chunked also tries the longest h tasks (h = 1, 2, 4, ..., kHeadMax, while
// at most a quarter of the class) as one pack, or each alone up to
// kHeadAloneMax, with the rest cut into 1 .. kHeadRestPacks packs or about
// as many as were best without a head.
constexpr int kHeadMax = 32;
constexpr int kHeadAloneMax = 4;
constexpr int kHeadRestPacks = 3;

// Greedy merging starts from every task alone, and each round scores a
// merge per neighbouring pair: quadratic in a class's size. Larger classes
// are left to Chunked.
constexpr int kGreedyClassUpTo = 32;

// The pack counts Chunked tries for a class of n tasks (1 .. n-1).
std::vector<int> PackCounts(int n) {
  std::vector<int> counts;
  for (int p = 1; p < n; p = p < kEveryCountUpTo ? p + 1 : static_cast<int>(p * kCountRatio))
    counts.push_back(p);
  return counts;
}

// Pairs of packs (indices into `packing`) worth trying to merge.
std::vector<std::pair<int, int>> MergeCandidates(const PackTerms& terms, const Packing& packing) {
  std::map<std::string, std::vector<int>> by_class;
  std::map<std::string, int> members;
  for (int g = 0; g < static_cast<int>(packing.size()); ++g) {
    const std::string& cls = terms.tasks[packing[g][0]].cls;
    if (!cls.empty()) by_class[cls].push_back(g);
    if (!cls.empty()) members[cls] += static_cast<int>(packing[g].size());
  }
  for (const auto& [cls, count] : members)
    if (count > kGreedyClassUpTo) by_class.erase(cls);
  std::vector<std::pair<int, int>> pairs;
  for (auto& [cls, groups] : by_class) {
    std::stable_sort(groups.begin(), groups.end(), [&](int a, int b) {
      return MaxSteps(terms, packing[a]) < MaxSteps(terms, packing[b]);
    });
    const int n = static_cast<int>(groups.size());
    const int reach = n <= kAllPairsUpTo ? n : kNeighbours;
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n && b <= a + reach; ++b)
        pairs.emplace_back(groups[a], groups[b]);
    }
  }
  return pairs;
}

nlohmann::json PacksJson(const Plan& plan) {
  nlohmann::json packs = nlohmann::json::array();
  for (const PlanTask& t : plan.tasks) {
    if (t.pack.empty()) continue;
    if (packs.empty() || packs.back()["name"] != t.pack) {
      packs.push_back({{"name", t.pack},
                       {"technique", t.technique},
                       {"gpus", t.gpus},
                       {"node", t.node},
                       {"start_s", t.start_s},
                       {"end_s", t.end_s},
                       {"members", nlohmann::json::array()}});
    }
    packs.back()["members"].push_back(t.task);
    packs.back()["end_s"] = std::max(packs.back()["end_s"].get<double>(), t.end_s);
  }
  return packs;
}

}  // namespace

Packing Merged(const Packing& packing, int a, int b) {
  Packing out;
  for (int g = 0; g < static_cast<int>(packing.size()); ++g) {
    if (g == b) continue;
    out.push_back(packing[g]);
    if (g == a) out.back().insert(out.back().end(), packing[b].begin(), packing[b].end());
  }
  return out;
}

bool PackingScore::operator<(const PackingScore& o) const {
  const double eps = 1e-9 * std::max(1.0, std::abs(o.makespan));
  if (makespan < o.makespan - eps) return true;
  if (makespan > o.makespan + eps) return false;
  return area < o.area * (1 - 1e-9);
}

PackingScore ScorePacking(const Problem& problem, const PackTerms& terms, const Packing& packing) {
  const double inf = std::numeric_limits<double>::infinity();
  PackedProblem packed = BuildPackedProblem(problem, terms, packing);
  for (const Task& t : packed.problem.tasks) {
    bool any = false;
    for (const Option& o : t.options)
      any = any || packed.problem.FitsSomewhere(o);
    if (!any) return {inf, inf};
  }
  std::vector<Candidate> c =
      ConstructiveCandidates(packed.problem, MakespanLowerBound(packed.problem));
  if (c.empty()) return {inf, inf};
  PackingScore score{c[0].makespan, 0.0};
  for (int g = 0; g < packed.problem.NumTasks(); ++g) {
    const Option& o = packed.problem.tasks[g].options[c[0].option[g]];
    score.area += o.gpus * o.runtime_s;
  }
  return score;
}

namespace {

// Most packings one search scores (each a constructive plan of the packed
// problem: about a millisecond at tens of tasks).
constexpr int kMaxEvaluations = 3000;
// Hill climbing's share: this many tasks' worth of scoring a call, and at
// least kMinImproveEvaluations packings.
constexpr int kImproveWork = 300000;
constexpr int kMinImproveEvaluations = 100;

Packing Canonical(Packing p) {
  for (std::vector<int>& group : p)
    std::sort(group.begin(), group.end());
  std::sort(p.begin(), p.end());
  return p;
}

// The packings a search has scored, best first on request.
class PackingSearch {
 public:
  PackingSearch(const Problem& problem, const PackTerms& terms)
      : problem_(problem), terms_(terms) {}

  PackingScore Score(const Packing& packing) {
    Packing key = Canonical(packing);
    auto it = seen_.find(key);
    if (it != seen_.end()) return it->second;
    ++evaluations_;
    return seen_[key] = ScorePacking(problem_, terms_, key);
  }
  bool Spent() const { return evaluations_ >= kMaxEvaluations; }
  int evaluations() const { return evaluations_; }

  // Each class cut into p packs of consecutive members by step count, for
  // the p that scores best, one class after another.
  Packing Chunked() {
    Packing packing = Unpacked(problem_.NumTasks());
    std::map<std::string, std::vector<int>> classes;
    for (int j = 0; j < problem_.NumTasks(); ++j)
      if (!terms_.tasks[j].cls.empty()) classes[terms_.tasks[j].cls].push_back(j);
    for (auto& [cls, members] : classes) {
      std::stable_sort(members.begin(), members.end(),
                       [&](int a, int b) { return terms_.tasks[a].steps > terms_.tasks[b].steps; });
      Packing others;
      for (const std::vector<int>& g : packing)
        if (terms_.tasks[g[0]].cls != cls) others.push_back(g);
      Packing best = packing;
      PackingScore best_score = Score(packing);
      const int n = static_cast<int>(members.size());
      // Keeps `trial` if it is the best so far; whether it was.
      auto consider = [&](const Packing& trial) {
        PackingScore s = Score(trial);
        if (!(s < best_score)) return false;
        best_score = s, best = trial;
        return true;
      };
      int best_p = 0;
      for (int p : PackCounts(n)) {
        if (Spent()) break;
        Packing trial = others;
        AddChunks(members, 0, p, trial);
        if (consider(trial)) best_p = p;
      }
      // The longest few on their own (one pack, or each alone), the rest in
      // a few packs: with steps as skewed as a Zipf table's groups, the
      // longest member sets its pack's end, and equal counts would give it
      // hundreds of others to carry all the way.
      for (int h = 1; h <= kHeadMax && h * 4 <= n && !Spent(); h *= 2) {
        for (bool alone : {false, true}) {
          if (alone && (h == 1 || h > kHeadAloneMax)) continue;
          for (int q : RestCounts(best_p, n - h)) {
            if (Spent()) break;
            Packing trial = others;
            if (alone) {
              for (int i = 0; i < h; ++i)
                trial.push_back({members[static_cast<size_t>(i)]});
            } else {
              trial.emplace_back(members.begin(), members.begin() + h);
            }
            AddChunks(members, h, q, trial);
            consider(trial);
          }
        }
      }
      packing = best;
    }
    return packing;
  }

  // The pack counts for the rest of a class after its head: 1 ..
  // kHeadRestPacks, and around the best count without a head.
  static std::vector<int> RestCounts(int best_p, int rest) {
    std::vector<int> counts;
    for (int q = 1; q <= kHeadRestPacks; ++q)
      counts.push_back(q);
    for (int q = best_p - 1; q <= best_p + 1; ++q)
      if (q > kHeadRestPacks) counts.push_back(q);
    std::erase_if(counts, [&](int q) { return q > rest; });
    return counts;
  }

  // members[from..] cut into p packs of consecutive members, appended to `out`.
  static void AddChunks(const std::vector<int>& members, int from, int p, Packing& out) {
    const int n = static_cast<int>(members.size()) - from;
    auto at = [&](int c) { return members.begin() + from + c * n / p; };
    for (int c = 0; c < p; ++c)
      out.emplace_back(at(c), at(c + 1));
  }

  // Merges the two packs whose merge helps most, while one helps.
  Packing Greedy() {
    Packing packing = Unpacked(problem_.NumTasks());
    PackingScore best = Score(packing);
    while (!Spent()) {
      int best_a = -1, best_b = -1;
      PackingScore best_merge = best;
      for (auto [a, b] : MergeCandidates(terms_, packing)) {
        PackingScore s = Score(Merged(packing, a, b));
        if (s < best_merge) best_merge = s, best_a = a, best_b = b;
      }
      if (best_a < 0) break;
      packing = Merged(packing, best_a, best_b);
      best = best_merge;
    }
    return packing;
  }

  // Hill climbing: moves one task to another pack of its class (or alone),
  // or swaps two tasks of one class between packs, while that helps.
  Packing Improve(Packing packing) {
    PackingScore best = Score(packing);
    // Each scored packing costs about its task count; thousands of tasks
    // get fewer moves tried.
    const int budget =
        std::max(kMinImproveEvaluations, kImproveWork / std::max(1, problem_.NumTasks()));
    const int stop = std::min(kMaxEvaluations, evaluations_ + budget);
    auto spent = [&] { return evaluations_ >= stop; };
    for (bool improved = true; improved && !spent();) {
      improved = false;
      for (size_t g = 0; g < packing.size() && !improved && !spent(); ++g) {
        for (size_t i = 0; i < packing[g].size() && !improved && !spent(); ++i) {
          const int j = packing[g][i];
          if (terms_.tasks[j].cls.empty()) continue;
          for (size_t h = 0; h <= packing.size() && !improved && !spent(); ++h) {
            if (h == g || (h < packing.size() && !terms_.Compatible(j, packing[h][0]))) continue;
            if (h == packing.size() && packing[g].size() == 1) continue;
            Packing trial = Moved(packing, g, i, h);
            PackingScore s = Score(trial);
            if (s < best) best = s, packing = trial, improved = true;
          }
          for (size_t h = g + 1; h < packing.size() && !improved && !spent(); ++h) {
            for (size_t k = 0; k < packing[h].size() && !improved && !spent(); ++k) {
              if (!terms_.Compatible(j, packing[h][k])) continue;
              Packing trial = packing;
              std::swap(trial[g][i], trial[h][k]);
              PackingScore s = Score(trial);
              if (s < best) best = s, packing = trial, improved = true;
            }
          }
        }
      }
    }
    return packing;
  }

  // The `keep` best packings scored, best first.
  std::vector<Packing> Best(int keep) const {
    std::vector<std::pair<PackingScore, Packing>> all;
    for (const auto& [p, s] : seen_)
      if (!std::isinf(s.makespan)) all.emplace_back(s, p);
    std::stable_sort(all.begin(), all.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<Packing> out;
    for (size_t i = 0; i < all.size() && static_cast<int>(i) < keep; ++i)
      out.push_back(all[i].second);
    return out;
  }

 private:
  static Packing Moved(Packing p, size_t g, size_t i, size_t h) {
    const int j = p[g][i];
    if (h == p.size())
      p.push_back({j});
    else
      p[h].push_back(j);
    p[g].erase(p[g].begin() + static_cast<long>(i));
    if (p[g].empty()) p.erase(p.begin() + static_cast<long>(g));
    return p;
  }

  const Problem& problem_;
  const PackTerms& terms_;
  std::map<Packing, PackingScore> seen_;
  int evaluations_ = 0;
};

}  // namespace

namespace {

// Whether the best packing's constructive plan is shorter than any plan
// without packs can be (the unpacked problem's lower bound): then the plan
// without packs is solved only for comparison (ShortSolve), not to beat.
bool PackedWinsAnyway(const Problem& problem, const PackTerms& terms,
                      const std::vector<Packing>& candidates) {
  if (candidates.empty()) return false;
  double packed = ScorePacking(problem, terms, candidates[0]).makespan;
  return packed < MakespanLowerBound(problem) * (1 - 1e-9);
}

// A solve at a small fixed effort (constructive plans and a short climb).
PlanRequest ShortSolve(PlanRequest request) {
  constexpr double kComparisonEffort = 0.02;
  request.anytime = false;
  request.work_limit = 0.0;
  request.work_scale *= kComparisonEffort;
  return request;
}

}  // namespace

std::vector<Packing> SearchPackings(const Problem& problem, const PackTerms& terms, int keep,
                                    int* evaluations) {
  PackingSearch search(problem, terms);
  search.Improve(search.Chunked());
  // Hill climbing from every task alone (greedy merging found no merge, or
  // every class was too large for it) costs the most per packing scored and
  // repeats what merging and Chunked tried.
  Packing greedy = search.Greedy();
  if (greedy.size() < static_cast<size_t>(problem.NumTasks())) search.Improve(greedy);
  if (evaluations) *evaluations = search.evaluations();
  return search.Best(keep);
}

Packing ChoosePacking(const Problem& problem, const PackTerms& terms, int* evaluations) {
  std::vector<Packing> best = SearchPackings(problem, terms, 1, evaluations);
  return best.empty() ? Unpacked(problem.NumTasks()) : best[0];
}

namespace {

// The constructive score misjudges some packings (a 5-task instance of one
// class: 220.8 s constructive, 200.5 s solved, where the three packings
// scored best solved to 206 s at best), so on problems of up to
// kMaxTasksRescored tasks the packings solved in full are the three scored
// best and the three of least lower bound (lower_bound.h) among the rest.
constexpr int kMaxTasksRescored = 8;
constexpr int kPackingsByBound = 3;

std::vector<Packing> PackingsToSolve(const Problem& problem, const PackTerms& terms,
                                     int* evaluations) {
  if (problem.NumTasks() > kMaxTasksRescored)
    return SearchPackings(problem, terms, kPackingsSolved, evaluations);
  std::vector<Packing> found =
      SearchPackings(problem, terms, std::numeric_limits<int>::max(), evaluations);
  if (found.size() <= static_cast<size_t>(kPackingsSolved)) return found;
  std::vector<std::pair<double, size_t>> rest;
  for (size_t i = kPackingsSolved; i < found.size(); ++i)
    rest.emplace_back(MakespanLowerBound(BuildPackedProblem(problem, terms, found[i]).problem), i);
  std::stable_sort(rest.begin(), rest.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Packing> out(found.begin(), found.begin() + kPackingsSolved);
  for (size_t k = 0; k < rest.size() && k < static_cast<size_t>(kPackingsByBound); ++k)
    out.push_back(found[rest[k].second]);
  return out;
}

}  // namespace

PackedPlanResult PlanWithPacks(const Problem& problem, const PackTerms& terms,
                               const PlanRequest& request, bool allow_packs) {
  PackedPlanResult out;
  out.packing = Unpacked(problem.NumTasks());
  const bool may_pack = allow_packs && terms.Any();
  std::vector<Packing> candidates;
  if (may_pack) {
    for (Packing& p : PackingsToSolve(problem, terms, &out.evaluations))
      if (p.size() < static_cast<size_t>(problem.NumTasks())) candidates.push_back(std::move(p));
  }
  PlanRequest share = request;
  if (request.anytime) share.time_limit_s /= 1.0 + static_cast<double>(candidates.size());
  out.result =
      RunPlanner(problem, PackedWinsAnyway(problem, terms, candidates) ? ShortSolve(share) : share);
  if (!may_pack) return out;
  out.unpacked_makespan_s = out.result.plan.makespan_s;
  double solve_s = out.result.plan.solve_time_s;
  for (const Packing& chosen : candidates) {
    PackedProblem packed = BuildPackedProblem(problem, terms, chosen);
    // Kept only if shorter than the plan so far: a packing that cannot be
    // (packs stepping no faster than their members one after another, on
    // CPU) costs no solve.
    if (!(MakespanLowerBound(packed.problem) < out.result.plan.makespan_s * (1 - 1e-9))) continue;
    ++out.packings_solved;
    PlanResult r = RunPlanner(packed.problem, share);
    solve_s += r.plan.solve_time_s;
    if (r.status == SolveStatus::kInfeasible ||
        !(r.plan.makespan_s < out.result.plan.makespan_s * (1 - 1e-9)))
      continue;
    r.plan = ExpandPackedPlan(problem, packed, std::move(r.plan));
    // Optimal for this packing only: no bound over every packing is known.
    if (r.status == SolveStatus::kOptimal) {
      r.status = SolveStatus::kFeasible;
      r.plan.status = SolveStatusName(SolveStatus::kFeasible);
    }
    r.plan.extra["packs"] = PacksJson(r.plan);
    r.plan.extra["unpacked_makespan_s"] = out.unpacked_makespan_s;
    r.plan.extra["lower_bound_of"] = "the chosen packing";
    out.result = std::move(r);
    out.packing = chosen;
  }
  out.result.plan.solve_time_s = solve_s;
  return out;
}

}  // namespace saturn
