// The pictures: Gantt charts of plans (one box per contiguous run of a task's
// GPUs, outlines for a second timeline) and a run's report.json and
// report.html.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "common/format.h"
#include "common/fs.h"
#include "report/gantt.h"
#include "report/hyperparameters.h"
#include "report/loss_charts.h"
#include "report/phrases.h"
#include "report/run_costs.h"
#include "report/run_report.h"
#include "report/svg.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

Cluster TwoNodes() {
  Cluster c;
  c.nodes.resize(2);
  c.nodes[0].name = "n0";
  c.nodes[0].gpus = 4;
  c.nodes[1].name = "n1";
  c.nodes[1].gpus = 2;
  return c;
}

Event Happened(double t, EventKind kind, std::string task) {
  Event e;
  e.t = t;
  e.kind = kind;
  e.task = std::move(task);
  return e;
}

Event Started(double t, std::string task, std::string technique, std::string node,
              std::vector<int> ids) {
  Event e = Happened(t, EventKind::kTaskStarted, std::move(task));
  e.technique = std::move(technique);
  e.gpus = static_cast<int>(ids.size());
  e.node = std::move(node);
  e.gpu_ids = std::move(ids);
  return e;
}

PlanTask Placed(std::string task, std::string technique, std::string node, std::vector<int> ids,
                double start, double end) {
  PlanTask t;
  t.task = std::move(task);
  t.technique = std::move(technique);
  t.gpus = static_cast<int>(ids.size());
  t.node = std::move(node);
  t.gpu_ids = std::move(ids);
  t.start_s = start;
  t.end_s = end;
  return t;
}

Plan TwoTaskPlan() {
  Plan p;
  p.solver = "auto";
  p.status = "optimal";
  p.makespan_s = 300;
  p.lower_bound_s = 250;
  p.tasks = {Placed("gpt", "fsdp", "n0", {0, 1, 2}, 0, 300),
             Placed("vit", "ddp", "n1", {0, 1}, 0, 120)};
  return p;
}

TEST(Gantt, FromPlanHasOneBarPerTaskWithItsDevicesAndTimes) {
  GanttChart chart = GanttFromPlan(TwoTaskPlan(), TwoNodes(), "the plan");
  EXPECT_EQ(chart.title, "the plan");
  EXPECT_THAT(chart.subtitle, HasSubstr("solver auto · proven optimal · makespan 5m00s"));
  EXPECT_THAT(chart.subtitle, HasSubstr("2 tasks"));
  ASSERT_EQ(chart.bars.size(), 2u);
  const GanttBar& gpt = chart.bars[0];
  EXPECT_EQ(gpt.node, "n0");
  EXPECT_EQ(gpt.gpu_ids, (std::vector<int>{0, 1, 2}));
  EXPECT_DOUBLE_EQ(gpt.start, 0);
  EXPECT_DOUBLE_EQ(gpt.end, 300);
  EXPECT_THAT(gpt.label, HasSubstr("gpt"));
  EXPECT_THAT(gpt.label, HasSubstr("fsdp"));
  EXPECT_EQ(gpt.color_key, "gpt");
  EXPECT_FALSE(gpt.outline_only);
  EXPECT_EQ(chart.nodes.size(), 2u);
}

TEST(Gantt, SvgDrawsARowLabelPerGpuAndABoxWithTooltipPerBar) {
  std::string svg = RenderGanttSvg(GanttFromPlan(TwoTaskPlan(), TwoNodes(), "the plan"));
  EXPECT_EQ(svg.rfind("<svg", 0), 0u) << svg.substr(0, 80);
  EXPECT_THAT(svg, HasSubstr("</svg>"));
  EXPECT_THAT(svg, HasSubstr("the plan"));
  EXPECT_THAT(svg, HasSubstr(">n0<"));
  EXPECT_THAT(svg, HasSubstr(">n1<"));
  EXPECT_EQ(Count(svg, ">gpu "), 6);  // 4 + 2 GPU rows, labelled
  // Each task's box carries its tooltip.
  EXPECT_EQ(Count(svg, "<title>gpt: fsdp on 3 GPU(s) of n0"), 1);
  EXPECT_EQ(Count(svg, "<title>vit: ddp on 2 GPU(s) of n1"), 1);
  EXPECT_THAT(svg, Not(HasSubstr("stroke-dasharray")));  // no outline bars
}

// Mixed GPU types: each node's type is written under its name.
TEST(Gantt, NamesEachNodesGpuType) {
  Cluster c = TwoNodes();
  c.nodes[0].gpu_type = "A100";
  c.nodes[1].gpu_type = "V100";
  std::string svg = RenderGanttSvg(GanttFromPlan(TwoTaskPlan(), c, "mixed"));
  EXPECT_THAT(svg, HasSubstr(">A100<"));
  EXPECT_THAT(svg, HasSubstr(">V100<"));
  EXPECT_THAT(RenderGanttSvg(GanttFromPlan(TwoTaskPlan(), TwoNodes(), "one type")),
              Not(HasSubstr(">A100<")));
}

// Every node's row says its GPU type, a one-device node's too: where its
// row leaves no room under the name, the type stands beside it.
TEST(Gantt, NamesEveryNodesGpuTypeOnAOneDeviceNodeToo) {
  auto node = [](std::string name, int gpus, std::string type) {
    ClusterNode n;
    n.name = std::move(name);
    n.gpus = gpus;
    n.gpu_type = std::move(type);
    return n;
  };
  Cluster c;
  c.nodes = {node("big0", 4, "A100"), node("big1", 4, "A100"), node("solo", 1, "V100")};
  Plan p = TwoTaskPlan();
  p.tasks = {Placed("gpt", "fsdp", "big0", {0, 1, 2}, 0, 300),
             Placed("vit", "single", "solo", {0}, 0, 120)};
  std::string svg = RenderGanttSvg(GanttFromPlan(p, c, "mixed"));
  EXPECT_EQ(Count(svg, ">A100<"), 2);  // under each big node's name
  EXPECT_EQ(Count(svg, ">V100<"), 1);  // beside the one-device node's
  EXPECT_THAT(svg, HasSubstr("<title>solo: 1 GPU of V100</title>"));
  // Many nodes (rows of 12 px: two-device nodes leave no room under the
  // name either): still every node.
  Cluster many;
  for (int i = 0; i < 30; ++i)
    many.nodes.push_back(node("n" + std::to_string(i), 2, i % 2 ? "H100" : "L4"));
  p.tasks = {Placed("gpt", "ddp", "n0", {0, 1}, 0, 300)};
  svg = RenderGanttSvg(GanttFromPlan(p, many, "many"));
  EXPECT_EQ(Count(svg, ">H100<"), 15);
  EXPECT_EQ(Count(svg, ">L4<"), 15);
}

