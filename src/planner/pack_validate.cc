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

// Checks one pack's members (plan entries in `members`, task indices in
// `index`) against the pack model.
// Returns where the pack model ends the pack (its last member), or -1.
double CheckPack(const Problem& problem, const PackTerms& terms, const std::string& pack,
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
  if (!errors->empty()) return -1.0;
  int o = OptionOf(problem, problem.tasks[index[0]], first);
  if (o < 0) {
    errors->push_back(who + ": task '" + first.task + "' has no option " + first.technique +
                      " on " + std::to_string(first.gpus) + " GPU(s)");
    return -1.0;
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
    return -1.0;
  }
  // A member may end later than the model says (a plan that leaves it
  // time to spare, or one saved under an older pack model that charged
  // restarts), not sooner.
  double last = first.start_s;
  for (size_t i = 0; i < members.size(); ++i) {
    double want = first.start_s + ends[i];
    last = std::max(last, want);
    if (members[i]->end_s < want - (1e-6 + 1e-9 * std::abs(want))) {
      errors->push_back(who + ": task '" + members[i]->task + "' ends at " +
                        FormatMilliseconds(members[i]->end_s) +
                        ", sooner than the pack model allows: " + FormatMilliseconds(want));
    }
  }
  return last;
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
  std::map<std::string, double> model_end;  // per pack: where the model ends it
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
    if (idx.size() == members.size())
      model_end[pack] = CheckPack(problem, terms, pack, members, idx, &errors);
  }
  double last_end = 0.0;
  for (const PlanTask& t : plan.tasks)
    last_end = std::max(last_end, t.end_s);
  if (std::abs(plan.makespan_s - last_end) > 1e-6 + 1e-9 * std::abs(last_end)) {
    errors.push_back("makespan_s " + FormatMilliseconds(plan.makespan_s) +
                     " is not the largest end_s " + FormatMilliseconds(last_end));
  }
  if (plan.lower_bound_s > plan.makespan_s + 1e-6 + 1e-9 * std::abs(plan.makespan_s)) {
    errors.push_back("lower_bound_s " + FormatMilliseconds(plan.lower_bound_s) +
                     " exceeds makespan_s " + FormatMilliseconds(plan.makespan_s));
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
    // The pack holds its devices until the model ends it (its members may
    // say later: time to spare).
    as_packs.tasks[it->second].end_s = model_end[t.pack];
  }
  as_packs.makespan_s = 0.0;
  for (const PlanTask& t : as_packs.tasks)
    as_packs.makespan_s = std::max(as_packs.makespan_s, t.end_s);
  as_packs.lower_bound_s = std::min(as_packs.lower_bound_s, as_packs.makespan_s);
  return ValidatePlan(packed.problem, as_packs);
}

}  // namespace saturn
