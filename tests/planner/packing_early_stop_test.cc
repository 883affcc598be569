// Packs under early stopping and a pack's technique settings
// (planner/packing.h): members leave where the rule may stop them, against a
// Monte Carlo of packs drawn from their group; PackKnobsAt.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "planner/packing.h"
#include "tests/planner/packing_fixture.h"

namespace saturn {
namespace {

using namespace packing_test;  // NOLINT: the fixture's instances

// Under early stopping a pack's members leave one by one as the rule stops
// them, and the pack lasts as long as its last one: members that share a
// rule's distribution of where it stops them (here ASHA's successive
// halving from 50 of 400 steps: half at 50, a quarter at 100, an eighth at
// 200, an eighth finish; 125 on average) train the steps of its strata.
// Four members: 50, 50, 100 and (200 + 400) / 2 = 300; two: 50 and 200;
// one: the mean. A member without a rule keeps its own steps.
TEST(Packing, MembersUnderEarlyStoppingLeaveAtTheirStrataOfWhereTheRuleStops) {
  std::vector<Spec> specs(5, Spec{"m", "gpt", 4, 125, 0.3});
  for (int i = 0; i < 5; ++i)
    specs[i].name = "m" + std::to_string(i);
  specs[4].steps = 80;
  Instance in = MakeInstance(specs, 1, 7.0);
  const std::vector<std::pair<double, double>> halving = {
      {50, 0.5}, {100, 0.25}, {200, 0.125}, {400, 0.125}};
  for (int j = 0; j < 4; ++j)
    in.terms.tasks[j].stops = halving;
  EXPECT_EQ(MemberSteps(in.terms, {0, 1, 2, 3}), (std::vector<double>{50, 50, 100, 300}));
  EXPECT_EQ(MemberSteps(in.terms, {2, 0}), (std::vector<double>{50, 200}));
  EXPECT_EQ(MemberSteps(in.terms, {3}), (std::vector<double>{125}));
  EXPECT_EQ(MemberSteps(in.terms, {4, 1, 0}), (std::vector<double>{80, 50, 200}));
  // Two of a group of four judged together: two of its four (50, 50, 100,
  // 300) drawn without replacement, the lower 350 / 6 on average, the higher
  // 1150 / 6; together the two means.
  for (int j = 0; j < 4; ++j)
    in.terms.tasks[j].group = 4;
  std::vector<double> two = MemberSteps(in.terms, {2, 0});
  EXPECT_NEAR(two[0], 350.0 / 6, 1e-9);
  EXPECT_NEAR(two[1], 1150.0 / 6, 1e-9);
  EXPECT_EQ(MemberSteps(in.terms, {0, 1, 2, 3}), (std::vector<double>{50, 50, 100, 300}));
  // Two groups of one size under one rule (two submissions to saturn
  // serve) are judged apart: one of each is a draw of one from each, its
  // mean.
  in.terms.tasks[1].stop_group = "submission-2";
  std::vector<double> apart = MemberSteps(in.terms, {0, 1});
  EXPECT_NEAR(apart[0], 125, 1e-9);
  EXPECT_NEAR(apart[1], 125, 1e-9);
  in.terms.tasks[1].stop_group.clear();
  for (int j = 0; j < 4; ++j)
    in.terms.tasks[j].group = 0;
  const Option& ddp = in.problem.tasks[0].options[1];
  std::vector<double> ends = PackMemberEnds(in.problem, in.terms, {0, 1, 2, 3}, ddp);
  std::vector<std::pair<double, double>> curve;
  for (int k : {1, 2, 4, 8})
    curve.emplace_back(k * 4.0, TrueStep(0.3 * 0.55, 4, k * 4.0));
  std::vector<Spec> stopped = specs;
  stopped.resize(4);
  const int at[] = {50, 50, 100, 300};
  for (int i = 0; i < 4; ++i)
    stopped[i].steps = at[i];
  std::vector<double> want = StepByStepEnds(stopped, 0.3 * 0.55, curve, 7.0);
  ASSERT_EQ(ends.size(), 4u);
  for (size_t i = 0; i < 4; ++i)
    EXPECT_NEAR(ends[i], want[i], 1e-6 * want[i]) << i;
  // Alone it is its mean: its (scaled) runtime.
  EXPECT_EQ(PackMemberEnds(in.problem, in.terms, {0}, ddp),
            (std::vector<double>{in.problem.tasks[0].options[1].runtime_s}));
}

// The pack model under early stopping against a Monte Carlo written here:
// a group of 16 tasks whose rule ends them at its strata (successive
// halving from 50 of 400 steps: 8 at 50, 4 at 100, 2 at 200, 2 at 400);
// packs of 3 of them drawn at random, stepped one step at a time (the
// reference above). The mean of their last member's end is what
// PackMemberEnds plans, within the Monte Carlo's noise; planning on each
// member's mean (125 steps) would be far off.
TEST(Packing, APackOfMembersUnderEarlyStoppingLastsAsPacksDrawnFromTheGroupDo) {
  std::vector<Spec> specs(3, Spec{"m", "gpt", 4, 125, 0.3});
  for (int i = 0; i < 3; ++i)
    specs[i].name = "m" + std::to_string(i);
  Instance in = MakeInstance(specs, 1, 7.0);
  for (int j = 0; j < 3; ++j) {
    in.terms.tasks[j].stops = {{50, 0.5}, {100, 0.25}, {200, 0.125}, {400, 0.125}};
    in.terms.tasks[j].group = 16;
  }
  const Option& single = in.problem.tasks[0].options[0];
  std::vector<double> ends = PackMemberEnds(in.problem, in.terms, {0, 1, 2}, single);
  ASSERT_EQ(ends.size(), 3u);
  const double planned = *std::max_element(ends.begin(), ends.end());
  std::vector<std::pair<double, double>> curve;
  for (int k : {1, 2, 4})
    curve.emplace_back(k * 4.0, TrueStep(0.3, 4, k * 4.0));
  std::vector<int> group;
  for (auto [steps, count] :
       std::vector<std::pair<int, int>>{{50, 8}, {100, 4}, {200, 2}, {400, 2}})
    group.insert(group.end(), count, steps);
  std::mt19937 random(5);
  double sum = 0.0;
  const int draws = 20000;
  for (int d = 0; d < draws; ++d) {
    std::shuffle(group.begin(), group.end(), random);
    std::vector<Spec> pack = specs;
    for (int i = 0; i < 3; ++i)
      pack[i].steps = group[i];
    std::vector<double> e = StepByStepEnds(pack, 0.3, curve, 7.0);
    sum += *std::max_element(e.begin(), e.end());
  }
  const double simulated = sum / draws;
  EXPECT_NEAR(planned, simulated, 0.01 * simulated);
  // On each member's mean, every member would leave at 125 steps.
  std::vector<Spec> mean = specs;
  std::vector<double> e = StepByStepEnds(mean, 0.3, curve, 7.0);
  EXPECT_LT(*std::max_element(e.begin(), e.end()), 0.85 * simulated);  // 0.80x
}

// A pack runs with the settings measured for the fewest rows at or above
// its own (what fit that many fits fewer), the last point's beyond them.
TEST(Packing, APackRunsWithTheKnobsOfTheSmallestMeasuredSizeThatHoldsIt) {
  const std::string knobs =
      R"(8:{"recompute":false} 16:{"recompute":false,"shard":2} 32:{"recompute":true})";
  EXPECT_EQ(PackKnobsAt(knobs, 8), R"({"recompute":false})");
  EXPECT_EQ(PackKnobsAt(knobs, 12), R"({"recompute":false,"shard":2})");
  EXPECT_EQ(PackKnobsAt(knobs, 16), R"({"recompute":false,"shard":2})");
  EXPECT_EQ(PackKnobsAt(knobs, 20), R"({"recompute":true})");
  EXPECT_EQ(PackKnobsAt(knobs, 64), R"({"recompute":true})");
  EXPECT_EQ(PackKnobsAt(knobs, 2), R"({"recompute":false})");
  EXPECT_EQ(PackKnobsAt("", 8), "");
  // A size measured with the plain settings ({}) keeps them: a pack of 16
  // rows does not take the checkpointing 32 needed.
  const std::string plain = R"(8:{} 16:{} 32:{"checkpointing":true})";
  EXPECT_EQ(PackKnobsAt(plain, 12), "{}");
  EXPECT_EQ(PackKnobsAt(plain, 16), "{}");
  EXPECT_EQ(PackKnobsAt(plain, 24), R"({"checkpointing":true})");
}

}  // namespace
}  // namespace saturn
