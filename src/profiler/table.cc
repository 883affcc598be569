#include "profiler/table.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <regex>
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

// As the engine writes sizes (engine::FormatBytes): "3.10 GiB", "600.9 MiB".
std::string Bytes(double bytes) {
  char text[32];
  if (bytes >= double(1 << 30)) {
    std::snprintf(text, sizeof text, "%.2f GiB", bytes / (1 << 30));
  } else if (bytes >= double(1 << 20)) {
    std::snprintf(text, sizeof text, "%.1f MiB", bytes / (1 << 20));
  } else {
    std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024);
  }
  return text;
}

double UnitBytes(const std::string& unit) {
  return unit == "GiB" ? double(1 << 30) : unit == "MiB" ? double(1 << 20) : 1024.0;
}

// An out-of-memory reason in the engine's one wording: "out of memory:
// needs 600.9 MiB per device, has 256.0 MiB (what)", "needs more than ..."
// for an allocation past the hard limit (which does not know the capacity).
struct MemoryNeed {
  double needed_bytes = 0;
  bool more_than = false;     // a lower bound
  double capacity_bytes = 0;  // 0: unknown
  bool states_alone = false;  // parameters, gradients and optimizer state alone
  size_t has_at = 0;          // where ", has Y" goes when the reason lacks it
  bool has_text = false;
};

std::optional<MemoryNeed> ParseMemoryNeed(const std::string& reason) {
  if (reason.find("out of memory") == std::string::npos) return std::nullopt;
  static const std::regex need(
      R"(needs (more than )?([0-9]+(?:\.[0-9]+)?) (KiB|MiB|GiB) per device)"
      R"((, has ([0-9]+(?:\.[0-9]+)?) (KiB|MiB|GiB))?)");
  std::smatch m;
  if (!std::regex_search(reason, m, need)) return std::nullopt;
  MemoryNeed n;
  n.more_than = m[1].matched;
  n.needed_bytes = std::stod(m[2].str()) * UnitBytes(m[3].str());
  n.has_text = m[4].matched;
  if (n.has_text) n.capacity_bytes = std::stod(m[5].str()) * UnitBytes(m[6].str());
  n.has_at = static_cast<size_t>(m.position(0) + m.length(0));
  n.states_alone = reason.find("optimizer state alone") != std::string::npos;
  return n;
}

// A device's capacity in the trial: what the worker reported, else what
// the cluster declares (0: none).
double CapacityBytes(const Trial& t) {
  return t.result.capacity_bytes > 0 ? t.result.capacity_bytes : t.memory_gib * (1 << 30);
}

std::string ConfigurationName(const Trial& t) {
  return t.technique + " x" + std::to_string(t.gpus) +
         (t.gpu_type.empty() ? "" : " on " + t.gpu_type);
}

