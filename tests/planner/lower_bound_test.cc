#include "planner/lower_bound.h"

#include <gtest/gtest.h>

#include "tests/planner/test_problems.h"

namespace saturn {
namespace {

using testing::MakeProblem;

TEST(LowerBound, LongestTaskBound) {
  Problem p = MakeProblem({8}, {{"a", {{"ddp", 1, 100}}}, {"b", {{"ddp", 1, 10}}}});
  EXPECT_DOUBLE_EQ(MakespanLowerBound(p), 100);
}

TEST(LowerBound, AreaBound) {
  // 8 one-GPU tasks of 100 s on 4 GPUs: 800 GPU-s / 4 GPUs.
  std::vector<std::pair<std::string, std::vector<testing::OptionSpec>>> tasks;
  for (int i = 0; i < 8; ++i)
    tasks.push_back({"t" + std::to_string(i), {{"ddp", 1, 100}}});
  EXPECT_DOUBLE_EQ(MakespanLowerBound(MakeProblem({4}, tasks)), 200);
}

TEST(LowerBound, CombinesAreaWithTheOptionsThatFinishInTime) {
  // Alone, the longest-task bound is 60 (option 2x60) and the least-area bound
  // 100*1/2 = 50; but finishing by T < 100 forces the 120 GPU-s option, so
  // two such tasks need T >= 120 s on 2 GPUs: LB = min(100, 120) = 100.
  Problem p = MakeProblem(
      {2}, {{"a", {{"ddp", 1, 100}, {"ddp", 2, 60}}}, {"b", {{"ddp", 1, 100}, {"ddp", 2, 60}}}});
  EXPECT_DOUBLE_EQ(MakespanLowerBound(p), 100);
}

TEST(LowerBound, TasksOverHalfANodeCannotShareIt) {
  // Three 5-GPU tasks on one 8-GPU node must run one after another.
  Problem p = MakeProblem(
      {8}, {{"a", {{"fsdp", 5, 10}}}, {"b", {{"fsdp", 5, 10}}}, {"c", {{"fsdp", 5, 10}}}});
  EXPECT_DOUBLE_EQ(MakespanLowerBound(p), 30);
}

TEST(LowerBound, HeterogeneousNodesCountOnlyNodesBigEnough) {
  // 4-GPU tasks cannot use the 2-GPU nodes: 4 x 100 x 4 GPU-s on one 4-GPU node.
  std::vector<std::pair<std::string, std::vector<testing::OptionSpec>>> tasks;
  for (int i = 0; i < 4; ++i)
    tasks.push_back({"t" + std::to_string(i), {{"fsdp", 4, 100}}});
  EXPECT_DOUBLE_EQ(MakespanLowerBound(MakeProblem({2, 2, 4}, tasks)), 400);
}

TEST(LowerBound, NeverAboveTheOptimumOnRandomTinyProblems) {
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    Problem p = testing::RandomProblem(
        seed, 4, seed % 2 ? std::vector<int>{4} : std::vector<int>{2, 3}, 3, true);
    double optimum = testing::BruteForceOptimum(p);
    EXPECT_LE(MakespanLowerBound(p), optimum + 1e-9) << "seed " << seed;
  }
}

}  // namespace
}  // namespace saturn
