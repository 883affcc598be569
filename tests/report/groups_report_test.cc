// The report of a run's table groups (report/groups_summary.h): report.json's
// "groups" and each table task's group and rows, report.html's "Groups"
// section (a row per group, the histogram of held-out losses, the slowest
// groups), the summary in place of per-group charts and rows from more than
// kSummariseGroupTasksOver table tasks, and a Gantt of very many bars merged
// (report/gantt_merge.h).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "common/format.h"
#include "common/fs.h"
#include "report/gantt.h"
#include "report/gantt_merge.h"
#include "report/groups_summary.h"
#include "report/loss_histogram.h"
#include "report/run_report.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;
using nlohmann::json;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

// The part of `html` from `from` to the first `to` after it ("" if absent).
std::string Between(const std::string& html, const std::string& from, const std::string& to) {
  const size_t begin = html.find(from);
  if (begin == std::string::npos) return "";
  const size_t end = html.find(to, begin);
  return html.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// A group of the run the tests make: its task, rows, wall time and held-out
// loss (< 0: none, the task failed).
struct Made {
  std::string group;
  long rows;
  double wall_s;
  double eval_loss;
};

class GroupsReport : public ::testing::Test {
 protected:
  void SetUp() override {
    in_.run_dir = ::testing::TempDir() + "/saturn_groups_report_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(in_.run_dir);
    fs::create_directories(in_.run_dir);
    in_.workload = "stores.yaml";
    in_.cluster.nodes.resize(1);
    in_.cluster.nodes[0].name = "n0";
    in_.cluster.nodes[0].gpus = 2;
    in_.makespan_s = 100;
    in_.first_plan.makespan_s = 90;
  }

  // A task of no table, before the groups.
  void AddPooled() {
    RunReportTask t;
    t.name = "pooled";
    t.status = TaskStatus::kFinished;
    t.steps = t.steps_done = 50;
    t.attempts = 1;
    t.start_s = 0;
    t.end_s = 40;
    t.losses = {{0, 2.0}, {50, 0.5}};
    t.final_loss = 0.5;
    in_.tasks.push_back(t);
    in_.events.push_back(Evaluated("pooled", 50, 0.6, -1));
  }

  // A table task of group `g.group` ("stores-<group>", sweep
  // "stores@<group>"), its name suffixed for a sweep's variants.
  RunReportTask& AddGroupTask(const Made& g, const std::string& variant = "") {
    RunReportTask t;
    t.name = "stores-" + g.group + variant;
    t.group = g.group;
    t.sweep = "stores@" + g.group;
    t.train_rows = g.rows;
    t.steps = t.steps_done = 10;
    t.attempts = 1;
    t.start_s = 1;
    t.end_s = 1 + g.wall_s;
    t.losses = {{0, 1.0}, {10, 0.25}};
    t.final_loss = 0.25;
    t.status = g.eval_loss < 0 ? TaskStatus::kFailed : TaskStatus::kFinished;
    if (g.eval_loss >= 0) in_.events.push_back(Evaluated(t.name, 10, g.eval_loss, -1));
    in_.tasks.push_back(t);
    return in_.tasks.back();
  }

  static Event Evaluated(const std::string& task, long step, double loss, double accuracy) {
    Event e;
    e.t = 1;
    e.kind = EventKind::kTaskEvaluated;
    e.task = task;
    e.extra = {{"step", step}, {"eval_loss", loss}};
    if (accuracy >= 0) e.extra["eval_accuracy"] = accuracy;
    return e;
  }

  // `n` groups: rows, wall times and losses that differ from group to
  // group, every seventh without a held-out loss.
  std::vector<Made> MakeGroups(int n) {
    std::vector<Made> made;
    for (int i = 0; i < n; ++i) {
      made.push_back({"g" + std::to_string(i), 10 + (i * 37) % 101, 5.0 + (i * 13) % 29,
                      i % 7 == 3 ? -1.0 : 0.01 * (1 + (i * 17) % 43)});
      AddGroupTask(made.back());
    }
    return made;
  }

  std::string Html() const { return ReadFile(in_.run_dir + "/report.html"); }

  RunReportInput in_;
};

TEST_F(GroupsReport, EachTableTaskSaysItsGroupAndRowsInTheJson) {
  AddPooled();
  AddGroupTask({"north", 120, 3, 0.2});
  const json r = WriteRunReport(in_);
  ASSERT_EQ(r["tasks"].size(), 2u);
  EXPECT_FALSE(r["tasks"][0].contains("group"));
  EXPECT_FALSE(r["tasks"][0].contains("train_rows"));
  EXPECT_EQ(r["tasks"][1]["group"], "north");
  EXPECT_EQ(r["tasks"][1]["train_rows"], 120);
  EXPECT_EQ(r["groups"]["count"], 1);
  EXPECT_EQ(r["groups"]["tasks"], 1);
}

TEST_F(GroupsReport, TheTableHasOneRowPerGroupWithItsFigures) {
  AddPooled();
  const std::vector<Made> made = MakeGroups(60);
  WriteRunReport(in_);
  const std::string html = Html();
  const std::string table = Between(html, "<table id=\"groups-table\">", "</table>");
  ASSERT_FALSE(table.empty());
  EXPECT_EQ(Count(table, "<tr"), 1 + 60);  // the header and a row per group
  EXPECT_THAT(table, Not(HasSubstr("pooled")));
  // Group g5's row: group, task, status (some failed), rows, steps, final
  // loss, held-out loss, wall seconds.
  EXPECT_THAT(table,
              HasSubstr("<tr><td>g5</td><td>stores-g5</td><td>finished</td><td>" +
                        std::to_string(made[5].rows) + "</td><td>10</td><td>0.2500</td><td>" +
                        FormatLoss(made[5].eval_loss) + "</td><td>" +
                        FormatFixed(made[5].wall_s, 1) + "</td></tr>"));
  // g3 failed: no final or held-out loss.
  EXPECT_THAT(table, HasSubstr("<tr class=\"failed\"><td>g3</td>"));
  // Every column sorts: a header each, the numbers as numbers.
  EXPECT_EQ(Count(table, "data-type=\"num\""), 5);
  EXPECT_EQ(Count(table, "data-type=\"text\""), 3);
  EXPECT_THAT(html, HasSubstr("getElementById('groups-table')"));
}

TEST_F(GroupsReport, HistogramCountsEveryGroupWithAHeldOutLossInItsBin) {
  const std::vector<Made> made = MakeGroups(40);
  const json g = WriteRunReport(in_)["groups"];
  std::vector<double> losses;
  for (const Made& m : made)
    if (m.eval_loss >= 0) losses.push_back(m.eval_loss);
  EXPECT_EQ(g["with_eval_loss"], losses.size());
  EXPECT_EQ(g["without_eval_loss"], made.size() - losses.size());
  const std::vector<double> edges = g["eval_loss_histogram"]["edges"];
  const std::vector<long> counts = g["eval_loss_histogram"]["counts"];
  ASSERT_EQ(edges.size(), counts.size() + 1);
  EXPECT_GE(counts.size(), 8u);  // 2 sqrt(34 groups with one), from 8
  EXPECT_LE(counts.size(), 16u);
  EXPECT_TRUE(std::is_sorted(edges.begin(), edges.end()));
  std::vector<long> expected(counts.size(), 0);
  for (double loss : losses) {
    auto above = std::upper_bound(edges.begin(), edges.end(), loss);
    ASSERT_NE(above, edges.begin()) << loss << " is below the first edge";
    size_t bin =
        std::min<size_t>(static_cast<size_t>(above - edges.begin()) - 1, counts.size() - 1);
    ++expected[bin];
  }
  EXPECT_EQ(counts, expected);
  // Losses from 0.01 to 0.43 span less than two decades: even bins.
  EXPECT_EQ(g["eval_loss_histogram"]["scale"], "linear");
  // A bar per bin with a count, whose counts add up to the groups with one.
  const std::string html = Html();
  long drawn = 0;
  for (size_t at = html.find("class=\"bin\" data-count=\""); at != std::string::npos;
       at = html.find("class=\"bin\" data-count=\"", at + 1))
    drawn += std::stol(html.substr(at + 24));
  EXPECT_EQ(drawn, static_cast<long>(losses.size()));
  EXPECT_EQ(Count(html, "class=\"bin\""),
            std::count_if(counts.begin(), counts.end(), [](long c) { return c > 0; }));
  EXPECT_THAT(html,
              HasSubstr("without a held-out loss: " + std::to_string(made.size() - losses.size())));
}

// `n` losses from `lo` to `hi`, evenly spread on a log scale or a linear one.
std::vector<double> Spread(size_t n, double lo, double hi, bool log) {
  std::vector<double> out;
  for (size_t i = 0; i < n; ++i) {
    const double f = static_cast<double>(i) / static_cast<double>(n - 1);
    out.push_back(log ? lo * std::pow(hi / lo, f) : lo + (hi - lo) * f);
  }
  return out;
}

TEST(LossHistogram, ALogScaleWhereTheLossesSpanMoreThanTwoDecades) {
  const LossHistogram wide = HistogramOf(Spread(1000, 0.003, 40.0, true));
  EXPECT_TRUE(wide.log_scale);
  EXPECT_GE(wide.counts.size(), 20u);
  EXPECT_LE(wide.counts.size(), 30u);
  EXPECT_LE(wide.edges.front(), 0.003);
  EXPECT_GE(wide.edges.back(), 40.0);
  // Even on a log scale: each edge the same factor above the last.
  const double factor = wide.edges[1] / wide.edges[0];
  for (size_t i = 1; i < wide.edges.size(); ++i)
    EXPECT_NEAR(wide.edges[i] / wide.edges[i - 1], factor, 1e-9);
  EXPECT_EQ(wide.Total(), 1000);
  EXPECT_THAT(RenderHistogramSvg(wide, "t", "s"), HasSubstr("log scale"));

  const LossHistogram narrow = HistogramOf(Spread(1000, 0.5, 40.0, false));  // 80x: linear
  EXPECT_FALSE(narrow.log_scale);
  EXPECT_GE(narrow.counts.size(), 20u);
  EXPECT_LE(narrow.counts.size(), 30u);
  for (size_t i = 1; i < narrow.edges.size(); ++i)
    EXPECT_NEAR(narrow.edges[i] - narrow.edges[i - 1], narrow.edges[1] - narrow.edges[0], 1e-9);
  EXPECT_EQ(narrow.Total(), 1000);
  EXPECT_THAT(RenderHistogramSvg(narrow, "t", "s"), Not(HasSubstr("log scale")));

  // A few groups: fewer bins, the largest loss in the last.
  const LossHistogram few = HistogramOf({0.5, 0.7, 0.9, 40.0});
  EXPECT_GE(few.counts.size(), 8u);
  EXPECT_LE(few.counts.size(), 12u);
  EXPECT_EQ(few.counts.back(), 1);
  EXPECT_EQ(few.Total(), 4);

  const LossHistogram same = HistogramOf({0.25, 0.25});  // one value: still bins
  EXPECT_EQ(same.Total(), 2);
  EXPECT_TRUE(HistogramOf({}).counts.empty());
}

TEST_F(GroupsReport, TheSlowestGroupsLongestFirst) {
  const std::vector<Made> made = MakeGroups(30);
  const json g = WriteRunReport(in_)["groups"];
  std::vector<Made> by_wall = made;
  std::stable_sort(by_wall.begin(), by_wall.end(),
                   [](const Made& a, const Made& b) { return a.wall_s > b.wall_s; });
  ASSERT_EQ(g["slowest"].size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(g["slowest"][i]["group"], by_wall[i].group) << i;
    EXPECT_DOUBLE_EQ(g["slowest"][i]["wall_s"].get<double>(), by_wall[i].wall_s);
    EXPECT_EQ(g["slowest"][i]["train_rows"], by_wall[i].rows);
    EXPECT_EQ(g["slowest"][i]["steps"], 10);
  }
  const std::string slowest = Between(Html(), "<table class=\"slowest\">", "</table>");
  EXPECT_EQ(Count(slowest, "<tr>"), 11);
  EXPECT_LT(slowest.find(">" + by_wall[0].group + "<"), slowest.find(">" + by_wall[1].group + "<"));
}

TEST_F(GroupsReport, UpToTheThresholdEveryGroupHasItsChartAndRow) {
  AddPooled();
  MakeGroups(static_cast<int>(kSummariseGroupTasksOver));
  const json r = WriteRunReport(in_);
  EXPECT_FALSE(r["groups"]["summarised"].get<bool>());
  const std::string html = Html();
  EXPECT_THAT(html, HasSubstr("<h2 id=\"groups\">Groups</h2>"));
  // A chart per group that reported a loss, and the pooled task's.
  EXPECT_EQ(Count(html, "<polyline class=\"train\""), 1 + 50);
  const std::string tasks = Between(html, "<h2>Tasks</h2>", "</table>");
  EXPECT_EQ(Count(tasks, "<tr"), 1 + 1 + 50);
}

TEST_F(GroupsReport, OverTheThresholdTheWorstGroupsAreChartedAndTheRestSummarised) {
  AddPooled();
  const std::vector<Made> made = MakeGroups(static_cast<int>(kSummariseGroupTasksOver) + 1);
  const json r = WriteRunReport(in_);
  EXPECT_TRUE(r["groups"]["summarised"].get<bool>());
  EXPECT_EQ(r["tasks"].size(), made.size() + 1);  // report.json keeps every task
  const std::string html = Html();
  // Charts: the pooled task's and the six groups' of highest held-out loss.
  std::vector<Made> worst;
  for (const Made& m : made)
    if (m.eval_loss >= 0) worst.push_back(m);
  std::stable_sort(worst.begin(), worst.end(),
                   [](const Made& a, const Made& b) { return a.eval_loss > b.eval_loss; });
  EXPECT_EQ(Count(html, "<polyline class=\"train\""), 1 + 6);
  EXPECT_THAT(html, HasSubstr("<polyline class=\"train\" data-task=\"pooled\""));
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_THAT(html,
                HasSubstr("<polyline class=\"train\" data-task=\"stores-" + worst[i].group + "\""));
  }
  EXPECT_THAT(html, HasSubstr("The 6 groups of highest held-out loss of 51 groups"));
  // The task table: the pooled task alone, and a line for the groups'.
  const std::string tasks = Between(html, "<h2>Tasks</h2>", "</table>");
  EXPECT_EQ(Count(tasks, "<tr"), 2);
  EXPECT_THAT(tasks, HasSubstr("pooled"));
  EXPECT_THAT(html, HasSubstr("The 51 tasks of the table's groups are in the groups table"));
  EXPECT_EQ(Count(Between(html, "<table id=\"groups-table\">", "</table>"), "<tr"), 1 + 51);
}