// A task on GPUs 0, 1 and 7 is one task in two parts: both parts carry its
// label and a connector in its colour joins them across the GPUs between.
TEST(Gantt, JoinsThePartsOfATaskOnGpusApart) {
  Cluster c;
  c.nodes.resize(1);
  c.nodes[0].name = "n0";
  c.nodes[0].gpus = 8;
  Plan p = TwoTaskPlan();
  p.tasks = {Placed("gpt", "fsdp", "n0", {0, 1, 7}, 0, 300),
             Placed("vit", "ddp", "n0", {2, 3, 4, 5, 6}, 0, 300)};
  GanttChart chart = GanttFromPlan(p, c, "split");
  std::string svg = RenderGanttSvg(chart);
  EXPECT_EQ(Count(svg, ">gpt · fsdp ×3</text>"), 2);  // the label on each part
  EXPECT_EQ(Count(svg, ">vit · ddp ×5</text>"), 1);
  EXPECT_EQ(Count(svg, "<g class=\"join\">"), 1);  // one connector, for gpt only
  EXPECT_THAT(svg, HasSubstr("<title>gpt · fsdp ×3: one task on GPUs 0-1, 7 of n0</title>"));
  EXPECT_EQ(Count(svg, "[one task, drawn in 2 parts: GPUs 0-1, 7]</title>"), 2);
  // The connector runs from the middle of GPU 1's row to the middle of GPU
  // 7's, in gpt's dark colour, over vit's bar (drawn after it), at gpt's end.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(svg, m,
                                std::regex("<g class=\"join\"><title>[^<]*</title><line x1=\""
                                           "([0-9.]+)\" y1=\"([0-9.]+)\" x2=\"[0-9.]+\" "
                                           "y2=\"([0-9.]+)\" stroke=\"([^\"]+)\"")));
  EXPECT_EQ(m[4], chart.colors.at("gpt").line);
  EXPECT_NEAR(std::stod(m[1]), 110 + 1100 - 3, 0.11);    // the plot ends at x = 1210
  EXPECT_NEAR(std::stod(m[2]), 56 + 1 * 20 + 10, 0.11);  // rows are 20 px from y = 56
  EXPECT_NEAR(std::stod(m[3]), 56 + 7 * 20 + 10, 0.11);
  EXPECT_GT(svg.find("<g class=\"join\">"), svg.find(">vit · ddp ×5</text>"));
}

// Tooltips give times as `saturn plan` prints them (FormatDuration), both
// ends and the length, for a plan's bars and a run's.
TEST(Gantt, TooltipsGiveTimesAsTheTerminalDoes) {
  Plan p = TwoTaskPlan();
  p.status = "time_limit";
  p.makespan_s = 81945.8;
  p.tasks = {Placed("gpt", "fsdp", "n0", {0, 1, 2}, 0, 81945.8),
             Placed("vit", "ddp", "n1", {0, 1}, 3600, 10020)};
  GanttChart chart = GanttFromPlan(p, TwoNodes(), "long");
  EXPECT_EQ(GanttSpan(0, 81945.8), FormatDuration(0) + " → " + FormatDuration(81945.8) + " (" +
                                       FormatDuration(81945.8) + ")");
  EXPECT_EQ(GanttSpan(0, 81945.8), "0.0s → 22h46m (22h46m)");
  std::string svg = RenderGanttSvg(chart);
  EXPECT_THAT(svg, HasSubstr("<title>gpt: fsdp on 3 GPU(s) of n0, 0.0s → 22h46m (22h46m)</title>"));
  EXPECT_THAT(svg, HasSubstr("<title>vit: ddp on 2 GPU(s) of n1, 1h00m → 2h47m (1h47m)</title>"));
  // The plan's status in words, as `saturn plan` says it.
  EXPECT_THAT(chart.subtitle,
              HasSubstr("stopped at its time limit (not proven optimal) · makespan 22h46m"));
  EXPECT_THAT(chart.subtitle, Not(HasSubstr("time_limit")));
}

// Twelve tasks get twelve different colours; from the 13th the hues come
// round again with a dashed line, so no two of the first 48 look alike.
TEST(Gantt, PaletteTellsTasksApart) {
  std::set<std::string> fills, lines;
  std::set<std::pair<std::string, std::string>> looks;
  for (size_t i = 0; i < 48; ++i) {
    TaskColor c = PaletteColor(i);
    if (i < 12) {
      fills.insert(c.fill);
      lines.insert(c.line);
      EXPECT_EQ(c.dash, "") << i;
    }
    looks.insert({c.line, c.dash});
  }
  EXPECT_EQ(fills.size(), 12u);
  EXPECT_EQ(lines.size(), 12u);
  EXPECT_EQ(looks.size(), 48u);
  EXPECT_EQ(PaletteColor(12).line, PaletteColor(0).line);
  EXPECT_NE(PaletteColor(12).dash, "");
  // A plan's chart colours its tasks in the plan's order.
  GanttChart chart = GanttFromPlan(TwoTaskPlan(), TwoNodes(), "x");
  EXPECT_EQ(chart.colors.at("gpt").fill, PaletteColor(0).fill);
  EXPECT_EQ(chart.colors.at("vit").fill, PaletteColor(1).fill);
  EXPECT_THAT(RenderGanttSvg(chart), HasSubstr("fill=\"" + PaletteColor(1).fill + "\""));
}

TEST(Gantt, SplitsABarIntoOneBoxPerRunOfConsecutiveGpus) {
  Plan p = TwoTaskPlan();
  p.tasks = {Placed("gpt", "fsdp", "n0", {0, 1, 3}, 0, 300)};
  std::string svg = RenderGanttSvg(GanttFromPlan(p, TwoNodes(), "split"));
  EXPECT_EQ(Count(svg, "<title>gpt: fsdp"), 2);  // GPUs 0-1 and GPU 3
}

TEST(Gantt, OutlineBarsAreDashedAndBarsOnUnknownNodesAreLeftOut) {
  GanttChart chart = GanttFromPlan(TwoTaskPlan(), TwoNodes(), "overlay");
  chart.bars[1].outline_only = true;
  chart.bars.push_back({"elsewhere", {0}, 0, 10, "ghost", "ghost tooltip", "ghost", false});
  std::string svg = RenderGanttSvg(chart);
  EXPECT_EQ(Count(svg, "stroke-dasharray"), 1);
  // The outline is a dark shade of its task's colour, as that task's bar is.
  EXPECT_THAT(svg, HasSubstr("stroke=\"" + chart.colors.at(chart.bars[1].color_key).line +
                             "\" stroke-dasharray"));
  EXPECT_THAT(svg, Not(HasSubstr("ghost")));
}

TEST(Gantt, EscapesTextForXml) {
  Plan p = TwoTaskPlan();
  p.tasks = {Placed("a<b&c", "ddp", "n1", {0, 1}, 0, 10)};
  std::string svg = RenderGanttSvg(GanttFromPlan(p, TwoNodes(), "x"));
  EXPECT_THAT(svg, HasSubstr("a&lt;b&amp;c"));
  EXPECT_THAT(svg, Not(HasSubstr("a<b&c")));
}

RunReportTask Task(std::string name, std::string status, std::string technique, int gpus,
                   std::string node, long steps_done, long steps) {
  RunReportTask t;
  t.name = std::move(name);
  t.status = *TaskStatusFromString(status);
  t.technique = std::move(technique);
  t.node = std::move(node);
  t.gpus = gpus;
  t.steps_done = steps_done;
  t.steps = steps;
  t.attempts = 1;
  return t;
}

