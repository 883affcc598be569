#include "planner/validate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/planner/test_problems.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;

Problem TwoTasks() {
  return testing::MakeProblem({4},
                              {{"a", {{"ddp", 2, 100}, {"fsdp", 4, 60}}}, {"b", {{"ddp", 2, 50}}}});
}

Plan GoodPlan() {
  Plan p;
  p.solver = "test";
  p.status = "feasible";
  p.makespan_s = 100;
  p.lower_bound_s = 60;
  p.tasks = {{"a", "ddp", 2, "node0", {0, 1}, 0, 100, ""},
             {"b", "ddp", 2, "node0", {2, 3}, 0, 50, ""}};
  return p;
}

// Expects exactly one violation containing `text`.
void ExpectOneError(const Plan& plan, const std::string& text) {
  std::vector<std::string> errors = ValidatePlan(TwoTasks(), plan);
  ASSERT_EQ(errors.size(), 1u) << (errors.empty() ? "no error" : errors[0]);
  EXPECT_THAT(errors[0], HasSubstr(text));
}

TEST(ValidatePlan, AcceptsAValidPlan) {
  EXPECT_TRUE(ValidatePlan(TwoTasks(), GoodPlan()).empty());
}

TEST(ValidatePlan, MissingTask) {
  Plan p = GoodPlan();
  p.tasks.pop_back();
  p.makespan_s = 100;
  ExpectOneError(p, "'b' is missing");
}

TEST(ValidatePlan, DuplicateTask) {
  Plan p = GoodPlan();
  p.tasks.push_back({"b", "ddp", 2, "node0", {2, 3}, 50, 100, ""});
  ExpectOneError(p, "more than once");
}

TEST(ValidatePlan, UnknownTask) {
  Plan p = GoodPlan();
  p.tasks.push_back({"zzz", "ddp", 2, "node0", {2, 3}, 50, 100, ""});
  ExpectOneError(p, "not in the profile");
}

TEST(ValidatePlan, ConfigurationNotInProfile) {
  Plan p = GoodPlan();
  p.tasks[1] = {"b", "pipeline", 2, "node0", {2, 3}, 0, 50, ""};
  ExpectOneError(p, "not a feasible configuration");
}

TEST(ValidatePlan, DurationMustEqualRuntime) {
  Plan p = GoodPlan();
  p.tasks[1].end_s = 40;
  ExpectOneError(p,
                 "end_s - start_s = 40 s does not equal the profiled runtime of (ddp, 2 GPUs) "
                 "on this node, 50 s");
}

// Times in messages are to the millisecond (no 30.100000000000001), and in
// full only where rounding would show two different times as one.
TEST(ValidatePlan, MessagesShowTimesWithoutFloatNoise) {
  Plan p = GoodPlan();
  p.tasks[1].start_s = 0.1 + 0.2;  // 0.30000000000000004
  p.tasks[1].end_s = 40.1;
  ExpectOneError(p, "end_s - start_s = 39.8 s does not equal");
  p = GoodPlan();
  p.makespan_s = 100.0004;  // beyond the tolerance, equal to the millisecond
  ExpectOneError(p, "makespan_s 100.0004 is not the largest end_s 100");
  p = GoodPlan();
  p.tasks[1].gpu_ids = {1, 2};
  p.tasks[1].start_s = 99.25;
  p.tasks[1].end_s = 149.25;
  p.makespan_s = 149.25;
  ExpectOneError(p, "('b' starts at 99.25 s, before 'a' ends at 100 s)");
}

// A running task's option is pinned to its node: elsewhere it is named as
// such, not as a wrong runtime.
TEST(ValidatePlan, APinnedOptionOnAnotherNodeIsNamedAsSuch) {
  Problem two = testing::MakeProblem({4, 4}, {{"a", {{"ddp", 2, 100}}}});
  two.tasks[0].options[0].node = 1;
  Plan p;
  p.solver = "test";
  p.status = "feasible";
  p.makespan_s = 100;
  p.tasks = {{"a", "ddp", 2, "node0", {0, 1}, 0, 100, ""}};
  std::vector<std::string> errors = ValidatePlan(two, p);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_THAT(errors[0], HasSubstr("(ddp, 2 GPUs) may not run on node 'node0'"));
  p.tasks[0].node = "node1";
  EXPECT_TRUE(ValidatePlan(two, p).empty());
}

TEST(ValidatePlan, GpuCountMustMatch) {
  Plan p = GoodPlan();
  p.tasks[1].gpu_ids = {2};
  ExpectOneError(p, "has 1 gpu_ids but gpus is 2");
}

TEST(ValidatePlan, GpuIdsWithinNodeAndDistinct) {
  Plan p = GoodPlan();
  p.tasks[1].gpu_ids = {2, 4};
  ExpectOneError(p, "outside node");
  p.tasks[1].gpu_ids = {2, 2};
  EXPECT_THAT(ValidatePlan(TwoTasks(), p)[0], HasSubstr("duplicates"));
}

TEST(ValidatePlan, NoGpuRunsTwoTasksAtOnce) {
  Plan p = GoodPlan();
  p.tasks[1].gpu_ids = {1, 2};
  ExpectOneError(p, "at the same time");
  p.tasks[1].start_s = 100;  // after a ends: fine
  p.tasks[1].end_s = 150;
  p.makespan_s = 150;
  EXPECT_TRUE(ValidatePlan(TwoTasks(), p).empty());
}

TEST(ValidatePlan, UnknownNode) {
  Plan p = GoodPlan();
  p.tasks[1].node = "node9";
  ExpectOneError(p, "not in the cluster");
}

TEST(ValidatePlan, MakespanIsTheLargestEnd) {
  Plan p = GoodPlan();
  p.makespan_s = 90;
  std::vector<std::string> errors = ValidatePlan(TwoTasks(), p);
  ASSERT_FALSE(errors.empty());
  EXPECT_THAT(errors[0], HasSubstr("not the largest end_s"));
}

TEST(ValidatePlan, LowerBoundNotAboveMakespan) {
  Plan p = GoodPlan();
  p.lower_bound_s = 120;
  ExpectOneError(p, "exceeds makespan_s");
}

TEST(ValidatePlan, InfeasiblePlanListsNothing) {
  Plan p = GoodPlan();
  p.status = "infeasible";
  ExpectOneError(p, "must not list tasks");
  p.tasks.clear();
  EXPECT_TRUE(ValidatePlan(TwoTasks(), p).empty());
}

TEST(ValidatePlan, PinnedOptionMustKeepItsNodeStartAndGpus) {
  Problem problem = TwoTasks();
  Option keep{"ddp", 2, 30, 0, true, {0, 1}};
  problem.tasks[0].options = {keep};
  Plan p = GoodPlan();
  p.tasks[0] = {"a", "ddp", 2, "node0", {0, 1}, 0, 30, ""};
  p.tasks[1] = {"b", "ddp", 2, "node0", {2, 3}, 0, 50, ""};
  p.makespan_s = 50;
  p.lower_bound_s = 30;
  EXPECT_TRUE(ValidatePlan(problem, p).empty());
  p.tasks[0].gpu_ids = {3, 2};  // the same count elsewhere is a different plan
  p.tasks[1].gpu_ids = {0, 1};
  EXPECT_FALSE(ValidatePlan(problem, p).empty());
}

}  // namespace
}  // namespace saturn
