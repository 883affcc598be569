// Planning at scale: node-group search, auto's work limit and gap target,
// and the incumbent's history. Effort is bounded by work limits (never by
// wall-clock time), so these are deterministic; each takes well under a
// second here.
#include <gtest/gtest.h>

#include <algorithm>

#include "bench/planner/mixed.h"
#include "planner/list_scheduler.h"
#include "planner/lower_bound.h"
#include "planner/node_groups.h"
#include "planner/planner.h"
#include "planner/validate.h"
#include "tests/planner/test_problems.h"

namespace saturn {
namespace {

// Every task on node 0, one after another with its first option: a feasible
// but badly unbalanced schedule.
Schedule AllOnNodeZero(const Problem& p) {
  Schedule s(p.NumTasks());
  double t = 0;
  for (int j = 0; j < p.NumTasks(); ++j) {
    s[j] = {0, 0, t};
    t += p.tasks[j].options[0].runtime_s;
  }
  return s;
}

TEST(NodeGroups, BalancesAnUnbalancedScheduleAndStaysFeasible) {
  Problem p = testing::RandomProblem(3, 24, {4, 4, 4, 4, 8}, 3, true);
  SteadyClock clock;
  Deadline never = Deadline::Never(clock);
  Schedule start = AllOnNodeZero(p);
  ASSERT_EQ(CheckSchedule(p, start), "");
  NodeGroupSearch search(p, never, {MakespanLowerBound(p), 5, {}});
  double improvements = 0;
  Schedule better = search.Improve(start, 5.0, [&](double) { ++improvements; });
  EXPECT_EQ(CheckSchedule(p, better), "");
  EXPECT_LT(Makespan(p, better), 0.5 * Makespan(p, start));
  EXPECT_GT(improvements, 0);
  EXPECT_GT(search.groups_improved(), 0);
  EXPECT_GE(Makespan(p, better), MakespanLowerBound(p) - 1e-6);
}

TEST(NodeGroups, SameSeedSamePlan) {
  Problem p = testing::RandomProblem(4, 30, {8, 8, 8, 8, 8, 8}, 4, true);
  SteadyClock clock;
  Deadline never = Deadline::Never(clock);
  Schedule start = AllOnNodeZero(p);
  NodeGroupSearch a(p, never, {MakespanLowerBound(p), 9, {}});
  NodeGroupSearch b(p, never, {MakespanLowerBound(p), 9, {}});
  Schedule x = a.Improve(start, 3.0), y = b.Improve(start, 3.0);
  ASSERT_EQ(x.size(), y.size());
  for (size_t j = 0; j < x.size(); ++j) {
    EXPECT_EQ(x[j].node, y[j].node);
    EXPECT_EQ(x[j].option, y[j].option);
    EXPECT_DOUBLE_EQ(x[j].start, y[j].start);
  }
}

TEST(NodeGroups, PinnedTasksKeepTheirNodeAndDevices) {
  // Task 0 runs on node 2, GPUs {0,1}, and may only continue there.
  Problem p = testing::RandomProblem(5, 16, {4, 4, 4}, 2, true);
  p.tasks[0].options = {{"ddp", 2, 40, 2, true, {0, 1}}};
  Schedule start = AllOnNodeZero(p);
  start[0] = {0, 2, 0.0};
  ASSERT_EQ(CheckSchedule(p, start), "");
  SteadyClock clock;
  Deadline never = Deadline::Never(clock);
  NodeGroupSearch search(p, never, {0.0, 1, {}});
  Schedule better = search.Improve(start, 3.0);
  EXPECT_EQ(CheckSchedule(p, better), "");
  EXPECT_EQ(better[0].node, 2);
  EXPECT_DOUBLE_EQ(better[0].start, 0.0);
  EXPECT_LT(Makespan(p, better), Makespan(p, start));
}

PlanRequest Limited(double work_limit, uint64_t seed = 1) {
  PlanRequest r;
  r.solver = "auto";
  r.seed = seed;
  r.time_limit_s = 600;  // a safety net only
  r.work_scale = 0.05;   // phase 1 small, so the work limit's phase 2 matters
  r.work_limit = work_limit;
  return r;
}

// 40 tasks on 5 nodes of 8 GPUs, where auto's small default effort stops
// 5.7% above the bound (most seeded random problems meet it at once).
Problem Unfinished() {
  return testing::RandomProblem(10, 40, {8, 8, 8, 8, 8}, 4, true);
}

TEST(AnytimeAuto, WorkLimitIsDeterministicAndSpentAsAsked) {
  Problem p = Unfinished();
  PlanResult a = RunPlanner(p, Limited(3.0));
  PlanResult b = RunPlanner(p, Limited(3.0));
  EXPECT_TRUE(ValidatePlan(p, a.plan).empty());
  EXPECT_DOUBLE_EQ(a.plan.makespan_s, b.plan.makespan_s);
  for (size_t j = 0; j < a.plan.tasks.size(); ++j) {
    EXPECT_EQ(a.plan.tasks[j].node, b.plan.tasks[j].node);
    EXPECT_DOUBLE_EQ(a.plan.tasks[j].start_s, b.plan.tasks[j].start_s);
  }
  ASSERT_NE(a.plan.status, "optimal");
  // Spent: the limit, overshooting by at most one climb or group.
  double work = a.plan.extra.at("work").get<double>();
  EXPECT_GE(work, 3.0);
  EXPECT_LE(work, 3.0 + 0.5);
}

TEST(AnytimeAuto, MoreWorkNeverWorseAndImprovementsDescend) {
  Problem p = Unfinished();
  PlanResult base = RunPlanner(p, Limited(0.0));
  PlanResult more = RunPlanner(p, Limited(6.0));
  EXPECT_TRUE(ValidatePlan(p, more.plan).empty());
  EXPECT_LT(more.plan.makespan_s, base.plan.makespan_s);
  ASSERT_FALSE(more.improvements.empty());
  for (size_t k = 1; k < more.improvements.size(); ++k) {
    EXPECT_LT(more.improvements[k].makespan, more.improvements[k - 1].makespan);
    EXPECT_GE(more.improvements[k].time_s, more.improvements[k - 1].time_s);
    EXPECT_GE(more.improvements[k].work, more.improvements[k - 1].work);
  }
  EXPECT_DOUBLE_EQ(more.improvements.back().makespan, more.plan.makespan_s);
  ASSERT_TRUE(more.plan.extra.contains("improvements"));
  EXPECT_EQ(more.plan.extra["improvements"].size(), more.improvements.size());
  // The default (bounded) effort runs no phase 2.
  EXPECT_EQ(base.plan.extra.at("note").get<std::string>().find("node groups"), std::string::npos);
  EXPECT_NE(more.plan.extra.at("note").get<std::string>().find("node groups"), std::string::npos);
}

TEST(AnytimeAuto, StopsAtTheGapTargetInsteadOfTheTimeLimit) {
  Problem p = Unfinished();
  PlanRequest r;
  r.solver = "auto";
  r.seed = 1;
  r.anytime = true;
  r.time_limit_s = 60;  // never reached: the gap target is met long before
  r.work_scale = 0.05;
  r.gap = 0.03;
  PlanResult result = RunPlanner(p, r);
  EXPECT_TRUE(ValidatePlan(p, result.plan).empty());
  double gap = (result.plan.makespan_s - result.plan.lower_bound_s) / result.plan.makespan_s;
  EXPECT_LE(gap, 0.03 + 1e-9);
  EXPECT_NE(result.plan.status, "time_limit");
  // The default effort alone stops above the target: the gap was closed by
  // the anytime phase, which then stopped.
  PlanRequest bounded = r;
  bounded.anytime = false;
  PlanResult first = RunPlanner(p, bounded);
  EXPECT_GT((first.plan.makespan_s - first.plan.lower_bound_s) / first.plan.makespan_s, 0.03);
}

TEST(WithoutOptionsAtLeast, TakesAwayOnlyWhatNoShorterPlanCanUse) {
  Problem p =
      testing::MakeProblem({8}, {{"a", {{"fsdp", 5, 1000}, {"fsdp", 6, 900}, {"spill", 1, 5000}}},
                                 {"b", {{"ddp", 8, 1200}}}});  // no option shorter than 1,000 s
  Problem capped = WithoutOptionsAtLeast(p, 1000);
  ASSERT_EQ(capped.tasks[0].options.size(), 3u);
  EXPECT_DOUBLE_EQ(capped.tasks[0].options[0].runtime_s, 2000);  // at the cap: beyond it
  EXPECT_DOUBLE_EQ(capped.tasks[0].options[1].runtime_s, 900);   // shorter: kept
  EXPECT_DOUBLE_EQ(capped.tasks[0].options[2].runtime_s, 5000);  // never made shorter
  EXPECT_DOUBLE_EQ(capped.tasks[1].options[0].runtime_s, 1200);  // nothing shorter: as it was
}

TEST(AnytimeAuto, LeavesAPlanWhoseMakespanIsOneTasksOption) {
  // 30 mixed Saturn-like tasks on 6 nodes: the search without capped options
  // stopped at 15,032 s with 4, 8 and 12 work units, where one task runs from
  // 0 to the makespan on its fastest option that fits next to the others;
  // every shorter plan gives it more GPUs and moves other work away first.
  bench::Instance inst = bench::MixedSaturnInstance(30, 6, 2);
  Problem p = ProblemFromProfile(inst.profile, inst.cluster);
  PlanResult r = RunPlanner(p, Limited(8.0));
  EXPECT_TRUE(ValidatePlan(p, r.plan).empty());
  EXPECT_LT(r.plan.makespan_s, 15032.0);
}

}  // namespace
}  // namespace saturn
