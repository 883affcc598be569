// Early stopping in the simulator: the workload's ASHA stops what an
// independent ASHA (tests/testing/reference_asha.h) stops, fed the
// simulated evaluations in the order they were logged; stopped tasks free
// their devices for the rest; the plan counts on expected work.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "sim/simulator.h"
#include "tests/sim/asha_stop.h"
#include "tests/testing/reference_asha.h"

namespace saturn {
namespace {

// `n` one-GPU tasks of 100 s on a node of `gpus`.
Problem Tasks(int n, int gpus) {
  Problem p;
  p.nodes = {{"n0", gpus, 0}};
  p.types = {""};
  for (int j = 0; j < n; ++j) {
    Task t;
    t.name = "t" + std::to_string(j);
    Option o;
    o.technique = "single";
    o.gpus = 1;
    o.runtime_s = 100;
    t.options.push_back(o);
    p.tasks.push_back(t);
  }
  return p;
}

// ASHA over all tasks (400 steps, an evaluation every 50, grace 50, R 2);
// task j reports loss (j * 7 % n) + 100 / step: ranks fixed, in a
// scrambled order.
std::vector<SimEarlyStop> Asha(int n) {
  std::vector<SimEarlyStop> out;
  for (int j = 0; j < n; ++j) {
    std::vector<std::pair<long, double>> curve;
    for (long s = 50; s <= 400; s += 50)
      curve.push_back({s, (j * 7 % n) + 100.0 / static_cast<double>(s)});
    out.push_back(test::AshaStop(curve));
  }
  return out;
}

TEST(SimulatedEarlyStopping, StopsWhatAshaStopsAndFreesTheDevices) {
  const int n = 12;
  Problem p = Tasks(n, 3);
  SimOptions options;
  options.interval_s = 30;
  options.early_stop = Asha(n);
  SimResult r = Simulate(p, TruthEqualsBelief(p), {}, options);
  test::ReferenceAsha asha(50, 2, 400);
  std::set<std::string> expected, stopped;
  for (const Event& e : r.events) {
    if (e.kind == EventKind::kTaskEvaluated &&
        asha.Stops(e.task, e.extra["step"].get<long>(), e.extra["eval_loss"].get<double>())) {
      expected.insert(e.task);
    }
    if (e.kind == EventKind::kTaskEarlyStopped) stopped.insert(e.task);
  }
  EXPECT_FALSE(expected.empty());
  EXPECT_EQ(stopped, expected);
  double gpu_s = 0;
  for (const SimTaskResult& t : r.tasks) {
    gpu_s += t.busy_s * t.gpus;
    if (stopped.count(t.name)) {
      EXPECT_EQ(t.status, TaskStatus::kStopped) << t.name;
      EXPECT_LT(t.work_done, 1.0) << t.name;
    } else {
      EXPECT_EQ(t.status, TaskStatus::kFinished) << t.name;
    }
  }
  // The stopped tasks' devices went to the others: less than everything to
  // its end, and the plan counted on less work than all of it.
  SimOptions plain = options;
  plain.early_stop.clear();
  SimResult full = Simulate(p, TruthEqualsBelief(p), {}, plain);
  EXPECT_LT(gpu_s, 0.7 * n * 100);
  EXPECT_LT(r.makespan_s, full.makespan_s);
  EXPECT_LT(r.initial_plan.makespan_s, full.initial_plan.makespan_s);
  // The best task (loss rank 0: t0) is never stopped.
  EXPECT_FALSE(stopped.count("t0"));
}

TEST(SimulatedEarlyStopping, ALaunchsFixedCostComesBeforeTheFirstDecision) {
  Problem p = Tasks(2, 1);
  SimOptions options;
  options.introspection = false;
  options.early_stop = Asha(2);
  for (SimEarlyStop& e : options.early_stop)
    e.fixed_fraction = 0.5;  // 50 s of start-up, then 400 steps in 50 s
  SimResult r = Simulate(p, TruthEqualsBelief(p), {}, options);
  for (const Event& e : r.events) {
    if (e.kind != EventKind::kTaskEvaluated) continue;
    long step = e.extra["step"].get<long>();
    double started = e.task == r.tasks[0].name ? r.tasks[0].start_s : r.tasks[1].start_s;
    EXPECT_NEAR(e.t - started, 50 + 50.0 * static_cast<double>(step) / 400, 1e-6)
        << e.task << " at step " << step;
  }
}

}  // namespace
}  // namespace saturn
