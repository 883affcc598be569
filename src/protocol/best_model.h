// The best model over time (docs/worker.md, "The best model"): a task that
// evaluates keeps, beside its checkpoints, the model of the evaluation with
// the best value of its workload's `select:` metric so far — `best/` in its
// task folder, holding model.pt (and adapters.pt for a LoRA task, trained.pt
// for a TorchScript one) and best.json:
//   {"step": 350, "metric": "eval_loss", "mode": "min", "value": 2.31}
// The worker (rank 0, at each evaluation) replaces it when an evaluation
// improves on it; a resumed worker reads best.json first, so a kill never
// loses the best nor keeps a worse one. The folder is replaced by renames:
// filled as best.partial/ (best.json last), the old one renamed aside to
// best.old/, the new one renamed in; a keeper made after a kill between
// them finishes the replacement (or puts the old one back), so a reader
// may briefly find no best/, never a half-written one.
// Torch-free: the caller fills the folder (engine::ExportModel).
//
//   BestModelKeeper keeper(dir + "/best", {"eval_loss", false});
//   if (keeper.Improves(loss)) keeper.Replace(step, loss, [&](const std::string& into) { ... });
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

namespace saturn {

// What "best" means: the metric (eval_loss or eval_accuracy) and whether
// higher is better.
struct BestMetric {
  std::string metric = "eval_loss";
  bool maximize = false;
};

// "eval_loss:min" -> {eval_loss, false}; nullopt for anything else than
// eval_loss or eval_accuracy, then min or max.
std::optional<BestMetric> ParseBestMetric(const std::string& text);

// A kept best: its evaluation's step and value, and what it was ranked by.
struct BestEval {
  long step = 0;
  BestMetric by;
  double value = 0.0;
};

// best.json's content: {"step", "metric", "mode", "value"}.
nlohmann::json BestEvalToJson(const BestEval& e);
// best.json of `dir`; nullopt where there is none or it does not parse.
std::optional<BestEval> ReadBestEval(const std::string& dir);

class BestModelKeeper {
 public:
  // A best kept earlier in `dir` (a resumed task) counts only if it was
  // ranked by the same metric and mode.
  BestModelKeeper(std::string dir, BestMetric by);

  // Whether `value` is better than the best so far (NaN never is).
  bool Improves(double value) const;
  // `fill(folder)` writes the model into a fresh folder; then it replaces
  // the kept one, with best.json naming `step` and `value`.
  void Replace(long step, double value, const std::function<void(const std::string&)>& fill);
  const std::optional<BestEval>& best() const { return best_; }
  const BestMetric& by() const { return by_; }

 private:
  std::string dir_;
  BestMetric by_;
  std::optional<BestEval> best_;
};

}  // namespace saturn
