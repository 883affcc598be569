// A workload's early-stopping rule (Contract 5, `early_stop:`), as read:
//
//   early_stop:
//     asha: {metric: eval_loss, grace_steps: 50, reduction_factor: 2}
//   # or
//   early_stop:
//     median: {metric: eval_loss, grace_steps: 50, min_samples: 3}
//
// The rule applies to every task of the workload, as one group (Ray Tune's
// scheduler over one experiment's trials); it decides at evaluations, so
// every task evaluates (`eval: {every: E}`) at each step the rule decides
// at (tune/early_stop.h has the rules themselves).
//
//   select: {metric: eval_accuracy, mode: max}   # what "best" means
#pragma once

#include <string>

namespace saturn {

struct EarlyStopSpec {
  std::string rule;                  // "asha" | "median"; empty: no early stopping
  std::string metric = "eval_loss";  // "eval_loss" (lower is better) | "eval_accuracy"
  long grace_steps = 0;              // no decision before this many steps
  long reduction_factor = 2;         // asha: rungs at G, G*R, G*R^2, ...; keep the top 1/R
  long min_samples = 3;              // median: other tasks needed at a step to decide
  // `order`: shuffled (default): the tasks are taken in a random order fixed
  // by their names (contracts/workload_early_stop.h); written: as written.
  bool shuffle = true;
  int line = 0;  // where `early_stop:` is written

  bool enabled() const { return !rule.empty(); }
  bool maximize() const { return metric == "eval_accuracy"; }
};

// A workload's `select: {metric: eval_loss | eval_accuracy, mode: min |
// max}`: what "best" means among the tasks of a sweep or search (the
// report's best, its margin over the runner-up). Default: the early_stop
// rule's metric, else eval_loss; the mode defaults to the metric's (loss:
// min, accuracy: max).
struct SelectSpec {
  std::string metric = "eval_loss";
  bool maximize = false;
};

}  // namespace saturn
