#include "report/gantt_merge.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "common/format.h"
#include "report/phrases.h"

namespace saturn {
namespace {

// The tasks a merged bar's tooltip names: its first and last few.
constexpr size_t kNamedEachEnd = 3;

// "0-1, 7": GPU ids as ranges.
std::string GpusText(const std::vector<int>& ids) {
  std::string text;
  for (size_t i = 0; i < ids.size();) {
    size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1)
      ++j;
    text += (text.empty() ? "" : ", ") + std::to_string(ids[i]) +
            (j > i ? "-" + std::to_string(ids[j]) : "");
    i = j + 1;
  }
  return text;
}

// One bar for `run` (bars of one lane, by start): "N tasks" (a pack's
// members counted each), its span, the first and last tasks by name.
GanttBar Merged(const std::vector<const GanttBar*>& run) {
  GanttBar m;
  m.node = run.front()->node;
  m.gpu_ids = run.front()->gpu_ids;
  m.start = run.front()->start;
  m.outline_only = run.front()->outline_only;
  m.color_key = kMergedBarKey;
  long tasks = 0;
  for (const GanttBar* b : run) {
    m.end = std::max(m.end, b->end);
    tasks += std::max(1, b->members);
  }
  std::string names;
  for (size_t i = 0; i < run.size(); ++i) {
    if (i == kNamedEachEnd && run.size() > 2 * kNamedEachEnd) {
      names += ", … " + WithCommas(static_cast<long>(run.size() - 2 * kNamedEachEnd)) + " more";
      i = run.size() - kNamedEachEnd;
    }
    names += (names.empty() ? "" : ", ") + run[i]->color_key;
  }
  m.label = WithCommas(tasks) + " tasks";
  m.detail = WithCommas(tasks) + " tasks one after another" + (m.outline_only ? " (planned)" : "") +
             " on GPU " + GpusText(m.gpu_ids) + " of " + m.node + ", " + GanttSpan(m.start, m.end) +
             ", each too narrow to draw alone: " + names;
  return m;
}

}  // namespace

GanttMerge MergeNarrowBars(GanttChart& chart, size_t max_bars) {
  GanttMerge out;
  out.before = static_cast<long>(chart.bars.size());
  if (chart.bars.size() <= max_bars) return out;
  double end = chart.time_end;
  for (const GanttBar& b : chart.bars)
    end = std::max(end, b.end);
  const double px = end > 0 ? end / kGanttPlotWidth : 1.0;  // seconds a pixel
  std::map<std::tuple<bool, std::string, std::vector<int>>, std::vector<const GanttBar*>> lanes;
  for (const GanttBar& b : chart.bars) {
    std::vector<int> ids = b.gpu_ids;
    std::sort(ids.begin(), ids.end());
    lanes[{b.outline_only, b.node, ids}].push_back(&b);
  }
  std::vector<GanttBar> bars;
  for (auto& [lane, lane_bars] : lanes) {
    std::stable_sort(lane_bars.begin(), lane_bars.end(),
                     [](const GanttBar* a, const GanttBar* b) { return a->start < b->start; });
    std::vector<const GanttBar*> run;
    double run_end = 0;
    auto flush = [&] {
      if (run.size() == 1) bars.push_back(*run.front());
      if (run.size() > 1) {
        bars.push_back(Merged(run));
        out.merged += static_cast<long>(run.size());
        ++out.into;
      }
      run.clear();
    };
    for (const GanttBar* b : lane_bars) {
      if (b->end - b->start >= kNarrowBarPx * px) {
        flush();
        bars.push_back(*b);
        continue;
      }
      if (!run.empty() && b->start - run_end > kMergeGapPx * px) flush();
      run_end = run.empty() ? b->end : std::max(run_end, b->end);
      run.push_back(b);
    }
    flush();
  }
  chart.bars = std::move(bars);
  chart.colors[kMergedBarKey] = {"#c5d0dd", "#4d5d73", ""};
  return out;
}

std::string MergedBarsNote(const GanttMerge& m) {
  if (m.merged == 0) return "";
  return "<p class=\"note\">The chart above has " + WithCommas(m.before) +
         " bars: " + WithCommas(m.merged) + " of them, each under " + FormatNumber(kNarrowBarPx) +
         " px wide at this scale, are merged into " + WithCommas(m.into) +
         (m.into == 1 ? " grey bar, where they ran one after another; hover it"
                      : " grey bars, one for each stretch of a device where they ran one after "
                        "another; hover one") +
         " for its tasks (report.json has every task's times).</p>\n";
}

}  // namespace saturn
