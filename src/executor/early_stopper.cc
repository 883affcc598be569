#include "executor/early_stopper.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "contracts/event_kinds.h"

namespace saturn {
namespace {

long EvalEvery(const WorkloadTask& task) {
  return task.spec.contains("eval") ? task.spec["eval"].value("every", 0L) : 0L;
}

}  // namespace

double ScaledRuntime(const ProfileTable& profile, const Problem& problem, int j, const Option& o,
                     double fraction) {
  if (fraction >= 1.0) return o.runtime_s;
  const Task& task = problem.tasks[static_cast<size_t>(j)];
  const ProfileRow* row = profile.Find(task.name, o.technique, o.gpus, problem.TypeName(o.type));
  double training = row ? profile.TrainingSeconds(*row) : 0.0;
  if (training <= 0) return std::max(1e-3, o.runtime_s * fraction);
  double fixed = o.runtime_s - training * (o.runtime_s / row->runtime_s);
  return std::max(1e-3, fixed + fraction * (o.runtime_s - fixed));
}

StopRule& EarlyStopper::RuleOf(const WorkloadTask& task) {
  std::unique_ptr<StopRule>& rule = rules_[task.stop_group];
  if (!rule) rule = MakeStopRule(task.early_stop);
  return *rule;
}

std::optional<EarlyStopper::Stop> EarlyStopper::OnEvaluation(const WorkloadTask& task, long step,
                                                             double loss, double accuracy) {
  if (!task.early_stop.enabled() || !seen_.emplace(task.name, step).second) return std::nullopt;
  long& last = last_evaluated_[task.name];
  last = std::max(last, step);
  double value = task.early_stop.maximize() ? accuracy : loss;
  if (task.early_stop.maximize() && accuracy < 0) return std::nullopt;
  // A task forgotten (replaced) is a new trial under a key of its own.
  auto generation = generation_.find(task.name);
  std::string trial = generation == generation_.end()
                          ? task.name
                          : task.name + "#" + std::to_string(generation->second);
  if (!RuleOf(task).OnEvaluation(trial, step, task.steps, value)) return std::nullopt;
  return Stop{value};
}

void EarlyStopper::Replay(const std::vector<Event>& events, const Workload& workload) {
  std::map<std::string, const WorkloadTask*> by_name;
  for (const WorkloadTask& t : workload.tasks)
    by_name[t.name] = &t;
  for (const Event& e : events) {
    if (e.kind == EventKind::kTaskArrived) Forget(e.task);
    std::optional<EvalPoint> p = events::EvalPointOf(e);
    auto it = by_name.find(e.task);
    if (p && it != by_name.end()) OnEvaluation(*it->second, p->step, p->loss, p->accuracy);
  }
}

void EarlyStopper::Forget(const std::string& task) {
  if (!last_evaluated_.count(task)) return;  // nothing seen of it
  std::erase_if(seen_, [&](const auto& s) { return s.first == task; });
  last_evaluated_.erase(task);
  ++generation_[task];
}

// The size of `task`'s group in `workload` and how many of it train at
// once: as many as the cluster holds at the task's smallest GPU count.
std::pair<int, int> EarlyStopper::GroupOf(const WorkloadTask& task, const Workload& workload) {
  int size = static_cast<int>(
      std::count_if(workload.tasks.begin(), workload.tasks.end(),
                    [&](const WorkloadTask& t) { return t.stop_group == task.stop_group; }));
  int concurrency = std::max(1, workload.cluster.TotalGpus() / std::max(1, task.gpu_min));
  return {size, concurrency};
}

const RuleOutlook& EarlyStopper::OutlookOf(const WorkloadTask& task,
                                           const Workload& workload) const {
  auto [size, concurrency] = GroupOf(task, workload);
  long every = EvalEvery(task);
  auto key = std::make_tuple(task.stop_group, size, task.steps, every, concurrency);
  auto it = outlooks_.find(key);
  if (it == outlooks_.end()) {
    it =
        outlooks_.emplace(key, OutlookOfRule(task.early_stop, size, task.steps, every, concurrency))
            .first;
  }
  return it->second;
}

std::vector<std::pair<long, double>> EarlyStopper::StopDistribution(
    const WorkloadTask& task, const Workload& workload) const {
  if (!task.early_stop.enabled() || task.steps <= 0) return {{task.steps, 1.0}};
  return OutlookOf(task, workload).stops;
}

double EarlyStopper::ExpectedFraction(const WorkloadTask& task, const Workload& workload) const {
  if (!task.early_stop.enabled() || task.steps <= 0) return 1.0;
  const RuleOutlook& outlook = OutlookOf(task, workload);
  const std::vector<long>& decisions = outlook.decisions;
  auto last = last_evaluated_.find(task.name);
  long evaluated = last == last_evaluated_.end() ? 0 : last->second;
  size_t passed = static_cast<size_t>(
      std::upper_bound(decisions.begin(), decisions.end(), evaluated) - decisions.begin());
  const std::vector<double>& table = outlook.expected;
  if (table.empty()) return 1.0;
  double steps = table[std::min(passed, table.size() - 1)];
  return std::clamp(steps / static_cast<double>(task.steps), 0.0, 1.0);
}

}  // namespace saturn
