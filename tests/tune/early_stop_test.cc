// Early-stopping rules (tune/early_stop.h): sequences worked by hand against
// Ray Tune's ASHA and median stopping rule, and the expected-steps estimate.
#include "tune/early_stop.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "tune/running_quantile.h"

namespace saturn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

EarlyStopSpec Asha(long grace, long factor, const std::string& metric = "eval_loss") {
  EarlyStopSpec spec;
  spec.rule = "asha";
  spec.metric = metric;
  spec.grace_steps = grace;
  spec.reduction_factor = factor;
  return spec;
}

EarlyStopSpec Median(long grace, long min_samples, const std::string& metric = "eval_loss") {
  EarlyStopSpec spec;
  spec.rule = "median";
  spec.metric = metric;
  spec.grace_steps = grace;
  spec.min_samples = min_samples;
  return spec;
}

// np.percentile(values, p) by the textbook formula, independent of the
// rules' running quantile: sort, index (n - 1) * p / 100, interpolate.
double ReferencePercentile(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  double index = (static_cast<double>(values.size()) - 1) * p / 100;
  size_t lo = static_cast<size_t>(std::floor(index));
  size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (index - std::floor(index));
}

TEST(RunningQuantile, MatchesTheSortedFormula) {
  for (double fraction : {0.5, 2.0 / 3, 0.75, 0.9}) {
    RunningQuantile q(fraction);
    std::vector<double> seen;
    uint64_t x = 12345;
    for (int i = 0; i < 200; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      double v = static_cast<double>(x >> 40) / 1000.0;
      q.Add(v);
      seen.push_back(v);
      ASSERT_NEAR(q.Percentile(), ReferencePercentile(seen, fraction * 100), 1e-9)
          << "fraction " << fraction << " after " << seen.size();
    }
  }
  RunningQuantile median(0.5);
  for (double v : {4.0, 1.0, 3.0, 2.0})
    median.Add(v);
  EXPECT_EQ(median.Median(), 2.5);
  median.Add(10.0);
  EXPECT_EQ(median.Median(), 3.0);
}

TEST(StopRules, AreRegisteredByName) {
  EXPECT_THAT(StopRuleNames(), ElementsAre("asha", "median"));
  EarlyStopSpec spec = Asha(10, 2);
  spec.rule = "hyperband";
  try {
    MakeStopRule(spec);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("expected one of: asha, median"));
  }
  EXPECT_THROW(MakeStopRule(Asha(0, 2)), InputError);
  EXPECT_THROW(MakeStopRule(Asha(10, 1)), InputError);
  EXPECT_THROW(MakeStopRule(Median(10, 0)), InputError);
  EXPECT_THROW(MakeStopRule(Asha(10, 2, "eval_perplexity")), InputError);
}

// R = 2, G = 10: rungs 10, 20, 40, 80. Losses at step 10, worked by hand in
// "higher is better" (negated) with np.percentile(recorded, 50):
//   a 0.5  : nothing recorded                        -> continue
//   b 0.4  : {-0.5} -> -0.5;      -0.4 < -0.5? no     -> continue
//   c 0.9  : {-0.5,-0.4} -> -0.45; -0.9 < -0.45 yes   -> stop
//   d 0.45 : {-0.9,-0.5,-0.4} -> -0.5; -0.45 < -0.5 no -> continue
//   e 0.3  : {-0.9,-0.5,-0.45,-0.4} -> index 1.5: -0.475; -0.3 no -> continue
//   f 0.48 : {-0.9,-0.5,-0.45,-0.4,-0.3} -> -0.45; -0.48 < -0.45 yes -> stop
TEST(Asha, StopsBelowThePercentileOfEarlierRecords) {
  auto rule = MakeStopRule(Asha(10, 2));
  EXPECT_FALSE(rule->OnEvaluation("a", 10, 100, 0.5));
  EXPECT_FALSE(rule->OnEvaluation("b", 10, 100, 0.4));
  EXPECT_TRUE(rule->OnEvaluation("c", 10, 100, 0.9));
  EXPECT_FALSE(rule->OnEvaluation("d", 10, 100, 0.45));
  EXPECT_FALSE(rule->OnEvaluation("e", 10, 100, 0.3));
  EXPECT_TRUE(rule->OnEvaluation("f", 10, 100, 0.48));
  // Rung 20 starts empty: the first there continues however bad it is.
  EXPECT_FALSE(rule->OnEvaluation("a", 20, 100, 5.0));
  EXPECT_FALSE(rule->OnEvaluation("b", 20, 100, 0.2));
  // {-5, -0.2} -> -2.6: loss 3 stops (counting its own -3 the cutoff would
  // be -3, and it would not: only values recorded before it count).
  EXPECT_TRUE(rule->OnEvaluation("d", 20, 100, 3.0));
  // Between rungs nothing is decided: a is recorded at 10 and 20 already.
  EXPECT_FALSE(rule->OnEvaluation("a", 30, 100, 9.0));
  EXPECT_THAT(rule->DecisionSteps(100, 10), ElementsAre(10, 20, 40, 80));
  EXPECT_THAT(rule->DecisionSteps(80, 10), ElementsAre(10, 20, 40));
}

