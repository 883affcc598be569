// The best of each sweep or search (report.json's "best", report.html's
// "Best models", `saturn run`'s last lines): among the tasks that evaluated
// after their last step, the one with the best value of the workload's
// `select:` metric (contracts/early_stop.h: eval_loss, lowest, unless it
// says otherwise), its margin over the runner-up and whether that margin is
// within the evaluations' noise (each evaluation's standard error over its
// held-out batches; eval.batches >= 2).
//
//   Evals evals = EvalsOf(events);
//   std::map<std::string, std::string> best_of;   // sweep -> its best task
//   json best = BestOfSweeps(tasks, evals, best_of);
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "contracts/events.h"
#include "report/run_report.h"

namespace saturn {

// Per task, its evaluations by step (a later event for the same step, after
// a resume, replaces the earlier one; a task_arrived event for its name, a
// cancelled task replaced by a new one, clears them).
using Evals = std::map<std::string, std::map<long, EvalPoint>>;
Evals EvalsOf(const std::vector<Event>& events);
const std::map<long, EvalPoint>* EvalsOfTask(const Evals& evals, const std::string& task);

// The evaluation after a finished task's last step, if it has one.
const EvalPoint* FinalEval(const RunReportTask& t, const std::map<long, EvalPoint>* evals);

// The latest evaluation of a task, if it has one.
const EvalPoint* LatestEval(const std::map<long, EvalPoint>* evals);

// Which evaluation of each task counts: the one after a finished task's
// last step (a run's report), or every task's latest but a failed one's
// (the best so far, while a service trains).
enum class Ranking { kFinal, kSoFar };

// Per sweep, in the order written: {sweep, task, metric, mode, value, step,
// final_eval_loss[, final_eval_accuracy], evaluated, tasks, runner_up
// ({task, value} or null), margin, margin_se and within_noise (null when
// unknown)}; `best_of` gets sweep -> task.
nlohmann::json BestOfSweeps(const std::vector<RunReportTask>& tasks, const Evals& evals,
                            std::map<std::string, std::string>& best_of,
                            Ranking ranking = Ranking::kFinal);

// "; its best evaluation (step 300, 2.1042): tasks/t/best/model.pt" when
// the best task's best evaluation came before its final one ("" otherwise).
// The path is the run folder's, after `folder` ("" or "saturn-runs/w/").
std::string EarlierBestPhrase(const nlohmann::json& entry, const std::string& folder = "");

// report.html's "Best models" list ("" without any).
std::string BestHtml(const nlohmann::json& best);
// "ahead of X by 0.0123 (standard error 0.004: within the evaluations'
// noise)"; "" without a runner-up.
std::string MarginPhrase(const nlohmann::json& entry);

}  // namespace saturn
