#include "planner/timeline.h"

#include <gtest/gtest.h>

#include <limits>

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

TEST(NodeTimeline, RejectsOverCapacity) {
  NodeTimeline t(2);
  t.Add(0, 10, 2);
  EXPECT_THROW(t.Add(5, 6, 1), std::logic_error);
  EXPECT_THROW(t.EarliestStart(0, 1, 3), std::logic_error);
}

}  // namespace
}  // namespace saturn
