// Packs in a plan's Gantt chart: the members of a pack (PlanTask::pack, several
// LoRA tasks in one worker) are one bar from the pack's start to its last
// member's end, labelled with the pack and its member count; members that end
// earlier are ticks on it. Tasks without a pack keep a bar each, as before.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <regex>
#include <string>
#include <vector>

#include "common/format.h"
#include "report/gantt.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++n;
  return n;
}

Cluster OneNode(int gpus) {
  Cluster c;
  c.nodes.resize(1);
  c.nodes[0].name = "n0";
  c.nodes[0].gpus = gpus;
  return c;
}

PlanTask Placed(std::string task, std::string technique, std::vector<int> ids, double start,
                double end, std::string pack = "") {
  PlanTask t;
  t.task = std::move(task);
  t.technique = std::move(technique);
  t.gpus = static_cast<int>(ids.size());
  t.node = "n0";
  t.gpu_ids = std::move(ids);
  t.start_s = start;
  t.end_s = end;
  t.pack = std::move(pack);
  return t;
}

Plan PlanOf(std::vector<PlanTask> tasks) {
  Plan p;
  p.solver = "auto";
  p.status = "optimal";
  p.makespan_s = 2000;
  p.lower_bound_s = 1800;
  p.tasks = std::move(tasks);
  return p;
}

// pack-1 (a, b, c: LoRA on GPUs 0-1 from 0, ending at 600, 1500 and 900) and
// gpt alone on GPUs 2-3 until 2000, the chart's end.
Plan PackAndOneAlone() {
  return PlanOf({Placed("a", "lora", {0, 1}, 0, 600, "pack-1"),
                 Placed("gpt", "fsdp", {2, 3}, 0, 2000),
                 Placed("b", "lora", {0, 1}, 0, 1500, "pack-1"),
                 Placed("c", "lora", {0, 1}, 0, 900, "pack-1")});
}

// A filled box of the SVG (x, width and its tooltip), in drawing order.
struct Box {
  double x, y, w;
  std::string title;
};

std::vector<Box> Boxes(const std::string& svg) {
  static const std::regex kBox(
      "<rect x=\"([0-9.]+)\" y=\"([0-9.]+)\" width=\"([0-9.]+)\" height=\"[0-9.]+\" "
      "fill=\"[^\"]+\" stroke=\"white\" stroke-width=\"0.5\"><title>([^<]*)</title>");
  std::vector<Box> boxes;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), kBox); it != std::sregex_iterator();
       ++it) {
    boxes.push_back({std::stod((*it)[1]), std::stod((*it)[2]), std::stod((*it)[3]), (*it)[4]});
  }
  return boxes;
}

// x of time t on a chart whose plot (x 110 to 1210) ends at `end`.
double X(double t, double end) {
  return 110 + 1100 * t / end;
}

