// Slow planner checks (label "slow"): the paper's MILP on 5-task instances.
#include <gtest/gtest.h>

#include "planner/planner.h"
#include "tests/planner/test_problems.h"

namespace saturn {
namespace {

TEST(SaturnMilpSlow, MatchesBruteForceOnFiveTaskProblems) {
  for (uint64_t seed : {2, 5, 8, 11}) {
    Problem p = testing::RandomProblem(
        seed, 5, seed % 3 == 0 ? std::vector<int>{2, 2} : std::vector<int>{4}, 3, true);
    PlanRequest req;
    req.solver = "saturn-milp";
    req.time_limit_s = 600;
    PlanResult r = RunPlanner(p, req);
    EXPECT_NEAR(r.plan.makespan_s, testing::BruteForceOptimum(p), 1e-6) << "seed " << seed;
    EXPECT_EQ(r.plan.status, "optimal") << "seed " << seed;
  }
}

}  // namespace
}  // namespace saturn