// Accuracy, higher is better, R = 3: the 66.67th percentile. Recorded
// {1, 2, 3, 4}: index 3 * 2/3 = 2 -> 3. Then {1, 2, 3, 4, 3.5}: index 4 * 2/3
// = 2.667 between 3 and 3.5 -> 3.333.
TEST(Asha, AccuracyIsHigherBetterWithInterpolatedCutoffs) {
  auto rule = MakeStopRule(Asha(5, 3, "eval_accuracy"));
  for (int i = 1; i <= 4; ++i)
    EXPECT_FALSE(rule->OnEvaluation("t" + std::to_string(i), 5, 100, i)) << i;
  EXPECT_FALSE(rule->OnEvaluation("x", 5, 100, 3.5));  // cutoff 3: continues
  EXPECT_TRUE(rule->OnEvaluation("y", 5, 100, 3.3));   // cutoff 3.333: stops
  // The same as losses 4, 3, 2, 1 (each better than all before): negated
  // {-4, -3, -2, -1}, cutoff -2, and loss 3.5 is below it.
  auto loss = MakeStopRule(Asha(5, 3, "eval_loss"));
  for (int i = 1; i <= 4; ++i)
    EXPECT_FALSE(loss->OnEvaluation("t" + std::to_string(i), 5, 100, 5 - i)) << i;
  EXPECT_TRUE(loss->OnEvaluation("x", 5, 100, 3.5));
  EXPECT_THAT(rule->DecisionSteps(100, 5), ElementsAre(5, 15, 45));
}

// Ray walks the rungs from the top: a task first evaluated past several
// rungs is judged (and recorded) at the highest only.
TEST(Asha, JudgesAtTheHighestUnrecordedRungReached) {
  auto rule = MakeStopRule(Asha(10, 2));
  EXPECT_FALSE(rule->OnEvaluation("a", 40, 100, 1.0));  // rung 40, first
  EXPECT_FALSE(rule->OnEvaluation("b", 10, 100, 9.0));  // rung 10, first: continues
  EXPECT_TRUE(rule->OnEvaluation("c", 45, 100, 2.0));   // rung 40: below a's -1.0
  EXPECT_TRUE(rule->OnEvaluation("c2", 10, 100, 9.5));  // rung 10: below b's -9.0
}

// Tasks of 30 and 100 steps share the rungs. At its end a task is never
// stopped, but its value is recorded (Ray's on_trial_complete) and counts.
TEST(Asha, TasksOfDifferentLengthsShareRungs) {
  auto rule = MakeStopRule(Asha(10, 2));
  EXPECT_THAT(rule->DecisionSteps(30, 10), ElementsAre(10, 20));
  EXPECT_FALSE(rule->OnEvaluation("long", 20, 100, 1.0));
  EXPECT_TRUE(rule->OnEvaluation("short", 20, 30, 2.0));  // worse than long at rung 20
  EXPECT_FALSE(rule->OnEvaluation("ends", 20, 20, 0.1));  // its last step: never stopped
  // Rung 20 holds {-1.0, -2.0, -0.1}: 50th percentile -1.0.
  EXPECT_TRUE(rule->OnEvaluation("late", 20, 100, 1.5));
  EXPECT_FALSE(rule->OnEvaluation("late2", 20, 100, 0.9));
}

