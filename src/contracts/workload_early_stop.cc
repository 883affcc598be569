#include "contracts/workload_early_stop.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/defaults.h"
#include "common/error.h"
#include "common/format.h"
#include "common/limits.h"
#include "common/mix.h"
#include "contracts/workload_model.h"

namespace saturn {

const std::vector<std::string>& EarlyStopRuleNames() {
  static const std::vector<std::string> names = {"asha", "median"};
  return names;
}

namespace {

// Every task evaluates at each step the rule decides at.
void CheckTasksEvaluate(const EarlyStopSpec& spec, const YamlFields& rule, const Workload& w) {
  for (const WorkloadTask& t : w.tasks) {
    const std::string where = "task " + Quote(t.name) + " (line " + std::to_string(t.line) + ")";
    if (t.is_command || !t.spec.contains("eval")) {
      rule.Fail("metric", where + " reports no " + spec.metric +
                              ": early stopping needs every task to evaluate (eval: {every: N})");
    }
    long every = t.spec["eval"]["every"].get<long>();
    if (spec.grace_steps % every != 0) {
      rule.Fail("grace_steps", std::to_string(spec.grace_steps) + " is not a multiple of " + where +
                                   "'s eval.every (" + std::to_string(every) +
                                   "): the rule decides at evaluations");
    }
  }
}

// "unknown metric 'x'; expected eval_loss (lower is better) or ..."
void CheckMetric(const YamlFields& f, const std::string& metric) {
  if (metric != "eval_loss" && metric != "eval_accuracy") {
    f.Fail("metric", "unknown metric " + Quote(metric) +
                         "; expected eval_loss (lower is better) or eval_accuracy (higher)" +
                         SuggestionFor(metric, {"eval_loss", "eval_accuracy"}));
  }
}

}  // namespace

SelectSpec ReadSelect(const YamlFields& top, const Workload& w, const EarlyStopSpec& early_stop) {
  SelectSpec spec;
  spec.metric = early_stop.enabled() ? early_stop.metric : "eval_loss";
  spec.maximize = early_stop.enabled() && early_stop.maximize();
  if (!top.Has("select")) return spec;
  YamlFields f(top.Required("select"), top.source(), top.FieldPath("select"));
  f.AllowOnly({"metric", "mode"});
  spec.metric = f.OptionalString("metric").value_or(spec.metric);
  CheckMetric(f, spec.metric);
  spec.maximize = spec.metric == "eval_accuracy";
  if (std::optional<std::string> mode = f.OptionalString("mode")) {
    if (*mode != "min" && *mode != "max") {
      f.Fail("mode", "expected min or max, got " + Quote(*mode));
    }
    spec.maximize = *mode == "max";
  }
  for (const WorkloadTask& t : w.tasks) {
    if (t.is_command || !t.spec.contains("eval")) {
      f.Fail("metric", "task " + Quote(t.name) + " (line " + std::to_string(t.line) +
                           ") reports no " + spec.metric + ": it needs eval: {every: N}");
    }
  }
  return spec;
}

EarlyStopSpec ReadEarlyStop(const YamlFields& top, const Workload& w) {
  EarlyStopSpec spec;
  if (!top.Has("early_stop")) return spec;
  YamlFields e(top.Required("early_stop"), top.source(), top.FieldPath("early_stop"));
  spec.line = top.Required("early_stop").Mark().line + 1;
  if (e.node().size() != 1) {
    top.Fail("early_stop", "expected one rule: {asha: {...}} or {median: {...}}");
  }
  spec.rule = YamlKey(e.node().begin()->first, top.source(), e.path());
  if (spec.rule != "asha" && spec.rule != "median") {
    top.Fail("early_stop", "unknown rule " + Quote(spec.rule) + "; expected asha or median" +
                               SuggestionFor(spec.rule, EarlyStopRuleNames()));
  }
  YamlFields rule(e.Required(spec.rule), top.source(), e.FieldPath(spec.rule));
  if (spec.rule == "asha") {
    rule.AllowOnly({"metric", "grace_steps", "reduction_factor", "order"});
    spec.reduction_factor = rule.OptionalInt("reduction_factor", 2, 1000).value_or(2);
  } else {
    rule.AllowOnly({"metric", "grace_steps", "min_samples", "order"});
    spec.min_samples = rule.OptionalInt("min_samples", 1, defaults::kMaxWorkloadTasks).value_or(3);
  }
  spec.metric = rule.OptionalString("metric").value_or("eval_loss");
  CheckMetric(rule, spec.metric);
  spec.grace_steps = rule.Int("grace_steps", 1, limits::kMaxSteps);
  std::string order = rule.OptionalString("order").value_or("shuffled");
  if (order != "shuffled" && order != "written") {
    rule.Fail("order", "expected shuffled or written, got " + Quote(order));
  }
  spec.shuffle = order == "shuffled";
  CheckTasksEvaluate(spec, rule, w);
  return spec;
}

namespace {

// The tasks in a random order fixed by their names (order: shuffled): the
// rules judge a task against those that reached a step before it, so a grid
// written from its worst settings to its best would stop none of them (see
// contracts/workload_early_stop.h).
void ShuffleTasks(std::vector<WorkloadTask>& tasks) {
  uint64_t seed = 0x5a7u;
  for (const WorkloadTask& t : tasks)
    for (char c : t.name)
      seed = SplitMix64(seed ^ static_cast<unsigned char>(c));
  for (size_t i = tasks.size(); i > 1; --i) {
    seed = SplitMix64(seed);
    std::swap(tasks[i - 1], tasks[seed % i]);
  }
}

}  // namespace

void ReadModelSelection(const YamlFields& top, Workload& w) {
  w.early_stop = ReadEarlyStop(top, w);
  w.select = ReadSelect(top, w, w.early_stop);
  int written = 0;
  for (WorkloadTask& t : w.tasks) {
    t.early_stop = w.early_stop;
    t.select = w.select;
    t.written = written++;
    if (t.early_stop.enabled()) t.stop_group = w.source;
  }
  if (w.early_stop.enabled() && w.early_stop.shuffle) ShuffleTasks(w.tasks);
}

}  // namespace saturn
