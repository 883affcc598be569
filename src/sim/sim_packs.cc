#include "sim/sim_packs.h"

#include <algorithm>
#include <stdexcept>

#include "planner/pack_search.h"

namespace saturn {

SimPackRun::SimPackRun(const Problem& base, const PackTerms& terms, std::vector<int> members,
                       const Task& unit)
    : base_(base),
      terms_(terms),
      members_(std::move(members)),
      scale_(members_.size(), 1.0),
      in_(members_.size(), true) {
  for (int j : members_)
    steps_.push_back(terms_.tasks[static_cast<size_t>(j)].steps);
  natural_ = steps_;
  planned_ = MemberSteps(terms_, members_);
  for (const Option& key : unit.options) {
    keys_.push_back(key);
    timelines_.push_back(Time(key, steps_));
  }
}

SimPackRun::Timeline SimPackRun::Time(const Option& key, const std::vector<double>& steps) const {
  Timeline t;
  std::vector<double> ends = PackMemberEndsAt(base_, terms_, members_, key, steps, &t.launch);
  if (ends.size() != members_.size())
    throw std::logic_error("simulator: a pack's option its members cannot run");
  t.points.push_back({0.0, t.launch});
  for (size_t i = 0; i < ends.size(); ++i)
    t.points.push_back({steps[i], ends[i]});
  std::sort(t.points.begin(), t.points.end());
  t.runtime = t.points.back().second;
  return t;
}

double SimPackRun::FractionAt(int o, double step) const {
  const Timeline& t = timelines_[static_cast<size_t>(o)];
  const auto& p = t.points;
  double time = p.back().second;
  for (size_t k = 1; k < p.size(); ++k) {
    if (step > p[k].first) continue;
    double span = p[k].first - p[k - 1].first;
    double f = span > 0 ? (step - p[k - 1].first) / span : 1.0;
    time = p[k - 1].second + std::max(0.0, f) * (p[k].second - p[k - 1].second);
    break;
  }
  return t.runtime > 0 ? std::clamp(time / t.runtime, 0.0, 1.0) : 1.0;
}

double SimPackRun::StepAt(int o, double f) const {
  const Timeline& t = timelines_[static_cast<size_t>(o)];
  const auto& p = t.points;
  const double time = f * t.runtime;
  for (size_t k = 1; k < p.size(); ++k) {
    if (time > p[k].second) continue;
    double span = p[k].second - p[k - 1].second;
    double g = span > 0 ? (time - p[k - 1].second) / span : 1.0;
    return p[k - 1].first + std::max(0.0, g) * (p[k].first - p[k - 1].first);
  }
  return p.back().first;
}

std::vector<double> SimPackRun::EndAt(size_t i, double step) {
  steps_[i] = std::min(steps_[i], step);
  std::vector<double> ratio;
  for (size_t o = 0; o < keys_.size(); ++o) {
    const double before = timelines_[o].runtime;
    timelines_[o] = Time(keys_[o], steps_);
    ratio.push_back(before > 0 ? timelines_[o].runtime / before : 1.0);
  }
  return ratio;
}

std::vector<double> SimPackRun::MemberEnds(int o, const std::vector<double>& steps) const {
  return PackMemberEndsAt(base_, terms_, members_, keys_[static_cast<size_t>(o)], steps, nullptr);
}

double SimPackRun::ExpectedFraction(int o, std::vector<double> expected, double now_step) const {
  for (size_t i = 0; i < members_.size(); ++i)
    expected[i] = in_[i] ? std::max(now_step, std::min(expected[i], steps_[i])) : steps_[i];
  const double all = Runtime(o);
  return all > 0 ? Time(keys_[static_cast<size_t>(o)], expected).runtime / all : 1.0;
}

std::shared_ptr<const SimPacking> ChooseSimPacks(const Problem& believed, PackTerms terms,
                                                 const std::vector<SimEarlyStop>& early_stop,
                                                 const std::vector<double>& arrival,
                                                 const PlanRequest& request,
                                                 std::string* described) {
  const int concurrency = StopConcurrency(believed);
  // Tasks arriving at different times are of different classes here.
  for (size_t j = 0; j < arrival.size() && j < terms.tasks.size(); ++j) {
    if (!terms.tasks[j].cls.empty() && arrival[j] > 0)
      terms.tasks[j].cls += "@" + std::to_string(arrival[j]);
  }
  PackTerms priced = terms;
  ExpectPackStops(early_stop, concurrency, priced);
  Problem planned = believed;
  SimStoppers outlook(early_stop, concurrency);
  for (int j = 0; j < planned.NumTasks() && outlook.Any(); ++j) {
    for (Option& option : planned.tasks[static_cast<size_t>(j)].options)
      option.runtime_s *= outlook.ExpectedFraction(j);
  }
  StepsAtStopsMean(priced);
  PackedPlanResult chosen = PlanWithPacks(planned, priced, request, true);
  if (described) *described = DescribePacks(planned, priced, chosen, false);
  if (std::none_of(chosen.packing.begin(), chosen.packing.end(),
                   [](const std::vector<int>& g) { return g.size() > 1; }))
    return nullptr;
  auto packs = std::make_shared<SimPacking>();
  packs->terms = std::move(terms);
  packs->packing = std::move(chosen.packing);
  return packs;
}

SimUnits MakeSimUnits(const Problem& base, const std::vector<std::vector<double>>& truth,
                      const std::vector<double>& arrival, const PackTerms& terms,
                      const Packing& packing) {
  SimUnits u;
  const int n = base.NumTasks();
  u.base_arrival = arrival.empty() ? std::vector<double>(n, 0.0) : arrival;
  bool packs = false;
  for (const std::vector<int>& g : packing)
    packs = packs || g.size() > 1;
  if (!packs) {
    u.problem = base;
    u.truth = truth;
    u.arrival = u.base_arrival;
    for (int j = 0; j < n; ++j)
      u.members.push_back({j});
    u.packs.resize(static_cast<size_t>(n));
    return u;
  }
  // The units' runtimes: every member to its end (its rule's stops are the
  // simulation's to decide).
  PackTerms natural = terms;
  for (PackTerms::Member& m : natural.tasks)
    m.stops.clear();
  PackedProblem packed = BuildPackedProblem(base, natural, packing);
  u.problem = std::move(packed.problem);
  u.members = packed.groups;
  for (size_t g = 0; g < u.members.size(); ++g) {
    const std::vector<int>& group = u.members[g];
    double ratio = 0.0, arrives = 0.0;
    for (int j : group) {
      const Task& t = base.tasks[static_cast<size_t>(j)];
      double sum = 0.0;
      for (size_t k = 0; k < t.options.size(); ++k)
        sum += truth[static_cast<size_t>(j)][k] / t.options[k].runtime_s;
      ratio += sum / static_cast<double>(t.options.size()) / static_cast<double>(group.size());
      arrives = std::max(arrives, arrival.empty() ? 0.0 : arrival[static_cast<size_t>(j)]);
    }
    const Task& unit = u.problem.tasks[g];
    u.truth.emplace_back();
    for (size_t k = 0; k < unit.options.size(); ++k)
      u.truth.back().push_back(group.size() == 1 ? truth[static_cast<size_t>(group[0])][k]
                                                 : unit.options[k].runtime_s * ratio);
    u.arrival.push_back(arrives);
    u.packs.push_back(group.size() == 1 ? nullptr
                                        : std::make_unique<SimPackRun>(base, terms, group, unit));
  }
  return u;
}

}  // namespace saturn
