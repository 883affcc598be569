#include "report/run_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <optional>

#include "common/format.h"
#include "common/fs.h"
#include "contracts/baseline_comparison.h"
#include "contracts/sweep.h"
#include "report/best.h"
#include "report/gantt.h"
#include "report/loss_charts.h"
#include "report/phrases.h"
#include "report/run_costs.h"
#include "report/svg.h"

namespace saturn {
namespace {

using nlohmann::json;

// Whether the cluster names its nodes' GPU types: then each task says the
// type it ran on ("gpu_type"; "" where it never ran).
bool NamesTypes(const Cluster& cluster) {
  return std::any_of(cluster.nodes.begin(), cluster.nodes.end(),
                     [](const ClusterNode& n) { return !n.gpu_type.empty(); });
}

// The GPU type of the node a task ran on ("" if it never ran or the node
// has none).
std::string TypeOf(const Cluster& cluster, const RunReportTask& t) {
  int node = t.node.empty() ? -1 : cluster.NodeIndex(t.node);
  return node < 0 ? "" : cluster.nodes[static_cast<size_t>(node)].gpu_type;
}

}  // namespace

namespace {

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
std::map<std::string, TaskColor> TaskColors(const RunReportInput& in) {
  std::map<std::string, TaskColor> colors;
  auto add = [&](const std::string& task) {
    if (!colors.count(task)) colors[task] = PaletteColor(colors.size());
  };
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
    baseline_svg = RenderGanttSvg(baseline) + "\n";
  }
  return RenderGanttSvg(chart) + "\n" + baseline_svg;
}

bool IsBest(const RunReportTask& t, const std::map<std::string, std::string>& best_of) {
  auto it = best_of.find(t.sweep.empty() ? t.name : t.sweep);
  return it != best_of.end() && it->second == t.name;
}

// A chart per sweep (or task alone), curves in the tasks' colours.
std::string LossHtml(const RunReportInput& in, const Evals& evals,
                     const std::map<std::string, std::string>& best_of,
                     const std::map<std::string, TaskColor>& colors) {
  std::vector<LossSeries> series;
  for (const RunReportTask& t : in.tasks) {
    LossSeries s;
    s.task = t.name;
    s.group = t.sweep;
    s.train = t.losses;
    if (const auto* e = EvalsOfTask(evals, t.name)) {
      for (const auto& [step, p] : *e)
        s.eval.push_back({step, p.loss});
    }
    s.color = colors.at(t.name);
    if (IsBest(t, best_of)) s.note = "best";
    if (t.status != TaskStatus::kFinished) s.note = ToString(t.status);
    series.push_back(std::move(s));
  }
  return "<h2>Loss curves</h2>\n<div class=\"curves\">\n" + LossChartsHtml(series) + "</div>\n";
}

// The hyper-parameters' columns: every swept field of any task, in the
// order the tasks name them; headed by the short key the task names use
// ("lr"), or the whole path where two fields share one.
std::vector<std::pair<std::string, std::string>> HyperParameterColumns(const RunReportInput& in) {
  std::vector<std::string> paths;
  for (const RunReportTask& t : in.tasks) {
    for (const auto& [path, value] : t.hyperparameters) {
      if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
    }
  }
  return HyperParameterHeaders(paths);
}

// The bytes of every task folder whose size is known; nullopt where none is.

// A task's value in a hyper-parameter column: the one its sweep gave it,
// else its own setting as written (a task of no sweep, or of a sweep that
// varied other fields); null where it has none.
json ColumnValue(const RunReportTask& t, const std::string& path) {
  for (const auto& [swept, value] : t.hyperparameters) {
    if (swept == path) return value;
  }
  const json* at = &t.settings;
  for (size_t begin = 0;;) {
    const size_t dot = path.find('.', begin);
    const std::string key = path.substr(begin, dot == std::string::npos ? dot : dot - begin);
    if (!at->is_object() || !at->contains(key)) return nullptr;
    at = &(*at)[key];
    if (dot == std::string::npos) break;
    begin = dot + 1;
  }
  return at->is_object() ? json() : *at;
}

// Whether any task's evaluations report an accuracy.
bool AnyAccuracy(const Evals& evals) {
  for (const auto& [task, points] : evals) {
    for (const auto& [step, e] : points) {
      if (e.accuracy >= 0) return true;
    }
  }
  return false;
}

// A task's evaluation cells (loss, and accuracy where `accuracy`): a
// finished task's final evaluation, another's latest "@ step" (one stopped
// early, one still running); its best evaluation's kept model in the title.
std::string EvalCells(const RunReportTask& t, const Evals& evals,
                      const std::map<std::string, std::string>& best_of, bool accuracy) {
  const auto* points = EvalsOfTask(evals, t.name);
  const EvalPoint* e = FinalEval(t, points);
  std::string at;
  if (e == nullptr && t.status != TaskStatus::kFinished && (e = LatestEval(points)) != nullptr)
    at = " <span class=\"none\">@ " + std::to_string(e->step) + "</span>";
  std::string title;
  if (!t.best_model.is_null()) {
    title = " title=\"its best evaluation by " + XmlEscape(t.best_model.value("metric", "")) +
            ": " + FormatLoss(t.best_model["value"].get<double>()) + " at step " +
            std::to_string(t.best_model["step"].get<long>()) + ", kept as " +
            XmlEscape(t.best_model["path"].get<std::string>()) + "\"";
  }
  std::string cells = "<td" + title + ">" +
                      (e ? FormatLoss(e->loss) + at + (IsBest(t, best_of) ? " (best)" : "") : "") +
                      "</td>";
  if (accuracy) {
    cells += "<td>" + (e && e->accuracy >= 0 ? FormatFixed(e->accuracy, 4) + at : "") + "</td>";
  }
  return cells;
}

// The task table. A task that never started (cancelled or failed before its
// first worker) ran nowhere: no technique, GPUs, node or times.
std::string TableHtml(const RunReportInput& in, const Evals& evals,
                      const std::map<std::string, std::string>& best_of,
                      const std::map<std::string, TaskColor>& colors) {
  const bool types = NamesTypes(in.cluster);
  const auto columns = HyperParameterColumns(in);
  // Evaluation columns only where tasks evaluated.
  const bool evaluated = !evals.empty();
  const bool accuracy = AnyAccuracy(evals);
  std::string hp_headers;
  for (const auto& [path, header] : columns)
    hp_headers += "<th title=\"" + XmlEscape(path) + "\">" + XmlEscape(header) + "</th>";
  std::string html =
      "<h2>Tasks</h2>\n<table><tr><th>task</th>" + hp_headers +
      "<th>status</th><th>technique</th>"
      "<th>GPUs</th><th>node</th>" +
      std::string(types ? "<th>GPU type</th>" : "") +
      "<th>why this configuration</th><th>start</th><th>end</th>"
      "<th>steps</th><th>final loss</th>" +
      std::string(evaluated ? "<th>eval loss</th>" : "") +
      std::string(accuracy ? "<th>eval accuracy</th>" : "") +
      "<th>attempts</th>"
      "<th title=\"bytes of its task folder: checkpoints kept, model.pt, adapters.pt, ...\">"
      "disk</th><th>error</th></tr>\n";
  const std::string none = "<span class=\"none\">–</span>";
  for (const RunReportTask& t : in.tasks) {
    const bool ran = t.attempts > 0;
    auto cell = [&](bool known, const std::string& text) {
      return "<td>" + (known ? text : none) + "</td>";
    };
    std::string hp_cells;
    for (const auto& [path, header] : columns) {
      const json value = ColumnValue(t, path);
      hp_cells += value.is_null()
                      ? cell(false, "")
                      : "<td class=\"hp\">" + XmlEscape(HyperParameterText(value)) + "</td>";
    }
    html += std::string("<tr") + (t.status == TaskStatus::kFailed ? " class=\"failed\"" : "") +
            "><td><span class=\"swatch\" style=\"background:" + colors.at(t.name).line +
            "\"></span>" + XmlEscape(t.name) + "</td>" + hp_cells + "<td>" +
            std::string(ToString(t.status)) + "</td>" +
            cell(ran && !t.technique.empty(), XmlEscape(t.technique)) +
            cell(ran && t.gpus > 0, std::to_string(t.gpus)) +
            cell(ran && !t.node.empty(), XmlEscape(t.node)) +
            (types ? cell(ran && !TypeOf(in.cluster, t).empty(), XmlEscape(TypeOf(in.cluster, t)))
                   : "") +
            cell(ran && !t.why.empty(), XmlEscape(t.why)) +
            cell(ran && t.start_s >= 0, FormatDuration(t.start_s)) +
            cell(ran && t.end_s >= 0, FormatDuration(t.end_s)) + "<td>" +
            std::to_string(t.steps_done) + "/" + std::to_string(t.steps) + "</td>" +
            cell(t.status == TaskStatus::kFinished, FormatLoss(t.final_loss)) +
            (evaluated ? EvalCells(t, evals, best_of, accuracy) : "") + "<td>" +
            std::to_string(t.attempts) +
            (t.failures > 0 ? " (" + std::to_string(t.failures) + " failed)" : "") + "</td>" +
            (t.disk_bytes >= 0
                 ? "<td class=\"disk\">" + FormatBytes(static_cast<double>(t.disk_bytes)) + "</td>"
                 : cell(false, "")) +
            "<td>" + XmlEscape(t.error) + "</td></tr>\n";
  }
  html += "</table>\n";
  if (const std::optional<long long> total = TotalDiskBytes(in)) {
    html += "<p class=\"disk\">The tasks' folders hold <b>" +
            FormatBytes(static_cast<double>(*total)) + "</b> on disk (<code>" +
            XmlEscape(in.run_dir) + "/tasks/</code>).</p>\n";
  }
  return html;
}

// The warning that tasks ran markedly slower than profiled, or "".
std::string WarningHtml(const json& slowdown) {
  if (slowdown.is_null() || slowdown["warning"].is_null()) return "";
  std::string text = slowdown["warning"].get<std::string>();
  return "<p class=\"warning\"><b>Slower than profiled:</b> " + XmlEscape(text) + "</p>\n";
}

// report.html: Gantts, best models, loss curves, task table.
std::string ReportHtml(const RunReportInput& in, const Evals& evals, const json& best,
                       const std::map<std::string, std::string>& best_of, int switches,
                       double ratio, const json& slowdown) {
  const std::map<std::string, TaskColor> colors = TaskColors(in);
  return "<!doctype html><html><head><meta charset=\"utf-8\"><title>Saturn run report</title>"
         "<style>body{font-family:Helvetica,Arial,sans-serif;margin:24px;color:#222}"
         "table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:4px 8px;"
         "font-size:13px}th{background:#f4f4f4}.curves{display:flex;flex-wrap:wrap;gap:12px}"
         ".failed{color:#b00}.hp{font-variant-numeric:tabular-nums}.disk{white-space:nowrap}.none{"
         "color:#999}.no-loss{width:"
         "100%;color:#555;font-size:14px}."
         "swatch{display:inline-block;width:10px;"
         "height:10px;border-radius:2px;margin-right:6px}</style></head><body>\n"
         "<h1>Saturn run report</h1>\n<p>Workload <code>" +
         XmlEscape(in.workload) + "</code>: actual makespan <b>" + FormatDuration(in.makespan_s) +
         "</b>, first plan " + FormatDuration(in.first_plan.makespan_s) + " (ratio " +
         FormatFixed(ratio, 3) + "), " + Plural(switches, "plan switch") + ", profiling " +
         FormatDuration(in.profiling_s) + ", planning " + FormatDuration(in.planning_s) +
         ".</p>\n" + CurrentPracticeHtml(in, CurrentPractice(in)) + WarningHtml(slowdown) +
         GanttsHtml(in, switches, colors) + BestHtml(best) + LossHtml(in, evals, best_of, colors) +
         TableHtml(in, evals, best_of, colors) + "</body></html>\n";
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
  std::vector<std::optional<double>> slowdowns;
  for (const RunReportTask& t : in.tasks)
    slowdowns.push_back(SlowdownOf(t, in.events));
  const json slowdown = SlowdownVsProfile(slowdowns, !report["current_practice"].is_null());
  report["slowdown_vs_profile"] = slowdown;
  const std::optional<long long> disk = TotalDiskBytes(in);
  report["disk_bytes"] = disk ? json(*disk) : json();
  const auto columns = HyperParameterColumns(in);
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
    json hyperparameters = json::object();
    for (const auto& [path, value] : t.hyperparameters)
      hyperparameters[path] = value;
    report["tasks"].back()["hyperparameters"] = std::move(hyperparameters);
    json values = json::object();
    for (const auto& [path, header] : columns) {
      json value = ColumnValue(t, path);
      if (!value.is_null()) values[path] = std::move(value);
    }
    report["tasks"].back()["hyperparameter_values"] = std::move(values);
    report["tasks"].back()["best_model"] = t.best_model;
    // Its latest evaluation, whatever its end (one stopped early included).
    const EvalPoint* latest = LatestEval(evals_of(t.name));
    report["tasks"].back()["last_eval"] = latest ? EvalPointToJson(*latest) : json();
    report["tasks"].back()["slowdown_vs_profile"] = slowdowns[i] ? json(*slowdowns[i]) : json();
    report["tasks"].back()["disk_bytes"] = t.disk_bytes >= 0 ? json(t.disk_bytes) : json();
  }
  report["best"] = best;
  WriteFileAtomic(in.run_dir + "/report.json", report.dump(2) + "\n");

  WriteFileAtomic(in.run_dir + "/report.html",
                  ReportHtml(in, evals, best, best_of, switches, ratio, slowdown));
  return report;
}

}  // namespace saturn