class RunReport : public ::testing::Test {
 protected:
  void SetUp() override {
    in_.run_dir = ::testing::TempDir() + "/saturn_report_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(in_.run_dir);
    fs::create_directories(in_.run_dir);
    in_.workload = "workload.yaml";
    in_.cluster = TwoNodes();
    in_.first_plan = TwoTaskPlan();
    in_.makespan_s = 360;
    in_.profiling_s = 12;
    in_.planning_s = 3;
    RunReportTask gpt = Task("gpt", "finished", "fsdp", 3, "n0", 100, 100);
    gpt.start_s = 0;
    gpt.end_s = 360;
    gpt.final_loss = 1.5;
    gpt.losses = {{10, 3.0}, {50, 2.0}, {100, 1.5}};
    gpt.why = "its fastest configuration";
    RunReportTask vit = Task("vit", "failed", "ddp", 2, "n1", 20, 50);
    vit.attempts = 3;
    vit.failures = 3;
    vit.error = "worker failed (exit 1)";
    in_.tasks = {gpt, vit};
    in_.events = {
        Started(0, "gpt", "fsdp", "n0", {0, 1, 2}), Started(0, "vit", "ddp", "n1", {0, 1}),
        Happened(90, EventKind::kPlanSwitched, ""), Happened(100, EventKind::kTaskFailed, "vit"),
        Happened(360, EventKind::kTaskFinished, "gpt")};
  }

  RunReportInput in_;
};

TEST_F(RunReport, JsonSummarisesTheRunAndEveryTask) {
  nlohmann::json r = WriteRunReport(in_);
  EXPECT_EQ(r["workload"], "workload.yaml");
  EXPECT_DOUBLE_EQ(r["makespan_s"].get<double>(), 360);
  EXPECT_DOUBLE_EQ(r["planned_makespan_s"].get<double>(), 300);
  EXPECT_DOUBLE_EQ(r["actual_over_planned"].get<double>(), 1.2);
  EXPECT_EQ(r["plan_switches"], 1);
  ASSERT_EQ(r["tasks"].size(), 2u);
  EXPECT_EQ(r["tasks"][0]["task"], "gpt");
  EXPECT_EQ(r["tasks"][0]["loss_curve"], nlohmann::json::parse("[[10,3.0],[50,2.0],[100,1.5]]"));
  EXPECT_EQ(r["tasks"][1]["status"], "failed");
  EXPECT_EQ(r["tasks"][0]["attempts"], 1);
  EXPECT_EQ(r["tasks"][0]["failures"], 0);
  EXPECT_EQ(r["tasks"][1]["attempts"], 3);
  EXPECT_EQ(r["tasks"][1]["failures"], 3);
  EXPECT_EQ(r["tasks"][1]["error"], "worker failed (exit 1)");
  EXPECT_EQ(r["tasks"][0]["why"], "its fastest configuration");
  EXPECT_THAT(ReadFile(in_.run_dir + "/report.html"), HasSubstr("<th>why this configuration</th>"));
  EXPECT_THAT(ReadFile(in_.run_dir + "/report.html"),
              HasSubstr("<td>its fastest configuration</td>"));
  // The file holds the same JSON.
  EXPECT_EQ(nlohmann::json::parse(ReadFile(in_.run_dir + "/report.json")), r);
}

// A service's first plan is made when the first workload comes (its
// baselines' from_s): the time before it, the service idle, counts on
// neither side, so the figures are those of the same run started at once.
TEST_F(RunReport, ComparesWithCurrentPracticeFromWhenTheFirstPlanWasMade) {
  in_.tasks[1].status = TaskStatus::kFinished;
  in_.first_plan.extra["baselines"] = {{"current-practice", {{"makespan_s", 750.0}}}};
  nlohmann::json at_once = WriteRunReport(in_)["current_practice"];
  ASSERT_TRUE(at_once.is_object());
  EXPECT_EQ(at_once["from_s"], 0.0);
  for (double idle : {1000.0, 100000.0}) {
    RunReportInput later = in_;
    later.first_plan.makespan_s += idle;
    later.makespan_s += idle;
    later.first_plan.extra["baselines"] = {
        {"current-practice", {{"makespan_s", 750.0 + idle}, {"from_s", idle}}}};
    nlohmann::json cp = WriteRunReport(later)["current_practice"];
    EXPECT_EQ(cp["from_s"], idle);
    for (const char* key : {"estimated_makespan_s", "speedup_planned", "speedup_measured",
                            "speedup_measured_with_profiling_and_planning"}) {
      EXPECT_NEAR(cp[key].get<double>(), at_once[key].get<double>(), 1e-9) << key << " " << idle;
    }
  }
}

// A run says what current practice would have taken, from its first plan's
// baselines (estimated from the same profile), and the speed-ups.
TEST_F(RunReport, ComparesTheRunWithCurrentPractice) {
  nlohmann::json r = WriteRunReport(in_);
  EXPECT_TRUE(r["current_practice"].is_null()) << "the plan records no baselines";
  EXPECT_THAT(ReadFile(in_.run_dir + "/report.html"), Not(HasSubstr("Current practice")));
  in_.first_plan.extra["baselines"] = {{"current-practice", {{"makespan_s", 750.0}}},
                                       {"min", {{"makespan_s", 400.0}}}};
  // vit failed: the run did not train what the plan planned, so no measured
  // speed-up, only the estimate and the planned one.
  r = WriteRunReport(in_);
  EXPECT_TRUE(r["current_practice"]["speedup_measured"].is_null());
  EXPECT_DOUBLE_EQ(r["current_practice"]["speedup_planned"].get<double>(), 2.5);
  EXPECT_THAT(ReadFile(in_.run_dir + "/report.html"), HasSubstr("no measured speed-up"));
  in_.tasks[1].status = TaskStatus::kFinished;
  r = WriteRunReport(in_);
  EXPECT_EQ(r["baselines"]["min"]["makespan_s"], 400.0);
  const nlohmann::json& cp = r["current_practice"];
  EXPECT_DOUBLE_EQ(cp["estimated_makespan_s"].get<double>(), 750);
  EXPECT_DOUBLE_EQ(cp["speedup_planned"].get<double>(), 2.5);  // 750 / 300
  EXPECT_DOUBLE_EQ(cp["speedup_measured"].get<double>(), 750.0 / 360);
  EXPECT_DOUBLE_EQ(cp["speedup_measured_with_profiling_and_planning"].get<double>(),
                   750.0 / (360 + 12 + 3));
  EXPECT_THAT(cp["note"].get<std::string>(), HasSubstr("estimated from the profile"));
  EXPECT_THAT(ReadFile(in_.run_dir + "/report.html"),
              HasSubstr("would take about <b>12m30s</b> (estimated from the same profile): this "
                        "run was <b>2.08&times; faster</b> (2.00&times; faster counting "
                        "profiling and planning; the plan promised 2.50&times; faster)"));
  // With current practice's plan, its Gantt beneath the run's.
  EXPECT_EQ(Count(ReadFile(in_.run_dir + "/report.html"), "<svg"), 2);
  Plan practice = TwoTaskPlan();
  practice.solver = "current-practice";
  in_.first_plan.extra["baselines"]["current-practice"]["plan"] = PlanToJson(practice);
  WriteRunReport(in_);
  std::string html = ReadFile(in_.run_dir + "/report.html");
  EXPECT_EQ(Count(html, "<svg"), 3);
  EXPECT_THAT(html, HasSubstr("Current practice (estimated from the same profile): each task "
                              "alone on a whole node"));
}