TEST(Asha, NanContinuesAndIsLeftOutOfCutoffs) {
  auto rule = MakeStopRule(Asha(10, 2));
  double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_FALSE(rule->OnEvaluation("a", 10, 100, nan));   // nothing recorded
  EXPECT_FALSE(rule->OnEvaluation("b", 10, 100, 1.0));   // only NaN recorded: no cutoff
  EXPECT_FALSE(rule->OnEvaluation("c", 10, 100, nan));   // NaN < cutoff is false
  EXPECT_TRUE(rule->OnEvaluation("d", 10, 100, 1.5));    // cutoff over {-1.0} only
  EXPECT_FALSE(rule->OnEvaluation("c", 12, 100, 50.0));  // c is recorded at rung 10
}

// grace 20, min_samples 2, losses; "others" are tasks with an evaluation at
// or past t, their running mean over steps [20, t].
//   step 10 (before grace): a 1.0, b 2.0, c 3.0, d 0.5         -> continue
//   a@20 0.8: no other past 20                                  -> continue
//   b@20 1.0: others {a: 0.8}, 1 < min_samples                   -> continue
//   c@20 1.5: others {0.8, 1.0}, median 0.9; best 1.5 > 0.9     -> stop
//   d@20 1.2: others {0.8, 1.0, 1.5}, median 1.0; best 0.5 (at 10) -> continue
//   e@20 0.96: others {0.8, 1.0, 1.5, 1.2}, median 1.1          -> continue
//   f@20 1.3: others {0.8, 1.0, 1.5, 1.2, 0.96}, median 1.0     -> stop
//   a@30 0.6, b@30 0.9: fewer than 2 others past 30             -> continue
//   d@30 1.1: others {a: 0.7, b: 0.95}, median 0.825; best 0.5  -> continue
//   e@30 0.94: others {a: 0.7, b: 0.95, d: 1.15}, median 0.95; best 0.94 -> continue
//     (with step 10 in the means, {0.8, 1.3, 0.933}: 0.94 would stop)
//   g@30 1.0: others {a 0.7, b 0.95, d 1.15, e 0.95}, median 0.95 -> stop
TEST(Median, StopsWhenTheBestIsWorseThanTheOthersRunningMeans) {
  auto rule = MakeStopRule(Median(20, 2));
  for (auto [task, v] : {std::pair{"a", 1.0}, {"b", 2.0}, {"c", 3.0}, {"d", 0.5}})
    EXPECT_FALSE(rule->OnEvaluation(task, 10, 100, v)) << task;
  EXPECT_FALSE(rule->OnEvaluation("a", 20, 100, 0.8));
  EXPECT_FALSE(rule->OnEvaluation("b", 20, 100, 1.0));
  EXPECT_TRUE(rule->OnEvaluation("c", 20, 100, 1.5));
  EXPECT_FALSE(rule->OnEvaluation("d", 20, 100, 1.2));
  EXPECT_FALSE(rule->OnEvaluation("e", 20, 100, 0.96));
  EXPECT_TRUE(rule->OnEvaluation("f", 20, 100, 1.3));
  EXPECT_FALSE(rule->OnEvaluation("a", 30, 100, 0.6));
  EXPECT_FALSE(rule->OnEvaluation("b", 30, 100, 0.9));
  EXPECT_FALSE(rule->OnEvaluation("d", 30, 100, 1.1));
  EXPECT_FALSE(rule->OnEvaluation("e", 30, 100, 0.94));
  EXPECT_TRUE(rule->OnEvaluation("g", 30, 100, 1.0));
  EXPECT_FALSE(rule->OnEvaluation("g", 100, 100, 9.0));  // its end: never stopped
  EXPECT_THAT(rule->DecisionSteps(60, 10), ElementsAre(20, 30, 40, 50));
  EXPECT_THAT(rule->DecisionSteps(60, 15), ElementsAre(30, 45));
  EXPECT_THROW(rule->OnEvaluation("a", 30, 100, 0.5), std::logic_error);
}