TEST(GanttPack, APackIsOneBarFromItsStartToItsLastMembersEnd) {
  GanttChart chart = GanttFromPlan(PackAndOneAlone(), OneNode(4), "packed");
  ASSERT_EQ(chart.bars.size(), 2u);  // the pack, gpt; not a bar per member
  const GanttBar& pack = chart.bars[0];
  EXPECT_EQ(pack.node, "n0");
  EXPECT_EQ(pack.gpu_ids, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(pack.start, 0);
  EXPECT_DOUBLE_EQ(pack.end, 1500);  // b, its last member
  EXPECT_THAT(pack.label, StartsWith("pack-1 · 3 tasks"));
  EXPECT_THAT(pack.label, HasSubstr("lora ×2"));
  EXPECT_THAT(pack.label, HasSubstr("a, b, c"));
  EXPECT_EQ(pack.color_key, "pack pack-1");
  // The tooltip lists each member with its end, the earliest first.
  EXPECT_THAT(pack.detail,
              StartsWith("pack-1: 3 tasks training together, lora on 2 GPU(s) of n0, " +
                         GanttSpan(0, 1500)));
  EXPECT_THAT(pack.detail, HasSubstr("\n  a: " + GanttSpan(0, 600) + "\n  c: " + GanttSpan(0, 900) +
                                     "\n  b: " + GanttSpan(0, 1500)));
  // A mark where a and where c leave, none at the pack's end.
  ASSERT_EQ(pack.marks.size(), 2u);
  EXPECT_DOUBLE_EQ(pack.marks[0].t, 600);
  EXPECT_DOUBLE_EQ(pack.marks[0].fade, 1.0 / 3);
  EXPECT_EQ(pack.marks[0].detail, "pack-1: a ends at " + FormatDuration(600) + ", 2 members left");
  EXPECT_DOUBLE_EQ(pack.marks[1].t, 900);
  EXPECT_DOUBLE_EQ(pack.marks[1].fade, 2.0 / 3);
  const GanttBar& gpt = chart.bars[1];
  EXPECT_EQ(gpt.label, "gpt · fsdp ×2");
  EXPECT_TRUE(gpt.marks.empty());
  EXPECT_EQ(gpt.members, 0);
  EXPECT_THAT(chart.subtitle, HasSubstr("4 tasks (3 in 1 pack)"));
}

TEST(GanttPack, SvgDrawsThePackAsOneBoxWithATickAtEachEarlierEnd) {
  std::string svg = RenderGanttSvg(GanttFromPlan(PackAndOneAlone(), OneNode(4), "packed"));
  std::vector<Box> boxes = Boxes(svg);
  ASSERT_EQ(boxes.size(), 2u) << svg;
  EXPECT_THAT(boxes[0].title, StartsWith("pack-1: 3 tasks"));
  EXPECT_NEAR(boxes[0].x, X(0, 2000), 0.051);
  EXPECT_NEAR(boxes[0].w, X(1500, 2000) - X(0, 2000), 0.051);
  EXPECT_NEAR(boxes[0].y, 56 + 1, 0.051);  // GPU 0's row
  EXPECT_THAT(boxes[1].title, StartsWith("gpt: fsdp"));
  EXPECT_NEAR(boxes[1].w, 1100, 0.051);
  // No member has a box of its own.
  EXPECT_THAT(svg, Not(HasSubstr("<title>a: lora")));
  EXPECT_THAT(svg, Not(HasSubstr("<title>b: lora")));
  EXPECT_THAT(svg, HasSubstr(">pack-1 · 3 tasks · lora ×2: a, b, c</text>"));
  // Ticks at a's and c's ends, over the pack's rows, with whose end it is.
  EXPECT_EQ(Count(svg, "<g class=\"mark\">"), 2);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      svg, m,
      std::regex(
          "<g class=\"mark\"><title>pack-1: a ends at [^<]*</title><line x1=\"([0-9.]+)\"")));
  EXPECT_NEAR(std::stod(m[1]), X(600, 2000), 0.051);
  ASSERT_TRUE(std::regex_search(
      svg, m,
      std::regex(
          "<g class=\"mark\"><title>pack-1: c ends at [^<]*</title><line x1=\"([0-9.]+)\"")));
  EXPECT_NEAR(std::stod(m[1]), X(900, 2000), 0.051);
  // After each, the rest of the bar a step paler.
  EXPECT_EQ(Count(svg, "fill=\"white\" fill-opacity=\"0.17\""), 1);
  EXPECT_EQ(Count(svg, "fill=\"white\" fill-opacity=\"0.33\""), 1);
}

