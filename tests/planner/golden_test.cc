// The proven optima planner_bench measures gaps against
// (bench/planner/golden/, bench/planner/golden.h), checked without the long
// solve that proved them: each optimal plan still validates against its
// instance, the lower bound computed today is not above it, a short
// deterministic run of auto finds nothing shorter, and the instance is
// still the one planner_bench generates (else its gaps would be to another
// problem's optimum: prove it again with `planner_bench --prove NAME`).
#include <gtest/gtest.h>

#include "bench/planner/golden.h"
#include "planner/lower_bound.h"
#include "planner/planner.h"
#include "planner/validate.h"

namespace saturn::bench {
namespace {

TEST(GoldenOptima, EachOptimalPlanValidatesAndNoBoundOrPlanPassesIt) {
  std::vector<Golden> goldens = LoadGoldens();
  ASSERT_FALSE(goldens.empty()) << GoldenDir();
  for (const Golden& g : goldens) {
    SCOPED_TRACE(g.name);
    Problem problem = ProblemFromProfile(g.profile, g.cluster);
    EXPECT_EQ(ValidatePlan(problem, g.plan), std::vector<std::string>{});
    EXPECT_EQ(g.plan.status, "optimal");
    EXPECT_DOUBLE_EQ(g.plan.makespan_s, g.optimum_s);
    EXPECT_FALSE(g.proven_by.empty());
    // A proven optimum is at least every valid lower bound, and at most
    // every plan.
    double bound = MakespanLowerBound(problem);
    EXPECT_LE(bound, g.optimum_s * (1 + 1e-9));
    PlanRequest req;
    req.solver = "auto";
    req.work_limit = 2;
    req.work_scale = 0.05;  // and at most 250 nodes of its exact MILP
    req.seed = 1;
    PlanResult r = RunPlanner(problem, req);
    EXPECT_GE(r.plan.makespan_s, g.optimum_s * (1 - 1e-9));
    EXPECT_LE(r.plan.lower_bound_s, g.optimum_s * (1 + 1e-9));
  }
}

TEST(GoldenOptima, AreOfTheInstancesPlannerBenchGenerates) {
  std::vector<Golden> goldens = LoadGoldens();
  std::vector<Instance> instances = PlannerBenchInstances(/*quick=*/true);
  for (const Golden& g : goldens) {
    SCOPED_TRACE(g.name);
    bool found = false;
    for (const Instance& inst : instances) {
      if (inst.name != g.name) continue;
      found = true;
      EXPECT_TRUE(SameInstance(g, inst))
          << "the generator changed this instance: prove it again with planner_bench --prove "
          << g.name << " (or remove " << g.dir << ")";
    }
    EXPECT_TRUE(found) << "no planner_bench --quick instance is named " << g.name;
  }
}

}  // namespace
}  // namespace saturn::bench
