// ValidatePlan for plans with packs (declared in validate.h).
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "common/format.h"
#include "planner/packing.h"
#include "planner/validate.h"

namespace saturn {
namespace {

std::string Placement(const PlanTask& t) {
  std::string ids;
  for (int id : t.gpu_ids)
    ids += (ids.empty() ? "" : ",") + std::to_string(id);
  return t.technique + " on " + std::to_string(t.gpus) + " GPU(s) of " + t.node + " [" + ids +
         "] from " + FormatMilliseconds(t.start_s);
}

// The option of `task` a plan entry names (technique, GPUs, type), or -1.
int OptionOf(const Problem& problem, const Task& task, const PlanTask& t) {
  for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
    const Option& x = task.options[o];
    if (x.technique == t.technique && x.gpus == t.gpus && x.node < 0 && !x.starts_now &&
        (t.gpu_type.empty() || problem.TypeName(x.type) == t.gpu_type))
      return o;
  }
  return -1;
}

// Checks one pack's members (plan entries in `members`, task indices in
// `index`) against the pack model.
void CheckPack(const Problem& problem, const PackTerms& terms, const std::string& pack,
               const std::vector<const PlanTask*>& members, const std::vector<int>& index,
               std::vector<std::string>* errors) {
  const std::string who = "pack '" + pack + "'";
  const PlanTask& first = *members[0];
  for (size_t i = 1; i < members.size(); ++i) {
    const PlanTask& m = *members[i];
    if (Placement(m) != Placement(first)) {
      errors->push_back(who + ": task '" + m.task + "' runs " + Placement(m) + " but '" +
                        first.task + "' runs " + Placement(first) +
                        "; the members of a pack share one worker");
    }
    if (!terms.Compatible(index[0], index[i])) {
      errors->push_back(who + ": tasks '" + first.task + "' and '" + m.task +
                        "' cannot share a pack (pack_class '" + terms.tasks[index[0]].cls +
                        "' and '" + terms.tasks[index[i]].cls + "')");
    }
  }
  if (!errors->empty()) return;
  int o = OptionOf(problem, problem.tasks[index[0]], first);
  if (o < 0) {
    errors->push_back(who + ": task '" + first.task + "' has no option " + first.technique +
                      " on " + std::to_string(first.gpus) + " GPU(s)");
    return;
  }
  std::vector<double> ends =
      PackMemberEnds(problem, terms, index, problem.tasks[index[0]].options[o]);
  if (ends.empty()) {
    double rows = 0.0;
    for (int j : index)
      rows += terms.tasks[j].rows;
    errors->push_back(who + " does not fit " + first.technique + " on " +
                      std::to_string(first.gpus) + " GPU(s): its members send " +
                      FormatNumber(rows) +
                      " rows per step, more than the profile measured a pack of (or a member "
                      "has no such option)");
    return;
  }
  for (size_t i = 0; i < members.size(); ++i) {
    double want = first.start_s + ends[i];
    if (std::abs(members[i]->end_s - want) > 1e-6 + 1e-9 * std::abs(want)) {
      errors->push_back(who + ": task '" + members[i]->task + "' ends at " +
                        FormatMilliseconds(members[i]->end_s) + " but the pack model says " +
                        FormatMilliseconds(want));
    }
  }
}

}  // namespace

std::vector<std::string> ValidatePlan(const Problem& problem, const PackTerms& terms,
                                      const Plan& plan) {
  std::map<std::string, std::vector<const PlanTask*>> packs;
  for (const PlanTask& t : plan.tasks) {
    if (!t.pack.empty()) packs[t.pack].push_back(&t);
  }
  if (packs.empty()) return ValidatePlan(problem, plan);
  std::map<std::string, int> index;
  for (int j = 0; j < problem.NumTasks(); ++j)
    index[problem.tasks[j].name] = j;
  std::vector<std::string> errors;
  for (const auto& [pack, members] : packs) {
    std::vector<int> idx;
    for (const PlanTask* m : members) {
      auto it = index.find(m->task);
      if (it == index.end()) {
        errors.push_back("pack '" + pack + "': task '" + m->task + "' is not in the profile");
      } else {
        idx.push_back(it->second);
      }
    }
    if (idx.size() == members.size()) CheckPack(problem, terms, pack, members, idx, &errors);
  }
  if (!errors.empty()) return errors;
  // The rest of the rules, with each pack as one task.
  Packing packing = PackingOfPlan(problem, plan);
  PackedProblem packed = BuildPackedProblem(problem, terms, packing);
  Plan as_packs = plan;
  as_packs.tasks.clear();
  std::map<std::string, std::string> packed_name;
  for (size_t g = 0; g < packing.size(); ++g)
    packed_name[problem.tasks[packing[g][0]].name] = packed.problem.tasks[g].name;
  std::map<std::string, size_t> placed;
  for (const PlanTask& t : plan.tasks) {
    if (t.pack.empty()) {
      as_packs.tasks.push_back(t);
      continue;
    }
    auto [it, added] = placed.emplace(t.pack, as_packs.tasks.size());
    if (added) {
      as_packs.tasks.push_back(t);
      as_packs.tasks.back().task = packed_name[t.task];
      as_packs.tasks.back().pack.clear();
    }
    PlanTask& entry = as_packs.tasks[it->second];
    entry.end_s = std::max(entry.end_s, t.end_s);
  }
  return ValidatePlan(packed.problem, as_packs);
}

}  // namespace saturn
