// The experiment bench the sections share: prepared instances, the
// harness-wide settings, noisy truths that several runs reuse, and a memo of
// simulated runs so that a run two sections need (e.g. `auto` without
// introspection is both a ladder rung and the sensitivity baseline) is
// simulated once.
//
//   Lab lab(config);
//   Prepared txt = lab.Prepare("txt-1x8", SaturnLikeInstance(Workload::kText, {8}, 1));
//   RunSpec spec{.solver = "auto", .introspection = true, .seed = 3};
//   const RunStats& r = lab.Run(txt, spec);   // simulated against seed 3's truth
//   double best = lab.Clairvoyant(txt, 3);    // planned with that truth known
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "bench/common/instances.h"
#include "planner/problem.h"

namespace saturn::bench {

struct Config {
  std::string mode = "default";  // quick | default | full
  std::string out_dir = "out/paper";
  int seeds = 5;              // noisy truths per experiment, results are means
  int sensitivity_seeds = 3;  // the 12-point grid re-plans often: fewer seeds there
  double solve_limit_s = 10;  // Fig. 5: every solver's time limit (the MILPs use it)
  double replan_limit_s = 2;  // wall limit of one (re)plan inside the simulator
  // auto's effort at each (re)plan inside the simulator (SolveContext::work_scale):
  // a replan every simulated hour over days of simulated time must stay cheap.
  double replan_work = 0.02;
  double interval_s = 1000;  // introspection interval where not varied (the paper's)
  double threshold_s = 500;  // introspection threshold where not varied (the paper's)
  // Seconds a pre-empted task loses (checkpoint + restart): the figures were
  // made with 60 s, the simulated paper-scale cluster's, not saturn's default.
  double switch_cost_s = 60;
  double noise = 0.3;  // +-30% per-task estimation error
  int online_jobs = 1000;
  int online_nodes = 4;
  double online_load = 0.8;
  bool scale = true;
  std::set<std::string> only;  // sections to run; empty: all
  bool Wants(const std::string& section) const { return only.empty() || only.count(section); }
  // Quick mode keeps to one-node instances and coarse grids.
  bool quick() const { return mode == "quick"; }
};

// Which profile rows a run may use (the ablation ladder restricts them).
enum class Choices {
  kAll,            // every technique at every GPU count
  kFsdpWholeNode,  // fsdp on all GPUs of a node only (fixed allocation)
  kFsdp,           // fsdp at any GPU count
};
const char* ChoicesName(Choices c);

struct Prepared {
  std::string label;
  Instance instance;
  Problem problem;  // every option
  double lower_bound = 0;
  std::vector<double> arrival;  // per task; empty for a batch
  // Whose noisy truths it shares: another instance's label, when it holds
  // the same tasks with more configurations (the ladder's tensor-parallel
  // rung), so both are run against the same per-task factors; "": its own.
  std::string truth_of;
};

struct RunSpec {
  std::string solver = "auto";
  Choices choices = Choices::kAll;
  bool introspection = false;
  double interval_s = 3600;
  double threshold_s = 500;
  uint64_t seed = 1;  // which noisy truth
};

struct RunStats {
  double makespan_s = 0, planned_s = 0, mean_jct_s = 0, p99_jct_s = 0;
  int replans = 0, switches = 0, preemptions = 0;
  double wall_s = 0;
  std::vector<std::pair<double, double>> utilization;
};

class Lab {
 public:
  explicit Lab(Config config);
  const Config& config() const { return config_; }

  Prepared Prepare(std::string label, Instance instance) const;
  // Simulates `spec` on `b` against the noisy truth of spec.seed (memoised).
  const RunStats& Run(const Prepared& b, const RunSpec& spec);
  // The planned makespan of `auto` given seed's truth as its profile (memoised).
  double Clairvoyant(const Prepared& b, uint64_t seed);
  // Wall seconds spent simulating so far, for the log.
  double sim_wall_s() const { return sim_wall_s_; }

 private:
  // Per-task factor truth / belief of seed's truth. With no per-configuration
  // noise a task's factor is the same in all its configurations, so restricted
  // problems (the ladder) are run against the very same truth.
  const std::vector<double>& Factors(const Prepared& b, uint64_t seed);
  Problem Restricted(const Prepared& b, Choices choices) const;

  Config config_;
  std::map<std::string, std::vector<double>> factors_;
  std::map<std::string, RunStats> runs_;
  std::map<std::string, double> clairvoyant_;
  double sim_wall_s_ = 0;
};

}  // namespace saturn::bench
