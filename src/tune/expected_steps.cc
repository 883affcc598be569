// ExpectedTotalSteps: a Monte Carlo of the rules (see tune/early_stop.h for
// the model and its limits).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/mix.h"
#include "tune/early_stop.h"

namespace saturn {
namespace {

constexpr int kMaxSimulatedTasks = 5000;
constexpr size_t kMaxSimulatedSteps = 32;
constexpr int kTaskEvaluations = 20000;  // per simulation, spread over its repeats
constexpr int kMinRepeats = 8;
constexpr uint64_t kSeed = 0x5a7u;

// splitmix64 (Steele, Lea and Flood, 2014).
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t out = SplitMix64(state_);
    state_ += 0x9e3779b97f4a7c15ULL;
    return out;
  }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  size_t Below(size_t n) { return static_cast<size_t>(Next() % n); }

 private:
  uint64_t state_;
};

// Per number of simulated decision steps passed (0 .. J): the steps the
// tasks that passed at least that many trained, summed, and how many.
// And how many tasks trained each number of steps.
struct Tally {
  std::vector<double> steps;
  std::vector<double> tasks;
  std::map<long, double> trained;
};

// One group under a fresh rule, `slots` tasks training at once in a random
// order, each at one step per unit of time, the next starting as one ends
// (stopped or finished): adds each task's trained steps to `tally`.
void SimulateGroup(const EarlyStopSpec& spec, const std::vector<std::string>& names,
                   const std::vector<long>& decisions, long total_steps, size_t slots,
                   Random& random, Tally& tally) {
  std::unique_ptr<StopRule> rule = MakeStopRule(spec);
  size_t n = names.size();
  size_t d = decisions.size();
  std::vector<double> quality(n);
  for (double& q : quality)
    q = random.Uniform();
  std::vector<size_t> order(n);
  for (size_t i = 0; i < n; ++i)
    order[i] = i;
  for (size_t i = n; i > 1; --i)
    std::swap(order[i - 1], order[random.Below(i)]);
  std::vector<long> trained(n, total_steps);
  std::vector<size_t> passed(n, 0);
  std::vector<double> started(n, 0.0);
  // (time, tie-break, task, decision index; d: its end), earliest first.
  using Reach = std::tuple<double, double, size_t, size_t>;
  std::priority_queue<Reach, std::vector<Reach>, std::greater<Reach>> reaches;
  auto reach = [&](size_t task, size_t k) {
    double at = static_cast<double>(k < d ? decisions[k] : total_steps);
    reaches.emplace(started[task] + at, random.Uniform(), task, k);
  };
  size_t next = 0;
  auto start = [&](double t) {
    if (next >= n) return;
    size_t task = order[next++];
    started[task] = t;
    reach(task, 0);
  };
  for (size_t s = 0; s < std::max<size_t>(1, slots); ++s)
    start(0.0);
  double first = static_cast<double>(decisions.front());
  while (!reaches.empty()) {
    auto [t, tie, task, k] = reaches.top();
    reaches.pop();
    if (k == d) {
      passed[task] = d;
      start(t);
      continue;
    }
    long step = decisions[k];
    double curve = std::sqrt(first / static_cast<double>(step));
    if (rule->OnEvaluation(names[task], step, total_steps, quality[task] + curve)) {
      trained[task] = step;
      passed[task] = k;
      start(t);
    } else {
      reach(task, k + 1);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    tally.trained[trained[i]] += 1;
    for (size_t k = 0; k <= passed[i]; ++k) {
      tally.steps[k] += static_cast<double>(trained[i]);
      tally.tasks[k] += 1;
    }
  }
}

// The group simulated under its rule (ExpectedTotalSteps's model): the
// coarse decision steps it decided at and what its tasks trained; nothing
// where the rule never decides (one task, no decision steps).
struct Simulation {
  std::vector<long> decisions;  // the rule's own decision steps
  std::vector<long> coarse;     // those simulated (every m-th of them)
  Tally tally;
};

std::optional<Simulation> SimulateRule(const EarlyStopSpec& spec, int group_size, long total_steps,
                                       long eval_every, int concurrency) {
  if (!spec.enabled()) return std::nullopt;
  EarlyStopSpec simulated = spec;
  simulated.metric = "eval_loss";  // the direction changes nothing: simulate losses
  std::unique_ptr<StopRule> rule = MakeStopRule(simulated);
  Simulation sim;
  sim.decisions = rule->DecisionSteps(total_steps, eval_every);
  size_t d = sim.decisions.size();
  if (group_size <= 1 || d == 0) return std::nullopt;

  // Frequent decisions (median, evaluations every few steps): decide at
  // every m-th evaluation only.
  long every_mth = static_cast<long>((d + kMaxSimulatedSteps - 1) / kMaxSimulatedSteps);
  sim.coarse = sim.decisions;
  if (every_mth > 1) sim.coarse = rule->DecisionSteps(total_steps, eval_every * every_mth);
  if (sim.coarse.empty()) return std::nullopt;

  int tasks = std::min(group_size, kMaxSimulatedTasks);
  int repeats = std::max(kMinRepeats, kTaskEvaluations / tasks);
  // The simulated group is at most kMaxSimulatedTasks: its slots in proportion.
  size_t slots = concurrency <= 0 || concurrency >= group_size
                     ? static_cast<size_t>(tasks)
                     : static_cast<size_t>(
                           std::max<long>(1, static_cast<long>(concurrency) * tasks / group_size));
  std::vector<std::string> names;
  for (int i = 0; i < tasks; ++i)
    names.push_back("t" + std::to_string(i));
  sim.tally = Tally{std::vector<double>(sim.coarse.size() + 1, 0.0),
                    std::vector<double>(sim.coarse.size() + 1, 0.0),
                    {}};
  Random random(kSeed);
  for (int r = 0; r < repeats; ++r)
    SimulateGroup(simulated, names, sim.coarse, total_steps, slots, random, sim.tally);
  return sim;
}

// E[steps | passed k real decision steps] (ExpectedTotalSteps) from one
// simulation.
std::vector<double> ExpectedFromSimulation(const Simulation& sim, double total) {
  const std::vector<long>& decisions = sim.decisions;
  const std::vector<long>& coarse = sim.coarse;
  const Tally& tally = sim.tally;
  size_t d = decisions.size();
  // E[steps | passed j simulated steps]; where no task got that far, the
  // next one's (more steps: an over- rather than an under-estimate).
  std::vector<double> simulated_e(coarse.size() + 1, total);
  for (size_t j = coarse.size(); j-- > 0;) {
    simulated_e[j] = tally.tasks[j] > 0 ? tally.steps[j] / tally.tasks[j] : simulated_e[j + 1];
  }
  // A task past k real decision steps is past those simulated at or before
  // the k-th.
  std::vector<double> out(d + 1, total);
  size_t j = 0;
  for (size_t k = 0; k < d; ++k) {
    while (k > 0 && j < coarse.size() && coarse[j] <= decisions[k - 1])
      ++j;
    out[k] = std::max(simulated_e[j], static_cast<double>(decisions[k]));
  }
  return out;
}

}  // namespace

