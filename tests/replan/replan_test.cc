#include "replan/replan.h"

#include <gtest/gtest.h>

#include "planner/planner.h"
#include "planner/validate.h"
#include "tests/planner/test_problems.h"

namespace saturn {
namespace {

Problem ThreeTasks() {
  return testing::MakeProblem({4}, {{"a", {{"ddp", 2, 1000}, {"ddp", 4, 600}}},
                                    {"b", {{"ddp", 2, 1000}, {"ddp", 4, 600}}},
                                    {"c", {{"ddp", 2, 1000}, {"ddp", 4, 600}}}});
}

TEST(RemainingProblem, ScalesByWorkLeftAndPinsRunningTasks) {
  Problem base = ThreeTasks();
  std::vector<TaskProgress> progress(3);
  progress[0].finished = true;
  progress[1].done = 0.5;
  progress[1].running = RunningOn{0, 0, {2, 3}};
  progress[1].slowdown = 2.0;
  ReplanPolicy policy;
  policy.switch_cost_s = 30;
  RemainingProblem r = BuildRemainingProblem(base, progress, policy);
  ASSERT_EQ(r.problem.NumTasks(), 2);
  EXPECT_EQ(r.base_index, (std::vector<int>{1, 2}));
  const Task& b = r.problem.tasks[0];
  ASSERT_GE(r.keep_option[0], 0);
  const Option& keep = b.options[r.keep_option[0]];
  EXPECT_TRUE(keep.starts_now);
  EXPECT_EQ(keep.gpu_ids, (std::vector<int>{2, 3}));
  EXPECT_DOUBLE_EQ(keep.runtime_s, 0.5 * 2.0 * 1000);  // half left, twice as slow, no switch
  EXPECT_DOUBLE_EQ(b.options[1].runtime_s, 0.5 * 2.0 * 600 + 30);  // switching costs
  EXPECT_EQ(r.keep_option[1], -1);
  EXPECT_DOUBLE_EQ(r.problem.tasks[1].options[0].runtime_s, 1000);  // untouched task
}

TEST(RemainingProblem, WithoutPreemptionRunningTasksOnlyKeepRunning) {
  Problem base = ThreeTasks();
  std::vector<TaskProgress> progress(3);
  progress[0].running = RunningOn{1, 0, {0, 1, 2, 3}};
  ReplanPolicy policy;
  policy.allow_preemption = false;
  RemainingProblem r = BuildRemainingProblem(base, progress, policy);
  ASSERT_EQ(r.problem.tasks[0].options.size(), 1u);
  EXPECT_TRUE(r.problem.tasks[0].options[0].starts_now);
}

Plan PlanFor(const Problem& p) {
  PlanRequest req;
  req.work_scale = 0.1;
  return RunPlanner(p, req).plan;
}

TEST(Replan, KeepsAPlanThatStillHolds) {
  Problem base = ThreeTasks();
  Plan plan = PlanFor(base);
  std::vector<TaskProgress> progress(3);
  ReplanDecision d = Replan(base, progress, plan, 0.0, ReplanPolicy{});
  EXPECT_FALSE(d.switch_plan);
  EXPECT_TRUE(d.preempted.empty());
  EXPECT_NEAR(d.current_end_s, plan.makespan_s, 1e-6);
  EXPECT_EQ(d.plan.tasks.size(), 3u);
}

TEST(Replan, SwitchesWhenATaskTurnsOutSlowAndPreemptsOnlyWhatChanges) {
  // Two nodes of 4 GPUs. a and b run on node0, c waits on node1 behind d.
  // a turns out 5x slower than profiled: moving it to 4 GPUs on the idle
  // node (after pre-emption) finishes much earlier; b keeps running.
  Problem base = testing::MakeProblem(
      {4, 4}, {{"a", {{"ddp", 2, 1000}, {"ddp", 4, 400}}}, {"b", {{"ddp", 2, 1000}}}});
  Plan plan;
  plan.solver = "test";
  plan.status = "feasible";
  plan.makespan_s = 1000;
  plan.tasks = {{"a", "ddp", 2, "node0", {0, 1}, 0, 1000, ""},
                {"b", "ddp", 2, "node0", {2, 3}, 0, 1000, ""}};
  std::vector<TaskProgress> progress(2);
  progress[0].done = 0.1;
  progress[0].running = RunningOn{0, 0, {0, 1}};
  progress[0].slowdown = 5.0;
  progress[1].done = 0.5;
  progress[1].running = RunningOn{0, 0, {2, 3}};
  ReplanPolicy policy;
  policy.threshold_s = 100;
  policy.switch_cost_s = 50;
  policy.work_scale = 0.1;
  ReplanDecision d = Replan(base, progress, plan, 500.0, policy);
  ASSERT_TRUE(d.switch_plan) << d.summary;
  EXPECT_EQ(d.preempted, (std::vector<std::string>{"a"}));
  EXPECT_NEAR(d.current_end_s, 500 + 0.9 * 5 * 1000, 1e-6);
  EXPECT_NEAR(d.new_end_s, 500 + 0.9 * 5 * 400 + 50, 1e-6);
  for (const PlanTask& t : d.plan.tasks) {
    if (t.task == "b") {
      EXPECT_EQ(t.gpu_ids, (std::vector<int>{2, 3}));
      EXPECT_DOUBLE_EQ(t.start_s, 500);
    }
  }
}

TEST(Replan, AppendsNewTasksToTheCurrentPlan) {
  Problem base = ThreeTasks();
  Problem first = testing::MakeProblem({4}, {{"a", {{"ddp", 2, 1000}, {"ddp", 4, 600}}}});
  Plan plan = PlanFor(first);
  std::vector<TaskProgress> progress(3);
  progress[0].running = RunningOn{1, 0, {0, 1, 2, 3}};
  progress[0].done = 0.5;
  ReplanPolicy policy;
  policy.threshold_s = 1e9;  // arrivals are planned whatever the threshold
  ReplanDecision d = Replan(base, progress, plan, 300.0, policy);
  ASSERT_EQ(d.plan.tasks.size(), 3u);
  EXPECT_TRUE(d.preempted.empty());
  for (const PlanTask& t : d.plan.tasks) {
    if (t.task != "a") {
      EXPECT_GE(t.start_s, 300 + 300 - 1e-6);  // after the 300 s a has left
    }
  }
}

// a, b and c one after another on all 4 GPUs: 1,800 s, where two at a time
// on 2 GPUs each (1,600 s) is better.
Plan SerialPlan() {
  Plan plan;
  plan.solver = "test";
  plan.status = "feasible";
  plan.makespan_s = 1800;
  plan.tasks = {{"a", "ddp", 4, "node0", {0, 1, 2, 3}, 0, 600, ""},
                {"b", "ddp", 4, "node0", {0, 1, 2, 3}, 600, 1200, ""},
                {"c", "ddp", 4, "node0", {0, 1, 2, 3}, 1200, 1800, ""}};
  return plan;
}

TEST(Replan, NoSolveWhenTheLowerBoundRulesOutASwitch) {
  Problem base = ThreeTasks();  // lower bound 1,500 s (area)
  std::vector<TaskProgress> progress(3);
  ReplanPolicy policy;
  policy.work_scale = 0.1;
  policy.unchanged_tolerance = 0;  // the hand-made plan was never searched
  policy.threshold_s = 300;        // 1,800 - 300 <= 1,500: nothing can be worth a switch
  ReplanDecision d = Replan(base, progress, SerialPlan(), 0.0, policy);
  EXPECT_FALSE(d.switch_plan);
  EXPECT_NE(d.summary.find("no solve"), std::string::npos) << d.summary;
  EXPECT_NEAR(d.current_end_s, 1800, 1e-6);
  EXPECT_EQ(d.plan.tasks.size(), 3u);
  policy.threshold_s = 100;  // now a better plan could be: it solves, and switches
  d = Replan(base, progress, SerialPlan(), 0.0, policy);
  EXPECT_EQ(d.summary.find("no solve"), std::string::npos) << d.summary;
  EXPECT_TRUE(d.switch_plan) << d.summary;
  EXPECT_LT(d.new_end_s, 1800 - 100);
}

TEST(Replan, UnchangedToleranceKeepsAPlanWhoseProgressMatchesIt) {
  Problem base = ThreeTasks();
  std::vector<TaskProgress> progress(3);
  progress[0].running = RunningOn{1, 0, {0, 1, 2, 3}};
  progress[0].done = 0.5;
  ReplanPolicy policy;
  policy.work_scale = 0.1;
  policy.threshold_s = 100;
  policy.unchanged_tolerance = 0.02;
  // At 300 s, a is half done as planned: keep without solving.
  ReplanDecision d = Replan(base, progress, SerialPlan(), 300.0, policy);
  EXPECT_FALSE(d.switch_plan);
  EXPECT_NE(d.summary.find("as planned"), std::string::npos) << d.summary;
  // a runs 30% slow: the plan moved beyond noise, so it solves.
  progress[0].slowdown = 1.3;
  progress[0].done = 300.0 / (600 * 1.3);
  d = Replan(base, progress, SerialPlan(), 300.0, policy);
  EXPECT_EQ(d.summary.find("no solve"), std::string::npos) << d.summary;
}

TEST(Replan, KeepsAPlanWhoseProgressMatchesItByDefault) {
  // a runs on all 4 GPUs, half done at 300 s as planned: the default policy
  // keeps the plan without a search (it was searched from this state).
  Problem base = ThreeTasks();
  std::vector<TaskProgress> progress(3);
  progress[0].running = RunningOn{1, 0, {0, 1, 2, 3}};
  progress[0].done = 0.5;
  ReplanPolicy policy;
  policy.threshold_s = 0;  // the bound alone would not keep it
  ReplanDecision d = Replan(base, progress, SerialPlan(), 300.0, policy);
  EXPECT_FALSE(d.switch_plan);
  EXPECT_NE(d.summary.find("as planned"), std::string::npos) << d.summary;
}

TEST(Replan, ANodeThatFinishedEarlyIsAChangeWorthASearch) {
  // a then b on node0; c on node1 until 2,000 s. At 500 s c is done already:
  // the plan's makespan still holds, but node1 idles, and b moved there ends
  // 500 s sooner. The check must search, not keep the plan as "as planned".
  Problem base = testing::MakeProblem(
      {4, 4}, {{"a", {{"ddp", 4, 1000}}}, {"b", {{"ddp", 4, 1000}}}, {"c", {{"ddp", 4, 2000}}}});
  Plan plan;
  plan.solver = "test";
  plan.status = "feasible";
  plan.makespan_s = 2000;
  plan.tasks = {{"a", "ddp", 4, "node0", {0, 1, 2, 3}, 0, 1000, ""},
                {"b", "ddp", 4, "node0", {0, 1, 2, 3}, 1000, 2000, ""},
                {"c", "ddp", 4, "node1", {0, 1, 2, 3}, 0, 2000, ""}};
  std::vector<TaskProgress> progress(3);
  progress[0].running = RunningOn{0, 0, {0, 1, 2, 3}};
  progress[0].done = 0.5;
  progress[2].finished = true;
  ReplanPolicy policy;
  policy.threshold_s = 100;
  policy.work_scale = 0.1;
  policy.unchanged_tolerance = 0.02;  // per node, both ways (not only the makespan)
  ReplanDecision d = Replan(base, progress, plan, 500.0, policy);
  ASSERT_TRUE(d.switch_plan) << d.summary;
  EXPECT_NEAR(d.new_end_s, 1500, 1e-6);
  for (const PlanTask& t : d.plan.tasks) {
    if (t.task == "b") {
      EXPECT_EQ(t.node, "node1");
    }
  }
}

TEST(Replan, ATaskThatEndedSoonerThanPlannedFreesItsDevicesForAnother) {
  // One node of 2 GPUs: gpt on GPU 0 (single), other on GPU 1. gpt runs 3x
  // slower than profiled; other ended at 1.7 s, though the plan re-timed at
  // the previous check gave it until 3 s. Neither the node's end nor gpt's
  // progress moved since, yet gpt on both GPUs (ddp) now ends sooner: the
  // check must search, and switch.
  Problem base = testing::MakeProblem(
      {2}, {{"gpt", {{"single", 1, 2.0}, {"ddp", 2, 1.0}}}, {"other", {{"ddp", 1, 2.0}}}});
  Plan plan;
  plan.solver = "test";
  plan.status = "feasible";
  plan.makespan_s = 3.6;
  plan.tasks = {{"gpt", "single", 1, "node0", {0}, 0, 3.6, ""},
                {"other", "ddp", 1, "node0", {1}, 0, 3.0, ""}};
  plan.extra["searched_node_ends_s"] = {{"node0", 3.6}};
  std::vector<TaskProgress> progress(2);
  progress[0].running = RunningOn{0, 0, {0}};
  progress[0].done = 0.4;
  progress[0].slowdown = 1.5;  // 0.6 of the work left, 1.5x slow: 1.8 s alone
  progress[1].finished = true;
  ReplanPolicy policy;
  policy.threshold_s = 0.2;
  policy.switch_cost_s = 0.2;
  ReplanDecision d = Replan(base, progress, plan, 1.8, policy);
  EXPECT_NEAR(d.current_end_s, 1.8 + 1.8, 1e-6);
  ASSERT_TRUE(d.switch_plan) << d.summary;
  EXPECT_NEAR(d.new_end_s, 1.8 + 0.9 + 0.2, 1e-6);
  EXPECT_EQ(d.preempted, (std::vector<std::string>{"gpt"}));
}

TEST(Replan, ADriftBelowTheNoiseAtEachCheckAddsUpToASearch) {
  // a alone on its node, planned to end at 1,000 s, turns out slower bit by
  // bit: each check's re-timed end is within the noise of the previous
  // check's, and the kept plan carries the searched end, so the drift adds
  // up and a later check searches.
  Problem base = testing::MakeProblem({4}, {{"a", {{"ddp", 4, 1000}, {"ddp", 2, 1500}}}});
  Plan plan;
  plan.solver = "test";
  plan.status = "feasible";
  plan.makespan_s = 1000;
  plan.tasks = {{"a", "ddp", 4, "node0", {0, 1, 2, 3}, 0, 1000, ""}};
  ReplanPolicy policy;
  policy.threshold_s = 1e6;  // never worth a switch: whether it is still "as planned"
  policy.unchanged_tolerance = 0.02;
  std::vector<TaskProgress> progress(1);
  progress[0].running = RunningOn{0, 0, {0, 1, 2, 3}};
  bool searched = false;
  for (int check = 1; check <= 10 && !searched; ++check) {
    double now = 50.0 * check;
    progress[0].slowdown = 1.0 + 0.008 * check;  // ~8 s later each check: within 2% + 1 s
    progress[0].done = now / (1000 * progress[0].slowdown);
    ReplanDecision d = Replan(base, progress, plan, now, policy);
    searched = d.summary.find("as planned") == std::string::npos;
    if (check == 1) {
      EXPECT_FALSE(searched) << d.summary;
    }
    plan = d.plan;  // followed: the re-timed plan
  }
  EXPECT_TRUE(searched);
}

// Eight nodes of 4 GPUs, two 1,000 s tasks on each, one after another.
// Node 0's first task turns out 3x slower: its second task should move.
Problem EightNodes() {
  std::vector<std::pair<std::string, std::vector<testing::OptionSpec>>> tasks;
  for (int i = 0; i < 16; ++i)
    tasks.push_back({"t" + std::to_string(i), {{"ddp", 4, 1000}, {"ddp", 2, 1800}}});
  tasks.push_back({"short", {{"ddp", 2, 200}}});
  return testing::MakeProblem({4, 4, 4, 4, 4, 4, 4, 4}, tasks);
}

Plan EightNodePlan() {
  Plan plan;
  plan.solver = "test";
  plan.status = "feasible";
  plan.makespan_s = 2200;
  for (int i = 0; i < 16; ++i) {
    plan.tasks.push_back({"t" + std::to_string(i),
                          "ddp",
                          4,
                          "node" + std::to_string(i % 8),
                          {0, 1, 2, 3},
                          1000.0 * (i / 8),
                          1000.0 * (i / 8 + 1),
                          ""});
  }
  plan.tasks.push_back({"short", "ddp", 2, "node7", {0, 1}, 2000, 2200, ""});
  return plan;
}

TEST(Replan, OnLargeClustersSearchesAroundTheNodesThatChanged) {
  Problem base = EightNodes();
  std::vector<TaskProgress> progress(base.NumTasks());
  for (int i = 0; i < 8; ++i) {
    progress[i].running = RunningOn{0, i, {0, 1, 2, 3}};
    progress[i].done = 0.5;
  }
  progress[0].done = 0.5 / 3;
  progress[0].slowdown = 3.0;  // node0 now ends at 500 + 2,500 + 1,000
  ReplanPolicy policy;
  policy.threshold_s = 100;
  policy.work_scale = 0.5;
  ASSERT_TRUE(SearchesIncrementally(BuildRemainingProblem(base, progress, policy).problem, policy));
  ReplanDecision d = Replan(base, progress, EightNodePlan(), 500.0, policy);
  EXPECT_NE(d.summary.find("searched around 1 of 8 nodes"), std::string::npos) << d.summary;
  ASSERT_TRUE(d.switch_plan) << d.summary;
  EXPECT_NEAR(d.current_end_s, 500 + 2500 + 1000, 1e-6);
  EXPECT_NEAR(d.new_end_s, 500 + 2500, 1e-6);  // t8 left node0: t0 alone ends last
  EXPECT_TRUE(d.preempted.empty());            // nothing running had to move
  ReplanDecision again = Replan(base, progress, EightNodePlan(), 500.0, policy);
  EXPECT_DOUBLE_EQ(again.new_end_s, d.new_end_s);
}

}  // namespace
}  // namespace saturn
