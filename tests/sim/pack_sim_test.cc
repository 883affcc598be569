// Packs in the simulator (sim/sim_packs.h): members leave at their own
// steps, or where their early_stop: rule stops them, and the rest step on
// at the pack curve of the rows still in. The reference timeline here is
// written from the pack model's definition (planner/packing.h): a launch,
// then each stretch of steps at the curve's time for the rows of the
// members still in.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sim/simulator.h"
#include "tests/sim/asha_stop.h"
#include "tests/testing/reference_asha.h"

namespace saturn {
namespace {

constexpr double kLaunch = 5.0;

// Step seconds of a pack sending `rows` rows (one per member): 1.0 alone,
// 1.2 for 2, 1.6 for 4, 2.4 for 8, linear between.
double StepAt(double rows) {
  const std::vector<std::pair<double, double>> p = {{1, 1.0}, {2, 1.2}, {4, 1.6}, {8, 2.4}};
  for (size_t k = 1; k < p.size(); ++k) {
    if (rows <= p[k].first) {
      return p[k - 1].second + (rows - p[k - 1].first) / (p[k].first - p[k - 1].first) *
                                   (p[k].second - p[k - 1].second);
    }
  }
  return p.back().second;
}

// Each member's end when member i trains steps[i]: the launch, then every
// stretch between two members' ends at the step time of those still in.
std::vector<double> ReferenceEnds(const std::vector<double>& steps) {
  std::vector<double> ends(steps.size());
  std::vector<double> sorted = steps;
  std::sort(sorted.begin(), sorted.end());
  double t = kLaunch, at = 0.0;
  for (double s : sorted) {
    double in = 0;
    for (double other : steps)
      in += other >= s ? 1 : 0;
    t += (s - at) * StepAt(in);
    at = s;
    for (size_t i = 0; i < steps.size(); ++i) {
      if (steps[i] == s) ends[i] = t;
    }
  }
  return ends;
}

// `steps.size()` one-GPU LoRA tasks m0, m1, ... over one base on a node of
// `gpus`: alone, kLaunch + steps x 1.0 s.
struct Lora {
  Problem problem;
  std::shared_ptr<SimPacking> packs = std::make_shared<SimPacking>();
};
Lora LoraTasks(const std::vector<double>& steps, int gpus) {
  Lora l;
  l.problem.nodes = {{"n0", gpus, 0}};
  l.problem.types = {""};
  for (size_t j = 0; j < steps.size(); ++j) {
    Option o;
    o.technique = "single";
    o.gpus = 1;
    o.runtime_s = kLaunch + steps[j] * 1.0;
    l.problem.tasks.push_back({"m" + std::to_string(j), {o}});
    PackTerms::Member m;
    m.cls = "lora";
    m.rows = 1;
    m.steps = steps[j];
    l.packs->terms.tasks.push_back(m);
    l.packs->terms.curves.push_back({{1.0, {{1, 1.0}, {2, 1.2}, {4, 1.6}, {8, 2.4}}, {}}});
  }
  return l;
}

TEST(SimulatedPacks, MembersLeaveAtTheirOwnStepsAndTheRestStepFaster) {
  const std::vector<double> steps = {100, 300, 200};
  Lora l = LoraTasks(steps, 1);
  l.packs->packing = {{0, 1, 2}};
  SimOptions options;
  options.introspection = false;
  options.packs = l.packs;
  for (double speed : {1.0, 2.0}) {  // the truth: as believed, and twice as slow
    std::vector<std::vector<double>> truth = TruthEqualsBelief(l.problem);
    for (auto& row : truth)
      row[0] *= speed;
    SimResult r = Simulate(l.problem, truth, {}, options);
    const std::vector<double> ends = ReferenceEnds(steps);  // 145, 365, 265
    ASSERT_EQ(r.tasks.size(), 3u);
    for (size_t j = 0; j < 3; ++j) {
      const SimTaskResult& t = r.tasks[j];
      EXPECT_EQ(t.name, "m" + std::to_string(j));
      EXPECT_EQ(t.pack, "pack-1");
      EXPECT_EQ(t.status, TaskStatus::kFinished);
      EXPECT_NEAR(t.start_s, 0.0, 1e-9);
      EXPECT_NEAR(t.end_s, speed * ends[j], 1e-6) << t.name;
      EXPECT_NEAR(t.busy_s, speed * ends[j], 1e-6) << t.name;
    }
    EXPECT_NEAR(r.makespan_s, speed * 365, 1e-6);
    EXPECT_NEAR(r.gpu_s, speed * 365, 1e-6);  // the pack's one device, counted once
    // The first plan lists the members as `saturn plan` does, each ending
    // where the model puts it (the plan is the belief's).
    ASSERT_EQ(r.initial_plan.tasks.size(), 3u);
    for (const PlanTask& t : r.initial_plan.tasks) {
      EXPECT_EQ(t.pack, "pack-1") << t.task;
      EXPECT_NEAR(t.end_s, ends[static_cast<size_t>(t.task[1] - '0')], 1e-6) << t.task;
    }
    // Events are the members': each started once and finished once, at its end.
    std::map<std::string, int> started;
    for (const Event& e : r.events) {
      if (e.kind == EventKind::kTaskStarted) ++started[e.task];
      if (e.kind == EventKind::kTaskFinished) {
        EXPECT_NEAR(e.t, r.tasks[static_cast<size_t>(e.task[1] - '0')].end_s, 1e-9) << e.task;
      }
    }
    EXPECT_EQ(started, (std::map<std::string, int>{{"m0", 1}, {"m1", 1}, {"m2", 1}}));
  }
}

// ASHA over the pack's 4 members (test::AshaStop); member j reports loss j + 100 / step. What an
// independent ASHA stops, fed the simulated evaluations in the order they were logged, is what
// leaves, at the step it was stopped; the rest train on faster.
TEST(SimulatedPacks, AMemberItsRuleStopsLeavesThereAndTheRestGoOnFaster) {
  const int n = 4;
  Lora l = LoraTasks(std::vector<double>(n, 400), 1);
  l.packs->packing = {{0, 1, 2, 3}};
  SimOptions options;
  options.introspection = false;
  options.packs = l.packs;
  for (int j = 0; j < n; ++j) {
    std::vector<std::pair<long, double>> curve;
    for (long s = 50; s <= 400; s += 50)
      curve.push_back({s, j + 100.0 / static_cast<double>(s)});
    options.early_stop.push_back(test::AshaStop(curve));
  }
  SimResult r = Simulate(l.problem, TruthEqualsBelief(l.problem), {}, options);
  test::ReferenceAsha asha(50, 2, 400);
  std::vector<double> stops(n, 400);
  std::set<std::string> stopped;
  for (const Event& e : r.events) {
    if (e.kind == EventKind::kTaskEvaluated &&
        asha.Stops(e.task, e.extra["step"].get<long>(), e.extra["eval_loss"].get<double>())) {
      stops[static_cast<size_t>(e.task[1] - '0')] = static_cast<double>(e.extra["step"]);
    }
    if (e.kind == EventKind::kTaskEarlyStopped) stopped.insert(e.task);
  }
  ASSERT_FALSE(stopped.empty());
  EXPECT_LT(stopped.size(), static_cast<size_t>(n));
  const std::vector<double> ends = ReferenceEnds(stops);
  for (int j = 0; j < n; ++j) {
    const SimTaskResult& t = r.tasks[static_cast<size_t>(j)];
    const bool was_stopped = stops[static_cast<size_t>(j)] < 400;
    EXPECT_EQ(stopped.count(t.name) > 0, was_stopped) << t.name;
    EXPECT_EQ(t.status, was_stopped ? TaskStatus::kStopped : TaskStatus::kFinished) << t.name;
    EXPECT_NEAR(t.end_s, ends[static_cast<size_t>(j)], 1e-6) << t.name;
    EXPECT_NEAR(t.work_done, stops[static_cast<size_t>(j)] / 400, 1e-9) << t.name;
  }
  // The best member (m0) is never stopped, and the pack ends sooner than
  // with every member to its end.
  EXPECT_FALSE(stopped.count("m0"));
  EXPECT_LT(r.makespan_s, ReferenceEnds(std::vector<double>(n, 400))[0] - 1.0);
}

// A pack's last member stopped ends the pack there, its device free. The
// profile counts 800 steps where the workload counts 400 (its steps are
// another size): the rule decides at workload step 50, which the pack
// reaches at profile step 100. Two tasks alone, better than both members
// (and equal: neither stops the other) and faster to step 50, are recorded
// at rung 50 first, so the rule stops both members there whatever their
// order.
TEST(SimulatedPacks, APackWhoseLastMemberIsStoppedEndsThere) {
  Lora l = LoraTasks(std::vector<double>(4, 800), 3);
  l.packs->packing = {{0, 1}, {2}, {3}};
  SimOptions options;
  options.introspection = false;
  options.packs = l.packs;
  const std::vector<double> loss = {1.0, 2.0, 0.0, 0.0};  // m0, m1 (pack), m2, m3 (alone)
  for (double q : loss) {
    SimEarlyStop e = test::AshaStop({{50, q}});
    e.fixed_fraction = kLaunch / (kLaunch + 800);  // alone: step 50 at 105 s
    options.early_stop.push_back(e);
  }
  SimResult r = Simulate(l.problem, TruthEqualsBelief(l.problem), {}, options);
  const double stop = kLaunch + 100 * StepAt(2);  // 125 s
  for (int j : {0, 1}) {
    const SimTaskResult& t = r.tasks[static_cast<size_t>(j)];
    EXPECT_EQ(t.status, TaskStatus::kStopped) << t.name;
    EXPECT_NEAR(t.end_s, stop, 1e-6) << t.name;
    EXPECT_NEAR(t.work_done, 100.0 / 800, 1e-9) << t.name;
    EXPECT_EQ(t.pack, "pack-1");
  }
  for (int j : {2, 3})
    EXPECT_NEAR(r.tasks[static_cast<size_t>(j)].end_s, kLaunch + 800, 1e-6);
  EXPECT_NEAR(r.gpu_s, stop + 2 * (kLaunch + 800), 1e-6);  // the pack's device held to 125 s
  for (const Event& e : r.events) {
    if (e.kind == EventKind::kTaskEvaluated && e.task[1] < '2') {
      EXPECT_EQ(e.extra["step"].get<long>(), 50) << e.task;  // in the workload's steps
      EXPECT_NEAR(e.t, stop, 1e-6) << e.task;
    }
  }
}

// A re-plan that moves a running pack to another technique restarts it
// from the step it stood at: here a task alone ends far sooner than
// believed, and the pack (single on one GPU) is moved to ddp on both. A
// member's end is then that step's time under ddp's curve, after the
// restart's cost.
TEST(SimulatedPacks, APackMovedToAnotherTechniqueGoesOnFromItsStep) {
  Problem p;
  p.nodes = {{"n0", 2, 0}};
  p.types = {""};
  auto option = [](std::string technique, int gpus, double step_s, double steps) {
    Option o;
    o.technique = std::move(technique);
    o.gpus = gpus;
    o.runtime_s = kLaunch + steps * step_s;
    return o;
  };
  auto packs = std::make_shared<SimPacking>();
  const std::vector<double> steps = {500, 1000, 1000};
  for (size_t j = 0; j < steps.size(); ++j) {
    Task t{"m" + std::to_string(j), {option("single", 1, 1.0, steps[j])}};
    PackTerms::Member m;
    m.cls = j < 2 ? "lora" : "";  // m2 trains alone
    m.steps = steps[j];
    packs->terms.tasks.push_back(m);
    packs->terms.curves.push_back({{1.0, {{1, 1.0}, {2, 1.2}}, {}}});
    if (j < 2) {
      t.options.push_back(option("ddp", 2, 0.55, steps[j]));
      packs->terms.curves.back().push_back({0.55, {{1, 0.55}, {2, 0.66}}, {}});
    }
    p.tasks.push_back(t);
  }
  packs->packing = {{0, 1}, {2}};
  std::vector<std::vector<double>> truth = TruthEqualsBelief(p);
  truth[2][0] = 10;  // m2 ends at 10 s, its GPU idle
  SimOptions options;
  options.packs = packs;
  options.interval_s = 20;
  options.policy.threshold_s = 5;
  options.policy.switch_cost_s = 10;
  SimResult r = Simulate(p, truth, {}, options);
  double stopped_at = -1, restarted_at = -1, restarted_done = -1;
  for (const Event& e : r.events) {
    if (e.task != "m0") continue;
    if (e.kind == EventKind::kTaskStopped) stopped_at = e.t;
    if (e.kind == EventKind::kTaskStarted && stopped_at >= 0) {
      restarted_at = e.t;
      restarted_done = e.extra["done"].get<double>();
      EXPECT_EQ(e.technique, "ddp");
    }
  }
  ASSERT_GT(stopped_at, 0) << "the pack was not moved";
  ASSERT_GE(restarted_at, stopped_at);
  const double step = (stopped_at - kLaunch) / 1.2;  // both in, single
  EXPECT_NEAR(restarted_done, step / 500, 1e-9);     // m0's own progress
  const double m0 = restarted_at + 10 + (500 - step) * 0.66;
  EXPECT_NEAR(r.tasks[0].end_s, m0, 1e-6);
  EXPECT_NEAR(r.tasks[1].end_s, m0 + 500 * 0.55, 1e-6);
  EXPECT_EQ(r.tasks[0].attempts, 2);
  EXPECT_EQ(r.tasks[0].technique, "ddp");
}

// Packs are chosen among tasks that arrive together: a pack starts when
// its last member arrives, and the simulator does not pack arrivals as
// they come.
TEST(SimulatedPacks, OnlyTasksArrivingTogetherShareAPack) {
  Lora l = LoraTasks(std::vector<double>(4, 100), 1);
  PlanRequest request;
  std::shared_ptr<const SimPacking> together =
      ChooseSimPacks(l.problem, l.packs->terms, {}, {}, request, nullptr);
  ASSERT_TRUE(together);
  EXPECT_EQ(together->packing, (Packing{{0, 1, 2, 3}}));
  std::shared_ptr<const SimPacking> apart =
      ChooseSimPacks(l.problem, l.packs->terms, {}, {0, 0, 50, 50}, request, nullptr);
  ASSERT_TRUE(apart);
  Packing groups = apart->packing;
  for (std::vector<int>& g : groups)
    std::sort(g.begin(), g.end());
  std::sort(groups.begin(), groups.end());
  EXPECT_EQ(groups, (Packing{{0, 1}, {2, 3}}));
}

// Planned with each member's expected work, and re-planned as they leave:
// a pack and a task alone on two GPUs under ASHA, introspection on.
TEST(SimulatedPacks, PlansCountOnWhereTheRuleIsExpectedToStopMembers) {
  const int n = 5;
  Lora l = LoraTasks(std::vector<double>(n, 400), 2);
  l.packs->packing = {{0, 1, 2, 3}, {4}};
  SimOptions options;
  options.interval_s = 20;
  options.packs = l.packs;
  for (int j = 0; j < n; ++j) {
    options.early_stop.push_back(test::AshaStop({{50, static_cast<double>((j * 3) % n)}}));
  }
  SimOptions plain = options;
  plain.early_stop.clear();
  SimResult full = Simulate(l.problem, TruthEqualsBelief(l.problem), {}, plain);
  SimResult r = Simulate(l.problem, TruthEqualsBelief(l.problem), {}, options);
  EXPECT_LT(r.initial_plan.makespan_s, full.initial_plan.makespan_s);
  EXPECT_LT(r.makespan_s, full.makespan_s);
  EXPECT_GT(r.replans, 0);
  int packed = 0;
  for (const SimTaskResult& t : r.tasks) {
    packed += t.pack == "pack-1" ? 1 : 0;
    EXPECT_GT(t.end_s, 0.0) << t.name;
  }
  EXPECT_EQ(packed, 4);
}

}  // namespace
}  // namespace saturn
