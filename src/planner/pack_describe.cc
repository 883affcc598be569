// DescribePacks (pack_search.h): what `saturn plan` says of each pack it
// formed, and why.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common/format.h"
#include "planner/pack_search.h"

namespace saturn {

namespace {

std::string FormatSeconds(double s) {
  return s < 60 ? FormatFixed(s, s < 1 ? 3 : 2) + " s" : FormatDuration(s);
}

// "a step of all 4 takes 0.62 s, alone they take 1.20 s one after another",
// as the pack model steps them (members' own adapters counted).
std::string StepComparison(const Problem& problem, const PackTerms& terms,
                           const std::vector<int>& group, const PlanTask& entry) {
  const Option* key = nullptr;
  double alone = 0.0;
  for (int j : group) {
    const Task& t = problem.tasks[j];
    for (size_t o = 0; o < t.options.size(); ++o) {
      const Option& x = t.options[o];
      bool type = x.type < 0 || static_cast<size_t>(x.type) >= problem.types.size() ||
                  problem.types[static_cast<size_t>(x.type)] == entry.gpu_type;
      if (x.technique != entry.technique || x.gpus != entry.gpus || !type) continue;
      if (!key) key = &t.options[o];
      alone += terms.curves[j][o].step_s;
      break;
    }
  }
  if (!key) return "";
  double together = PackStepOfAll(problem, terms, group, *key);
  if (together < 0) return "";
  return "a step of all " + std::to_string(group.size()) + " takes " + FormatSeconds(together) +
         ", alone they take " + FormatSeconds(alone) + " one after another";
}

// "with pack-2 as well the plan would take 1h20m", or why it could not grow.
std::string WhyNotLarger(const Problem& problem, const PackTerms& terms, const Packing& packing,
                         int g, const PackingScore& chosen) {
  PackingScore best{std::numeric_limits<double>::infinity(), 0.0};
  int with = -1;
  for (int h = 0; h < static_cast<int>(packing.size()); ++h) {
    if (h == g || !terms.Compatible(packing[g][0], packing[h][0])) continue;
    PackingScore s = ScorePacking(problem, terms, Merged(packing, std::min(g, h), std::max(g, h)));
    if (with < 0 || s < best) best = s, with = h;
  }
  if (with < 0) return "every task of its class is in it";
  std::string other = packing[with].size() == 1
                          ? "task '" + problem.tasks[packing[with][0]].name + "'"
                          : "another pack";
  if (std::isinf(best.makespan)) return "with " + other + " as well it would not fit";
  return "with " + other + " as well the plan would take " + FormatDuration(best.makespan) +
         " instead of " + FormatDuration(chosen.makespan) + " (by the fast scheduler)";
}

}  // namespace

std::string DescribePacks(const Problem& problem, const PackTerms& terms,
                          const PackedPlanResult& result, bool no_pack) {
  if (!terms.Any()) return "";
  if (no_pack) return "packs: none (--no-pack); tasks that could share a base train alone\n";
  const Plan& plan = result.result.plan;
  const int packs = static_cast<int>(std::count_if(result.packing.begin(), result.packing.end(),
                                                   [](const auto& g) { return g.size() > 1; }));
  if (packs == 0) {
    return "packs: none: no packing of the tasks that could share a base shortened the plan (" +
           std::to_string(result.evaluations) + " packings scored)\n";
  }
  PackingScore chosen = ScorePacking(problem, terms, result.packing);
  std::map<std::string, const PlanTask*> entry;
  for (const PlanTask& t : plan.tasks)
    entry[t.task] = &t;
  std::string out;
  for (int g = 0; g < static_cast<int>(result.packing.size()); ++g) {
    const std::vector<int>& group = result.packing[g];
    if (group.size() == 1) continue;
    const PlanTask& e = *entry.at(problem.tasks[group[0]].name);
    std::string names;
    double end = e.end_s;
    constexpr size_t kNames = 6;  // an array's hundreds of groups: the first few
    for (size_t i = 0; i < group.size(); ++i) {
      const std::string& name = problem.tasks[group[i]].name;
      if (i < kNames) names += (names.empty() ? "" : ", ") + name;
      end = std::max(end, entry.at(name)->end_s);
    }
    if (group.size() > kNames) names += " and " + std::to_string(group.size() - kNames) + " more";
    out += "  " + e.pack + ": " + std::to_string(group.size()) + " tasks (" + names + "), " +
           e.technique + " on " + Plural(e.gpus, "GPU") + ", " + FormatDuration(end - e.start_s) +
           "; " + StepComparison(problem, terms, group, e) + "; " +
           WhyNotLarger(problem, terms, result.packing, g, chosen) + "\n";
  }
  return "packs: " + std::to_string(packs) + " (" + FormatDuration(plan.makespan_s) +
         " with them, " + FormatDuration(result.unpacked_makespan_s) + " with every task alone)\n" +
         out;
}

}  // namespace saturn
