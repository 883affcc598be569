#include "report/task_table.h"

#include <algorithm>
#include <optional>

#include "common/format.h"
#include "report/phrases.h"
#include "report/run_costs.h"

namespace saturn {

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

bool IsBest(const RunReportTask& t, const std::map<std::string, std::string>& best_of) {
  auto it = best_of.find(t.sweep.empty() ? t.name : t.sweep);
  return it != best_of.end() && it->second == t.name;
}

// The hyper-parameters' columns: every swept field of any task, in the
// order the tasks name them; headed by the short key the task names use
// ("lr"), or the whole path where two fields share one.
std::vector<std::pair<std::string, std::string>> HyperParameterColumns(
    const std::vector<const RunReportTask*>& tasks) {
  std::vector<std::string> paths;
  for (const RunReportTask* t : tasks) {
    for (const auto& [path, value] : t->hyperparameters) {
      if (std::find(paths.begin(), paths.end(), path) == paths.end()) paths.push_back(path);
    }
  }
  return HyperParameterHeaders(paths);
}

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

namespace {

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

}  // namespace

// A task that never started (cancelled or failed before its first worker)
// ran nowhere: no technique, GPUs, node or times.
std::string TaskTableHtml(const RunReportInput& in, const std::vector<const RunReportTask*>& rows,
                          const Evals& evals, const std::map<std::string, std::string>& best_of,
                          const std::map<std::string, TaskColor>& colors) {
  std::string disk;
  if (const std::optional<long long> total = TotalDiskBytes(in)) {
    disk = "<p class=\"disk\">The tasks' folders hold <b>" +
           FormatBytes(static_cast<double>(*total)) + "</b> on disk (<code>" +
           XmlEscape(in.run_dir) + "/tasks/</code>).</p>\n";
  }
  if (rows.empty()) return disk;
  const bool types = NamesTypes(in.cluster);
  const auto columns = HyperParameterColumns(rows);
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
  for (const RunReportTask* row : rows) {
    const RunReportTask& t = *row;
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
  return html + "</table>\n" + disk;
}

}  // namespace saturn