TEST(Median, AccuracyIsHigherBetterAndTiesContinue) {
  auto rule = MakeStopRule(Median(0, 2, "eval_accuracy"));
  EXPECT_FALSE(rule->OnEvaluation("a", 10, 100, 0.7));
  EXPECT_FALSE(rule->OnEvaluation("b", 10, 100, 0.5));
  EXPECT_FALSE(rule->OnEvaluation("c", 10, 100, 0.6));  // median 0.6: a tie continues
  EXPECT_TRUE(rule->OnEvaluation("d", 10, 100, 0.55));  // median of {0.7, 0.5, 0.6}
  EXPECT_FALSE(rule->OnEvaluation("e", 10, 100, 0.65));
  // A NaN is the worst value: it stops, and drags no one else's median to NaN.
  EXPECT_TRUE(rule->OnEvaluation("n", 10, 100, std::nan("")));
  // Others {0.7, 0.5, 0.6, 0.55, 0.65, -inf}: median (0.55 + 0.6) / 2 = 0.575.
  EXPECT_FALSE(rule->OnEvaluation("f", 10, 100, 0.58));
  EXPECT_TRUE(rule->OnEvaluation("g", 10, 100, 0.57));
}

TEST(ExpectedTotalSteps, AGroupOfOneNeverStops) {
  EXPECT_THAT(ExpectedTotalSteps(Asha(50, 2), 1, 400, 50), ElementsAre(400, 400, 400, 400));
  EXPECT_THAT(ExpectedTotalSteps(Median(100, 3), 1, 400, 100),
              ElementsAre(400, 400, 400, 400));  // decisions at 100, 200, 300
  EXPECT_THAT(ExpectedTotalSteps(EarlyStopSpec{}, 50, 400, 50), ElementsAre(400));
}

void ExpectShape(const std::vector<double>& e, long total) {
  ASSERT_FALSE(e.empty());
  EXPECT_EQ(e.back(), total);
  for (size_t k = 1; k < e.size(); ++k)
    EXPECT_LE(e[k - 1], e[k]) << "passed " << k;
}

// Synchronous successive halving with R = 2 from 50 of 400 steps: every task
// trains 50, half of them 50 more to 100, a quarter 100 more to 200, an
// eighth 200 more to 400: 50 + 25 + 25 + 25 = 125. Asynchronous ASHA lets a
// few early arrivals through each rung; in a large group that is within 5%.
// Given it passed rung 200 a task runs to 400; past 100 it reaches 200 and
// half go on: 300; past 50: 100 + (300 - 100) / 2 = 200.
TEST(ExpectedTotalSteps, AshaInALargeGroupIsCloseToSuccessiveHalving) {
  std::vector<double> e = ExpectedTotalSteps(Asha(50, 2), 2000, 400, 50);
  ASSERT_EQ(e.size(), 4u);
  std::cout << "E = " << e[0] << ", " << e[1] << ", " << e[2] << ", " << e[3] << "\n";
  ExpectShape(e, 400);
  EXPECT_NEAR(e[0], 125, 125 * 0.05);
  EXPECT_NEAR(e[1], 200, 200 * 0.05);
  EXPECT_NEAR(e[2], 300, 300 * 0.05);
  // Accuracy instead of loss changes nothing in the model.
  EXPECT_EQ(ExpectedTotalSteps(Asha(50, 2, "eval_accuracy"), 2000, 400, 50), e);
  // A small group stops less: early arrivals have little to be compared with.
  std::vector<double> small = ExpectedTotalSteps(Asha(50, 2), 4, 400, 50);
  ExpectShape(small, 400);
  EXPECT_GT(small[0], e[0]);
}

