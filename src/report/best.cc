#include "report/best.h"

#include <cmath>

#include "common/format.h"
#include "contracts/event_kinds.h"
#include "report/svg.h"

namespace saturn {
namespace {

using nlohmann::json;

// Two standard errors of the difference: a margin below is within noise.
constexpr double kNoiseStandardErrors = 2.0;

// The metric of `select` at evaluation `e`; NaN where it has none.
double ValueOf(const SelectSpec& select, const EvalPoint& e) {
  if (select.metric == "eval_accuracy") return e.accuracy >= 0 ? e.accuracy : NAN;
  return e.loss;
}

}  // namespace

Evals EvalsOf(const std::vector<Event>& events) {
  Evals out;
  for (const Event& e : events) {
    // A task of that name that arrives (again: a cancelled one replaced)
    // starts with no evaluations.
    if (e.kind == EventKind::kTaskArrived) out.erase(e.task);
    if (std::optional<EvalPoint> p = events::EvalPointOf(e)) out[e.task][p->step] = *p;
  }
  return out;
}

const std::map<long, EvalPoint>* EvalsOfTask(const Evals& evals, const std::string& task) {
  auto it = evals.find(task);
  return it == evals.end() ? nullptr : &it->second;
}

const EvalPoint* FinalEval(const RunReportTask& t, const std::map<long, EvalPoint>* evals) {
  if (evals == nullptr || t.status != TaskStatus::kFinished) return nullptr;
  auto it = evals->find(t.steps);
  return it == evals->end() ? nullptr : &it->second;
}

const EvalPoint* LatestEval(const std::map<long, EvalPoint>* evals) {
  return evals == nullptr || evals->empty() ? nullptr : &evals->rbegin()->second;
}

namespace {

struct Ranked {
  const RunReportTask* task;
  const EvalPoint* eval;
  double value;
};

// The entry of one sweep whose evaluated tasks are `ranked`, best first.
json Entry(const std::string& sweep, const std::vector<Ranked>& ranked, size_t tasks) {
  const Ranked& best = ranked.front();
  const SelectSpec& select = best.task->select;
  json entry = {{"sweep", sweep},
                {"task", best.task->name},
                {"metric", select.metric},
                {"mode", select.maximize ? "max" : "min"},
                {"value", best.value},
                {"step", best.eval->step},
                {"final_eval_loss", best.eval->loss},
                {"evaluated", ranked.size()},
                {"tasks", tasks},
                {"runner_up", nullptr},
                {"margin", nullptr},
                {"margin_se", nullptr},
                {"within_noise", nullptr}};
  if (best.eval->accuracy >= 0) entry["final_eval_accuracy"] = best.eval->accuracy;
  if (!best.task->best_model.is_null()) entry["best_model"] = best.task->best_model;
  if (ranked.size() < 2) return entry;
  const Ranked& second = ranked[1];
  entry["runner_up"] = {{"task", second.task->name}, {"value", second.value}};
  double margin = std::fabs(best.value - second.value);
  entry["margin"] = margin;
  // Each evaluation's standard error of the metric ranked by.
  auto se_of = [&](const EvalPoint* e) {
    return select.metric == "eval_accuracy" ? e->accuracy_se : e->loss_se;
  };
  if (se_of(best.eval) >= 0 && se_of(second.eval) >= 0) {
    double se = std::hypot(se_of(best.eval), se_of(second.eval));
    entry["margin_se"] = se;
    entry["within_noise"] = margin < kNoiseStandardErrors * se;
  }
  return entry;
}

}  // namespace

json BestOfSweeps(const std::vector<RunReportTask>& tasks, const Evals& evals,
                  std::map<std::string, std::string>& best_of, Ranking ranking) {
  std::vector<std::string> sweeps;
  std::map<std::string, std::vector<const RunReportTask*>> members;
  for (const RunReportTask& t : tasks) {
    std::string sweep = t.sweep.empty() ? t.name : t.sweep;
    if (members[sweep].empty()) sweeps.push_back(sweep);
    members[sweep].push_back(&t);
  }
  json best = json::array();
  for (const std::string& sweep : sweeps) {
    // A table group's tasks are its sweep ("<task>@<group>"): one task
    // alone has no best to choose (the groups' summary shows each loss).
    if (members[sweep].size() < 2 && sweep.find('@') != std::string::npos) continue;
    std::vector<Ranked> ranked;
    for (const RunReportTask* t : members[sweep]) {
      const EvalPoint* e = ranking == Ranking::kFinal ? FinalEval(*t, EvalsOfTask(evals, t->name))
                           : t->status == TaskStatus::kFailed
                               ? nullptr
                               : LatestEval(EvalsOfTask(evals, t->name));
      if (e == nullptr || std::isnan(ValueOf(t->select, *e))) continue;
      ranked.push_back({t, e, ValueOf(t->select, *e)});
    }
    if (ranked.empty()) continue;
    bool maximize = ranked.front().task->select.maximize;
    std::stable_sort(ranked.begin(), ranked.end(), [&](const Ranked& a, const Ranked& b) {
      return maximize ? a.value > b.value : a.value < b.value;
    });
    best_of[sweep] = ranked.front().task->name;
    best.push_back(Entry(sweep, ranked, members[sweep].size()));
  }
  return best;
}

std::string MarginPhrase(const json& b) {
  if (!b.contains("runner_up") || b["runner_up"].is_null()) return "";
  std::string out = "ahead of " + b["runner_up"]["task"].get<std::string>() + " by " +
                    FormatLoss(b["margin"].get<double>());
  if (b["margin_se"].is_number()) {
    out += " (standard error " + FormatLoss(b["margin_se"].get<double>()) + ": " +
           (b["within_noise"].get<bool>() ? "within the evaluations' noise"
                                          : "more than twice the noise") +
           ")";
  } else {
    out += " (noise unknown: evaluate on 2 or more batches for a standard error)";
  }
  return out;
}

std::string EarlierBestPhrase(const json& b, const std::string& folder) {
  if (!b.contains("best_model") || b["best_model"]["step"] == b["step"]) return "";
  const json& m = b["best_model"];
  return "; its best evaluation (step " + std::to_string(m["step"].get<long>()) + ", " +
         FormatLoss(m["value"].get<double>()) + "): " + folder + m["path"].get<std::string>();
}

std::string BestHtml(const json& best) {
  if (best.empty()) return "";
  std::string html = "<h2>Best models</h2>\n<ul>\n";
  for (const json& b : best) {
    std::string metric = b["metric"].get<std::string>();
    std::string accuracy =
        b.contains("final_eval_accuracy") && metric != "eval_accuracy"
            ? ", accuracy " + FormatFixed(b["final_eval_accuracy"].get<double>(), 4)
            : std::string();
    std::string margin = MarginPhrase(b);
    html += "<li>" + XmlEscape(b["sweep"].get<std::string>()) + ": <b>" +
            XmlEscape(b["task"].get<std::string>()) + "</b>, " +
            (metric == "eval_accuracy" ? "evaluation accuracy " : "evaluation loss ") +
            FormatLoss(b["value"].get<double>()) + " (" +
            (b["mode"] == "max" ? "highest" : "lowest") + ")" + accuracy + ", " +
            std::to_string(b["evaluated"].get<int>()) + " of " +
            Plural(static_cast<long>(b["tasks"].get<size_t>()), "task") + " evaluated" +
            (margin.empty() ? "" : "; " + XmlEscape(margin)) + "; its model: <code>tasks/" +
            XmlEscape(b["task"].get<std::string>()) + "/model.pt</code>" +
            XmlEscape(EarlierBestPhrase(b)) + "</li>\n";
  }
  return html + "</ul>\n";
}

}  // namespace saturn