// A plan with no packs: a bar per task, where and when the task runs,
// labelled and drawn as before packs existed.
TEST(GanttPack, APlanWithoutPacksHasABarPerTaskAsBefore) {
  Plan p = PlanOf({Placed("a", "lora", {0, 1}, 0, 600), Placed("gpt", "fsdp", {2, 3}, 0, 2000),
                   Placed("b", "lora", {0, 1}, 600, 1500), Placed("c", "ddp", {0, 1}, 1500, 1800)});
  GanttChart chart = GanttFromPlan(p, OneNode(4), "alone");
  ASSERT_EQ(chart.bars.size(), 4u);
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    const PlanTask& t = p.tasks[i];
    const GanttBar& bar = chart.bars[i];
    EXPECT_EQ(bar.node, t.node);
    EXPECT_EQ(bar.gpu_ids, t.gpu_ids);
    EXPECT_DOUBLE_EQ(bar.start, t.start_s);
    EXPECT_DOUBLE_EQ(bar.end, t.end_s);
    EXPECT_EQ(bar.label, t.task + " · " + t.technique + " ×2");
    EXPECT_EQ(bar.detail,
              t.task + ": " + t.technique + " on 2 GPU(s) of n0, " + GanttSpan(t.start_s, t.end_s));
    EXPECT_EQ(bar.color_key, t.task);
    EXPECT_TRUE(bar.marks.empty());
  }
  EXPECT_THAT(chart.subtitle, HasSubstr("· 4 tasks"));
  EXPECT_THAT(chart.subtitle, Not(HasSubstr("pack")));
  std::string svg = RenderGanttSvg(chart);
  std::vector<Box> boxes = Boxes(svg);
  ASSERT_EQ(boxes.size(), 4u);
  for (size_t i = 0; i < p.tasks.size(); ++i) {
    EXPECT_NEAR(boxes[i].x, X(p.tasks[i].start_s, 2000), 0.051);
    EXPECT_NEAR(boxes[i].w, X(p.tasks[i].end_s, 2000) - X(p.tasks[i].start_s, 2000), 0.051);
    EXPECT_NEAR(boxes[i].y, 56 + 20 * p.tasks[i].gpu_ids[0] + 1, 0.051);
  }
  EXPECT_THAT(svg, Not(HasSubstr("class=\"mark\"")));
  EXPECT_THAT(svg, Not(HasSubstr("fill-opacity")));
}

// Members that end together share a tick; one that ends with the pack has
// none; a member placed elsewhere (not a valid plan) is a bar of its own.
TEST(GanttPack, MembersEndingTogetherShareATickAndAStrayMemberHasItsOwnBar) {
  Plan p = PlanOf({Placed("a", "lora", {0, 1}, 0, 600, "pack-1"),
                   Placed("b", "lora", {0, 1}, 0, 600, "pack-1"),
                   Placed("c", "lora", {0, 1}, 0, 1500, "pack-1"),
                   Placed("d", "lora", {0, 1}, 0, 1500, "pack-1"),
                   Placed("e", "lora", {2, 3}, 0, 2000, "pack-1")});
  GanttChart chart = GanttFromPlan(p, OneNode(4), "together");
  ASSERT_EQ(chart.bars.size(), 2u);
  ASSERT_EQ(chart.bars[0].marks.size(), 1u);
  EXPECT_EQ(chart.bars[0].marks[0].detail,
            "pack-1: a, b end at " + FormatDuration(600) + ", 2 members left");
  EXPECT_DOUBLE_EQ(chart.bars[0].marks[0].fade, 0.5);
  EXPECT_THAT(chart.bars[0].label, StartsWith("pack-1 · 4 tasks"));
  EXPECT_THAT(chart.bars[1].label, StartsWith("pack-1 · 1 task ·"));
  EXPECT_EQ(chart.bars[1].gpu_ids, (std::vector<int>{2, 3}));
  EXPECT_TRUE(chart.bars[1].marks.empty());
  EXPECT_THAT(chart.subtitle, HasSubstr("5 tasks (5 in 1 pack)"));
}

// A tick under the label stops short of its line (a line above it and one
// below), one past the label's end crosses the box whole.
TEST(GanttPack, TicksLeaveTheLabelsLineClear) {
  Plan p = PlanOf({Placed("a", "lora", {0, 1}, 0, 200, "pack-1"),
                   Placed("b", "lora", {0, 1}, 0, 1800, "pack-1"),
                   Placed("c", "lora", {0, 1}, 0, 2000, "pack-1")});
  std::string svg = RenderGanttSvg(GanttFromPlan(p, OneNode(2), "label"));
  // Each mark: its transparent line to point at, then the drawn ones.
  const std::regex kMark(
      "<g class=\"mark\"><title>pack-1: (\\w) ends[^<]*</title>((?:<line[^>]*>\n)+)"
      "</g>");
  std::map<std::string, int> lines;
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), kMark); it != std::sregex_iterator();
       ++it) {
    lines[(*it)[1]] = Count((*it)[2], "<line") - 1;
  }
  EXPECT_EQ(lines["a"], 2) << svg;  // at x 220, under "pack-1 · 3 tasks · lora ×2: a, b, c"
  EXPECT_EQ(lines["b"], 1) << svg;  // at x 1100
}