// The error of a task no configuration fits: one line that says what it
// needs, what the devices have and what would make it fit; then each
// configuration's reason on a line of its own.
std::string NoFeasibleConfiguration(const WorkloadTask& task, const Workload& workload,
                                    const ProfileRun& run, const std::vector<int>& trials) {
  if (trials.empty()) return "cannot run on this cluster: no configuration to try";
  std::string details;
  const Trial* closest = nullptr;
  MemoryNeed closest_need;
  double closest_ratio = 0;
  for (int i : trials) {
    const Trial& t = run.trials[i];
    details += "\n  " + ConfigurationName(t) + ": " + InfeasibleReason(t);
    std::optional<MemoryNeed> need = ParseMemoryNeed(t.result.reason);
    if (!need) continue;
    if (!need->has_text) need->capacity_bytes = CapacityBytes(t);
    // Closest: the least memory needed for what the devices have.
    double ratio = need->needed_bytes / std::max(need->capacity_bytes, 1.0);
    if (!closest || ratio < closest_ratio)
      closest = &t, closest_need = *need, closest_ratio = ratio;
  }
  if (!closest) {
    return "cannot run on this cluster: no configuration is feasible (" +
           Plural(static_cast<long>(trials.size()), "configuration") + " tried):" + details;
  }
  // What would make it fit, of what the task does not do already.
  const nlohmann::json& spec = task.spec;
  std::string model = spec.contains("model") ? spec["model"].value("type", "") : "";
  bool lora = spec.contains("finetune") && spec["finetune"].contains("lora");
  bool bf16 = spec.value("precision", "fp32") == "bf16";
  std::vector<std::string> remedies;
  if (!task.is_command && !lora &&
      (model == "gpt" || model == "gpt2" || model == "llama" || model == "vit"))
    remedies.push_back("LoRA (finetune: {lora: {rank: 8}})");
  if (!task.is_command && !bf16 && !closest_need.states_alone)
    remedies.push_back("precision: bf16");
  if (!task.techniques.empty()) {
    std::string listed;
    for (const std::string& name : task.techniques)
      listed += (listed.empty() ? "" : ", ") + name;
    remedies.push_back("more techniques than " + listed);
  }
  if (task.gpu_range_given && task.gpu_max < workload.cluster.MaxGpusPerNode()) {
    remedies.push_back("a wider gpu_range than [" + std::to_string(task.gpu_min) + ", " +
                       std::to_string(task.gpu_max) + "]");
  }
  remedies.push_back("more or larger devices");
  std::string fix;
  for (size_t r = 0; r < remedies.size(); ++r)
    fix += (r == 0 ? "" : r + 1 == remedies.size() ? " or " : ", ") + remedies[r];
  std::string tried = task.is_command ? ""
                      : closest_need.states_alone
                          ? " (parameters, gradients and optimizer state alone do not fit: "
                            "activation checkpointing cannot help)"
                          : " (activation checkpointing was tried)";
  return "does not fit in memory: its closest fit, " + ConfigurationName(*closest) + ", needs " +
         (closest_need.more_than ? "more than " : "") + Bytes(closest_need.needed_bytes) +
         " per device" +
         (closest_need.capacity_bytes > 0
              ? " and its devices have " + Bytes(closest_need.capacity_bytes)
              : std::string()) +
         "; to make it fit, try " + fix + tried + "; the configurations tried:" + details;
}

}  // namespace

std::string InfeasibleReason(const Trial& t) {
  const std::string& reason = t.result.reason;
  std::optional<MemoryNeed> need = ParseMemoryNeed(reason);
  double capacity = CapacityBytes(t);
  if (!need || need->has_text || capacity <= 0) return reason;
  return reason.substr(0, need->has_at) + ", has " + Bytes(capacity) + reason.substr(need->has_at);
}

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
      // The steps' noise, and whatever c gains in fixed costs: measured once
      // each (a launch 0.38 s against 0.40 s, a checkpoint 0.014 s against
      // 0.006 s), a gain there alone is noise, not a faster technique.
      double margin = 2 * std::hypot(c.se_s, fastest_kept->se_s) +
                      std::max(0.0, fastest_kept->fixed_s - c.fixed_s);
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
  // --types estimate, analytic estimates: which rows were not measured.
  const bool estimates = run.estimated > 0 || run.analytic > 0;
  if (estimates) run.table.extra_columns.push_back("estimated_from");
  for (size_t k = 0; k < workload.tasks.size(); ++k) {
    const WorkloadTask& task = workload.tasks[k];
    std::vector<int> infeasible;
    std::vector<Measured> feasible;
    for (int i : run.task_trials[k]) {
      const Trial& t = run.trials[i];
      if (!t.result.feasible) {
        infeasible.push_back(i);
        continue;
      }
      double runtime = PlannedRuntime(task, t, options.checkpoint_every);
      double steps = static_cast<double>(task.steps);
      feasible.push_back({i, t.gpus, rank(task, t.technique), runtime, steps * t.step_se_s,
                          runtime - steps * t.result.step_s});
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
      throw InputError(workload.source, task.line, "task " + Quote(task.name),
                       NoFeasibleConfiguration(task, workload, run, infeasible));
    }
  }
}

}  // namespace saturn
