#include "planner/timeline.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <limits>
#include <random>
#include <vector>

namespace saturn {
namespace {

TEST(NodeTimeline, EmptyNodeStartsAtReadyTime) {
  NodeTimeline t(8);
  EXPECT_EQ(t.EarliestStart(0, 10, 8), 0);
  EXPECT_EQ(t.EarliestStart(5, 10, 3), 5);
}

TEST(NodeTimeline, WaitsForEnoughFreeGpus) {
  NodeTimeline t(8);
  t.Add(0, 100, 6);
  EXPECT_EQ(t.EarliestStart(0, 50, 2), 0);
  EXPECT_EQ(t.EarliestStart(0, 50, 3), 100);
  EXPECT_EQ(t.UsedAt(50), 6);
  EXPECT_EQ(t.UsedAt(100), 0);
}

TEST(NodeTimeline, BackfillsIntoAGapThatIsLongEnough) {
  NodeTimeline t(4);
  t.Add(0, 10, 4);
  t.Add(30, 60, 4);
  EXPECT_EQ(t.EarliestStart(0, 20, 2), 10);  // the gap [10, 30) fits 20 s
  EXPECT_EQ(t.EarliestStart(0, 21, 2), 60);  // but not 21 s
  t.Add(10, 30, 2);
  EXPECT_EQ(t.EarliestStart(0, 5, 2), 10);  // two GPUs still free in the gap
  EXPECT_EQ(t.EarliestStart(0, 5, 3), 60);
  EXPECT_EQ(t.LastEnd(), 60);
}

TEST(NodeTimeline, EarliestStartBeforeACutoffIsTheSameOrInfinity) {
  NodeTimeline t(4);
  t.Add(0, 10, 4);
  t.Add(30, 60, 4);
  EXPECT_EQ(t.EarliestStartBefore(0, 20, 2, 11), 10);  // found before the cutoff
  EXPECT_EQ(t.EarliestStartBefore(0, 20, 2, 10), std::numeric_limits<double>::infinity());
  EXPECT_EQ(t.EarliestStartBefore(0, 21, 2, 59), std::numeric_limits<double>::infinity());
  EXPECT_EQ(t.EarliestStartBefore(0, 21, 2, 61), 60);
  EXPECT_EQ(t.EarliestStartBefore(0, 1, 1, 0), std::numeric_limits<double>::infinity());
}

// The definition, scanned naively: the first candidate start (the ready
// time or an interval's end) whose window [t, t + d) never has more than
// capacity - gpus in use.
double NaiveEarliest(const std::vector<std::array<double, 3>>& busy, int capacity, double ready,
                     double d, int gpus) {
  std::vector<double> candidates = {ready};
  for (const auto& b : busy)
    if (b[1] >= ready) candidates.push_back(b[1]);
  std::sort(candidates.begin(), candidates.end());
  auto used = [&](double t) {
    int n = 0;
    for (const auto& b : busy)
      if (b[0] <= t && t < b[1]) n += static_cast<int>(b[2]);
    return n;
  };
  for (double t : candidates) {
    bool fits = used(t) <= capacity - gpus;
    for (const auto& b : busy)
      if (b[0] > t && b[0] < t + d) fits = fits && used(b[0]) <= capacity - gpus;
    if (fits) return t;
  }
  return std::numeric_limits<double>::infinity();
}

TEST(NodeTimeline, EarliestStartIsTheNaiveScansOnRandomSchedules) {
  // List scheduling fills a node from time 0 (a busy prefix the timeline
  // skips), with gaps left where wide tasks waited.
  std::mt19937 rng(7);
  for (int capacity : {1, 2, 4}) {
    NodeTimeline t(capacity);
    std::vector<std::array<double, 3>> busy;
    for (int k = 0; k < 300; ++k) {
      int gpus = 1 + static_cast<int>(rng() % static_cast<unsigned>(capacity));
      double d = 1 + static_cast<double>(rng() % 20);
      double ready = static_cast<double>(rng() % 50) * (k % 3 == 0 ? 10 : 1);
      double got = t.EarliestStart(ready, d, gpus);
      ASSERT_EQ(got, NaiveEarliest(busy, capacity, ready, d, gpus)) << capacity << " #" << k;
      t.Add(got, got + d, gpus);
      busy.push_back({got, got + d, static_cast<double>(gpus)});
    }
  }
}

TEST(NodeTimeline, RejectsOverCapacity) {
  NodeTimeline t(2);
  t.Add(0, 10, 2);
  EXPECT_THROW(t.Add(5, 6, 1), std::logic_error);
  EXPECT_THROW(t.EarliestStart(0, 1, 3), std::logic_error);
}

}  // namespace
}  // namespace saturn
