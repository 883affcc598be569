#include "profiler/table.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/format.h"

namespace saturn {
namespace {

std::string KnobsText(const nlohmann::json& knobs) {
  return knobs.empty() ? "" : knobs.dump();
}

ProfileRow RowFor(const WorkloadTask& task, const Trial& t, long checkpoint_every, bool estimates) {
  double peak = 0;
  for (double b : t.result.peak_memory_bytes)
    peak = std::max(peak, b);
  WorkerSearchResult r = PlannedResult(task, t);
  ProfileRow row;
  row.task = task.name;
  row.technique = t.technique;
  row.gpus = t.gpus;
  row.gpu_type = t.gpu_type;
  row.runtime_s = RuntimeEstimate(r, task.steps, checkpoint_every);
  row.extra = {FormatNumber(r.step_s),
               std::to_string(task.steps),
               FormatNumber(StartCost(t.result)),
               FormatNumber(t.result.launch_s),
               FormatNumber(t.result.checkpoint_s),
               FormatFixed(peak / (1 << 30), 3),
               KnobsText(t.result.knobs),
               FormatNumber(t.result.eval_s)};
  if (estimates) row.extra.push_back(t.estimated_from);
  return row;
}

}  // namespace

WorkerSearchResult PlannedResult(const WorkloadTask& task, const Trial& t) {
  WorkerSearchResult r = t.result;
  r.step_s = StepWithEvaluation(r, EvalEvery(task));
  return r;
}

double PlannedRuntime(const WorkloadTask& task, const Trial& t, long checkpoint_every) {
  return RuntimeEstimate(PlannedResult(task, t), task.steps, checkpoint_every);
}

double StepStandardError(const std::vector<double>& samples) {
  std::vector<double> kept;
  for (double s : samples)
    if (s > 0 && std::isfinite(s)) kept.push_back(s);
  if (kept.size() < 2) return 0.0;
  // The samples StepEstimate averages: gross outliers (over 3x the median) out.
  std::sort(kept.begin(), kept.end());
  size_t n = kept.size();
  double median = n % 2 ? kept[n / 2] : (kept[n / 2 - 1] + kept[n / 2]) / 2;
  while (kept.size() > 1 && kept.back() > 3 * median)
    kept.pop_back();
  if (kept.size() < 2) return 0.0;
  double mean = 0;
  for (double s : kept)
    mean += s;
  mean /= static_cast<double>(kept.size());
  double squares = 0;
  for (double s : kept)
    squares += (s - mean) * (s - mean);
  double k = static_cast<double>(kept.size());
  return std::sqrt(squares / (k - 1)) / std::sqrt(k);
}

std::vector<WithinNoise> LeaveOutWithinNoise(std::vector<Measured> configs) {
  // Simplest first: fewer GPUs, then the technique's rank.
  std::stable_sort(configs.begin(), configs.end(), [](const Measured& a, const Measured& b) {
    return a.gpus != b.gpus ? a.gpus < b.gpus : a.rank < b.rank;
  });
  std::vector<WithinNoise> out;
  const Measured* fastest_kept = nullptr;
  for (const Measured& c : configs) {
    if (fastest_kept && c.runtime_s < fastest_kept->runtime_s) {
      double margin = 2 * std::hypot(c.se_s, fastest_kept->se_s);
      if (fastest_kept->runtime_s - c.runtime_s <= margin) {
        out.push_back({0, c.trial, fastest_kept->trial, margin});
        continue;
      }
    }
    if (!fastest_kept || c.runtime_s < fastest_kept->runtime_s) fastest_kept = &c;
  }
  return out;
}

void BuildTable(const Workload& workload, const ProfilerOptions& options, const TechniqueRank& rank,
                ProfileRun& run) {
  run.checkpoint_every = options.checkpoint_every;
  run.table.extra_columns = {"step_s",       "steps",           "start_cost_s", "launch_s",
                             "checkpoint_s", "peak_memory_gib", "knobs",        "eval_s"};
  // --types estimate: which rows were scaled from another type, not measured.
  const bool estimates = run.estimated > 0;
  if (estimates) run.table.extra_columns.push_back("estimated_from");
  for (size_t k = 0; k < workload.tasks.size(); ++k) {
    const WorkloadTask& task = workload.tasks[k];
    std::string reasons;
    std::vector<Measured> feasible;
    for (int i : run.task_trials[k]) {
      const Trial& t = run.trials[i];
      if (!t.result.feasible) {
        reasons += "\n  " + t.technique + " x" + std::to_string(t.gpus) +
                   (t.gpu_type.empty() ? "" : " on " + t.gpu_type) + ": " + t.result.reason;
        continue;
      }
      feasible.push_back({i, t.gpus, rank(task, t.technique),
                          PlannedRuntime(task, t, options.checkpoint_every),
                          static_cast<double>(task.steps) * t.step_se_s});
    }
    // Within noise of a simpler configuration on the same GPU type only
    // (another type is another device, not another way to use this one).
    std::map<std::string, std::vector<Measured>> by_type;
    for (const Measured& m : feasible)
      by_type[run.trials[m.trial].gpu_type].push_back(m);
    std::set<int> left_out;
    for (auto& [type, configs] : by_type) {
      for (WithinNoise w : LeaveOutWithinNoise(configs)) {
        w.task = static_cast<int>(k);
        left_out.insert(w.trial);
        run.within_noise.push_back(w);
      }
    }
    for (const Measured& m : feasible) {
      if (!left_out.count(m.trial))
        run.table.rows.push_back(
            RowFor(task, run.trials[m.trial], options.checkpoint_every, estimates));
    }
    if (feasible.empty()) {
      throw InputError(
          workload.source, task.line, "task " + Quote(task.name),
          "cannot run on this cluster: no configuration is feasible" +
              (reasons.empty() ? std::string(" (no configuration to try)") : ":" + reasons));
    }
  }
}

}  // namespace saturn
