#include "report/run_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <set>

#include "common/format.h"
#include "common/fs.h"
#include "contracts/baseline_comparison.h"
#include "contracts/sweep.h"
#include "report/best.h"
#include "report/gantt.h"
#include "report/gantt_merge.h"
#include "report/groups_summary.h"
#include "report/loss_charts.h"
#include "report/phrases.h"
#include "report/run_costs.h"
#include "report/svg.h"
#include "report/task_table.h"

namespace saturn {
namespace {

using nlohmann::json;

// What current practice (each task on a whole node, one after another)
// would have taken, estimated from the same profile, against the run:
// report.json's "current_practice"; null without the baseline. Both from
// when the first plan was made (its baselines' from_s: 0 for a run, the
// first submission's time for a service), so time before it counts on
// neither side.
json CurrentPractice(const RunReportInput& in) {
  std::optional<BaselineComparison> cp = CompareWithBaseline(in.first_plan, "current-practice");
  double run_s = in.makespan_s - (cp ? cp->from_s : 0.0);
  if (!cp || run_s <= 0) return nullptr;
  double with_setup = run_s + in.profiling_s + in.planning_s;
  // Measured against the estimate only when the run trained what the
  // first plan planned: every task, all finished.
  bool same_tasks = in.tasks.size() == in.first_plan.tasks.size() &&
                    std::all_of(in.tasks.begin(), in.tasks.end(), [](const RunReportTask& t) {
                      return t.status == TaskStatus::kFinished || t.status == TaskStatus::kStopped;
                    });
  json out = {{"estimated_makespan_s", cp->baseline_s},
              {"from_s", cp->from_s},
              {"speedup_planned", cp->Ratio()},
              {"speedup_measured", same_tasks ? json(cp->baseline_s / run_s) : json()},
              {"speedup_measured_with_profiling_and_planning",
               same_tasks ? json(cp->baseline_s / with_setup) : json()},
              {"note",
               "current practice's makespan is estimated from the profile's measured trials (the "
               "same ones Saturn planned with); it needs no profiling or planning"}};
  if (!same_tasks) {
    out["note"] = out["note"].get<std::string>() +
                  "; no measured speed-up: the run's tasks are not the first plan's, all "
                  "finished (some failed, were cancelled or joined later)";
  }
  return out;
}

// "2.08&times; faster", or "1.25&times; slower" for a ratio below 1.
std::string Faster(double ratio) {
  return ratio >= 1 ? FormatFixed(ratio, 2) + "&times; faster"
                    : FormatFixed(1 / ratio, 2) + "&times; slower";
}

// The report's sentence comparing the run with current practice, or "".
std::string CurrentPracticeHtml(const RunReportInput& in, const json& cp) {
  if (cp.is_null()) return "";
  if (!cp["speedup_measured"].is_number()) {
    return "<p class=\"baseline\">Current practice (each task alone on a whole node, one after "
           "another) would take about <b>" +
           FormatDuration(cp["estimated_makespan_s"].get<double>()) +
           "</b> for the first plan's tasks (estimated from the same profile; the plan promised " +
           Faster(cp["speedup_planned"].get<double>()) +
           "); this run trained other tasks, so there is no measured speed-up.</p>\n";
  }
  SpeedupFigures f;
  f.current_practice_s = cp["estimated_makespan_s"].get<double>();
  f.run_s = in.makespan_s - cp["from_s"].get<double>();
  f.setup_s = in.profiling_s + in.planning_s;
  f.planned_speedup = cp["speedup_planned"].get<double>();
  return "<p class=\"baseline\">Current practice (each task alone on a whole node, one after "
         "another) would take about <b>" +
         FormatDuration(f.current_practice_s) +
         "</b> (estimated from the same profile): " + SpeedupVerdict(f, true) + ".</p>\n";
}

// Each task's colour in every picture of the report, by its place among
// the run's tasks (then the first plan's, for a task the run no longer has).
// Where the groups are summarised, the tasks drawn one by one come first
// (those of no table, then the charted groups'), so they take the palette's
// first, plain colours.
std::map<std::string, TaskColor> TaskColors(const RunReportInput& in, const GroupsSummary& groups) {
  std::map<std::string, TaskColor> colors;
  auto add = [&](const std::string& task) {
    if (!colors.count(task)) colors[task] = PaletteColor(colors.size());
  };
  if (groups.summarised) {
    for (const RunReportTask& t : in.tasks)
      if (t.group.empty()) add(t.name);
    for (const std::string& sweep : WorstGroupSweeps(groups, kChartedGroups)) {
      for (const RunReportTask& t : in.tasks)
        if (!t.group.empty() && t.sweep == sweep) add(t.name);
    }
  }
  for (const RunReportTask& t : in.tasks)
    add(t.name);
  for (const PlanTask& t : in.first_plan.tasks)
    add(t.task);
  return colors;
}

// The run's Gantt (actual filled, first plan dashed) and, when the first
// plan has it, current practice's plan beneath on the same time axis.
std::string GanttsHtml(const RunReportInput& in, int switches,
                       const std::map<std::string, TaskColor>& colors) {
  GanttChart chart;
  chart.title = "Saturn run: actual (filled) vs first plan (dashed)";
  chart.subtitle = "makespan " + FormatDuration(in.makespan_s) + " vs planned " +
                   FormatDuration(in.first_plan.makespan_s) + ", " +
                   Plural(switches, "plan switch");
  chart.nodes = in.cluster.nodes;
  chart.colors = colors;
  std::map<std::string, std::string> pack_of;
  for (const RunReportTask& t : in.tasks)
    if (!t.pack.empty()) pack_of[t.name] = t.pack;
  for (GanttBar& bar : GanttFromRun(BusyIntervals(in.events, in.makespan_s), pack_of))
    chart.bars.push_back(std::move(bar));
  for (GanttBar bar : GanttFromPlan(in.first_plan, in.cluster, "").bars) {
    bar.outline_only = true;
    chart.bars.push_back(std::move(bar));
  }
  std::string baseline_svg;
  const json& baselines = in.first_plan.extra.value("baselines", json::object());
  if (baselines.contains("current-practice") && baselines["current-practice"].contains("plan")) {
    Plan cp = PlanFromJson(baselines["current-practice"]["plan"], "the first plan's baselines");
    GanttChart baseline = GanttFromPlan(
        cp, in.cluster,
        "Current practice (estimated from the same profile): each task alone on a whole node");
    baseline.subtitle = "makespan " + FormatDuration(cp.makespan_s) + ", planned";
    baseline.colors = colors;
    chart.time_end = baseline.time_end =
        std::max({cp.makespan_s, in.makespan_s, in.first_plan.makespan_s});
    const GanttMerge merged = MergeNarrowBars(baseline);
    baseline_svg = RenderGanttSvg(baseline) + "\n" + MergedBarsNote(merged);
  }
  const GanttMerge merged = MergeNarrowBars(chart);
  return RenderGanttSvg(chart) + "\n" + MergedBarsNote(merged) + baseline_svg;
}

// A task's curves, in its colour; a loss that is not finite (a group that
// diverged) has no place on an axis and is left out.
LossSeries SeriesOf(const RunReportTask& t, const Evals& evals,
                    const std::map<std::string, std::string>& best_of,
                    const std::map<std::string, TaskColor>& colors) {
  LossSeries s;
  s.task = t.name;
  s.group = t.sweep;
  for (const auto& [step, loss] : t.losses)
    if (std::isfinite(loss)) s.train.push_back({step, loss});
  if (const auto* e = EvalsOfTask(evals, t.name)) {
    for (const auto& [step, p] : *e)
      if (std::isfinite(p.loss)) s.eval.push_back({step, p.loss});
  }
  s.color = colors.at(t.name);
  if (IsBest(t, best_of)) s.note = "best";
  if (t.status != TaskStatus::kFinished) s.note = ToString(t.status);
  return s;
}

// A chart per sweep (or task alone), curves in the tasks' colours. Of a
// run whose groups are summarised, the tasks of no table, then the
// kChartedGroups groups of highest held-out loss, highest first, and a line
// that says so.
std::string LossHtml(const RunReportInput& in, const Evals& evals,
                     const std::map<std::string, std::string>& best_of,
                     const std::map<std::string, TaskColor>& colors, const GroupsSummary& groups) {
  std::vector<LossSeries> series;
  for (const RunReportTask& t : in.tasks) {
    if (!groups.summarised || t.group.empty())
      series.push_back(SeriesOf(t, evals, best_of, colors));
  }
  std::string note;
  if (groups.summarised) {
    const std::vector<std::string> worst = WorstGroupSweeps(groups, kChartedGroups);
    for (const std::string& sweep : worst) {
      for (const RunReportTask& t : in.tasks) {
        if (!t.group.empty() && t.sweep == sweep)
          series.push_back(SeriesOf(t, evals, best_of, colors));
      }
    }
    note = "<p class=\"note\">" +
           (worst.empty() ? std::string("No group has a held-out loss to choose charts by")
                          : "The " + Plural(static_cast<long>(worst.size()), "group") +
                                " of highest held-out loss") +
           " of " + WithCommas(static_cast<long>(groups.groups.size())) +
           " groups; every group's losses are in the groups table above.</p>\n";
  }
  return "<h2>Loss curves</h2>\n" + note + "<div class=\"curves\">\n" + LossChartsHtml(series) +
         "</div>\n";
}

// The task table's rows: every task, or where the groups are summarised the
// tasks of no table (the groups table has the rest) with a line that says so.
std::string TasksHtml(const RunReportInput& in, const Evals& evals,
                      const std::map<std::string, std::string>& best_of,
                      const std::map<std::string, TaskColor>& colors, const GroupsSummary& groups) {
  std::vector<const RunReportTask*> rows;
  Evals row_evals;  // the rows' evaluations: columns only for those
  for (const RunReportTask& t : in.tasks) {
    if (groups.summarised && !t.group.empty()) continue;
    rows.push_back(&t);
    if (const auto* e = EvalsOfTask(evals, t.name)) row_evals[t.name] = *e;
  }
  if (!groups.summarised) return TaskTableHtml(in, rows, evals, best_of, colors);
  return TaskTableHtml(in, rows, row_evals, best_of, colors) + "<p class=\"note\">The " +
         WithCommas(static_cast<long>(groups.rows.size())) +
         " tasks of the table's groups are in the groups table above.</p>\n";
}

// "Best models": of a run whose groups are summarised, the sweeps of no
// group (the groups table marks each group's best).
std::string BestModelsHtml(const json& best, const GroupsSummary& groups) {
  if (!groups.summarised) return BestHtml(best);
  std::set<std::string> group_sweeps;
  for (const ReportGroup& g : groups.groups)
    group_sweeps.insert(g.sweep);
  json kept = json::array();
  for (const json& b : best) {
    if (!group_sweeps.count(b["sweep"].get<std::string>())) kept.push_back(b);
  }
  return BestHtml(kept);
}

// The warning that tasks ran markedly slower than profiled, or "".
std::string WarningHtml(const json& slowdown) {
  if (slowdown.is_null() || slowdown["warning"].is_null()) return "";
  std::string text = slowdown["warning"].get<std::string>();
  return "<p class=\"warning\"><b>Slower than profiled:</b> " + XmlEscape(text) + "</p>\n";
}

// report.html: Gantts, best models, groups, loss curves, task table.
std::string ReportHtml(const RunReportInput& in, const Evals& evals, const json& best,
                       const std::map<std::string, std::string>& best_of, int switches,
                       double ratio, const json& slowdown, const GroupsSummary& groups) {
  const std::map<std::string, TaskColor> colors = TaskColors(in, groups);
  return "<!doctype html><html><head><meta charset=\"utf-8\"><title>Saturn run report</title>"
         "<style>body{font-family:Helvetica,Arial,sans-serif;margin:24px;color:#222}"
         "table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:4px 8px;"
         "font-size:13px}th{background:#f4f4f4}.curves{display:flex;flex-wrap:wrap;gap:12px}"
         ".failed{color:#b00}.hp{font-variant-numeric:tabular-nums}.disk{white-space:nowrap}.none{"
         "color:#999}.no-loss{width:"
         "100%;color:#555;font-size:14px}."
         "swatch{display:inline-block;width:10px;"
         "height:10px;border-radius:2px;margin-right:6px}.note{color:#555;font-size:13px}"
         "</style></head><body>\n"
         "<h1>Saturn run report</h1>\n<p>Workload <code>" +
         XmlEscape(in.workload) + "</code>: actual makespan <b>" + FormatDuration(in.makespan_s) +
         "</b>, first plan " + FormatDuration(in.first_plan.makespan_s) + " (ratio " +
         FormatFixed(ratio, 3) + "), " + Plural(switches, "plan switch") + ", profiling " +
         FormatDuration(in.profiling_s) + ", planning " + FormatDuration(in.planning_s) +
         ".</p>\n" + CurrentPracticeHtml(in, CurrentPractice(in)) + WarningHtml(slowdown) +
         GanttsHtml(in, switches, colors) + BestModelsHtml(best, groups) + GroupsHtml(groups) +
         LossHtml(in, evals, best_of, colors, groups) +
         TasksHtml(in, evals, best_of, colors, groups) + "</body></html>\n";
}

// Each task's slowdown against its profile (SlowdownOf), from its own
// events: 10,000 tasks do not each read every event.
std::vector<std::optional<double>> Slowdowns(const RunReportInput& in) {
  std::map<std::string, std::vector<Event>> events_of;
  for (const Event& e : in.events)
    events_of[e.task].push_back(e);
  std::vector<std::optional<double>> slowdowns;
  for (const RunReportTask& t : in.tasks)
    slowdowns.push_back(SlowdownOf(t, events_of[t.name]));
  return slowdowns;
}

// report.json's "hyperparameter_values" of a task: its value in each column.
json HyperParameterValues(const RunReportTask& t,
                          const std::vector<std::pair<std::string, std::string>>& columns) {
  json values = json::object();
  for (const auto& [path, header] : columns) {
    json value = ColumnValue(t, path);
    if (!value.is_null()) values[path] = std::move(value);
  }
  return values;
}

}  // namespace

json WriteRunReport(const RunReportInput& in) {
  int switches = 0;
  for (const Event& e : in.events)
    switches += e.kind == EventKind::kPlanSwitched;
  double ratio = in.first_plan.makespan_s > 0 ? in.makespan_s / in.first_plan.makespan_s : 0.0;
  json report = {{"workload", in.workload},
                 {"run_dir", in.run_dir},
                 {"makespan_s", in.makespan_s},
                 {"planned_makespan_s", in.first_plan.makespan_s},
                 {"actual_over_planned", ratio},
                 {"plan_switches", switches},
                 {"profiling_s", in.profiling_s},
                 {"planning_s", in.planning_s},
                 {"current_practice", CurrentPractice(in)},
                 {"tasks", json::array()}};
  if (in.first_plan.extra.contains("baselines")) {
    report["baselines"] = in.first_plan.extra["baselines"];
  }
  const std::vector<std::optional<double>> slowdowns = Slowdowns(in);
  const json slowdown = SlowdownVsProfile(slowdowns, !report["current_practice"].is_null());
  report["slowdown_vs_profile"] = slowdown;
  const std::optional<long long> disk = TotalDiskBytes(in);
  report["disk_bytes"] = disk ? json(*disk) : json();
  std::vector<const RunReportTask*> all;
  for (const RunReportTask& t : in.tasks)
    all.push_back(&t);
  const auto columns = HyperParameterColumns(all);
  const Evals evals = EvalsOf(in.events);
  auto evals_of = [&](const std::string& task) { return EvalsOfTask(evals, task); };
  std::map<std::string, std::string> best_of;  // sweep -> task
  const json best = BestOfSweeps(in.tasks, evals, best_of);
  for (size_t i = 0; i < in.tasks.size(); ++i) {
    const RunReportTask& t = in.tasks[i];
    json losses = json::array();
    for (const auto& [s, l] : t.losses)
      losses.push_back({s, l});
    json eval_curve = json::array();
    if (const auto* e = evals_of(t.name)) {
      for (const auto& [s, p] : *e) {
        json point = {{"step", s}, {"loss", p.loss}};
        if (p.accuracy >= 0) point["accuracy"] = p.accuracy;
        eval_curve.push_back(std::move(point));
      }
    }
    const EvalPoint* final_eval = FinalEval(t, evals_of(t.name));
    report["tasks"].push_back({{"task", t.name},
                               {"sweep", t.sweep.empty() ? t.name : t.sweep},
                               {"status", std::string(ToString(t.status))},
                               {"technique", t.technique},
                               {"gpus", t.gpus},
                               {"node", t.node},
                               {"why", t.why},
                               {"start_s", t.start_s},
                               {"end_s", t.end_s},
                               {"steps", t.steps},
                               {"steps_done", t.steps_done},
                               {"final_loss", t.final_loss},
                               {"attempts", t.attempts},
                               {"failures", t.failures},
                               {"error", t.error},
                               {"loss_curve", losses},
                               {"eval_curve", eval_curve},
                               {"final_eval_loss", final_eval ? json(final_eval->loss) : json()}});
    if (final_eval && final_eval->accuracy >= 0) {
      report["tasks"].back()["final_eval_accuracy"] = final_eval->accuracy;
    }
    if (NamesTypes(in.cluster)) report["tasks"].back()["gpu_type"] = TypeOf(in.cluster, t);
    if (!t.pack.empty()) report["tasks"].back()["pack"] = t.pack;
    if (!t.group.empty()) {
      report["tasks"].back()["group"] = t.group;
      report["tasks"].back()["train_rows"] = t.train_rows;
    }
    json hyperparameters = json::object();
    for (const auto& [path, value] : t.hyperparameters)
      hyperparameters[path] = value;
    report["tasks"].back()["hyperparameters"] = std::move(hyperparameters);
    report["tasks"].back()["hyperparameter_values"] = HyperParameterValues(t, columns);
    report["tasks"].back()["best_model"] = t.best_model;
    // Its latest evaluation, whatever its end (one stopped early included).
    const EvalPoint* latest = LatestEval(evals_of(t.name));
    report["tasks"].back()["last_eval"] = latest ? EvalPointToJson(*latest) : json();
    report["tasks"].back()["slowdown_vs_profile"] = slowdowns[i] ? json(*slowdowns[i]) : json();
    report["tasks"].back()["disk_bytes"] = t.disk_bytes >= 0 ? json(t.disk_bytes) : json();
  }
  report["best"] = best;
  const GroupsSummary groups = SummariseGroups(in.tasks, evals, best_of);
  if (!groups.groups.empty()) report["groups"] = GroupsJson(groups);
  WriteFileAtomic(in.run_dir + "/report.json", report.dump(2) + "\n");

  WriteFileAtomic(in.run_dir + "/report.html",
                  ReportHtml(in, evals, best, best_of, switches, ratio, slowdown, groups));
  return report;
}

}  // namespace saturn