TEST_F(GroupsReport, ASweepPerGroupMarksEachGroupsBest) {
  for (int i = 0; i < 3; ++i) {
    const std::string g = "s" + std::to_string(i);
    AddGroupTask({g, 50, 4, 0.3 + i}, "-lr1");
    AddGroupTask({g, 50, 6, 0.2 + i}, "-lr2");  // the better
  }
  const json r = WriteRunReport(in_)["groups"];
  EXPECT_EQ(r["count"], 3);
  EXPECT_EQ(r["tasks"], 6);
  EXPECT_EQ(r["with_eval_loss"], 3);                              // one loss a group: its best's
  EXPECT_DOUBLE_EQ(r["slowest"][0]["wall_s"].get<double>(), 10);  // its tasks' summed
  const std::string table = Between(Html(), "<table id=\"groups-table\">", "</table>");
  EXPECT_EQ(Count(table, "<tr class=\"best\"><td>s"), 3);
  EXPECT_THAT(table, HasSubstr("stores-s1-lr2 <span class=\"tag\">best</span>"));
  EXPECT_THAT(table, Not(HasSubstr("stores-s1-lr1 <span")));
}

TEST_F(GroupsReport, AnAccuracyColumnWhereAClassificationHasOne) {
  AddGroupTask({"a", 10, 1, -1});
  RunReportTask& b = AddGroupTask({"b", 10, 1, -1});
  b.status = TaskStatus::kFinished;
  in_.events.push_back(Evaluated(b.name, 10, 0.7, 0.625));
  WriteRunReport(in_);
  const std::string table = Between(Html(), "<table id=\"groups-table\">", "</table>");
  EXPECT_THAT(table, HasSubstr(">accuracy<"));
  EXPECT_THAT(table, HasSubstr("<td>0.7000</td><td>0.6250</td>"));
}

