#include "sim/simulator.h"

#include <gtest/gtest.h>

#include <map>

#include "bench/common/instances.h"
#include "planner/lower_bound.h"
#include "tests/planner/test_problems.h"

namespace saturn {
namespace {

SimOptions Options(bool introspection, uint64_t seed = 1) {
  SimOptions o;
  o.introspection = introspection;
  o.interval_s = 2000;
  o.policy.seed = seed;
  o.policy.work_scale = 0.01;
  o.policy.threshold_s = 100;
  o.policy.switch_cost_s = 120;
  return o;
}

// Random instances; with `saturn_like`, also the paper's TXT workload.
std::vector<Problem> Instances(bool saturn_like = false) {
  std::vector<Problem> out;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    out.push_back(testing::RandomProblem(seed, 10 + 5 * static_cast<int>(seed), {8, 4}, 4, false));
  }
  if (saturn_like) {
    bench::Instance txt = bench::SaturnLikeInstance(bench::Workload::kText, {8}, 1);
    out.push_back(ProblemFromProfile(txt.profile, txt.cluster));
  }
  return out;
}

// GPU intervals never overlap; every task's work adds up to exactly one task.
void ExpectConserved(const Problem& p, const std::vector<std::vector<double>>& truth,
                     const SimResult& r, double switch_cost) {
  std::map<std::string, int> index;
  for (int j = 0; j < p.NumTasks(); ++j)
    index[p.tasks[j].name] = j;
  std::map<std::pair<std::string, int>, std::vector<std::pair<double, double>>> per_gpu;
  std::vector<double> work(p.NumTasks(), 0.0), busy(p.NumTasks(), 0.0);
  std::vector<int> segments(p.NumTasks(), 0);
  for (const BusyInterval& b : BusyIntervals(r.events, r.makespan_s)) {
    int j = index.at(b.task);
    int option = -1;
    for (int o = 0; o < static_cast<int>(p.tasks[j].options.size()); ++o) {
      if (p.tasks[j].options[o].technique == b.technique &&
          p.tasks[j].options[o].gpus == static_cast<int>(b.gpu_ids.size())) {
        option = o;
      }
    }
    ASSERT_GE(option, 0);
    double dead = segments[j] > 0 ? switch_cost : 0.0;
    work[j] += std::max(0.0, b.end - b.start - dead) / truth[j][option];
    busy[j] += b.end - b.start;
    ++segments[j];
    for (int g : b.gpu_ids)
      per_gpu[{b.node, g}].push_back({b.start, b.end});
  }
  for (int j = 0; j < p.NumTasks(); ++j) {
    EXPECT_NEAR(work[j], 1.0, 1e-9) << p.tasks[j].name;
    EXPECT_NEAR(busy[j], r.tasks[j].busy_s, 1e-6) << p.tasks[j].name;
    EXPECT_DOUBLE_EQ(r.tasks[j].work_done, 1.0);
    EXPECT_EQ(r.tasks[j].status, TaskStatus::kFinished) << p.tasks[j].name;
    EXPECT_GE(r.tasks[j].attempts, 1);
  }
  for (auto& [gpu, intervals] : per_gpu) {
    std::sort(intervals.begin(), intervals.end());
    for (size_t i = 1; i < intervals.size(); ++i) {
      EXPECT_GE(intervals[i].first, intervals[i - 1].second - 1e-9)
          << gpu.first << " gpu " << gpu.second;
    }
  }
}

TEST(Simulator, AgreesWithThePlanWhenTruthIsTheProfile) {
  for (const Problem& p : Instances(/*saturn_like=*/true)) {
    SimResult r = Simulate(p, TruthEqualsBelief(p), {}, Options(false));
    EXPECT_NEAR(r.makespan_s, r.initial_plan.makespan_s, 1e-6 * r.makespan_s);
    std::map<std::string, double> planned;
    for (const PlanTask& t : r.initial_plan.tasks)
      planned[t.task] = t.start_s;
    for (const SimTaskResult& t : r.tasks)
      EXPECT_NEAR(t.start_s, planned[t.name], 1e-6);
    EXPECT_EQ(r.plan_switches, 0);
  }
}

TEST(Simulator, ConservesWorkAndNeverSharesAGpu) {
  for (const Problem& p : Instances()) {
    auto truth = TruthWithNoise(p, 0.3, 0.1, 7);
    for (bool introspection : {false, true}) {
      SimResult r = Simulate(p, truth, {}, Options(introspection));
      ExpectConserved(p, truth, r, 120);
      EXPECT_GE(r.makespan_s, MakespanLowerBound(p) * 0.7 - 1e-6);
    }
  }
}

TEST(Simulator, IsDeterministicForASeed) {
  Problem p = Instances()[2];
  auto truth = TruthWithNoise(p, 0.3, 0.0, 3);
  SimResult a = Simulate(p, truth, {}, Options(true, 5));
  SimResult b = Simulate(p, truth, {}, Options(true, 5));
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(EventToJsonLine(a.events[i]), EventToJsonLine(b.events[i]));
  }
  EXPECT_EQ(TruthWithNoise(p, 0.3, 0.1, 3), TruthWithNoise(p, 0.3, 0.1, 3));
  EXPECT_NE(TruthWithNoise(p, 0.3, 0.1, 3), TruthWithNoise(p, 0.3, 0.1, 4));
}

TEST(Simulator, IntrospectionRecoversFromBadEstimates) {
  // The profile underestimates three tasks 3x: re-planning once they are seen
  // running must beat following the first plan blindly. (Re-timing the
  // current plan already reorders waiting tasks, so a switch is not needed.)
  for (const Problem& p : Instances()) {
    auto truth = TruthEqualsBelief(p);
    for (int j = 0; j < 3; ++j) {
      for (double& r : truth[j])
        r *= 3;
    }
    SimResult blind = Simulate(p, truth, {}, Options(false));
    SimResult seeing = Simulate(p, truth, {}, Options(true));
    EXPECT_LT(seeing.makespan_s, blind.makespan_s);
    ExpectConserved(p, truth, seeing, 120);
  }
}

TEST(Simulator, OnlineArrivalsStartNoEarlierThanTheyArrive) {
  Problem p = testing::RandomProblem(9, 20, {8}, 4, false);
  std::vector<double> arrival;
  for (int j = 0; j < p.NumTasks(); ++j)
    arrival.push_back(j * 300.0);
  for (bool introspection : {false, true}) {
    SimResult r = Simulate(p, TruthEqualsBelief(p), arrival, Options(introspection));
    double jct = 0;
    for (const SimTaskResult& t : r.tasks) {
      EXPECT_GE(t.start_s, t.arrival_s - 1e-9) << t.name;
      jct += t.end_s - t.arrival_s;
    }
    EXPECT_NEAR(r.mean_jct_s, jct / p.NumTasks(), 1e-6);
    EXPECT_GE(r.p99_jct_s, r.mean_jct_s);
    EXPECT_GE(r.replans, p.NumTasks() - 1);  // every arrival after the first re-plans
  }
}

}  // namespace
}  // namespace saturn