TEST_F(RunReport, HtmlHasTheGanttLossCurvesAndTaskTable) {
  WriteRunReport(in_);
  std::string html = ReadFile(in_.run_dir + "/report.html");
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
  EXPECT_THAT(html, HasSubstr("</html>"));
  // Gantt plus a loss chart for gpt (alone); vit reported no loss: a line says so.
  EXPECT_EQ(Count(html, "<svg"), 2);
  // Actual bars (filled, tooltips say how each ended) over the first plan (dashed).
  EXPECT_THAT(html, HasSubstr("task_finished"));
  EXPECT_THAT(html, HasSubstr("task_failed"));
  // Their times as the plan's tooltips and the terminal give them.
  EXPECT_THAT(html, HasSubstr("<title>gpt (fsdp) 0.0s → 6m00s (6m00s), task_finished</title>"));
  EXPECT_EQ(Count(html, "stroke-dasharray"), 2);
  EXPECT_EQ(Count(html, "<polyline"), 1);  // gpt's curve
  EXPECT_THAT(html, HasSubstr("<p class=\"no-loss\">No loss reported: <b>vit</b> (failed).</p>"));
  // The table: a header and a row per task, the failed one marked.
  EXPECT_EQ(Count(html, "<tr"), 3);
  EXPECT_EQ(Count(html, "<tr class=\"failed\">"), 1);
  EXPECT_THAT(html, HasSubstr("<td>100/100</td>"));
  EXPECT_THAT(html, HasSubstr("<td>20/50</td>"));
  EXPECT_THAT(html, HasSubstr("1 plan switch,"));
}

Event Evaluated(double t, std::string task, long step, double loss, double accuracy) {
  Event e = Happened(t, EventKind::kTaskEvaluated, std::move(task));
  e.extra = {{"step", step}, {"eval_loss", loss}, {"eval_s", 0.5}};
  if (accuracy >= 0) e.extra["eval_accuracy"] = accuracy;
  return e;
}

TEST_F(RunReport, EvaluationCurvesAndTheBestTaskOfEachSweep) {
  // A sweep of three (one unfinished) and a task alone.
  RunReportTask a = Task("mlp-lr0.1", "finished", "single", 1, "n0", 100, 100);
  RunReportTask b = Task("mlp-lr0.01", "finished", "single", 1, "n0", 100, 100);
  RunReportTask c = Task("mlp-lr1", "queued", "single", 1, "n1", 50, 100);
  a.sweep = b.sweep = c.sweep = "mlp";
  a.losses = b.losses = {{10, 2.0}, {99, 1.0}};
  RunReportTask alone = Task("gpt", "finished", "ddp", 2, "n1", 100, 100);
  in_.tasks = {a, b, c, alone};
  in_.events = {Evaluated(10, "mlp-lr0.1", 50, 1.4, 0.5), Evaluated(20, "mlp-lr0.1", 100, 1.2, 0.6),
                Evaluated(11, "mlp-lr0.01", 50, 1.3, 0.55),
                // b resumed and evaluated step 100 twice: the later one counts.
                Evaluated(21, "mlp-lr0.01", 100, 1.5, 0.5),
                Evaluated(30, "mlp-lr0.01", 100, 1.1, 0.7),
                // c's evaluation at 50 is not final: it cannot win.
                Evaluated(12, "mlp-lr1", 50, 0.2, 0.9)};
  nlohmann::json r = WriteRunReport(in_);
  ASSERT_EQ(r["best"].size(), 1u);  // gpt does not evaluate
  EXPECT_EQ(r["best"][0]["sweep"], "mlp");
  EXPECT_EQ(r["best"][0]["task"], "mlp-lr0.01");
  EXPECT_DOUBLE_EQ(r["best"][0]["final_eval_loss"].get<double>(), 1.1);
  EXPECT_DOUBLE_EQ(r["best"][0]["final_eval_accuracy"].get<double>(), 0.7);
  EXPECT_EQ(r["best"][0]["evaluated"], 2);
  EXPECT_EQ(r["best"][0]["tasks"], 3);
  EXPECT_EQ(r["tasks"][1]["eval_curve"],
            nlohmann::json::parse(R"([{"step":50,"loss":1.3,"accuracy":0.55},)"
                                  R"({"step":100,"loss":1.1,"accuracy":0.7}])"));
  EXPECT_DOUBLE_EQ(r["tasks"][0]["final_eval_loss"].get<double>(), 1.2);
  EXPECT_TRUE(r["tasks"][2]["final_eval_loss"].is_null());
  EXPECT_TRUE(r["tasks"][3]["eval_curve"].empty());
  std::string html = ReadFile(in_.run_dir + "/report.html");
  EXPECT_THAT(html, HasSubstr("mlp: <b>mlp-lr0.01</b>, evaluation loss 1.1000"));
  EXPECT_THAT(html, HasSubstr("1.1000 (best)"));
  EXPECT_EQ(Count(html, ": evaluation loss</title>"), 3);  // dashed over a, b and c
  // The task table's evaluation columns; c, unfinished, shows its latest "@ 50".
  EXPECT_THAT(html, HasSubstr("<th>eval loss</th><th>eval accuracy</th>"));
  EXPECT_THAT(html, HasSubstr("0.2000 <span class=\"none\">@ 50</span>"));
  // Without any evaluation, no evaluation columns.
  in_.events.clear();
  WriteRunReport(in_);
  EXPECT_THAT(ReadFile(in_.run_dir + "/report.html"), Not(HasSubstr("<th>eval loss</th>")));
}

// The points of a task's curve of `kind` ("train", or "eval"'s polyline),
// as drawn: "x,y" each.
std::vector<std::string> CurvePoints(const std::string& html, const std::string& kind,
                                     const std::string& task) {
  std::string open = kind == "train"
                         ? "<polyline class=\"train\" data-task=\"" + task + "\" points=\""
                         : "<g class=\"eval\" data-task=\"" + task + "\">";
  size_t at = html.find(open);
  if (at == std::string::npos) return {};
  at = html.find("points=\"", at) + 8;
  std::vector<std::string> points;
  std::string text = html.substr(at, html.find('"', at) - at), point;
  for (std::istringstream in(text); in >> point;)
    points.push_back(point);
  return points;
}

// The stroke of a task's training curve.
std::string CurveStroke(const std::string& html, const std::string& task) {
  std::smatch m;
  std::regex re("<polyline class=\"train\" data-task=\"" + task +
                "\" points=\"[^\"]*\" fill=\"none\" stroke=\"([^\"]+)\"");
  return std::regex_search(html, m, re) ? m[1].str() : "";
}