RuleOutlook OutlookOfRule(const EarlyStopSpec& spec, int group_size, long total_steps,
                          long eval_every, int concurrency) {
  const double total = static_cast<double>(total_steps);
  RuleOutlook outlook;
  if (!spec.enabled()) {
    outlook.expected = {total};
    outlook.stops = {{total_steps, 1.0}};
    return outlook;
  }
  outlook.decisions = MakeStopRule(spec)->DecisionSteps(total_steps, eval_every);
  std::optional<Simulation> sim =
      SimulateRule(spec, group_size, total_steps, eval_every, concurrency);
  if (!sim) {
    outlook.expected.assign(outlook.decisions.size() + 1, total);
    outlook.stops = {{total_steps, 1.0}};
    return outlook;
  }
  outlook.expected = ExpectedFromSimulation(*sim, total);
  double all = 0.0;
  for (const auto& [steps, tasks] : sim->tally.trained)
    all += tasks;
  for (const auto& [steps, tasks] : sim->tally.trained)
    outlook.stops.emplace_back(steps, tasks / all);
  return outlook;
}

std::vector<double> ExpectedTotalSteps(const EarlyStopSpec& spec, int group_size, long total_steps,
                                       long eval_every, int concurrency) {
  return OutlookOfRule(spec, group_size, total_steps, eval_every, concurrency).expected;
}

std::vector<std::pair<long, double>> StopStepDistribution(const EarlyStopSpec& spec, int group_size,
                                                          long total_steps, long eval_every,
                                                          int concurrency) {
  return OutlookOfRule(spec, group_size, total_steps, eval_every, concurrency).stops;
}

}  // namespace saturn
