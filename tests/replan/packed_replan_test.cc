// Re-planning a plan with packs (replan/packed.h): packs stay units, a
// running pack keeps running, a pack not started moves where it ends first.
// Expected ends are worked out by hand from the pack model's definition
// (planner/packing.h): fixed costs, then every member's steps at the step
// time of the rows still in the pack.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "planner/packing.h"
#include "replan/replan.h"
#include "tests/planner/test_problems.h"

namespace saturn {
namespace {

// A plan of `tasks` as a test writes it by hand.
Plan PlanOf(std::vector<PlanTask> tasks) {
  Plan plan;
  plan.solver = "test";
  plan.status = "feasible";
  plan.tasks = std::move(tasks);
  return plan;
}

// Switch for a 10 s gain; a tenth of the default search effort.
ReplanPolicy QuickPolicy() {
  ReplanPolicy policy;
  policy.threshold_s = 10;
  policy.work_scale = 0.1;
  return policy;
}

// One node of 2 GPUs. a, b, c, d: 100 steps of 1 s alone plus 10 s of fixed
// costs (110 s), 4 rows a step, class "x": a pack of two steps in 1.2 s. e:
// a 200 s task alone.
struct Fixture {
  Problem base = testing::MakeProblem({2}, {{"a", {{"single", 1, 110}}},
                                            {"b", {{"single", 1, 110}}},
                                            {"c", {{"single", 1, 110}}},
                                            {"d", {{"single", 1, 110}}},
                                            {"e", {{"single", 1, 200}}}});
  PackTerms terms;
  Plan plan;