// One chart per sweep, its tasks on one y-axis: the same loss at the same
// step is the same point, whichever task it belongs to; a task written
// alone has its own chart.
TEST_F(RunReport, LossChartsGroupASweepOnOneAxis) {
  RunReportTask a = Task("gpt-lr1e-3", "finished", "ddp", 2, "n0", 100, 100);
  RunReportTask b = Task("gpt-lr3e-3", "finished", "ddp", 2, "n0", 100, 100);
  RunReportTask c = Task("gpt-lr1e-2", "finished", "ddp", 2, "n1", 100, 100);
  a.sweep = b.sweep = c.sweep = "gpt";
  a.losses = {{0, 6.0}, {100, 2.0}};
  b.losses = {{0, 4.0}, {100, 2.0}};
  c.losses = {{0, 3.0}, {100, 0.5}};
  RunReportTask mlp = Task("mlp", "finished", "single", 1, "n1", 50, 50);
  mlp.losses = {{0, 0.9}, {50, 0.1}};
  in_.tasks = {a, b, c, mlp};
  in_.events = {Evaluated(10, "gpt-lr1e-3", 100, 2.0, -1)};
  WriteRunReport(in_);
  std::string html = ReadFile(in_.run_dir + "/report.html");
  EXPECT_EQ(Count(html, "<svg"), 3);  // the Gantt, the sweep's chart and mlp's
  EXPECT_THAT(html, HasSubstr(">sweep gpt: 3 tasks</text>"));
  EXPECT_THAT(html, HasSubstr(">mlp</text>"));
  auto pa = CurvePoints(html, "train", "gpt-lr1e-3"), pb = CurvePoints(html, "train", "gpt-lr3e-3"),
       pc = CurvePoints(html, "train", "gpt-lr1e-2"), pe = CurvePoints(html, "eval", "gpt-lr1e-3");
  ASSERT_EQ(pa.size(), 2u);
  ASSERT_EQ(pb.size(), 2u);
  ASSERT_EQ(pc.size(), 2u);
  ASSERT_EQ(pe.size(), 1u);
  EXPECT_EQ(pa[1], pb[1]);  // loss 2.0 at step 100, on one axis
  EXPECT_EQ(pe[0], pa[1]);  // and the evaluation's 2.0 too
  EXPECT_NE(pb[0], pc[0]);
  auto y = [](const std::string& point) { return std::stod(point.substr(point.find(',') + 1)); };
  EXPECT_LT(y(pa[0]), y(pb[0]));  // 6.0 above 4.0 above 3.0
  EXPECT_LT(y(pb[0]), y(pc[0]));
  // The legend names each task of the chart.
  for (const char* task : {"gpt-lr1e-3", "gpt-lr3e-3", "gpt-lr1e-2", "mlp"})
    EXPECT_EQ(Count(html, std::string("<text class=\"legend\" data-task=\"") + task + "\""), 1);
  EXPECT_THAT(html, HasSubstr(">evaluation loss</text>"));
}

// Each task has its own colour throughout the report (its Gantt bars, its
// curves, its swatch in the table), and the evaluation curve is drawn in it,
// thick and marked, not in a dark grey.
TEST_F(RunReport, EachTaskHasItsOwnColourInEveryPicture) {
  std::vector<RunReportTask> tasks;
  in_.events.clear();
  for (int i = 0; i < 13; ++i) {
    // Names from the issue that used to hash to one colour among them.
    std::string name = i == 0 ? "mlp" : i == 1 ? "gpt-lr3.0e-3" : "task" + std::to_string(i);
    RunReportTask t = Task(name, "finished", "single", 1, "n0", 10, 10);
    t.sweep = "lr";
    t.losses = {{0, 2.0 + i}, {10, 1.0 + i}};
    tasks.push_back(t);
    in_.events.push_back(Evaluated(1, name, 10, 1.0 + i, -1));
  }
  in_.tasks = tasks;
  in_.events.push_back(Started(0, "mlp", "single", "n0", {0}));
  in_.events.push_back(Happened(10, EventKind::kTaskFinished, "mlp"));
  WriteRunReport(in_);
  std::string html = ReadFile(in_.run_dir + "/report.html");
  std::set<std::string> strokes;
  for (int i = 0; i < 12; ++i)
    strokes.insert(CurveStroke(html, tasks[i].name));
  EXPECT_EQ(strokes.size(), 12u);
  EXPECT_EQ(CurveStroke(html, "mlp"), PaletteColor(0).line);
  EXPECT_EQ(CurveStroke(html, "gpt-lr3.0e-3"), PaletteColor(1).line);
  // The 13th: the first hue again, with a dashed line.
  EXPECT_EQ(CurveStroke(html, "task12"), PaletteColor(0).line);
  EXPECT_THAT(html, HasSubstr("stroke-dasharray=\"" + PaletteColor(12).dash + "\"><title>task12"));
  // mlp's Gantt bar in its fill.
  EXPECT_THAT(html, HasSubstr("fill=\"" + PaletteColor(0).fill +
                              "\" stroke=\"white\" stroke-width=\"0.5\"><title>mlp (single)"));
  EXPECT_THAT(html, HasSubstr("<span class=\"swatch\" style=\"background:" + PaletteColor(1).line +
                              "\"></span>gpt-lr3.0e-3"));
  // Evaluation curves in the task's colour, thick, dashed and marked.
  EXPECT_THAT(html, Not(HasSubstr("stroke=\"#222\"")));
  EXPECT_THAT(html, HasSubstr("<g class=\"eval\" data-task=\"mlp\"><title>mlp: evaluation "
                              "loss</title><polyline points=\"" +
                              CurvePoints(html, "eval", "mlp")[0] + " \" fill=\"none\" stroke=\"" +
                              PaletteColor(0).line + "\" stroke-width=\"2.4\""));
  // A marker per evaluation, and in the legend one per task and one in its key.
  EXPECT_EQ(Count(html, "<circle"), 13 + 13 + 1);
}

// A task cancelled before it started ran nowhere: the table shows no
// technique, GPUs, node or times for it (the record's are not its own).
TEST_F(RunReport, ATaskThatNeverStartedShowsNoPlacement) {
  RunReportTask never = Task("late", "cancelled", "ddp", 2, "n1", 0, 50);
  never.attempts = 0;
  in_.tasks.push_back(never);
  WriteRunReport(in_);
  std::string html = ReadFile(in_.run_dir + "/report.html");
  const std::string none = "<td><span class=\"none\">–</span></td>";
  std::string row = html.substr(html.find("</span>late</td>"));
  row = row.substr(0, row.find("</tr>"));
  // technique, GPUs, node, why, start, end, final loss, disk (not known here)
  EXPECT_EQ(Count(row, none), 8);
  EXPECT_THAT(row, Not(HasSubstr("ddp")));
  EXPECT_THAT(row, Not(HasSubstr("n1")));
  EXPECT_THAT(row, HasSubstr("<td>0/50</td>"));
  // gpt, which ran, shows where.
  std::string gpt = html.substr(html.find("</span>gpt</td>"));
  gpt = gpt.substr(0, gpt.find("</tr>"));
  EXPECT_THAT(gpt, HasSubstr("<td>fsdp</td><td>3</td><td>n0</td><td>its fastest "
                             "configuration</td><td>0.0s</td><td>6m00s</td>"));
}

