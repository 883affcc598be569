#include "bench/paper/lab.h"

#include <set>
#include <stdexcept>

#include "common/clock.h"
#include "common/format.h"
#include "planner/lower_bound.h"
#include "planner/planner.h"
#include "sim/simulator.h"

namespace saturn::bench {

const char* ChoicesName(Choices c) {
  switch (c) {
    case Choices::kAll:
      return "all";
    case Choices::kFsdpWholeNode:
      return "fsdp-node";
    case Choices::kFsdp:
      return "fsdp";
  }
  return "?";
}

Lab::Lab(Config config) : config_(std::move(config)) {}

Prepared Lab::Prepare(std::string label, Instance instance) const {
  Prepared b;
  b.label = std::move(label);
  b.problem = ProblemFromProfile(instance.profile, instance.cluster);
  b.lower_bound = MakespanLowerBound(b.problem);
  b.instance = std::move(instance);
  return b;
}

const std::vector<double>& Lab::Factors(const Prepared& b, uint64_t seed) {
  std::string key = (b.truth_of.empty() ? b.label : b.truth_of) + "|" + std::to_string(seed);
  auto it = factors_.find(key);
  if (it != factors_.end()) return it->second;
  if (!b.truth_of.empty()) {
    throw std::runtime_error(b.label + ": the truths of " + b.truth_of + " are not drawn yet");
  }
  std::vector<std::vector<double>> truth = TruthWithNoise(b.problem, config_.noise, 0.0, seed);
  std::vector<double> factors;
  for (int j = 0; j < b.problem.NumTasks(); ++j)
    factors.push_back(truth[j][0] / b.problem.tasks[j].options[0].runtime_s);
  return factors_[key] = std::move(factors);
}

Problem Lab::Restricted(const Prepared& b, Choices choices) const {
  if (choices == Choices::kAll) return b.problem;
  std::set<int> node_sizes;
  for (const ClusterNode& n : b.instance.cluster.nodes)
    node_sizes.insert(n.gpus);
  ProfileTable kept;
  kept.extra_columns = b.instance.profile.extra_columns;
  for (const ProfileRow& r : b.instance.profile.rows) {
    if (r.technique != "fsdp") continue;
    if (choices == Choices::kFsdpWholeNode && !node_sizes.count(r.gpus)) continue;
    kept.rows.push_back(r);
  }
  Problem p = ProblemFromProfile(kept, b.instance.cluster);
  // Factors are indexed like the full problem: every task must survive.
  if (p.NumTasks() != b.problem.NumTasks()) {
    throw std::runtime_error(b.label + ": some task has no configuration under '" +
                             ChoicesName(choices) + "'");
  }
  return p;
}

const RunStats& Lab::Run(const Prepared& b, const RunSpec& spec) {
  std::string key = b.label + "|" + spec.solver + "|" + ChoicesName(spec.choices) + "|" +
                    (spec.introspection ? "intro" : "fixed") + "|" + FormatNumber(spec.interval_s) +
                    "|" + FormatNumber(spec.threshold_s) + "|" + std::to_string(spec.seed);
  auto it = runs_.find(key);
  if (it != runs_.end()) return it->second;

  Problem p = Restricted(b, spec.choices);
  const std::vector<double>& f = Factors(b, spec.seed);
  std::vector<std::vector<double>> truth;
  for (int j = 0; j < p.NumTasks(); ++j) {
    std::vector<double> row;
    for (const Option& o : p.tasks[j].options)
      row.push_back(o.runtime_s * f[j]);
    truth.push_back(std::move(row));
  }
  SimOptions o;
  o.policy.solver = spec.solver;
  o.policy.time_limit_s = config_.replan_limit_s;
  o.policy.work_scale = config_.replan_work;
  o.policy.seed = spec.seed;
  o.policy.threshold_s = spec.threshold_s;
  o.policy.switch_cost_s = config_.switch_cost_s;
  o.introspection = spec.introspection;
  o.interval_s = spec.interval_s;
  o.record_events = false;
  SteadyClock clock;
  double t0 = clock.Now();
  SimResult r = Simulate(p, truth, b.arrival, o);
  RunStats s;
  s.wall_s = clock.Now() - t0;
  sim_wall_s_ += s.wall_s;
  s.makespan_s = r.makespan_s;
  s.planned_s = r.initial_plan.makespan_s;
  s.mean_jct_s = r.mean_jct_s;
  s.p99_jct_s = r.p99_jct_s;
  s.replans = r.replans;
  s.switches = r.plan_switches;
  s.preemptions = r.preemptions;
  s.utilization = std::move(r.utilization);
  return runs_[key] = std::move(s);
}

double Lab::Clairvoyant(const Prepared& b, uint64_t seed) {
  std::string key = b.label + "|" + std::to_string(seed);
  auto it = clairvoyant_.find(key);
  if (it != clairvoyant_.end()) return it->second;
  Problem truth = b.problem;
  const std::vector<double>& f = Factors(b, seed);
  for (int j = 0; j < truth.NumTasks(); ++j) {
    for (Option& o : truth.tasks[j].options)
      o.runtime_s *= f[j];
  }
  PlanRequest request;
  request.solver = "auto";
  request.time_limit_s = config_.solve_limit_s;
  request.seed = 1;
  return clairvoyant_[key] = RunPlanner(truth, request).plan.makespan_s;
}

}  // namespace saturn::bench