// A pack on GPUs apart (0, 1 and 3) is one pack in two parts, each with its
// label and ticks, and the connector that joins them says so.
TEST(GanttPack, APackOnGpusApartIsOnePackInParts) {
  Plan p = PlanOf({Placed("a", "lora", {0, 1, 3}, 0, 1000, "pack-1"),
                   Placed("b", "lora", {0, 1, 3}, 0, 2000, "pack-1")});
  GanttChart chart = GanttFromPlan(p, OneNode(4), "parts");
  ASSERT_EQ(chart.bars.size(), 1u);
  EXPECT_EQ(chart.bars[0].members, 2);
  std::string svg = RenderGanttSvg(chart);
  EXPECT_EQ(Boxes(svg).size(), 2u);
  EXPECT_EQ(Count(svg, ">pack-1 · 2 tasks · lora ×3: a, b</text>"), 2);
  EXPECT_EQ(Count(svg, "[one pack, drawn in 2 parts: GPUs 0-1, 3]</title>"), 2);
  EXPECT_THAT(svg, HasSubstr(": one pack on GPUs 0-1, 3 of n0</title>"));
  EXPECT_EQ(Count(svg, "<g class=\"mark\"><title>pack-1: a ends at"), 2);  // a tick on each part
}

// A pack in a plan drawn as outlines (a run's first plan): its ticks are
// dotted in its dark colour, and the bar does not pale (it has no fill).
TEST(GanttPack, AnOutlinedPackHasDottedTicksAndNoPaling) {
  GanttChart chart = GanttFromPlan(PackAndOneAlone(), OneNode(4), "overlay");
  for (GanttBar& bar : chart.bars)
    bar.outline_only = true;
  std::string svg = RenderGanttSvg(chart);
  EXPECT_EQ(Count(svg, "<g class=\"mark\">"), 2);
  EXPECT_EQ(Count(svg, "stroke=\"" + chart.colors.at("pack pack-1").line +
                           "\" stroke-width=\"2.0\" stroke-dasharray=\"2 2\""),
            2);
  EXPECT_THAT(svg, Not(HasSubstr("fill-opacity")));
}

// A run's chart (GanttFromRun: what a run or a simulation did, from its
// events): a pack's members, started together on its devices, are one bar
// to the last one's end, with a tick where each that left sooner left and
// how (a rule's stop); a member's time alone after it is its own bar.
TEST(GanttPacks, ARunsPackIsOneBarWithATickWhereAMemberLeft) {
  auto busy = [](std::string task, double start, double end, std::string how) {
    return BusyInterval{task, "ddp", "n0", {0, 1}, start, end, how};
  };
  std::vector<GanttBar> bars =
      GanttFromRun({busy("a", 0, 100, "task_finished"), busy("b", 0, 40, "task_early_stopped"),
                    busy("c", 0, 100, "task_finished"), busy("b", 120, 150, "task_finished")},
                   {{"a", "pack-1"}, {"b", "pack-1"}, {"c", "pack-1"}});
  ASSERT_EQ(bars.size(), 2u);
  const GanttBar& pack = bars[0].members > 0 ? bars[0] : bars[1];
  const GanttBar& alone = bars[0].members > 0 ? bars[1] : bars[0];
  EXPECT_EQ(pack.members, 3);
  EXPECT_DOUBLE_EQ(pack.start, 0);
  EXPECT_DOUBLE_EQ(pack.end, 100);
  ASSERT_EQ(pack.marks.size(), 1u);
  EXPECT_DOUBLE_EQ(pack.marks[0].t, 40);
  EXPECT_NEAR(pack.marks[0].fade, 1.0 / 3, 1e-12);
  EXPECT_THAT(pack.marks[0].detail, HasSubstr("b (early stopped) ends at 40.0s, 2 members left"));
  EXPECT_THAT(pack.detail, HasSubstr("\n  a: 0.0s → 1m40s"));
  EXPECT_EQ(alone.members, 0);
  EXPECT_DOUBLE_EQ(alone.start, 120);
  EXPECT_THAT(alone.label, StartsWith("b · ddp"));
}

}  // namespace
}  // namespace saturn