  Fixture() {
    for (int j = 0; j < 5; ++j) {
      terms.tasks.push_back({j < 4 ? "x" : "", 4.0, j < 4 ? 100.0 : 200.0, {}});
      terms.curves.push_back({{1.0, {{4.0, 1.0}, {8.0, 1.2}}, {}}});
    }
    // pack-1 (a, b) on GPU 0, then pack-2 (c, d) after it; e on GPU 1.
    plan = PlanOf({{"a", "single", 1, "node0", {0}, 0, 130, "", "pack-1"},
                   {"b", "single", 1, "node0", {0}, 0, 130, "", "pack-1"},
                   {"e", "single", 1, "node0", {1}, 0, 200, "", ""},
                   {"c", "single", 1, "node0", {0}, 130, 260, "", "pack-2"},
                   {"d", "single", 1, "node0", {0}, 130, 260, "", "pack-2"}});
    plan.makespan_s = 260;
  }
};

// a, b, c, d on one node of `gpus` GPUs: 100 steps of 1 s alone plus 10 s
// of fixed costs, 4 rows a step.
Problem FourOfClassX(int gpus) {
  return testing::MakeProblem({gpus}, {{"a", {{"single", 1, 110}}},
                                       {"b", {{"single", 1, 110}}},
                                       {"c", {{"single", 1, 110}}},
                                       {"d", {{"single", 1, 110}}}});
}

// Their terms: class "x", the pack's step time at ROWS rows `points`.
PackTerms TermsOfClassX(int tasks, const std::vector<std::pair<double, double>>& points) {
  PackTerms terms;
  for (int j = 0; j < tasks; ++j) {
    terms.tasks.push_back({"x", 4.0, 100.0, {}});
    terms.curves.push_back({{1.0, points, {}}});
  }
  return terms;
}

std::map<std::string, PlanTask> ByName(const Plan& plan) {
  std::map<std::string, PlanTask> out;
  for (const PlanTask& t : plan.tasks)
    out[t.task] = t;
  return out;
}

// e ended at 30 s instead of 200: pack-2 moves up to its free GPU at once,
// pack-1 goes on where it runs, nobody is pre-empted.
TEST(PackedReplan, APackNotStartedMovesWhereAPackRunningStays) {
  Fixture f;
  std::vector<TaskProgress> progress(5);
  for (int j = 0; j < 2; ++j) {
    progress[j].pack = "pack-1";
    progress[j].done = 0.25;  // 25 of 100 steps
  }
  progress[0].running = RunningOn{0, 0, {0}};  // a holds pack-1's device
  progress[2].pack = progress[3].pack = "pack-2";
  progress[4].finished = true;
  ReplanPolicy policy = QuickPolicy();
  policy.switch_cost_s = 50;
  ReplanDecision d = Replan(f.base, progress, f.plan, 30.0, policy, &f.terms);
  EXPECT_TRUE(d.preempted.empty());
  // pack-1 left: fixed 0.75 x 10 = 7.5 s (no restart: it keeps running),
  // 75 steps at 1.2 s: 97.5 s. pack-2 (10 + 100 x 1.2 = 130 s) no longer
  // waits for it: the plan re-timed already starts it now on e's GPU.
  EXPECT_NEAR(d.current_end_s, 30 + 130, 1e-6) << d.summary;
  std::map<std::string, PlanTask> t = ByName(d.plan);
  ASSERT_EQ(t.size(), 4u);
  for (const char* name : {"a", "b"}) {
    EXPECT_EQ(t[name].pack, "pack-1");
    EXPECT_EQ(t[name].gpu_ids, (std::vector<int>{0}));
    EXPECT_NEAR(t[name].start_s, 30, 1e-6);
    EXPECT_NEAR(t[name].end_s, 30 + 97.5, 1e-6);
  }
  for (const char* name : {"c", "d"}) {
    EXPECT_EQ(t[name].pack, "pack-2");
    EXPECT_EQ(t[name].gpu_ids, (std::vector<int>{1}));
    EXPECT_NEAR(t[name].start_s, 30, 1e-6);
    EXPECT_NEAR(t[name].end_s, 30 + 130, 1e-6);
  }
}

// Members with different steps end apart: the longer goes on with fewer
// rows (faster steps) in the same worker. A pack that has trained before
// pays a restart.
TEST(PackedReplan, MembersEndByThePackModelAndARestartIsChargedOnce) {
  Fixture f;
  f.terms.tasks[3].steps = 50;  // d: 50 steps, 60 s alone
  f.base.tasks[3].options[0].runtime_s = 60;
  std::vector<TaskProgress> progress(5);
  progress[0].finished = progress[1].finished = true;
  progress[2].pack = progress[3].pack = "pack-2";
  progress[2].done = progress[3].done = 0.2;  // pre-empted earlier, checkpointed
  progress[2].has_checkpoint = progress[3].has_checkpoint = true;
  progress[4].running = RunningOn{0, 0, {1}};
  progress[4].done = 0.1;
  ReplanPolicy policy = QuickPolicy();
  policy.switch_cost_s = 50;
  ReplanDecision d = Replan(f.base, progress, f.plan, 100.0, policy, &f.terms);
  std::map<std::string, PlanTask> t = ByName(d.plan);
  ASSERT_EQ(t.count("c"), 1u);
  // Fixed: max(0.8 x 10, 0.8 x 10) + 50 restart = 58 s. d's 40 steps with
  // c at 1.2 s (48 s), then c goes on alone in the same worker for its
  // other 40 steps at 1.0 s.
  EXPECT_NEAR(t["d"].end_s - t["d"].start_s, 58 + 48, 1e-6);
  EXPECT_NEAR(t["c"].end_s - t["c"].start_s, 58 + 48 + 40, 1e-6);
  EXPECT_EQ(t["c"].start_s, t["d"].start_s);
  EXPECT_EQ(t["c"].gpu_ids, t["d"].gpu_ids);
  EXPECT_EQ(t["c"].pack, "pack-2");
  EXPECT_EQ(t["e"].pack, "");
  EXPECT_EQ(t["e"].gpu_ids, (std::vector<int>{1}));  // e keeps running
}

// With no pack of two left, Replan given terms is the one for tasks alone:
// the last member of a pack is planned as a task of its own.
TEST(PackedReplan, OneMemberLeftIsATaskAlone) {
  Fixture f;
  std::vector<TaskProgress> progress(5);
  progress[0].finished = true;
  progress[1].pack = "pack-1";
  progress[2].finished = progress[3].finished = progress[4].finished = true;
  ReplanDecision d = Replan(f.base, progress, f.plan, 0.0, ReplanPolicy{}, &f.terms);
  ASSERT_EQ(d.plan.tasks.size(), 1u);
  EXPECT_EQ(d.plan.tasks[0].task, "b");
  EXPECT_NEAR(d.plan.tasks[0].end_s - d.plan.tasks[0].start_s, 110, 1e-6);
}

// Arrivals that may share a pack are packed with each other, as a first
// plan packs (saturn serve's submissions, tasks added on --resume): three
// such tasks on 2 GPUs end at 130 s with two in a pack, against 220 s all
// alone. New packs are named after the run's last one.
TEST(PackedReplan, ArrivalsThatMayShareAPackArePacked) {
  Problem base = FourOfClassX(2);
  PackTerms terms = TermsOfClassX(4, {{4.0, 1.0}, {8.0, 1.2}});
  Plan nothing = PlanOf({});
  std::vector<TaskProgress> progress(4);
  progress[3].pack = "pack-4";  // a pack this run had before: names go on from it
  progress[3].finished = true;
  ReplanDecision alone = Replan(base, progress, nothing, 0.0, ReplanPolicy{});
  EXPECT_NEAR(alone.new_end_s, 220, 1e-6);
  ReplanDecision d = Replan(base, progress, nothing, 0.0, ReplanPolicy{}, &terms);
  std::map<std::string, PlanTask> t = ByName(d.plan);
  ASSERT_EQ(t.size(), 3u);
  // One pack of two (10 + 100 x 1.2 = 130 s) beside one alone (110 s); a
  // pack of three (12 rows) is beyond the curve: it does not fit.
  std::map<std::string, int> members;
  for (const auto& [name, task] : t)
    if (!task.pack.empty()) ++members[task.pack];
  ASSERT_EQ(members.size(), 1u) << d.summary;
  EXPECT_EQ(members.begin()->first, "pack-5");
  EXPECT_EQ(members.begin()->second, 2);
  EXPECT_NEAR(d.new_end_s, 130, 1e-6);
  // Tasks whose work early stopping may cut, half of it expected: each
  // alone 55 s (two on one GPU, 110 s). Without where their rule may end
  // them they are never packed: at their mean a pack looks as short as its
  // average member.
  for (TaskProgress& p : progress)
    p.expected = 0.5;
  progress[3].expected = 1.0;
  d = Replan(base, progress, nothing, 0.0, ReplanPolicy{}, &terms);
  for (const PlanTask& task : d.plan.tasks)
    EXPECT_EQ(task.pack, "") << task.task;
  EXPECT_NEAR(d.new_end_s, 110, 1e-6);
  // Where it may end them: after 25 or 75 steps, even odds. A pack of two
  // plans on one member leaving at 25 steps and the other at 75: fixed
  // costs 5 s (their half), 25 x 1.2 s, then the other on in the same
  // worker, 50 x 1.0 s: 85 s, beside the third alone.
  for (int j = 0; j < 3; ++j)
    terms.tasks[j].stops = {{25.0, 0.5}, {75.0, 0.5}};
  d = Replan(base, progress, nothing, 0.0, ReplanPolicy{}, &terms);
  members.clear();
  for (const PlanTask& task : d.plan.tasks)
    if (!task.pack.empty()) ++members[task.pack];
  ASSERT_EQ(members.size(), 1u) << d.summary;
  EXPECT_EQ(members.begin()->second, 2);
  EXPECT_NEAR(d.new_end_s, 85, 1e-6) << d.summary;
}

// Packs not started are regrouped with arrivals when that ends sooner: a
// pack planned for a and b, then c and d arrive (one GPU; a pack of four
// steps in 1.4 s). Two packs one after the other: 260 s; one of four:
// 10 + 100 x 1.4 = 150 s.
TEST(PackedReplan, PacksNotStartedAreRegroupedWithArrivals) {
  Problem base = FourOfClassX(1);
  PackTerms terms = TermsOfClassX(4, {{4.0, 1.0}, {8.0, 1.2}, {16.0, 1.4}});
  Plan plan = PlanOf({{"a", "single", 1, "node0", {0}, 0, 130, "", "pack-1"},
                      {"b", "single", 1, "node0", {0}, 0, 130, "", "pack-1"}});
  std::vector<TaskProgress> progress(4);
  progress[0].pack = progress[1].pack = "pack-1";
  ReplanPolicy policy = QuickPolicy();
  ReplanDecision d = Replan(base, progress, plan, 0.0, policy, &terms);
  std::map<std::string, PlanTask> t = ByName(d.plan);
  ASSERT_EQ(t.size(), 4u) << d.summary;
  EXPECT_TRUE(d.switch_plan);
  EXPECT_NEAR(d.new_end_s, 150, 1e-6) << d.summary;
  EXPECT_NE(t["a"].pack, "pack-1");  // a new pack: pack-1's folder keeps what it had
  for (const char* name : {"b", "c", "d"}) {
    EXPECT_EQ(t[name].pack, t["a"].pack) << name;
    EXPECT_NEAR(t[name].end_s, 150, 1e-6) << name;
  }
  // Once a member of pack-1 trained, pack-1 is not taken apart.
  progress[0].done = progress[1].done = 0.1;
  progress[0].running = RunningOn{0, 0, {0}};
  d = Replan(base, progress, plan, 13.0, policy, &terms);
  t = ByName(d.plan);
  EXPECT_EQ(t["a"].pack, "pack-1");
  EXPECT_EQ(t["b"].pack, "pack-1");
  EXPECT_EQ(t["c"].pack, t["d"].pack);
  EXPECT_NE(t["c"].pack, "pack-1");
}

// A task the plan has alone (the dispatcher sent it to train alone: its
// pack failed) is not regrouped, though it has not started.
TEST(PackedReplan, ATaskPlannedAloneIsNotRegrouped) {
  Problem base = FourOfClassX(1);
  PackTerms terms = TermsOfClassX(4, {{4.0, 1.0}, {8.0, 1.2}, {16.0, 1.4}});
  Plan plan = PlanOf({{"a", "single", 1, "node0", {0}, 0, 110, "", ""},
                      {"b", "single", 1, "node0", {0}, 110, 240, "", "pack-1"},
                      {"c", "single", 1, "node0", {0}, 110, 240, "", "pack-1"}});
  std::vector<TaskProgress> progress(4);
  progress[1].pack = progress[2].pack = "pack-1";
  ReplanPolicy policy = QuickPolicy();
  ReplanDecision d = Replan(base, progress, plan, 0.0, policy, &terms);
  std::map<std::string, PlanTask> t = ByName(d.plan);
  ASSERT_EQ(t.size(), 4u) << d.summary;
  EXPECT_EQ(t["a"].pack, "");
  EXPECT_FALSE(t["d"].pack.empty()) << d.summary;  // d arrived: with b and c (3 rows x 4)
  EXPECT_EQ(t["d"].pack, t["b"].pack);
  // The end of the plan it follows: 110 s alone, then 10 + 100 x 1.3 s.
  EXPECT_NEAR(d.switch_plan ? d.new_end_s : d.current_end_s, 110 + 140, 1e-6) << d.summary;
}

// Task names may look like pack names: a task named pack-1 beside the
// pack pack-1 is planned as itself, and a new pack takes a name no task
// or pack has.
TEST(PackedReplan, ATaskNamedLikeAPackIsNotThePack) {
  Problem base = testing::MakeProblem({2}, {{"a", {{"single", 1, 110}}},
                                            {"b", {{"single", 1, 110}}},
                                            {"pack-1", {{"single", 1, 50}}},
                                            {"pack-2", {{"single", 1, 50}}},
                                            {"c", {{"single", 1, 110}}},
                                            {"d", {{"single", 1, 110}}},
                                            {"e", {{"single", 1, 110}}},
                                            {"f", {{"single", 1, 110}}}});
  PackTerms terms;
  for (int j = 0; j < 8; ++j) {
    bool x = j != 2 && j != 3;
    terms.tasks.push_back({x ? "x" : "", 4.0, x ? 100.0 : 50.0, {}});
    terms.curves.push_back({{1.0, {{4.0, 1.0}, {8.0, 1.2}}, {}}});
  }
  Plan plan = PlanOf({{"a", "single", 1, "node0", {0}, 0, 130, "", "pack-1"},
                      {"b", "single", 1, "node0", {0}, 0, 130, "", "pack-1"},
                      {"pack-1", "single", 1, "node0", {1}, 0, 50, "", ""},
                      {"pack-2", "single", 1, "node0", {1}, 50, 100, "", ""}});
  std::vector<TaskProgress> progress(8);
  progress[0].pack = progress[1].pack = "pack-1";
  progress[0].running = RunningOn{0, 0, {0}};
  progress[0].done = progress[1].done = 0.5;
  progress[2].running = RunningOn{0, 0, {1}};
  progress[2].done = 0.5;
  ReplanPolicy policy;
  policy.work_scale = 0.1;
  ReplanDecision d = Replan(base, progress, plan, 60.0, policy, &terms);
  std::map<std::string, PlanTask> t = ByName(d.plan);
  ASSERT_EQ(t.size(), 8u) << d.summary;
  EXPECT_EQ(t["a"].pack, "pack-1");
  EXPECT_EQ(t["a"].gpu_ids, (std::vector<int>{0}));
  EXPECT_EQ(t["pack-1"].pack, "");
  EXPECT_EQ(t["pack-1"].gpu_ids, (std::vector<int>{1}));
  EXPECT_EQ(t["pack-2"].pack, "");
  // c, d, e, f arrived (four on 2 GPUs: 220 s alone, 130 s in two packs):
  // packed under names neither a task nor a pack has.
  std::set<std::string> names;
  for (const char* name : {"c", "d", "e", "f"})
    names.insert(t[name].pack);
  EXPECT_EQ(names, (std::set<std::string>{"pack-3", "pack-4"}));
  EXPECT_TRUE(d.preempted.empty());
  // Without packing arrivals (--no-pack) they are planned alone, while the
  // running pack stays one.
  policy.pack_arrivals = false;
  d = Replan(base, progress, plan, 60.0, policy, &terms);
  t = ByName(d.plan);
  EXPECT_EQ(t["c"].pack, "");
  EXPECT_EQ(t["a"].pack, "pack-1");
}

// pack-1 (a, b, c, d) runs on GPU 0, 10 of its 100 steps done; its 16 rows
// step in 3 s (a member alone: 1 s; 8 rows: `two` s, by default on the line
// to 16). e (GPU 1) ended at 30 s, not 200. Returns the check at 30 s;
// `resumes` marks the members as resuming alone (a LoRA pack's), `e_ended`
// whether GPU 1 is free.
ReplanDecision CheckPackOfFour(bool resumes, bool e_ended, ReplanPolicy policy,
                               double two = 1.0 + 2.0 / 3.0) {
  const Problem base = Fixture().base;
  PackTerms terms = TermsOfClassX(5, {{4.0, 1.0}, {8.0, two}, {16.0, 3.0}});
  terms.tasks[4] = {"", 4.0, 200.0, {}};
  std::vector<PlanTask> tasks;
  for (const char* name : {"a", "b", "c", "d"})
    tasks.push_back({name, "single", 1, "node0", {0}, 0, 310, "", "pack-1"});
  tasks.push_back({"e", "single", 1, "node0", {1}, 0, 200, "", ""});
  Plan plan = PlanOf(tasks);
  plan.makespan_s = 310;
  std::vector<TaskProgress> progress(5);
  for (int j = 0; j < 4; ++j) {
    progress[j].pack = "pack-1";
    progress[j].done = 0.1;
    progress[j].resumes_alone = resumes;
  }
  progress[0].running = RunningOn{0, 0, {0}};
  if (e_ended) {
    progress[4].finished = true;
  } else {
    progress[4].done = 0.15;
    progress[4].running = RunningOn{0, 0, {1}};
  }
  return Replan(base, progress, plan, 30.0, policy, &terms);
}

// Kept, pack-1 ends 0.9 x 10 + 90 x 3 = 279 s from now. Split into two
// packs of two, one on each GPU: 9 + 90 x 5/3 + 10 (restart) = 169 s.
TEST(PackedReplan, ARunningPackIsSplitIntoPacksOnADeviceFreedEarly) {
  ReplanDecision d = CheckPackOfFour(/*resumes=*/true, /*e_ended=*/true, QuickPolicy());
  ASSERT_TRUE(d.switch_plan) << d.summary;
  EXPECT_EQ(d.split,
            (std::map<std::string, std::set<std::string>>{{"pack-1", {"a", "b", "c", "d"}}}));
  EXPECT_NEAR(d.current_end_s, 30 + 279, 1e-6) << d.summary;
  EXPECT_NEAR(d.new_end_s, 30 + 169, 1e-6) << d.summary;
  std::set<std::string> stopped(d.preempted.begin(), d.preempted.end());
  EXPECT_EQ(stopped, (std::set<std::string>{"a", "b", "c", "d"}));
  std::map<std::string, std::set<int>> packs;  // new pack -> its GPUs
  for (const PlanTask& t : d.plan.tasks) {
    EXPECT_NE(t.pack, "pack-1") << t.task;
    EXPECT_NEAR(t.end_s, 30 + 169, 1e-6) << t.task;
    packs[t.pack].insert(t.gpu_ids.at(0));
  }
  ASSERT_EQ(packs.size(), 2u) << d.summary;
  EXPECT_EQ(packs.begin()->second.size(), 1u);
  EXPECT_NE(packs.begin()->second, packs.rbegin()->second);
  EXPECT_NE(d.summary.find("pack-1 split into pack-2 ("), std::string::npos) << d.summary;
  // A run whose packs went up to pack-7 (folders of packs no task names
  // now): the new ones are numbered after it.
  ReplanPolicy policy = QuickPolicy();
  policy.packs_numbered_to = 7;
  d = CheckPackOfFour(/*resumes=*/true, /*e_ended=*/true, policy);
  EXPECT_NE(d.summary.find("pack-1 split into pack-8 ("), std::string::npos) << d.summary;
  EXPECT_NE(d.summary.find("pack-9 ("), std::string::npos) << d.summary;
}

// Where two in a pack step no faster than one after the other (8 rows:
// 2.2 s), the members go on alone: 0.9 x 110 + 10 = 109 s each, two on
// each GPU, 218 s.
TEST(PackedReplan, ARunningPackIsSplitIntoTasksAloneOnADeviceFreedEarly) {
  ReplanDecision d = CheckPackOfFour(/*resumes=*/true, /*e_ended=*/true, QuickPolicy(), 2.2);
  ASSERT_TRUE(d.switch_plan) << d.summary;
  EXPECT_EQ(d.split,
            (std::map<std::string, std::set<std::string>>{{"pack-1", {"a", "b", "c", "d"}}}));
  EXPECT_NEAR(d.new_end_s, 30 + 218, 1e-6) << d.summary;
  EXPECT_EQ(d.preempted.size(), 4u);
  std::map<int, int> per_gpu;
  for (const PlanTask& t : d.plan.tasks) {
    EXPECT_EQ(t.pack, "") << t.task;
    EXPECT_NEAR(t.end_s - t.start_s, 109, 1e-6) << t.task;
    ++per_gpu[t.gpu_ids.at(0)];
  }
  EXPECT_EQ(per_gpu, (std::map<int, int>{{0, 2}, {1, 2}}));
  EXPECT_NE(d.summary.find("pack-1 split into a, b, c, d alone"), std::string::npos) << d.summary;
}

// Not split: an array's members restart from 0 when stopped; without
// pre-emption; or with no device to gain (GPU 1 busy for 170 s more: alone
// on GPU 0 the four take 436 s against the pack's 279).
TEST(PackedReplan, ARunningPackIsNotSplitWhenItCannotOrGainsNothing) {
  ReplanPolicy policy = QuickPolicy();
  for (int c = 0; c < 3; ++c) {
    policy.allow_preemption = c != 1;
    policy.unchanged_tolerance = 0;  // always search
    ReplanDecision d = CheckPackOfFour(/*resumes=*/c != 0, /*e_ended=*/c != 2, policy);
    EXPECT_TRUE(d.split.empty()) << c << ": " << d.summary;
    EXPECT_TRUE(d.preempted.empty()) << c;
    for (const PlanTask& t : d.plan.tasks) {
      if (t.task != "e") {
        EXPECT_EQ(t.pack, "pack-1") << c << ": " << t.task;
      }
    }
  }
}

}  // namespace
}  // namespace saturn
