#include "sim/sim_early_stop.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "common/error.h"
#include "contracts/event_kinds.h"

namespace saturn {

namespace {

// The part of task j's first configuration's runtime that does not scale
// with its steps (0 when the profile does not say).
double FixedFraction(const Problem& problem, const ProfileTable& profile, int j) {
  const Task& task = problem.tasks[static_cast<size_t>(j)];
  if (task.options.empty()) return 0.0;
  const Option& o = task.options.front();
  const ProfileRow* row = profile.Find(task.name, o.technique, o.gpus, problem.TypeName(o.type));
  double training = row ? profile.TrainingSeconds(*row) : 0.0;
  return training > 0 ? std::clamp(1.0 - training / row->runtime_s, 0.0, 0.9) : 0.0;
}

}  // namespace

std::vector<SimEarlyStop> EarlyStopsFromWorkload(
    const Problem& problem, const ProfileTable& profile, const Workload& workload,
    const std::vector<Event>* evaluations, const std::string& evaluations_source, uint64_t seed) {
  std::map<std::string, const WorkloadTask*> by_name;
  for (const WorkloadTask& t : workload.tasks)
    by_name[t.name] = &t;
  std::map<std::string, std::map<long, double>> curves;
  if (evaluations) {
    for (const Event& e : *evaluations) {
      auto t = by_name.find(e.task);
      std::optional<EvalPoint> p = events::EvalPointOf(e);
      if (!p || t == by_name.end()) continue;
      bool accuracy = t->second->early_stop.maximize();
      if (accuracy && p->accuracy < 0) continue;  // not reported
      curves[e.task][p->step] = accuracy ? p->accuracy : p->loss;
    }
  }
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> quality(0.0, 1.0);
  std::vector<SimEarlyStop> out(static_cast<size_t>(problem.NumTasks()));
  for (int j = 0; j < problem.NumTasks(); ++j) {
    const std::string& name = problem.tasks[static_cast<size_t>(j)].name;
    double q = quality(rng);
    auto it = by_name.find(name);
    if (it == by_name.end() || !it->second->early_stop.enabled()) continue;
    const WorkloadTask& t = *it->second;
    SimEarlyStop& e = out[static_cast<size_t>(j)];
    e.spec = t.early_stop;
    e.group = t.stop_group;
    e.steps = t.steps;
    e.eval_every = t.spec.contains("eval") ? t.spec["eval"].value("every", 0L) : 0L;
    e.fixed_fraction = FixedFraction(problem, profile, j);
    if (!evaluations) {
      e.curve = {{0, t.early_stop.maximize() ? 1.0 - q : q}};
    } else if (auto c = curves.find(name); c != curves.end()) {
      e.curve.assign(c->second.begin(), c->second.end());
    } else {
      throw InputError(evaluations_source, 0, "",
                       "no evaluation of task " + Quote(name) +
                           ": give the events of a run that evaluated every task");
    }
  }
  return out;
}

SimStoppers::SimStoppers(std::vector<SimEarlyStop> tasks, int concurrency)
    : tasks_(std::move(tasks)),
      decisions_(tasks_.size()),
      passed_(tasks_.size(), 0),
      expected_(tasks_.size()) {
  std::map<std::string, int> group_size;
  for (const SimEarlyStop& t : tasks_) {
    if (t.spec.enabled()) ++group_size[t.group];
  }
  for (size_t j = 0; j < tasks_.size(); ++j) {
    const SimEarlyStop& t = tasks_[j];
    if (!t.spec.enabled() || t.steps <= 0) continue;
    any_ = true;
    decisions_[j] = MakeStopRule(t.spec)->DecisionSteps(t.steps, t.eval_every);
    expected_[j] =
        ExpectedTotalSteps(t.spec, group_size[t.group], t.steps, t.eval_every, concurrency);
    if (!rules_.count(t.group)) rules_[t.group] = MakeStopRule(t.spec);
  }
}

double SimStoppers::NextDecision(int j, double done) const {
  const std::vector<long>& d = decisions_[static_cast<size_t>(j)];
  size_t k = static_cast<size_t>(passed_[static_cast<size_t>(j)]);
  if (k >= d.size()) return 2.0;
  const SimEarlyStop& t = tasks_[static_cast<size_t>(j)];
  double at = t.fixed_fraction +
              (1.0 - t.fixed_fraction) * static_cast<double>(d[k]) / static_cast<double>(t.steps);
  return std::max(at, done);
}

long SimStoppers::StepAt(int j, double at) const {
  const SimEarlyStop& t = tasks_[static_cast<size_t>(j)];
  return std::lround((at - t.fixed_fraction) / std::max(1e-9, 1.0 - t.fixed_fraction) *
                     static_cast<double>(t.steps));
}

bool SimStoppers::Decide(int j, double at, const std::string& name, double* value) {
  return DecideAtStep(j, StepAt(j, at), name, value);
}

long SimStoppers::NextDecisionStep(int j) const {
  const std::vector<long>& d = decisions_[static_cast<size_t>(j)];
  size_t k = static_cast<size_t>(passed_[static_cast<size_t>(j)]);
  return k < d.size() ? d[k] : -1;
}

bool SimStoppers::DecideAtStep(int j, long step, const std::string& name, double* value) {
  const SimEarlyStop& t = tasks_[static_cast<size_t>(j)];
  *value = t.spec.maximize() ? -INFINITY : INFINITY;
  for (const auto& [s, v] : t.curve) {
    if (s > step) break;
    *value = v;
  }
  ++passed_[static_cast<size_t>(j)];
  return rules_.at(t.group)->OnEvaluation(name, step, t.steps, *value);
}

double SimStoppers::ExpectedFraction(int j) const {
  const SimEarlyStop& t = tasks_[static_cast<size_t>(j)];
  if (expected_[static_cast<size_t>(j)].empty()) return 1.0;
  double steps = std::clamp(ExpectedSteps(j) / static_cast<double>(t.steps), 0.0, 1.0);
  return t.fixed_fraction + (1.0 - t.fixed_fraction) * steps;
}

double SimStoppers::ExpectedSteps(int j) const {
  const std::vector<double>& e = expected_[static_cast<size_t>(j)];
  const SimEarlyStop& t = tasks_[static_cast<size_t>(j)];
  if (e.empty()) return static_cast<double>(t.steps);
  return e[std::min(static_cast<size_t>(passed_[static_cast<size_t>(j)]), e.size() - 1)];
}

int StopConcurrency(const Problem& problem) {
  int fewest = 1 << 20;
  for (const Task& t : problem.tasks) {
    for (const Option& o : t.options)
      fewest = std::min(fewest, o.gpus);
  }
  return problem.TotalGpus() / std::max(1, fewest);
}

void ExpectPackStops(const std::vector<SimEarlyStop>& stops, int concurrency, PackTerms& terms) {
  std::map<std::string, int> group_size;
  for (const SimEarlyStop& t : stops) {
    if (t.spec.enabled()) ++group_size[t.group];
  }
  for (size_t j = 0; j < stops.size() && j < terms.tasks.size(); ++j) {
    const SimEarlyStop& t = stops[j];
    PackTerms::Member& m = terms.tasks[j];
    if (!t.spec.enabled() || t.steps <= 0 || m.steps <= 0) continue;
    const double scale = m.steps / static_cast<double>(t.steps);
    m.stops.clear();
    for (const auto& [steps, p] :
         StopStepDistribution(t.spec, group_size[t.group], t.steps, t.eval_every, concurrency))
      m.stops.emplace_back(static_cast<double>(steps) * scale, p);
    m.group = group_size[t.group];
    m.stop_group = t.group;
  }
}

}  // namespace saturn
