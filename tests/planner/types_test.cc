// Mixed GPU types: options run only on nodes of their type, every solver and
// the validator know it, the lower bound sees types, and the baselines of a
// mixed cluster (gavel, type-blind) plan validly.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "planner/explain.h"
#include "planner/lower_bound.h"
#include "planner/planner.h"
#include "planner/validate.h"
#include "tests/planner/test_problems.h"

namespace saturn {
namespace {

PlanRequest Request(const std::string& solver, uint64_t seed = 1) {
  PlanRequest r;
  r.solver = solver;
  r.seed = seed;
  r.time_limit_s = 600;  // a safety net only; effort limits keep tests deterministic
  r.work_scale = 0.05;
  return r;
}

// Two one-GPU nodes, one slow (type 0) and one fast (type 1), and ten tasks
// that take 10 s on the slow one and 1 s on the fast one.
Problem SlowAndFast() {
  Problem p;
  p.types = {"slow", "fast"};
  p.nodes = {{"s", 1, 0}, {"f", 1, 1}};
  for (int j = 0; j < 10; ++j) {
    Task t{"t" + std::to_string(j), {}};
    for (int type : {0, 1}) {
      Option o;
      o.technique = "single";
      o.runtime_s = type == 0 ? 10.0 : 1.0;
      o.type = type;
      t.options.push_back(o);
    }
    p.tasks.push_back(t);
  }
  return p;
}

void ExpectEachTaskOnItsType(const Problem& p, const Plan& plan, const std::string& solver) {
  for (const PlanTask& t : plan.tasks) {
    auto node = std::find_if(p.nodes.begin(), p.nodes.end(),
                             [&](const NodeSlots& n) { return n.name == t.node; });
    ASSERT_NE(node, p.nodes.end());
    EXPECT_EQ(t.gpu_type, p.TypeName(node->type)) << solver << ": " << t.task;
  }
}

TEST(Types, OptionsRunOnlyOnNodesOfTheirType) {
  Problem p = SlowAndFast();
  Option fast = p.tasks[0].options[1];
  EXPECT_FALSE(p.Fits(fast, 0));
  EXPECT_TRUE(p.Fits(fast, 1));
  // An option of another type never dominates (it runs elsewhere).
  EXPECT_EQ(UsefulOptions(p.tasks[0]).size(), 2u);
}

TEST(Types, TheLowerBoundSplitsWorkOverTypes) {
  Problem p = SlowAndFast();
  // GPU-seconds alone: 10 x 1 s over 2 GPUs = 5 s. Over the types: the slow
  // node can take 1/11 of the work in the time the fast one does the rest.
  double bound = MakespanLowerBound(p);
  EXPECT_GE(bound, 8.5);
  EXPECT_LE(bound, 10.0 + 1e-9);  // the optimum: all ten on the fast node
  PlanResult r = RunPlanner(p, Request("auto"));
  EXPECT_NEAR(r.plan.makespan_s, 10.0, 1e-9);
  EXPECT_GE(r.plan.lower_bound_s, 8.5);
}

TEST(Types, ExactSolversMatchBruteForceOnTinyMixedProblems) {
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    Problem p =
        testing::RandomMixedProblem(seed, 3 + static_cast<int>(seed % 2), {2, 2}, {0, 1}, 2, true);
    double optimum = testing::BruteForceOptimum(p);
    EXPECT_LE(MakespanLowerBound(p), optimum + 1e-9) << seed;
    for (const char* solver : {"milp", "auto"}) {
      PlanRequest req = Request(solver, seed);
      req.work_scale = 1.0;
      PlanResult r = RunPlanner(p, req);
      EXPECT_TRUE(ValidatePlan(p, r.plan).empty()) << solver << " seed " << seed;
      EXPECT_NEAR(r.plan.makespan_s, optimum, 1e-6) << solver << " seed " << seed;
      ExpectEachTaskOnItsType(p, r.plan, solver);
    }
  }
}

TEST(Types, EverySolverPlansValidlyOnAMixedCluster) {
  Problem p = testing::RandomMixedProblem(7, 24, {4, 4, 8, 2}, {0, 1, 1, 2}, 3, false);
  double bound = MakespanLowerBound(p);
  PlanResult best = RunPlanner(p, Request("auto"));
  for (const char* solver :
       {"auto", "current-practice", "max", "min", "random", "optimus", "gavel", "type-blind"}) {
    PlanResult r = RunPlanner(p, Request(solver));
    EXPECT_TRUE(ValidatePlan(p, r.plan).empty()) << solver;
    EXPECT_GE(r.plan.makespan_s, bound - 1e-6) << solver;
    EXPECT_LE(best.plan.makespan_s, r.plan.makespan_s * (1 + 1e-9)) << "auto worse than " << solver;
    ExpectEachTaskOnItsType(p, r.plan, solver);
  }
}

TEST(Types, AutoIsWithinOnePercentOfTheMilpOnSmallMixedInstances) {
  for (uint64_t seed = 11; seed <= 15; ++seed) {
    Problem p = testing::RandomMixedProblem(seed, 6, {4, 4}, {0, 1}, 2, false);
    PlanRequest exact = Request("milp", seed);
    exact.time_limit_s = 20;
    PlanResult milp = RunPlanner(p, exact);
    PlanRequest fast = Request("auto", seed);
    fast.work_scale = 1.0;
    PlanResult mine = RunPlanner(p, fast);
    EXPECT_LE(mine.plan.makespan_s, milp.plan.makespan_s * 1.01) << "seed " << seed;
  }
}

TEST(Types, TheValidatorRefusesAConfigurationOnAnotherType) {
  Problem p = SlowAndFast();
  Plan plan = RunPlanner(p, Request("auto")).plan;
  ASSERT_TRUE(ValidatePlan(p, plan).empty());
  // Move a task planned on the fast node to the slow one, keeping its 1 s.
  for (PlanTask& t : plan.tasks) {
    if (t.node == "f") {
      t.node = "s";
      break;
    }
  }
  std::vector<std::string> problems = ValidatePlan(p, plan);
  ASSERT_FALSE(problems.empty());
  bool named = false;
  for (const std::string& why : problems)
    named = named || why.find("its GPUs are slow") != std::string::npos;
  EXPECT_TRUE(named) << problems.front();
}

TEST(Types, TypeBlindPlansOnTheMedianTypeAndPaysOnTheRealOnes) {
  Problem p = testing::RandomMixedProblem(21, 16, {4, 4, 4}, {0, 1, 2}, 3, false);
  PlanResult blind = RunPlanner(p, Request("type-blind"));
  PlanResult aware = RunPlanner(p, Request("auto"));
  EXPECT_TRUE(ValidatePlan(p, blind.plan).empty());
  EXPECT_LT(aware.plan.makespan_s, blind.plan.makespan_s);
}

PlanTask At(std::string task, std::string technique, int gpus, std::string node, double start,
            double end) {
  PlanTask t;
  t.task = std::move(task);
  t.technique = std::move(technique);
  t.gpus = gpus;
  t.node = std::move(node);
  t.start_s = start;
  t.end_s = end;
  return t;
}

Plan PlanOf(std::vector<PlanTask> tasks) {
  Plan plan;
  plan.tasks = std::move(tasks);
  for (const PlanTask& t : plan.tasks)
    plan.makespan_s = std::max(plan.makespan_s, t.end_s);
  return plan;
}

// The reason varies with what the planner knew: the fastest, the only
// one, or what the faster configuration would have done in the plan.
TEST(Explain, SaysWhyATaskGotItsConfiguration) {
  Problem p = testing::MakeProblem({4}, {{"a", {{"single", 1, 100}, {"ddp", 4, 30}}},
                                         {"b", {{"single", 1, 100}, {"ddp", 4, 120}}},
                                         {"c", {{"spill", 1, 500}}}});
  EXPECT_EQ(WhyThisOption(p, 0, 1), "fastest configuration");
  EXPECT_EQ(WhyThisOption(p, 1, 0), "fastest configuration");
  EXPECT_EQ(WhyThisOption(p, 2, 0), "only configuration that fits these devices");
  // Without the plan: what it gives up.
  EXPECT_EQ(WhyThisOption(p, 0, 0),
            "fewer GPUs than its fastest (ddp x4 would be 3.33x faster on 4.0x the GPUs): the "
            "plan runs tasks side by side");
  // In the plan, ddp x4 would wait for c's GPU until 8m20s.
  Plan plan = PlanOf({At("a", "single", 1, "node0", 0, 100), At("b", "single", 1, "node0", 0, 100),
                      At("c", "spill", 1, "node0", 0, 500)});
  EXPECT_EQ(WhyThisOption(p, 0, 0, &plan),
            "fewer GPUs than its fastest (ddp x4 would end later, at 8m50s instead of 1m40s: "
            "other tasks need the devices)");
  EXPECT_EQ(WhyThisOption(p, 2, 0, &plan), "only configuration that fits these devices");
  // A plan that runs the task otherwise says nothing about this option.
  Plan elsewhere = PlanOf({At("a", "ddp", 4, "node0", 0, 30)});
  EXPECT_THAT(WhyThisOption(p, 0, 0, &elsewhere),
              ::testing::HasSubstr("the plan runs tasks side by side"));
  // A running task the re-plan keeps where it is.
  Problem kept = p;
  kept.tasks[0].options[0].starts_now = true;
  EXPECT_EQ(WhyThisOption(kept, 0, 0), "kept running where it was");
}

TEST(Explain, AFasterConfigurationThatWouldNotWaitSaysWhetherTheTaskSetsTheEnd) {
  Problem p = testing::MakeProblem(
      {4}, {{"a", {{"single", 1, 100}, {"ddp", 2, 60}}}, {"c", {{"spill", 1, 500}}}});
  // ddp x2 fits beside c and ends sooner, but c sets the plan's end.
  Plan beside =
      PlanOf({At("a", "single", 1, "node0", 0, 100), At("c", "spill", 1, "node0", 0, 500)});
  EXPECT_EQ(WhyThisOption(p, 0, 0, &beside),
            "fewer GPUs than its fastest (ddp x2 would be 1.67x faster; this task does not set "
            "the plan's end, so either serves)");
  // Alone, the task sets the end: a shorter plan the solver did not find,
  // which only a plan not proven optimal can say.
  Plan alone = PlanOf({At("a", "single", 1, "node0", 0, 100)});
  alone.status = "time_limit";
  EXPECT_EQ(WhyThisOption(p, 0, 0, &alone),
            "fewer GPUs than its fastest (ddp x2 could end it at 1m00s instead of 1m40s: a shorter "
            "plan the solver did not find (its plan is time_limit, not proven optimal))");
  alone.status = "optimal";
  EXPECT_EQ(WhyThisOption(p, 0, 0, &alone),
            "fewer GPUs than its fastest (ddp x2 could end it at 1m00s instead of 1m40s)");
  // Another task ends at the same time: the run would not end sooner.
  Plan tied = PlanOf({At("a", "single", 1, "node0", 0, 100), At("c", "spill", 1, "node0", 0, 100)});
  tied.status = "time_limit";
  p.tasks[1].options[0].runtime_s = 100;
  EXPECT_EQ(WhyThisOption(p, 0, 0, &tied),
            "fewer GPUs than its fastest (ddp x2 could end it at 1m00s instead of 1m40s, but the "
            "run would not end sooner: c also ends at 1m40s)");
}

TEST(Explain, AnotherGpuTypeWhileTheFasterOneIsBusy) {
  Problem p;
  p.types = {"slow", "fast"};
  p.nodes = {{"s", 1, 0}, {"f", 1, 1}};
  auto single_on = [](int type, double runtime_s) {
    Option o;
    o.technique = "single";
    o.runtime_s = runtime_s;
    o.type = type;
    return o;
  };
  p.tasks = {{"x", {single_on(0, 10.0), single_on(1, 4.0)}}, {"y", {single_on(1, 8.0)}}};
  EXPECT_EQ(WhyThisOption(p, 0, 0),
            "not its fastest GPU type (single x1 on fast would be 2.50x faster): it fits the plan "
            "better");
  Plan plan = PlanOf({At("x", "single", 1, "s", 0, 10), At("y", "single", 1, "f", 0, 8)});
  EXPECT_EQ(WhyThisOption(p, 0, 0, &plan),
            "not its fastest GPU type (single x1 on fast would end later, at 12.0s instead of "
            "10.0s: other tasks hold those GPUs)");
  EXPECT_EQ(WhyThisOption(p, 0, 1), "fastest configuration");
}

}  // namespace
}  // namespace saturn
