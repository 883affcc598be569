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
  p.tasks = {{"a", "ddp", 2, "node0", {0, 1}, 0, 100}, {"b", "ddp", 2, "node0", {2, 3}, 0, 50}};
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
  p.tasks.push_back({"b", "ddp", 2, "node0", {2, 3}, 50, 100});
  ExpectOneError(p, "more than once");
}

TEST(ValidatePlan, UnknownTask) {
  Plan p = GoodPlan();
  p.tasks.push_back({"zzz", "ddp", 2, "node0", {2, 3}, 50, 100});
  ExpectOneError(p, "not in the profile");
}

TEST(ValidatePlan, ConfigurationNotInProfile) {
  Plan p = GoodPlan();
  p.tasks[1] = {"b", "pipeline", 2, "node0", {2, 3}, 0, 50};
  ExpectOneError(p, "not a feasible configuration");
}

TEST(ValidatePlan, DurationMustEqualRuntime) {
  Plan p = GoodPlan();
  p.tasks[1].end_s = 40;
  ExpectOneError(p, "does not equal the profiled runtime");
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
  p.tasks[0] = {"a", "ddp", 2, "node0", {0, 1}, 0, 30};
  p.tasks[1] = {"b", "ddp", 2, "node0", {2, 3}, 0, 50};
  p.makespan_s = 50;
  p.lower_bound_s = 30;
  EXPECT_TRUE(ValidatePlan(problem, p).empty());
  p.tasks[0].gpu_ids = {3, 2};  // the same count elsewhere is a different plan
  p.tasks[1].gpu_ids = {0, 1};
  EXPECT_FALSE(ValidatePlan(problem, p).empty());
}

}  // namespace
}  // namespace saturn