// On a cluster of named GPU types each task says the type it ran on, in
// report.json and as a column of the task table; a cluster of one unnamed
// type has neither.
TEST_F(RunReport, EachTaskSaysTheGpuTypeItRanOn) {
  nlohmann::json plain = WriteRunReport(in_);
  EXPECT_FALSE(plain["tasks"][0].contains("gpu_type"));
  EXPECT_THAT(ReadFile(in_.run_dir + "/report.html"), Not(HasSubstr("<th>GPU type</th>")));
  in_.cluster.nodes[0].gpu_type = "A100";
  in_.cluster.nodes[1].gpu_type = "V100";
  RunReportTask never = Task("late", "cancelled", "", 0, "", 0, 50);
  never.attempts = 0;
  in_.tasks.push_back(never);
  nlohmann::json r = WriteRunReport(in_);
  EXPECT_EQ(r["tasks"][0]["gpu_type"], "A100");
  EXPECT_EQ(r["tasks"][1]["gpu_type"], "V100");
  EXPECT_EQ(r["tasks"][2]["gpu_type"], "");  // never ran
  std::string html = ReadFile(in_.run_dir + "/report.html");
  EXPECT_THAT(html, HasSubstr("<th>node</th><th>GPU type</th>"));
  EXPECT_THAT(html, HasSubstr("<td>n0</td><td>A100</td>"));
  EXPECT_THAT(html, HasSubstr("<td>n1</td><td>V100</td>"));
}

// The progress line never shows an end already past as if it were ahead.
TEST(Phrases, ThePlansEndOncePastSaysItRunsLate) {
  EXPECT_EQ(PlanEndsClause(3.0, 6.5, 6.5), "plan ends ~6.5s (first plan 6.5s)");
  EXPECT_EQ(PlanEndsClause(6.5, 6.5, 6.5), "plan ends ~6.5s (first plan 6.5s)");
  EXPECT_EQ(PlanEndsClause(10.1, 6.5, 6.5),
            "plan ends ~now (estimate 6.5s, running 3.6s late; first plan 6.5s)");
  EXPECT_EQ(PlanEndsClause(200, 130, 120),
            "plan ends ~now (estimate 2m10s, running 1m10s late; first plan 2m00s)");
}

// A dashed first-plan box is drawn after (over) the filled bars, so a task
// the run moved to other GPUs never hides its planned box.
TEST(Gantt, PlannedOutlinesAreDrawnOverTheFilledBars) {
  GanttChart chart = GanttFromPlan(TwoTaskPlan(), TwoNodes(), "overlay");
  GanttBar planned = chart.bars[0];
  planned.outline_only = true;
  planned.detail = "planned gpt";
  // The outline comes first in the chart's bars, as the report adds it last
  // or first: either way it is drawn over the fill.
  chart.bars.insert(chart.bars.begin(), planned);
  std::string svg = RenderGanttSvg(chart);
  size_t outline = svg.find("<title>planned gpt</title>");
  size_t fill = svg.find("<title>gpt: fsdp on 3 GPU(s) of n0");
  ASSERT_NE(outline, std::string::npos);
  ASSERT_NE(fill, std::string::npos);
  EXPECT_GT(outline, fill) << "the outline is drawn before the fill, under it";
  EXPECT_GT(outline, svg.find("<title>vit: ddp on 2 GPU(s) of n1"));
}

// The report answers "which hyper-parameters did best": report.json's
// tasks carry them, and the task table has a column per swept field.
TEST_F(RunReport, ASweepsHyperParametersAreColumnsOfTheTaskTable) {
  in_.tasks.clear();
  in_.first_plan.tasks.clear();
  in_.events.clear();
  for (double lr : {1e-3, 3e-4}) {
    for (int seed : {1, 2}) {
      RunReportTask t = Task("gpt-lr" + FormatNumber(lr) + "-seed" + std::to_string(seed),
                             "finished", "ddp", 1, "n0", 100, 100);
      t.sweep = "gpt";
      t.hyperparameters = {{"optimizer.lr", lr}, {"seed", seed}};
      in_.tasks.push_back(t);
    }
  }
  RunReportTask alone = Task("vit", "finished", "ddp", 2, "n1", 50, 50);
  in_.tasks.push_back(alone);
  nlohmann::json r = WriteRunReport(in_);
  EXPECT_EQ(r["tasks"][0]["hyperparameters"],
            (nlohmann::json{{"optimizer.lr", 1e-3}, {"seed", 1}}));
  EXPECT_EQ(r["tasks"][3]["hyperparameters"],
            (nlohmann::json{{"optimizer.lr", 3e-4}, {"seed", 2}}));
  EXPECT_EQ(r["tasks"][4]["hyperparameters"], nlohmann::json::object());
  std::string html = ReadFile(in_.run_dir + "/report.html");
  EXPECT_THAT(html, HasSubstr("<tr><th>task</th><th title=\"optimizer.lr\">lr</th><th "
                              "title=\"seed\">seed</th><th>status</th>"));
  auto row = [&](const std::string& task) {
    std::string r = html.substr(html.find("</span>" + task + "</td>"));
    return r.substr(0, r.find("</tr>"));
  };
  EXPECT_THAT(row(in_.tasks[0].name),
              HasSubstr("<td class=\"hp\">0.001</td><td class=\"hp\">1</td><td>finished"));
  EXPECT_THAT(row(in_.tasks[1].name),
              HasSubstr("<td class=\"hp\">0.001</td><td class=\"hp\">2</td><td>finished"));
  EXPECT_THAT(row(in_.tasks[2].name),
              HasSubstr("<td class=\"hp\">0.0003</td><td class=\"hp\">1</td><td>finished"));
  EXPECT_THAT(row(in_.tasks[3].name),
              HasSubstr("<td class=\"hp\">0.0003</td><td class=\"hp\">2</td><td>finished"));
  // A task of no sweep has none.
  const std::string none = "<td><span class=\"none\">–</span></td>";
  EXPECT_EQ(row("vit").find("</span>vit</td>" + none + none + "<td>finished</td>"), 0u);
}

// The headline against current practice: the measured figures where the
// run paid off; where profiling cost more than training saved, that said
// plainly with the unfavourable figure and when profiling pays off.
TEST(Phrases, TheSpeedUpSaysWhenProfilingCostMoreThanItSaved) {
  SpeedupFigures won;
  won.current_practice_s = 104;
  won.run_s = 59.4;
  won.setup_s = 20;
  won.planned_speedup = 2.24;
  EXPECT_EQ(SpeedupVerdict(won, false),
            "this run was 1.75x faster (1.31x faster counting profiling and planning; the plan "
            "promised 2.24x faster)");
  EXPECT_EQ(SpeedupVerdict(won, true),
            "this run was <b>1.75&times; faster</b> (1.31&times; faster counting profiling and "
            "planning; the plan promised 2.24&times; faster)");
  SpeedupFigures lost;
  lost.current_practice_s = 58;
  lost.run_s = 50;
  lost.setup_s = 52;
  lost.planned_speedup = 1.3;
  EXPECT_EQ(SpeedupVerdict(lost, false),
            "training was 1.16x faster, but counting profiling and planning (52.0s) this run took "
            "1.76x as long as current practice (1m42s against 58.0s): profiling cost more than "
            "the plan saved. It pays off when the profile cache holds the trials (a re-run of "
            "these tasks profiles almost nothing) and for longer training (profiling does not "
            "grow with steps: from about 6.5x this run's steps); the plan promised 1.30x faster");
  EXPECT_THAT(SpeedupVerdict(lost, true),
              HasSubstr("this run took <b>1.76&times; as long as current practice</b>"));
  SpeedupFigures slower;
  slower.current_practice_s = 100;
  slower.run_s = 110;
  slower.setup_s = 40;
  slower.planned_speedup = 1.2;
  EXPECT_EQ(SpeedupVerdict(slower, false),
            "this run was 1.10x slower than that estimate, 1.50x slower counting profiling and "
            "planning (the plan promised 1.20x faster)");
}

