// Packs chosen by the planner (planner/packing.h, pack_search.h): the pack
// model against a step-by-step reference, the validator, and the greedy
// search against an exhaustive search over every packing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/error.h"
#include "contracts/cluster.h"
#include "contracts/profile.h"
#include "planner/lower_bound.h"
#include "planner/pack_search.h"
#include "planner/packing.h"
#include "planner/validate.h"
#include "tests/planner/packing_fixture.h"
#include "tests/planner/test_problems.h"
#include "tests/testing/error_of.h"

namespace saturn {
namespace {

using namespace packing_test;  // NOLINT: the fixture's instances
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(Packing, MemberEndsFollowTheMembersStepByStep) {
  std::vector<Spec> specs = {
      {"a", "gpt", 4, 300, 0.3}, {"b", "gpt", 2, 100, 0.3}, {"c", "gpt", 6, 200, 0.3}};
  Instance in = MakeInstance(specs, 1, 7.0);
  ASSERT_TRUE(in.terms.Any());
  const Option& ddp = in.problem.tasks[0].options[1];
  ASSERT_EQ(ddp.technique, "ddp");
  std::vector<double> ends = PackMemberEnds(in.problem, in.terms, {0, 1, 2}, ddp);
  ASSERT_EQ(ends.size(), 3u);
  std::vector<std::pair<double, double>> curve;
  for (int k : {1, 2, 4, 8})
    curve.emplace_back(k * 4.0, TrueStep(0.3 * 0.55, 4, k * 4.0));
  std::vector<double> want = StepByStepEnds(specs, 0.3 * 0.55, curve, 7.0);
  for (size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(ends[i], want[i], 1e-6 * want[i]) << specs[i].name;
  // b leaves first, then c, then a.
  EXPECT_LT(ends[1], ends[2]);
  EXPECT_LT(ends[2], ends[0]);
  // 12 rows fit one GPU's curve (up to 16), 4 members of 6 rows do not.
  const Option& single = in.problem.tasks[0].options[0];
  EXPECT_FALSE(PackMemberEnds(in.problem, in.terms, {0, 1, 2}, single).empty());
  // One GPU's curve ends at 4 members' rows (16): 5 members do not fit it,
  // but do fit ddp's (up to 32).
  std::vector<Spec> five(5, Spec{"m", "gpt", 4});
  for (int i = 0; i < 5; ++i)
    five[i].name = "m" + std::to_string(i);
  Instance large = MakeInstance(five, 1);
  EXPECT_TRUE(
      PackMemberEnds(large.problem, large.terms, {0, 1, 2, 3, 4}, large.problem.tasks[0].options[0])
          .empty());
  EXPECT_EQ(
      PackMemberEnds(large.problem, large.terms, {0, 1, 2, 3, 4}, large.problem.tasks[0].options[1])
          .size(),
      5u);
}

// Ranks: b (rank 16) steps in 1.3 s alone where its class's curve (its
// member a, rank 4, the same rows) starts at 1.0. Together they step in
// 1.2 + 0.3 s until a ends at 100 steps; then b goes on in the same worker
// at its own 1.3 s. Fixed costs: 10 s, once. c (2 rows, 1.3 s alone)
// adds nothing: its curve's first point is at other rows (its rows and adapters cannot be told
// apart); with a the curve says 1.1 s at 6 rows, but a pack steps no
// faster than its slowest member alone: 1.3 s.
TEST(Packing, AMembersOwnRankAddsToEveryStepItIsIn) {
  Problem problem = testing::MakeProblem(
      {1}, {{"a", {{"single", 1, 110}}}, {"b", {{"single", 1, 270}}}, {"c", {{"single", 1, 140}}}});
  PackTerms terms;
  const std::vector<std::pair<double, double>> curve = {{4.0, 1.0}, {8.0, 1.2}, {12.0, 1.4}};
  terms.tasks = {{"x", 4.0, 100.0, {}}, {"x", 4.0, 200.0, {}}, {"x", 2.0, 100.0, {}}};
  terms.curves = {{{1.0, curve, {}}}, {{1.3, curve, {}}}, {{1.3, curve, {}}}};
  const Option& key = problem.tasks[0].options[0];
  std::vector<double> ends = PackMemberEnds(problem, terms, {0, 1}, key);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_NEAR(ends[0], 10 + 100 * 1.5, 1e-9);
  EXPECT_NEAR(ends[1], 10 + 100 * 1.5 + 100 * 1.3, 1e-9);
  ends = PackMemberEnds(problem, terms, {0, 2}, key);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_NEAR(ends[0], 10 + 100 * 1.3, 1e-9);
  EXPECT_NEAR(ends[1], 10 + 100 * 1.3, 1e-9);
  // What `saturn plan` quotes for a step of all (DescribePacks): the same.
  EXPECT_NEAR(PackStepOfAll(problem, terms, {0, 1}, key), 1.5, 1e-12);
  EXPECT_NEAR(PackStepOfAll(problem, terms, {0, 2}, key), 1.3, 1e-12);
  EXPECT_NEAR(PackStepOfAll(problem, terms, {0, 1, 2}, key), 1.3 + 0.3, 1e-12);
}

// A pack whose shorter member ends, or is stopped by its early_stop: rule,
// goes on with the longer one in the same worker (worker/pack_job.h; an
// array's likewise): its fixed costs once.
TEST(Packing, MembersGoingOnPayTheFixedCostsOnce) {
  Problem problem =
      testing::MakeProblem({1}, {{"a", {{"single", 1, 110}}}, {"b", {{"single", 1, 210}}}});
  const std::vector<std::pair<double, double>> curve = {{4.0, 1.0}, {8.0, 1.5}};
  PackTerms terms;
  terms.tasks = {{"lora", 4.0, 100.0, {}}, {"lora", 4.0, 200.0, {}}};
  terms.curves = {{{1.0, curve, {}}}, {{1.0, curve, {}}}};
  const Option& key = problem.tasks[0].options[0];
  // Fixed costs 10 s each; 100 steps of both at 1.5 s; then b's 100 alone.
  EXPECT_THAT(PackMemberEnds(problem, terms, {0, 1}, key),
              ElementsAre(DoubleNear(10 + 150, 1e-9), DoubleNear(10 + 150 + 100, 1e-9)));
  const std::string array = R"({"array":{"type":"mlp"},"batch_size":4,"optimizer":"adam"})";
  terms.tasks[0].cls = terms.tasks[1].cls = array;
  EXPECT_THAT(PackMemberEnds(problem, terms, {0, 1}, key),
              ElementsAre(DoubleNear(10 + 150, 1e-9), DoubleNear(10 + 150 + 100, 1e-9)));
  // a stopped by its rule at 100 steps (for sure): the same.
  terms.tasks[0].cls = terms.tasks[1].cls = "lora";
  terms.tasks[0].stops = {{100.0, 1.0}};
  EXPECT_THAT(PackMemberEnds(problem, terms, {0, 1}, key),
              ElementsAre(DoubleNear(10 + 150, 1e-9), DoubleNear(10 + 150 + 100, 1e-9)));
}

TEST(Packing, TasksOfDifferentClassesNeverShareAPack) {
  Instance in = MakeInstance({{"a", "gpt"}, {"b", "llama"}, {"c", ""}}, 1);
  EXPECT_FALSE(in.terms.Any());
  EXPECT_TRUE(PackMemberEnds(in.problem, in.terms, {0, 1}, in.problem.tasks[0].options[0]).empty());
  PackedPlanResult r = PlanWithPacks(in.problem, in.terms, PlanRequest(), true);
  for (const PlanTask& t : r.result.plan.tasks)
    EXPECT_EQ(t.pack, "") << t.task;
}

TEST(Packing, BadPackColumnsNameTheFileLineAndColumn) {
  Cluster cluster = ParseCluster(YAML::Load("nodes: [{name: n0, gpus: 2}]"), "c.yaml");
  auto terms_of = [&](const std::string& csv) {
    ProfileTable p = ParseProfileCsv(csv, "p.csv", cluster);
    return PackTermsFromProfile(p, ProblemFromProfile(p, cluster), "p.csv");
  };
  const std::string head =
      "task,technique,gpus,runtime_s,step_s,steps,pack_class,pack_rows,pack_step_s\n";
  const std::string descending =
      test::ErrorOf([&] { terms_of(head + "a,single,1,30,0.3,100,gpt,4,4:0.3 2:0.4\n"); });
  EXPECT_THAT(descending, HasSubstr("p.csv"));
  EXPECT_THAT(descending, HasSubstr("pack_step_s"));
  EXPECT_THAT(descending, HasSubstr("'2:0.4'"));
  EXPECT_THROW(terms_of(head + "a,single,1,30,0.3,100,gpt,-1,4:0.3\n"), InputError);
  EXPECT_THROW(terms_of(head + "a,single,1,30,0.3,100,gpt,4,4:0.3\na,ddp,2,20,0.2,100,x,4,4:0.2\n"),
               InputError);
  // pack_knobs: KNOBS must be a JSON object, ROWS ascending.
  const std::string with_knobs =
      "task,technique,gpus,runtime_s,step_s,steps,pack_class,pack_rows,"
      "pack_step_s,pack_knobs\n";
  const std::string not_json = test::ErrorOf(
      [&] { terms_of(with_knobs + "a,single,1,30,0.3,100,gpt,4,4:0.3,4:recompute\n"); });
  EXPECT_THAT(not_json, HasSubstr("pack_knobs"));
  EXPECT_THAT(not_json, HasSubstr("'4:recompute'"));
  EXPECT_THROW(terms_of(with_knobs + "a,single,1,30,0.3,100,gpt,4,4:0.3,8:{} 4:{}\n"), InputError);
}

TEST(Packing, StartingAPackCostsWhatItsStartCurveAddsOverAMemberAlone) {
  // a: 100 steps, b: 50; each 4 rows, fixed costs 5 s (30 - 100 x 0.25,
  // 17.5 - 50 x 0.25). The curve's member stepped in 0.3 s alone, these two
  // in 0.25 s: 0.05 s less each. Together (8 rows) they step in 0.4 - 0.1
  // = 0.3 s, a alone in its own 0.25 s; starting a pack of 8 rows costs 3 s
  // where a member alone's costs 1 s: 2 s more before the first step.
  Cluster cluster = ParseCluster(YAML::Load("nodes: [{name: n0, gpus: 2}]"), "c.yaml");
  auto ends = [&](const std::string& start_column, const std::string& start_curve) {
    ProfileTable p = ParseProfileCsv(
        "task,technique,gpus,runtime_s,step_s,steps,pack_class,pack_rows,pack_step_s" +
            start_column + "\na,single,1,30,0.25,100,c,4,4:0.3 8:0.4" + start_curve +
            "\nb,single,1,17.5,0.25,50,c,4,4:0.3 8:0.4" + start_curve + "\n",
        "p.csv", cluster);
    Problem problem = ProblemFromProfile(p, cluster);
    PackTerms terms = PackTermsFromProfile(p, problem, "p.csv");
    return PackMemberEnds(problem, terms, {0, 1}, problem.tasks[0].options[0]);
  };
  // By hand: 5 (+ 2) s, then 50 steps of both at 0.3 s, then a goes on
  // alone in the same worker and steps 50 at 0.25 s.
  std::vector<double> without = ends("", ""), with = ends(",pack_start_s", ",4:1 8:3");
  ASSERT_EQ(without.size(), 2u);
  ASSERT_EQ(with.size(), 2u);
  EXPECT_NEAR(without[0], 5 + 15 + 12.5, 1e-9);
  EXPECT_NEAR(without[1], 5 + 15, 1e-9);
  EXPECT_NEAR(with[0], 7 + 15 + 12.5, 1e-9);
  EXPECT_NEAR(with[1], 7 + 15, 1e-9);
  EXPECT_THROW(ends(",pack_start_s", ",4:1 8:-3"), InputError);
  try {
    ends(",pack_start_s", ",4:1 2:3");
    FAIL() << "descending rows accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("pack_start_s"), std::string::npos) << e.what();
  }
}

TEST(Packing, PlannerPacksALoraGridAndTheValidatorAcceptsIt) {
  // 4 learning rates x 2 ranks on one node of 2 devices.
  std::vector<Spec> specs;
  for (int i = 0; i < 8; ++i)
    specs.push_back({"lr" + std::to_string(i / 2) + "-r" + std::to_string(4 << (i % 2)), "gpt2"});
  Instance in = MakeInstance(specs, 1);
  PlanRequest req;
  PackedPlanResult packed = PlanWithPacks(in.problem, in.terms, req, true);
  PackedPlanResult alone = PlanWithPacks(in.problem, in.terms, req, false);
  const Plan& plan = packed.result.plan;
  EXPECT_TRUE(ValidatePlan(in.problem, in.terms, plan).empty())
      << ValidatePlan(in.problem, in.terms, plan).front();
  int in_packs = 0;
  for (const PlanTask& t : plan.tasks)
    in_packs += !t.pack.empty();
  EXPECT_GE(in_packs, 4);
  for (const PlanTask& t : alone.result.plan.tasks)
    EXPECT_EQ(t.pack, "");
  // The memory-bound step makes packing a clear gain: each pack of k steps
  // in 0.6 + 0.4 k of one member's time.
  EXPECT_LT(plan.makespan_s, 0.8 * alone.result.plan.makespan_s);
  EXPECT_NEAR(packed.unpacked_makespan_s, alone.result.plan.makespan_s,
              1e-6 * alone.result.plan.makespan_s);
  ASSERT_TRUE(plan.extra.contains("packs"));
  EXPECT_FALSE(DescribePacks(in.problem, in.terms, packed, false).empty());
  // Without pack columns the plan is checked as before and packs are refused.
  EXPECT_FALSE(ValidatePlan(in.problem, plan).empty());
}

// Where two in a pack step slower than one after the other (8 rows: 2.2 s
// against 1 s alone; on CPU a pack gains nothing), no packing can beat the
// plan without packs: none is solved, and the plan has no pack.
TEST(Packing, PackingsThatCannotBeatThePlanAloneAreNotSolved) {
  Problem problem = testing::MakeProblem({2}, {{"a", {{"single", 1, 110}}},
                                               {"b", {{"single", 1, 110}}},
                                               {"c", {{"single", 1, 110}}},
                                               {"d", {{"single", 1, 110}}}});
  PackTerms terms;
  for (int j = 0; j < 4; ++j) {
    terms.tasks.push_back({"x", 4.0, 100.0, {}});
    terms.curves.push_back({{1.0, {{4.0, 1.0}, {8.0, 2.2}, {16.0, 4.6}}, {}}});
  }
  PackedPlanResult r = PlanWithPacks(problem, terms, PlanRequest(), true);
  EXPECT_GT(r.evaluations, 0);  // packings were searched
  EXPECT_EQ(r.packings_solved, 0);
  EXPECT_NEAR(r.result.plan.makespan_s, 220, 1e-6);
  for (const PlanTask& t : r.result.plan.tasks)
    EXPECT_EQ(t.pack, "") << t.task;
  // Where packs gain (8 rows: 1.2 s), they are solved and kept.
  for (PackTerms::Curve& c : terms.curves[0])
    c.points = {{4.0, 1.0}, {8.0, 1.2}, {16.0, 2.0}};
  for (size_t j = 1; j < 4; ++j)
    terms.curves[j] = terms.curves[0];
  r = PlanWithPacks(problem, terms, PlanRequest(), true);
  EXPECT_GE(r.packings_solved, 1);
  EXPECT_LT(r.result.plan.makespan_s, 220);
}

TEST(Packing, ValidatorRejectsBrokenPacks) {
  std::vector<Spec> specs = {{"a", "gpt"}, {"b", "gpt"}, {"c", "other"}};
  Instance in = MakeInstance(specs, 1);
  Plan good = ExpandPackedPlan(
      in.problem, BuildPackedProblem(in.problem, in.terms, {{0, 1}, {2}}),
      RunPlanner(BuildPackedProblem(in.problem, in.terms, {{0, 1}, {2}}).problem, PlanRequest())
          .plan);
  ASSERT_TRUE(ValidatePlan(in.problem, in.terms, good).empty());
  auto errors_after = [&](const std::function<void(Plan&)>& change) {
    Plan p = good;
    change(p);
    std::string all;
    for (const std::string& e : ValidatePlan(in.problem, in.terms, p))
      all += e + "\n";
    return all;
  };
  auto find = [&](Plan& p, const std::string& name) -> PlanTask& {
    return *std::find_if(p.tasks.begin(), p.tasks.end(),
                         [&](const PlanTask& t) { return t.task == name; });
  };
  EXPECT_NE(errors_after([&](Plan& p) { find(p, "b").start_s += 1; }).find("share one worker"),
            std::string::npos);
  EXPECT_NE(errors_after([&](Plan& p) {
              find(p, "b").end_s -= 3;
            }).find("sooner than the pack model allows"),
            std::string::npos);
  // Later than the model is time to spare (or a plan saved under an older
  // model that charged restarts): valid, the makespan its largest end.
  EXPECT_EQ(errors_after([&](Plan& p) {
              find(p, "b").end_s += 3;
              p.makespan_s = std::max(p.makespan_s, find(p, "b").end_s);
            }),
            "");
  EXPECT_NE(errors_after([&](Plan& p) {
              find(p, "c").pack = find(p, "a").pack;
            }).find("cannot share a pack"),
            std::string::npos);
}

// Every partition of `items` into groups, each passed to `visit`.
void Partitions(const std::vector<int>& items, size_t i, Packing& groups,
                const std::function<void(const Packing&)>& visit) {
  if (i == items.size()) {
    visit(groups);
    return;
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    groups[g].push_back(items[i]);
    Partitions(items, i + 1, groups, visit);
    groups[g].pop_back();
  }
  groups.push_back({items[i]});
  Partitions(items, i + 1, groups, visit);
  groups.pop_back();
}

// The shortest plan over every packing (each class partitioned every way,
// each packing solved by auto), as the reference for the greedy search.
double ExhaustiveBest(const Instance& in, const PlanRequest& req, int* packings) {
  std::map<std::string, std::vector<int>> classes;
  Packing fixed;
  for (int j = 0; j < in.problem.NumTasks(); ++j) {
    if (in.terms.tasks[j].cls.empty())
      fixed.push_back({j});
    else
      classes[in.terms.tasks[j].cls].push_back(j);
  }
  std::vector<std::vector<Packing>> per_class;
  for (auto& [cls, items] : classes) {
    per_class.emplace_back();
    Packing groups;
    Partitions(items, 0, groups, [&](const Packing& p) { per_class.back().push_back(p); });
  }
  double best = std::numeric_limits<double>::infinity();
  *packings = 0;
  std::function<void(size_t, Packing)> combine = [&](size_t c, Packing acc) {
    if (c == per_class.size()) {
      PackedProblem packed = BuildPackedProblem(in.problem, in.terms, acc);
      for (const Task& t : packed.problem.tasks)
        if (t.options.empty()) return;
      ++*packings;
      best = std::min(best, RunPlanner(packed.problem, req).plan.makespan_s);
      return;
    }
    for (const Packing& p : per_class[c]) {
      Packing next = acc;
      next.insert(next.end(), p.begin(), p.end());
      combine(c + 1, next);
    }
  };
  combine(0, fixed);
  return best;
}

TEST(Packing, GreedyPackingIsWithinTwoPercentOfEveryPacking) {
  std::mt19937 rng(7);
  PlanRequest req;
  req.work_scale = 0.02;
  struct Shape {
    int tasks, classes, nodes;
  };
  for (Shape shape :
       {Shape{5, 1, 1}, Shape{6, 2, 2}, Shape{7, 2, 1}, Shape{8, 2, 2}, Shape{8, 3, 1}}) {
    std::vector<Spec> specs;
    std::uniform_int_distribution<int> steps(1, 4), rows(1, 3), step(2, 6);
    for (int i = 0; i < shape.tasks; ++i) {
      specs.push_back({"t" + std::to_string(i), "c" + std::to_string(i % shape.classes),
                       2.0 * rows(rng), 100 * steps(rng), 0.1 * step(rng)});
    }
    Instance in = MakeInstance(specs, shape.nodes);
    int packings = 0;
    double best = ExhaustiveBest(in, req, &packings);
    PackedPlanResult r = PlanWithPacks(in.problem, in.terms, req, true);
    EXPECT_TRUE(ValidatePlan(in.problem, in.terms, r.result.plan).empty());
    EXPECT_LE(r.result.plan.makespan_s, 1.02 * best)
        << shape.tasks << " tasks, " << shape.classes << " classes: exhaustive over " << packings
        << " packings " << best << ", greedy " << r.result.plan.makespan_s;
    std::printf(
        "[ packing  ] %d tasks, %d classes, %d nodes: greedy %.1f s, exhaustive %.1f s "
        "over %d packings (%.3fx), %d scored\n",
        shape.tasks, shape.classes, shape.nodes, r.result.plan.makespan_s, best, packings,
        r.result.plan.makespan_s / best, r.evaluations);
  }
}

TEST(Packing, TheLongestGroupsOfAZipfClassAreCutFromTheRest) {
  // 300 table groups of one class, steps 20000 / (i + 1) (Zipf, as
  // bench/groups' table), with an array's measured curve: ~30 us a step
  // plus ~0.07 us a row (an array's class, which the profiler writes as a
  // JSON object whose first key is "array": a member that ends leaves
  // without a restart). Equal cuts by length give the longest group
  // hundreds of others to carry to its end.
  std::ostringstream csv;
  csv << "task,technique,gpus,runtime_s,step_s,steps,pack_class,pack_rows,pack_step_s\n";
  for (int i = 0; i < 300; ++i) {
    int steps = 20000 / (i + 1) + 10;
    csv << "g" << i << ",single,1," << 0.5 + steps * 3e-5 << ",3e-05," << steps
        << ",\"{\"\"array\"\":\"\"table\"\"}\",64,64:3e-05 128:5e-05 1024:1e-04 8192:5e-04 "
           "65536:0.0047\n";
  }
  Cluster cluster = ParseCluster(YAML::Load("nodes: [{name: n0, gpus: 2}]"), "cluster.yaml");
  ProfileTable profile = ParseProfileCsv(csv.str(), "profile.csv", cluster);
  Problem problem = ProblemFromProfile(profile, cluster);
  PackTerms terms = PackTermsFromProfile(profile, problem, "profile.csv");
  // The reference: the best cut into p packs of consecutive lengths, p = 1..40.
  std::vector<int> by_length(300);
  for (int j = 0; j < 300; ++j)
    by_length[static_cast<size_t>(
        std::stoi(problem.tasks[static_cast<size_t>(j)].name.substr(1)))] = j;
  double equal = std::numeric_limits<double>::infinity();
  for (int p = 1; p <= 40; ++p) {
    Packing cut;
    for (int c = 0; c < p; ++c)
      cut.emplace_back(by_length.begin() + c * 300 / p, by_length.begin() + (c + 1) * 300 / p);
    equal = std::min(equal, ScorePacking(problem, terms, cut).makespan);
  }
  PackedPlanResult r = PlanWithPacks(problem, terms, PlanRequest(), true);
  EXPECT_TRUE(ValidatePlan(problem, terms, r.result.plan).empty());
  EXPECT_LT(r.result.plan.makespan_s, 0.9 * equal);
  for (const std::vector<int>& pack : r.packing) {
    if (std::find(pack.begin(), pack.end(), by_length[0]) != pack.end()) {
      EXPECT_LE(pack.size(), 32u) << "the longest group carries few others";
    }
  }
}

TEST(Packing, AThousandGroupsOfOneClassArePackedWithFewScoredPackings) {
  // A table's groups (docs/groups.md): one class, steps from 10 to ~1000.
  std::vector<Spec> specs;
  for (int i = 0; i < 1000; ++i)
    specs.push_back({"g" + std::to_string(i), "table", 64, 10 + 1000 / (1 + i % 97), 0.002});
  Instance in = MakeInstance(specs, 1, 0.5);
  PlanRequest req;
  PackedPlanResult r = PlanWithPacks(in.problem, in.terms, req, true);
  EXPECT_TRUE(ValidatePlan(in.problem, in.terms, r.result.plan).empty());
  // Pack counts 1..32, then growing by a fifth (not all 999), and no greedy
  // merging from a thousand tasks alone: a few hundred scored, not 3,000.
  EXPECT_LT(r.evaluations, 1000);
  EXPECT_LT(r.result.plan.makespan_s, MakespanLowerBound(in.problem));
  // The plan without packs is still solved, for the comparison.
  EXPECT_GE(r.unpacked_makespan_s, MakespanLowerBound(in.problem) * (1 - 1e-9));
}

}  // namespace
}  // namespace saturn