TEST_F(GroupsReport, ARunWithoutGroupsHasNoGroupsSection) {
  AddPooled();
  const json r = WriteRunReport(in_);
  EXPECT_FALSE(r.contains("groups"));
  EXPECT_FALSE(r["tasks"][0].contains("group"));
  const std::string html = Html();
  EXPECT_THAT(html, Not(HasSubstr("Groups")));
  EXPECT_THAT(html, Not(HasSubstr("<script")));
  EXPECT_THAT(html, Not(HasSubstr("class=\"bin\"")));
  EXPECT_EQ(Count(Between(html, "<h2>Tasks</h2>", "</table>"), "<tr"), 2);
  EXPECT_EQ(Count(html, "<polyline class=\"train\""), 1);
}

GanttBar Bar(const std::string& task, int gpu, double start, double end) {
  GanttBar b;
  b.node = "n0";
  b.gpu_ids = {gpu};
  b.start = start;
  b.end = end;
  b.label = task;
  b.color_key = task;
  return b;
}

TEST(GanttMerge, ManyNarrowBarsBecomeOneBarPerStretchOfADevice) {
  GanttChart chart;
  chart.nodes.resize(1);
  chart.nodes[0].name = "n0";
  chart.nodes[0].gpus = 2;
  // 2,000 one-second tasks on each GPU, a gap of 300 s on GPU 1 after the
  // first 1,000, and one long task on GPU 0 after them.
  for (int gpu = 0; gpu < 2; ++gpu) {
    double t = 0;
    for (int i = 0; i < 2000; ++i) {
      if (gpu == 1 && i == 1000) t += 300;
      chart.bars.push_back(Bar("g" + std::to_string(gpu) + "-" + std::to_string(i), gpu, t, t + 1));
      t += 1;
    }
  }
  chart.bars.push_back(Bar("long", 0, 2000, 3000));
  const GanttMerge m = MergeNarrowBars(chart);
  EXPECT_EQ(m.before, 4001);
  EXPECT_EQ(m.merged, 4000);
  EXPECT_EQ(m.into, 3);  // GPU 0's run, GPU 1's two runs either side of its gap
  ASSERT_EQ(chart.bars.size(), 4u);
  int merged = 0;
  for (const GanttBar& b : chart.bars) {
    if (b.color_key != kMergedBarKey) {
      EXPECT_EQ(b.label, "long");
      continue;
    }
    ++merged;
    EXPECT_EQ(b.label, b.gpu_ids[0] == 0 ? "2,000 tasks" : "1,000 tasks");
    EXPECT_THAT(b.detail, HasSubstr("more"));
  }
  EXPECT_EQ(merged, 3);
  EXPECT_THAT(MergedBarsNote(m), HasSubstr("4,000 of them"));
  // Few bars: left as they are.
  GanttChart few = chart;
  few.bars = {Bar("a", 0, 0, 1), Bar("b", 0, 1, 2)};
  EXPECT_EQ(MergeNarrowBars(few).merged, 0);
  EXPECT_EQ(few.bars.size(), 2u);
  EXPECT_EQ(MergedBarsNote(MergeNarrowBars(few)), "");
}

}  // namespace
}  // namespace saturn