// The report's headline uses it.
TEST_F(RunReport, TheHeadlineSaysWhenProfilingDidNotPayOff) {
  in_.tasks[1].status = TaskStatus::kFinished;
  in_.first_plan.extra["baselines"] = {{"current-practice", {{"makespan_s", 400.0}}}};
  in_.profiling_s = 100;
  WriteRunReport(in_);
  EXPECT_THAT(ReadFile(in_.run_dir + "/report.html"),
              HasSubstr("(estimated from the same profile): training was 1.11&times; faster, but "
                        "counting profiling and planning (1m43s) this run took <b>1.16&times; as "
                        "long as current practice</b>"));
}

// Contention: each task's measured seconds per step against its profiled
// ones, from its runs that ended with a known step; the median over tasks
// in report.json and, from 1.5x, a warning under the headline.
Event WithStep(Event e, const char* field, long step) {
  e.extra[field] = step;
  return e;
}

TEST_F(RunReport, WarnsWhenTasksTrainedMarkedlySlowerThanProfiled) {
  in_.tasks[1].status = TaskStatus::kFinished;
  in_.first_plan.extra["baselines"] = {{"current-practice", {{"makespan_s", 750.0}}}};
  // gpt: 100 steps in 360 s on fsdp x3 of n0, profiled at 1.2 s a step: 3x.
  in_.tasks[0].profiled = {{"fsdp", 3, "n0", 1.2}, {"ddp", 2, "n1", 0.1}};
  // vit: 20 steps in 60 s, pre-empted; then a failed run (not a pace); then
  // 30 steps in 60 s on another node: 120 s for 50 steps at 1.0 s: 2.4x.
  in_.tasks[1].profiled = {{"ddp", 2, "n1", 1.0}, {"ddp", 2, "n0", 1.0}};
  Event vit_on_n0 = Started(200, "vit", "ddp", "n0", {0, 1});
  in_.events = {WithStep(Started(0, "gpt", "fsdp", "n0", {0, 1, 2}), "step", 0),
                WithStep(Started(0, "vit", "ddp", "n1", {0, 1}), "step", 0),
                WithStep(Happened(60, EventKind::kTaskStopped, "vit"), "step", 20),
                WithStep(Started(70, "vit", "ddp", "n1", {0, 1}), "step", 20),
                WithStep(Happened(170, EventKind::kTaskFailed, "vit"), "step", 20),
                WithStep(vit_on_n0, "step", 20),
                WithStep(Happened(260, EventKind::kTaskFinished, "vit"), "steps", 50),
                WithStep(Happened(360, EventKind::kTaskFinished, "gpt"), "steps", 100)};
  nlohmann::json r = WriteRunReport(in_);
  EXPECT_NEAR(r["tasks"][0]["slowdown_vs_profile"].get<double>(), 3.0, 1e-9);
  EXPECT_NEAR(r["tasks"][1]["slowdown_vs_profile"].get<double>(), 2.4, 1e-9);
  EXPECT_NEAR(r["slowdown_vs_profile"]["median"].get<double>(), 2.7, 1e-9);
  EXPECT_EQ(r["slowdown_vs_profile"]["tasks"], 2);
  const std::string warning =
      "tasks trained 2.7x slower than profiled (median over 2 tasks): is the machine shared "
      "with other work? Current practice's time is estimated from the same profile, so the "
      "comparison above favours it by about that factor.";
  EXPECT_EQ(r["slowdown_vs_profile"]["warning"], warning);
  std::string html = ReadFile(in_.run_dir + "/report.html");
  EXPECT_THAT(html, HasSubstr("<p class=\"warning\"><b>Slower than profiled:</b> " +
                              warning.substr(0, 60)));
  // Under the headline: after the comparison it qualifies, before the Gantt.
  EXPECT_LT(html.find("class=\"baseline\""), html.find("class=\"warning\""));
  EXPECT_LT(html.find("class=\"warning\""), html.find("<svg"));

  // Trained about as profiled: the figures, no warning.
  in_.tasks[0].profiled = {{"fsdp", 3, "n0", 3.0}};                        // 1.2x
  in_.tasks[1].profiled = {{"ddp", 2, "n1", 2.4}, {"ddp", 2, "n0", 2.4}};  // 1.0x
  r = WriteRunReport(in_);
  EXPECT_NEAR(r["slowdown_vs_profile"]["median"].get<double>(), 1.1, 1e-9);
  EXPECT_TRUE(r["slowdown_vs_profile"]["warning"].is_null());
  EXPECT_THAT(ReadFile(in_.run_dir + "/report.html"), Not(HasSubstr("class=\"warning\"")));

  // No pace known (the simulator, a task that never ran): null.
  for (RunReportTask& t : in_.tasks)
    t.profiled.clear();
  r = WriteRunReport(in_);
  EXPECT_TRUE(r["slowdown_vs_profile"].is_null());
  EXPECT_TRUE(r["tasks"][0]["slowdown_vs_profile"].is_null());
}

TEST(Phrases, TheContentionWarningNamesTheFactorAndWhatItMeans) {
  EXPECT_EQ(ContentionWarning(2.6, 4, true),
            "tasks trained 2.6x slower than profiled (median over 4 tasks): is the machine shared "
            "with other work? Current practice's time is estimated from the same profile, so the "
            "comparison above favours it by about that factor.");
  EXPECT_EQ(ContentionWarning(1.5, 1, false),
            "tasks trained 1.5x slower than profiled (median over 1 task): is the machine shared "
            "with other work?");
}

// Disk use: each task's folder in bytes, a column in human units and the
// run's total.
TEST(Phrases, BytesInTheDocsUnits) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(999), "999 B");
  EXPECT_EQ(FormatBytes(4200), "4.2 kB");
  EXPECT_EQ(FormatBytes(16.9e6), "16.9 MB");   // docs/finetune.md's model.pt
  EXPECT_EQ(FormatBytes(999.96e3), "1.0 MB");  // not "1000.0 kB"
  EXPECT_EQ(FormatBytes(153.2e6), "153 MB");
  EXPECT_EQ(FormatBytes(6.2e9), "6.2 GB");
}