// Where tasks end, in a large group under ASHA with R = 2 from 50 of 400
// steps: successive halving stops half at 50, a quarter at 100, an eighth
// at 200 and lets an eighth finish (ASHA's early arrivals shift a little
// mass up each rung). Its mean is the expected total steps.
TEST(StopStepDistribution, AshaInALargeGroupEndsTasksAtItsRungsAsSuccessiveHalving) {
  std::vector<std::pair<long, double>> d = StopStepDistribution(Asha(50, 2), 2000, 400, 50);
  ASSERT_EQ(d.size(), 4u);
  const long steps[] = {50, 100, 200, 400};
  const double halving[] = {0.5, 0.25, 0.125, 0.125};
  double sum = 0.0, mean = 0.0;
  for (size_t k = 0; k < 4; ++k) {
    EXPECT_EQ(d[k].first, steps[k]);
    EXPECT_NEAR(d[k].second, halving[k], 0.03) << "at " << steps[k];
    sum += d[k].second;
    mean += d[k].second * static_cast<double>(d[k].first);
  }
  EXPECT_NEAR(sum, 1.0, 1e-9);
  EXPECT_NEAR(mean, ExpectedTotalSteps(Asha(50, 2), 2000, 400, 50)[0], 1e-6);
  // No rule, or no one to compare with: every task trains all its steps.
  EXPECT_THAT(StopStepDistribution(EarlyStopSpec{}, 50, 400, 50),
              ElementsAre(std::make_pair(400L, 1.0)));
  EXPECT_THAT(StopStepDistribution(Asha(50, 2), 1, 400, 50),
              ElementsAre(std::make_pair(400L, 1.0)));
}

TEST(ExpectedTotalSteps, MedianIsMonotoneAndEndsAtTheTotal) {
  std::vector<double> e = ExpectedTotalSteps(Median(100, 3), 200, 1000, 100);
  ASSERT_EQ(e.size(), 10u);  // decisions at 100, 200, ..., 900
  ExpectShape(e, 1000);
  EXPECT_LT(e[0], 1000);
  EXPECT_GE(e[0], 100);
  // Evaluations every step: decisions simulated at every m-th only, the
  // same shape.
  std::vector<double> dense = ExpectedTotalSteps(Median(100, 3), 200, 1000, 1);
  ASSERT_EQ(dense.size(), 901u);
  ExpectShape(dense, 1000);
  for (size_t k = 0; k + 1 < dense.size(); ++k)
    ASSERT_GT(dense[k], 100 + static_cast<double>(k)) << "passed " << k;
}

TEST(ExpectedTotalSteps, IsTheSameEveryRun) {
  EXPECT_EQ(ExpectedTotalSteps(Asha(50, 2), 37, 400, 50),
            ExpectedTotalSteps(Asha(50, 2), 37, 400, 50));
  EXPECT_EQ(ExpectedTotalSteps(Median(50, 3), 37, 400, 50),
            ExpectedTotalSteps(Median(50, 3), 37, 400, 50));
}

// Fast enough for the planner to ask per workload: 5000 tasks in 0.5 s
// (optimised builds; sanitisers and debug builds are slower).
TEST(ExpectedTotalSteps, FiveThousandTasksTakeUnderHalfASecond) {
  for (const EarlyStopSpec& spec : {Asha(10, 2), Median(10, 3)}) {
    auto start = std::chrono::steady_clock::now();
    std::vector<double> e = ExpectedTotalSteps(spec, 5000, 10000, 10);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ExpectShape(e, 10000);
    std::cout << spec.rule << ": " << seconds << " s, E = " << e[0] << "\n";
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    EXPECT_LT(seconds, 0.5) << spec.rule;
#endif
  }
}

}  // namespace
}  // namespace saturn

namespace saturn {
namespace {

// Two tasks one after the other (one slot): the first meets no rival at any
// rung and runs to 400; the second goes on at rung 50 only if it is the
// better of the two (probability 1/2), and then at every rung (ranks never
// change): 400 or 50 steps. E = (400 + (400 + 50) / 2) / 2 = 312.5; a task
// that passed rung 50 runs to 400.
TEST(ExpectedTotalSteps, TasksTakingTurnsOnOneSlotMatchTheWorkedFigure) {
  std::vector<double> e = ExpectedTotalSteps(Asha(50, 2), 2, 400, 50, 1);
  ASSERT_EQ(e.size(), 4u);
  EXPECT_NEAR(e[0], 312.5, 312.5 * 0.02);
  EXPECT_NEAR(e[1], 400, 1e-9);
  // Sixteen tasks on two slots reach the rungs in the order a cluster gives
  // them, not all at once: the estimate differs, and stays in shape.
  std::vector<double> two = ExpectedTotalSteps(Asha(50, 2), 16, 800, 50, 2);
  std::vector<double> all = ExpectedTotalSteps(Asha(50, 2), 16, 800, 50);
  ExpectShape(two, 800);
  EXPECT_NE(two[0], all[0]);
}

}  // namespace
}  // namespace saturn
