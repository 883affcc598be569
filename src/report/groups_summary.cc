#include "report/groups_summary.h"

#include <algorithm>
#include <cmath>

#include "common/format.h"
#include "report/phrases.h"
#include "report/svg.h"

namespace saturn {
namespace {

using nlohmann::json;

// Sorts the groups table by the column whose header is clicked: ascending,
// then descending; numbers as numbers ("inf" above all), text in natural
// order (store-2 before store-10), empty cells ("–") last either way; an
// arrow and aria-sort mark the column. The rows are put back in one call.
// Enter or space on a header (they take the focus) sorts as a click does.
constexpr const char* kSortScript = R"(<script>
(() => {
  const table = document.getElementById('groups-table');
  const body = table.tBodies[0];
  const heads = [...table.tHead.rows[0].cells];
  const collator = new Intl.Collator(undefined, {numeric: true});
  const key = (text, num) => {
    text = text.trim();
    if (!num) return text === '' || text === '\u2013' ? null : text;
    const v = text.startsWith('inf') ? Infinity : parseFloat(text);
    return Number.isNaN(v) ? null : v;
  };
  heads.forEach(th => th.addEventListener('keydown', e => {
    if (e.key === 'Enter' || e.key === ' ') { e.preventDefault(); th.click(); }
  }));
  heads.forEach((th, col) => th.addEventListener('click', () => {
    const asc = th.getAttribute('aria-sort') !== 'ascending';
    const num = th.dataset.type === 'num';
    const rows = [...body.rows];
    const keys = rows.map(r => key(r.cells[col].textContent, num));
    const order = rows.map((r, i) => i);
    order.sort((a, b) => {
      const x = keys[a], y = keys[b];
      if (x === null || y === null) return x === y ? a - b : x === null ? 1 : -1;
      const c = num ? (x < y ? -1 : x > y ? 1 : 0) : collator.compare(x, y);
      return (asc ? c : -c) || a - b;
    });
    for (const h of heads) {
      h.removeAttribute('aria-sort');
      h.querySelector('.arrow').textContent = '';
    }
    th.setAttribute('aria-sort', asc ? 'ascending' : 'descending');
    th.querySelector('.arrow').textContent = asc ? ' \u25b2' : ' \u25bc';
    body.replaceChildren(...order.map(i => rows[i]));
  }));
})();
</script>
)";

const char* const kNone = "<td class=\"none\">–</td>";

// "10,000 groups", "1 group".
std::string Many(size_t n, const std::string& word) {
  return WithCommas(static_cast<long>(n)) + " " + word + (n == 1 ? "" : "s");
}

// The table task a group's sweep was written as: "stores" of "stores@s1".
std::string WrittenTask(const ReportGroup& g) {
  const size_t at = g.sweep.find('@');
  return at == std::string::npos ? g.sweep : g.sweep.substr(0, at);
}

// Each group's held-out loss (its best's, or its one task's), the
// histogram of the finite ones, and the slowest groups.
void Summarise(GroupsSummary& s) {
  std::vector<double> finite;
  for (ReportGroup& g : s.groups) {
    const GroupTaskRow* chosen = g.rows.size() == 1 ? &s.rows[g.rows[0]] : nullptr;
    for (size_t r : g.rows) {
      if (s.rows[r].best) chosen = &s.rows[r];
    }
    if (chosen != nullptr && chosen->eval != nullptr) {
      g.has_eval_loss = true;
      g.eval_loss = chosen->eval->loss;
    }
    if (!g.has_eval_loss) {
      ++s.without_eval_loss;
    } else if (!std::isfinite(g.eval_loss)) {
      ++s.nonfinite_eval_loss;
    } else {
      finite.push_back(g.eval_loss);
    }
  }
  s.histogram = HistogramOf(finite);
  for (size_t i = 0; i < s.groups.size(); ++i) {
    if (s.groups[i].wall_s >= 0) s.slowest.push_back(i);
  }
  std::stable_sort(s.slowest.begin(), s.slowest.end(),
                   [&](size_t a, size_t b) { return s.groups[a].wall_s > s.groups[b].wall_s; });
  if (s.slowest.size() > kSlowestGroups) s.slowest.resize(kSlowestGroups);
}

// A column of the groups table: its header (sorted as numbers or as text)
// and the most characters of any of its cells.
struct Column {
  std::string name;
  bool num;
  std::string title;
  size_t chars = 0;
};

// How many characters (UTF-8 code points) `text` has.
size_t CodePoints(const std::string& text) {
  return static_cast<size_t>(std::count_if(text.begin(), text.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

bool AnyUnfinished(const GroupsSummary& s) {
  return std::any_of(s.rows.begin(), s.rows.end(),
                     [](const GroupTaskRow& r) { return r.task->status != TaskStatus::kFinished; });
}

std::vector<Column> Columns(const GroupsSummary& s) {
  std::vector<Column> cols = {{"group", false, "its value in the table's group_by column"},
                              {"task", false, "the group's task; of a sweep, its best is marked"}};
  if (AnyUnfinished(s)) cols.push_back({"status", false, "how the task ended"});
  cols.push_back({"train rows", true, "the group's training rows (the rest held out)"});
  cols.push_back({"steps", true, "steps trained (of its steps, where it did not finish)"});
  cols.push_back({"final loss", true, "training loss at its last step"});
  cols.push_back({"held-out loss", true, "loss over the group's held-out rows at its end"});
  if (s.accuracy) {
    cols.push_back({"accuracy", true, "accuracy over the held-out rows at its end"});
  }
  cols.push_back({"wall s", true, "seconds from its first start to its end"});
  return cols;
}

// A row's cells as text, in Columns' order ("" where it has none).
std::vector<std::string> RowCells(const GroupsSummary& s, const ReportGroup& g,
                                  const GroupTaskRow& row, bool status) {
  const RunReportTask& t = *row.task;
  std::vector<std::string> cells = {g.group, t.name};
  if (status) cells.push_back(std::string(ToString(t.status)));
  cells.push_back(std::to_string(t.train_rows));
  cells.push_back(std::to_string(t.steps_done) +
                  (t.steps_done != t.steps ? "/" + std::to_string(t.steps) : ""));
  cells.push_back(t.status == TaskStatus::kFinished ? FormatLoss(t.final_loss) : "");
  cells.push_back(row.eval ? FormatLoss(row.eval->loss) : "");
  if (s.accuracy) {
    cells.push_back(row.eval && row.eval->accuracy >= 0 ? FormatFixed(row.eval->accuracy, 4) : "");
  }
  cells.push_back(t.start_s >= 0 && t.end_s >= t.start_s ? FormatFixed(t.end_s - t.start_s, 1)
                                                         : "");
  return cells;
}

// The table's style: each row a grid of the columns' widths (wide enough
// for their longest cell, up to kWidestColumn characters; longer text
// wraps), so that of more than kLazyRowsFrom rows the browser lays out only
// those in view (content-visibility: 10,000 rows load and sort in a fraction
// of the time); the header stays at the top of its box.
std::string TableCss(const std::vector<Column>& cols, size_t rows) {
  constexpr size_t kLazyRowsFrom = 200;
  constexpr size_t kWidestColumn = 48;
  std::string widths;
  size_t first_number = cols.size() + 1;
  for (size_t i = 0; i < cols.size(); ++i) {
    const size_t chars = std::min(kWidestColumn, std::max(cols[i].chars, cols[i].name.size() + 2));
    widths += "calc(" + FormatFixed(static_cast<double>(chars) * (cols[i].num ? 1.0 : 1.1), 1) +
              "ch + 18px) ";
    if (cols[i].num) first_number = std::min(first_number, i + 1);
  }
  const std::string numbers = ":nth-child(n+" + std::to_string(first_number) + ")";
  return "<style>#groups-table,#groups-table thead,#groups-table tbody{display:block}"
         "#groups-table thead{position:sticky;top:0;z-index:1}"
         "#groups-table tr{font-size:13px;display:grid;grid-template-columns:" +
         widths + "}#groups-table tbody tr{border-top:1px solid #e6e6e6" +
         (rows > kLazyRowsFrom ? ";content-visibility:auto;contain-intrinsic-size:auto 25px" : "") +
         "}#groups-table td,#groups-table th{border:0;"
         "overflow-wrap:anywhere}#groups-table td+td,#groups-table th+th{border-left:1px solid "
         "#eee}#groups-table th{cursor:pointer;user-select:none;text-align:left}"
         "#groups-table th[aria-sort]{background:#e4ecf7}"
         "#groups-table tbody tr:nth-child(even){background:#fafafa}"
         "#groups-table tr.best{background:#eef8ee}#groups-table td" +
         numbers + ",#groups-table th" + numbers +
         "{text-align:right;font-variant-numeric:tabular-nums}</style>\n";
}

// The table of every table task, a row each.
std::string TableHtml(const GroupsSummary& s) {
  std::vector<Column> cols = Columns(s);
  const bool status = cols[2].name == "status";
  std::vector<std::vector<std::string>> rows;
  rows.reserve(s.rows.size());
  std::vector<const GroupTaskRow*> of;  // each row's task
  for (const ReportGroup& g : s.groups) {
    for (size_t r : g.rows) {
      rows.push_back(RowCells(s, g, s.rows[r], status));
      of.push_back(&s.rows[r]);
      for (size_t c = 0; c < cols.size(); ++c)
        cols[c].chars = std::max(cols[c].chars,
                                 CodePoints(rows.back()[c]) + (c == 1 && of.back()->best ? 5 : 0));
    }
  }
  std::string html = TableCss(cols, rows.size()) +
                     "<div class=\"groups-scroll\"><table id=\"groups-table\"><thead><tr>";
  for (const Column& c : cols) {
    html += "<th tabindex=\"0\" data-type=\"" + std::string(c.num ? "num" : "text") +
            "\" title=\"" + XmlEscape(c.title) + "\">" + XmlEscape(c.name) +
            "<span class=\"arrow\"></span></th>";
  }
  html += "</tr></thead><tbody>\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const bool best = of[i]->best;
    html += best                                         ? "<tr class=\"best\">"
            : of[i]->task->status == TaskStatus::kFailed ? "<tr class=\"failed\">"
                                                         : "<tr>";
    for (size_t c = 0; c < cols.size(); ++c) {
      const std::string& text = rows[i][c];
      html += text.empty()
                  ? kNone
                  : "<td>" + XmlEscape(text) +
                        (c == 1 && best ? " <span class=\"tag\">best</span>" : "") + "</td>";
    }
    html += "</tr>\n";
  }
  return html + "</tbody></table></div>\n" + kSortScript;
}

// The kSlowestGroups groups of longest wall time, with their rows and steps.
std::string SlowestHtml(const GroupsSummary& s) {
  if (s.slowest.empty()) return "";
  std::string html =
      "<div><h3>Slowest groups</h3><table class=\"slowest\"><tr><th>group</th><th>task</th>"
      "<th>wall</th><th>train rows</th><th>steps</th></tr>\n";
  for (size_t i : s.slowest) {
    const ReportGroup& g = s.groups[i];
    const std::string tasks =
        g.rows.size() == 1
            ? s.rows[g.rows[0]].task->name
            : WrittenTask(g) + " (" + Plural(static_cast<long>(g.rows.size()), "task") + ")";
    html += "<tr><td>" + XmlEscape(g.group) + "</td><td>" + XmlEscape(tasks) + "</td><td>" +
            FormatDuration(g.wall_s) + "</td><td>" + WithCommas(g.train_rows) + "</td><td>" +
            WithCommas(g.steps) + "</td></tr>\n";
  }
  return html + "</table></div>\n";
}

// What the histogram counts, and which groups it leaves out.
std::string HistogramSubtitle(const GroupsSummary& s) {
  std::string text = WithCommas(s.histogram.Total()) + " of " +
                     WithCommas(static_cast<long>(s.groups.size())) +
                     " groups; without a held-out loss: " + WithCommas(s.without_eval_loss);
  if (s.nonfinite_eval_loss > 0) {
    text += "; not finite (diverged): " + WithCommas(s.nonfinite_eval_loss);
  }
  return text;
}

}  // namespace

GroupsSummary SummariseGroups(const std::vector<RunReportTask>& tasks, const Evals& evals,
                              const std::map<std::string, std::string>& best_of) {
  GroupsSummary s;
  std::map<std::string, size_t> index;  // sweep -> its group
  for (const RunReportTask& t : tasks) {
    if (t.group.empty()) continue;
    const std::string sweep = t.sweep.empty() ? t.group : t.sweep;
    auto [it, added] = index.try_emplace(sweep, s.groups.size());
    if (added) {
      s.groups.emplace_back();
      s.groups.back().group = t.group;
      s.groups.back().sweep = sweep;
      s.groups.back().train_rows = t.train_rows;
    }
    ReportGroup& g = s.groups[it->second];
    GroupTaskRow row{&t, FinalEval(t, EvalsOfTask(evals, t.name)), false};
    // A sweep's best (best_of names none for a group's one task).
    const auto best = best_of.find(sweep);
    row.best = best != best_of.end() && best->second == t.name;
    s.accuracy = s.accuracy || (row.eval != nullptr && row.eval->accuracy >= 0);
    g.rows.push_back(s.rows.size());
    s.rows.push_back(row);
    g.steps += t.steps_done;
    if (t.start_s >= 0 && t.end_s >= t.start_s) {
      g.wall_s = std::max(0.0, g.wall_s) + (t.end_s - t.start_s);
    }
  }
  s.summarised = s.rows.size() > kSummariseGroupTasksOver;
  Summarise(s);
  return s;
}

json GroupsJson(const GroupsSummary& s) {
  json slowest = json::array();
  for (size_t i : s.slowest) {
    const ReportGroup& g = s.groups[i];
    slowest.push_back({{"group", g.group},
                       {"sweep", g.sweep},
                       {"wall_s", g.wall_s},
                       {"train_rows", g.train_rows},
                       {"steps", g.steps}});
  }
  return {{"count", s.groups.size()},
          {"tasks", s.rows.size()},
          {"summarised", s.summarised},
          {"with_eval_loss", s.histogram.Total()},
          {"without_eval_loss", s.without_eval_loss},
          {"nonfinite_eval_loss", s.nonfinite_eval_loss},
          {"eval_loss_histogram",
           {{"scale", s.histogram.log_scale ? "log" : "linear"},
            {"edges", s.histogram.edges},
            {"counts", s.histogram.counts}}},
          {"slowest", std::move(slowest)}};
}

std::vector<std::string> WorstGroupSweeps(const GroupsSummary& s, size_t n) {
  std::vector<const ReportGroup*> scored;
  for (const ReportGroup& g : s.groups) {
    if (g.has_eval_loss) scored.push_back(&g);
  }
  // NaN and infinity (a group that diverged) above every finite loss.
  auto score = [](const ReportGroup* g) {
    return std::isfinite(g->eval_loss) ? g->eval_loss : INFINITY;
  };
  std::stable_sort(scored.begin(), scored.end(),
                   [&](const ReportGroup* a, const ReportGroup* b) { return score(a) > score(b); });
  std::vector<std::string> sweeps;
  for (size_t i = 0; i < scored.size() && i < n; ++i)
    sweeps.push_back(scored[i]->sweep);
  return sweeps;
}

std::string GroupsHtml(const GroupsSummary& s) {
  if (s.groups.empty()) return "";
  std::vector<std::string> written;
  for (const ReportGroup& g : s.groups) {
    if (std::find(written.begin(), written.end(), WrittenTask(g)) == written.end())
      written.push_back(WrittenTask(g));
  }
  std::string of;
  for (const std::string& w : written)
    of += (of.empty() ? "" : ", ") + XmlEscape(w);
  const bool sweeps = s.rows.size() > s.groups.size();
  return "<h2 id=\"groups\">Groups</h2>\n<p>" + Many(s.groups.size(), "group") + " of " + of +
         " in " + Many(s.rows.size(), "task") +
         (sweeps ? " (each group's sweep; its best is marked)" : "") +
         ". Click a column's header to sort the table by it, again to reverse.</p>\n"
         "<style>.groups-top{display:flex;flex-wrap:wrap;gap:24px;align-items:flex-start}"
         ".groups-scroll{max-height:70vh;overflow:auto;border:1px solid #ddd;margin-top:12px;"
         "width:max-content;max-width:100%}.tag{font-size:11px;color:#2c7a2c}"
         ".slowest td:nth-child(n+3){text-align:right}</style>\n"
         "<div class=\"groups-top\">" +
         RenderHistogramSvg(s.histogram, "Held-out loss per group", HistogramSubtitle(s)) +
         SlowestHtml(s) + "</div>\n" + TableHtml(s);
}

}  // namespace saturn