TEST_F(RunReport, SaysWhatEachTasksFilesCostOnDisk) {
  const std::string dir = in_.run_dir + "/tasks/gpt";
  fs::create_directories(dir + "/checkpoints/step-100");
  WriteFileAtomic(dir + "/model.pt", std::string(3000, 'm'));
  WriteFileAtomic(dir + "/checkpoints/step-100/state.pt", std::string(1200, 's'));
  EXPECT_EQ(FolderBytes(dir), 4200);
  EXPECT_EQ(FolderBytes(in_.run_dir + "/tasks/absent"), 0);
  in_.tasks[0].disk_bytes = FolderBytes(dir);
  in_.tasks[1].disk_bytes = 18900000;
  nlohmann::json r = WriteRunReport(in_);
  EXPECT_EQ(r["tasks"][0]["disk_bytes"], 4200);
  EXPECT_EQ(r["tasks"][1]["disk_bytes"], 18900000);
  EXPECT_EQ(r["disk_bytes"], 4200 + 18900000);
  std::string html = ReadFile(in_.run_dir + "/report.html");
  EXPECT_THAT(html, HasSubstr("disk</th><th>error</th>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"disk\">4.2 kB</td>"));
  EXPECT_THAT(html, HasSubstr("<td class=\"disk\">18.9 MB</td>"));
  EXPECT_THAT(html, HasSubstr("The tasks' folders hold <b>18.9 MB</b> on disk"));
  // Not known: null, and no total.
  in_.tasks[0].disk_bytes = in_.tasks[1].disk_bytes = -1;
  r = WriteRunReport(in_);
  EXPECT_TRUE(r["disk_bytes"].is_null());
  EXPECT_TRUE(r["tasks"][0]["disk_bytes"].is_null());
  EXPECT_THAT(ReadFile(in_.run_dir + "/report.html"), Not(HasSubstr("folders hold")));
}

// A task of no sweep shows its own values in the hyper-parameter columns
// (examples/llama-lora: lora-all-maps sets lr 3e-3 and rank 8).
TEST_F(RunReport, ATaskOfNoSweepShowsItsOwnHyperParameters) {
  in_.tasks.clear();
  in_.first_plan.tasks.clear();
  in_.events.clear();
  auto settings = [](double lr, int rank) {
    return nlohmann::json{{"name", "x"},
                          {"optimizer", {{"type", "adamw"}, {"lr", lr}}},
                          {"finetune", {{"lora", {{"rank", rank}, {"alpha", 16}}}}}};
  };
  for (double lr : {1e-3, 3e-3}) {
    RunReportTask t =
        Task("lora-lr" + FormatNumber(lr) + "-rank4", "finished", "spill", 1, "n0", 150, 150);
    t.sweep = "lora";
    t.hyperparameters = {{"optimizer.lr", lr}, {"finetune.lora.rank", 4}};
    t.settings = settings(lr, 4);
    in_.tasks.push_back(t);
  }
  RunReportTask all = Task("lora-all-maps", "finished", "single", 1, "n0", 150, 150);
  all.sweep = "lora-all-maps";
  all.settings = settings(3e-3, 8);
  in_.tasks.push_back(all);
  RunReportTask other = Task("vit", "finished", "ddp", 2, "n1", 50, 50);  // sets neither
  other.settings = {{"name", "vit"}, {"optimizer", {{"type", "sgd"}}}};
  in_.tasks.push_back(other);
  nlohmann::json r = WriteRunReport(in_);
  // "hyperparameters" stays what its sweep varied; the columns' values are
  // its own.
  EXPECT_EQ(r["tasks"][2]["hyperparameters"], nlohmann::json::object());
  EXPECT_EQ(r["tasks"][2]["hyperparameter_values"],
            (nlohmann::json{{"optimizer.lr", 3e-3}, {"finetune.lora.rank", 8}}));
  EXPECT_EQ(r["tasks"][0]["hyperparameter_values"],
            (nlohmann::json{{"optimizer.lr", 1e-3}, {"finetune.lora.rank", 4}}));
  EXPECT_EQ(r["tasks"][3]["hyperparameter_values"], nlohmann::json::object());
  std::string html = ReadFile(in_.run_dir + "/report.html");
  auto row = [&](const std::string& task) {
    std::string r = html.substr(html.find("</span>" + task + "</td>"));
    return r.substr(0, r.find("</tr>"));
  };
  EXPECT_THAT(row("lora-all-maps"),
              HasSubstr("</span>lora-all-maps</td><td class=\"hp\">0.003</td><td "
                        "class=\"hp\">8</td><td>finished"));
  const std::string none = "<td><span class=\"none\">–</span></td>";
  EXPECT_THAT(row("vit"), HasSubstr("</span>vit</td>" + none + none + "<td>finished"));
}

// The legend names every task whole, however long: wrapped onto more lines
// (the chart grows to hold them), the note after the name, a tooltip too.
TEST(LossCharts, TheLegendShowsLongNamesWhole) {
  LossSeries a;
  a.task = "mygrid-lr3.0e-3-rank16-seed1-warmup100";
  a.group = "mygrid";
  a.train = {{0, 3.0}, {10, 2.0}};
  a.note = "best";
  a.color = PaletteColor(0);
  LossSeries b = a;
  b.task = "mygrid-lr1.0e-3-rank16-seed1-warmup100";
  b.note = "";
  b.color = PaletteColor(1);
  LossSeries short_name = a;
  short_name.task = "mygrid-a";
  short_name.color = PaletteColor(2);
  std::string svg = RenderLossChart("sweep mygrid", {&a, &b, &short_name});
  EXPECT_THAT(svg, Not(HasSubstr("…")));
  // Each legend entry's text, less its tags, is the whole name (and note).
  std::regex entry("<text class=\"legend\" data-task=\"([^\"]*)\"[^>]*>(.*?)</text>");
  std::vector<std::string> shown;
  for (std::sregex_iterator it(svg.begin(), svg.end(), entry), end; it != end; ++it) {
    std::string inner = std::regex_replace((*it)[2].str(), std::regex("<title>[^<]*</title>"), "");
    shown.push_back(std::regex_replace(inner, std::regex("<[^>]*>"), ""));
  }
  EXPECT_EQ(shown,
            (std::vector<std::string>{"mygrid-lr3.0e-3-rank16-seed1-warmup100 best",
                                      "mygrid-lr1.0e-3-rank16-seed1-warmup100", "mygrid-a best"}));
  // Broken after a '-', onto a second line back at the legend's left.
  EXPECT_THAT(svg, HasSubstr(">mygrid-lr3.0e-3-rank16-<tspan class=\"wrap\""));
  EXPECT_THAT(svg, HasSubstr("<title>mygrid-lr3.0e-3-rank16-seed1-warmup100</title>"));
  // Where the legend is what sets a chart's height, long names make it
  // taller than the same chart of short ones.
  auto height = [](const std::vector<LossSeries>& series) {
    std::vector<const LossSeries*> group;
    for (const LossSeries& s : series)
      group.push_back(&s);
    std::string svg = RenderLossChart("sweep mygrid", group);
    std::smatch m;
    std::regex_search(svg, m, std::regex("height=\"([0-9.]+)\""));
    return std::stod(m[1]);
  };
  std::vector<LossSeries> longs, shorts;
  for (int k = 0; k < 10; ++k) {
    LossSeries s = b;
    s.task = "mygrid-lr3.0e-3-rank16-seed" + std::to_string(k) + "-warmup100";
    longs.push_back(s);
    s.task = "mygrid-" + std::to_string(k);
    shorts.push_back(s);
  }
  EXPECT_GT(height(longs), height(shorts));
}

}  // namespace
}  // namespace saturn
