// ProfileSummary (profiler.h): what profiling found, per task, for stderr.
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "common/format.h"
#include "profiler/profiler.h"
#include "profiler/table.h"
#include "profiler/type_contradictions.h"

namespace saturn {
namespace {

// ", estimated x0.512 of A100 (...)" for a row scaled from another type;
// ", estimated" for an analytic one (the summary's first line says how).
std::string EstimatedNote(const Trial& t) {
  if (t.estimated_from.empty()) return "";
  return t.result.estimated.empty() ? ", estimated " + t.estimated_from : ", estimated";
}

// "2 GPUs", or "2 GPUs of V100" on a cluster of named types.
std::string Gpus(int gpus, const std::string& gpu_type = "") {
  return std::to_string(gpus) + " GPU" + (gpus > 1 ? "s" : "") +
         (gpu_type.empty() ? "" : " of " + gpu_type);
}

// "1 GPU: spill within noise of single (1m15s vs 1m16s, noise 2.8s): single
// kept": the runtimes the planner would see; the kept one's GPU count is
// said when it differs.
std::string WithinNoiseLine(const WorkloadTask& task, const ProfileRun& run, const WithinNoise& w) {
  const Trial& out = run.trials[w.trial];
  const Trial& kept = run.trials[w.kept];
  std::string kept_name =
      kept.technique + (kept.gpus == out.gpus ? "" : " x" + std::to_string(kept.gpus));
  return Gpus(out.gpus, out.gpu_type) + ": " + out.technique + " within noise of " + kept_name +
         " (" + FormatDuration(PlannedRuntime(task, out, run.checkpoint_every)) + " vs " +
         FormatDuration(PlannedRuntime(task, kept, run.checkpoint_every)) + ", noise " +
         FormatDuration(w.margin_s) + "): " + kept_name + " kept";
}

// One task's lines: per GPU count the technique with the shortest runtime as
// the planner sees it (steps, evaluation, launch and checkpoints) among the
// configurations kept; those left out for noise; why the others failed.
void TaskLines(const WorkloadTask& task, size_t k, const ProfileRun& run, std::ostringstream& out) {
  out << "  " << task.name << " (" << task.steps << " steps)\n";
  std::vector<const WithinNoise*> noise;  // simplest first, as decided
  std::set<int> left_out;                 // their trials
  for (const WithinNoise& w : run.within_noise) {
    if (w.task != static_cast<int>(k)) continue;
    noise.push_back(&w);
    left_out.insert(w.trial);
  }
  struct Fastest {
    const Trial* trial = nullptr;
    double runtime_s = 0;
  };
  std::map<std::pair<std::string, int>, Fastest> fastest;    // (type, gpus)
  std::map<std::string, std::vector<std::string>> failures;  // reason -> configurations
  for (int i : run.task_trials[k]) {
    const Trial& t = run.trials[i];
    if (!t.result.feasible) {
      failures[InfeasibleReason(t)].push_back(t.technique + " x" + std::to_string(t.gpus) +
                                              (t.gpu_type.empty() ? "" : " on " + t.gpu_type));
    } else if (!left_out.count(i)) {
      double runtime = PlannedRuntime(task, t, run.checkpoint_every);
      Fastest& f = fastest[{t.gpu_type, t.gpus}];
      if (!f.trial || runtime < f.runtime_s) f = {&t, runtime};
    }
  }
  for (const auto& [at, f] : fastest) {
    bool pad = at.second == 1 && at.first.empty();  // "1 GPU :" under "2 GPUs:"
    out << "    " << Gpus(at.second, at.first) << (pad ? " " : "") << ": fastest "
        << f.trial->technique << " " << FormatDuration(f.runtime_s) << " ("
        << FormatFixed(PlannedResult(task, *f.trial).step_s, 4) << " s/step"
        << (EvalEvery(task) > 0 ? ", evaluation included" : "") << EstimatedNote(*f.trial) << ")\n";
  }
  for (const WithinNoise* w : noise)
    out << "    " << WithinNoiseLine(task, run, *w) << "\n";
  for (const auto& [reason, configs] : failures) {
    std::string list;
    for (const std::string& c : configs)
      list += (list.empty() ? "" : ", ") + c;
    out << "    infeasible " << list << ": " << reason << "\n";
  }
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// What makes tasks siblings: the same model, batch size, precision and
// fine-tuning (a command task: its own trials only).
std::string SiblingKey(const WorkloadTask& task) {
  if (task.is_command || !task.spec.is_object()) return task.trial_key;
  const nlohmann::json none;
  return task.spec.value("model", none).dump() + "|" + task.spec.value("batch_size", none).dump() +
         "|" + task.spec.value("precision", none).dump() + "|" +
         task.spec.value("finetune", none).dump();
}

// "gpt-lr1e-3: ddp x2 on fast 2.40x slower than on slow, while 3 sibling
// configurations run 1.90x faster on fast (median): measured in this run,
// not re-measured".
std::string ContradictionLine(const Workload& workload, const ProfileRun& run,
                              const TypeContradiction& c) {
  const Trial& s = run.trials[static_cast<size_t>(c.suspect)];
  const Trial& o = run.trials[static_cast<size_t>(c.other)];
  const std::string type = GpuTypeLabel(s.gpu_type);
  return workload.tasks[static_cast<size_t>(c.task)].name + ": " + s.technique + " x" +
         std::to_string(s.gpus) + " on " + type + " " + FormatFixed(c.ratio, 2) +
         "x slower than on " + GpuTypeLabel(o.gpu_type) + ", while " +
         Plural(c.siblings, "sibling configuration") + " run " +
         FormatFixed(1 / c.siblings_ratio, 2) + "x faster on " + type +
         " (median): " + (s.cached ? "read from the cache" : "measured in this run") +
         ", not re-measured";
}

// "4 trials estimated analytically, not measured (analytic: 989 TFLOP/s x
// 0.40, links 450 GB/s; cannot run here: needs 61 GiB of memory, this
// machine has 20 GiB): their rows say so in estimated_from".
std::string AnalyticLine(const ProfileRun& run) {
  std::string first;
  for (const Trial& t : run.trials) {
    if (!t.result.estimated.empty()) {
      first = t.result.estimated;
      break;
    }
  }
  return Plural(run.analytic, "trial") + " estimated analytically, not measured (" +
         (run.analytic > 1 ? "the first: " : "") + first +
         "): their rows say so in the profile's estimated_from";
}

}  // namespace

std::vector<TypeContradiction> FindTypeContradictions(const Workload& workload,
                                                      const ProfileRun& run) {
  // Sibling group -> configuration (trial key, technique, GPUs) -> the task
  // that first uses it and its measured trial per type.
  struct Config {
    int task = 0;
    std::map<std::string, int> on;  // type -> trial
  };
  using ConfigKey = std::tuple<std::string, std::string, int>;
  std::map<std::string, std::map<ConfigKey, Config>> groups;
  std::set<std::string> types;
  for (size_t k = 0; k < workload.tasks.size() && k < run.task_trials.size(); ++k) {
    const WorkloadTask& task = workload.tasks[k];
    for (int i : run.task_trials[k]) {
      const Trial& t = run.trials[static_cast<size_t>(i)];
      if (!t.result.feasible || !t.estimated_from.empty() || !(t.result.step_s > 0)) continue;
      auto [it, added] =
          groups[SiblingKey(task)].try_emplace({task.trial_key, t.technique, t.gpus});
      if (added) it->second.task = static_cast<int>(k);
      it->second.on.emplace(t.gpu_type, i);
      types.insert(t.gpu_type);
    }
  }
  std::vector<TypeContradiction> found;
  auto step = [&](int trial) { return run.trials[static_cast<size_t>(trial)].result.step_s; };
  for (const auto& [group, configs] : groups) {
    for (auto a = types.begin(); a != types.end(); ++a) {
      for (auto b = std::next(a); b != types.end(); ++b) {
        // Each configuration measured on both: its step time on a over b's.
        std::vector<std::pair<const Config*, double>> ratios;
        for (const auto& [key, c] : configs) {
          if (c.on.count(*a) && c.on.count(*b)) {
            ratios.push_back({&c, step(c.on.at(*a)) / step(c.on.at(*b))});
          }
        }
        if (ratios.size() < 3) continue;  // the configuration and two siblings
        for (size_t i = 0; i < ratios.size(); ++i) {
          std::vector<double> siblings;
          for (size_t j = 0; j < ratios.size(); ++j) {
            if (j != i) siblings.push_back(ratios[j].second);
          }
          // The siblings agree which type is faster when three in four of
          // them say so (one contradicting measurement among them then
          // does not make its siblings look contradictory).
          const double n = static_cast<double>(siblings.size());
          const double faster_on_a = static_cast<double>(
              std::count_if(siblings.begin(), siblings.end(), [](double x) { return x < 1; }));
          const double faster_on_b = static_cast<double>(
              std::count_if(siblings.begin(), siblings.end(), [](double x) { return x > 1; }));
          const double r = ratios[i].second, med = Median(siblings);
          const Config& c = *ratios[i].first;
          TypeContradiction t;
          t.task = c.task;
          t.siblings = static_cast<int>(siblings.size());
          if (faster_on_a >= 0.75 * n && r > 1 && r / med >= kContradictionFactor) {
            t.suspect = c.on.at(*a), t.other = c.on.at(*b), t.ratio = r, t.siblings_ratio = med;
          } else if (faster_on_b >= 0.75 * n && r < 1 && med / r >= kContradictionFactor) {
            t.suspect = c.on.at(*b), t.other = c.on.at(*a), t.ratio = 1 / r;
            t.siblings_ratio = 1 / med;
          } else {
            continue;
          }
          found.push_back(t);
        }
      }
    }
  }
  std::sort(found.begin(), found.end(), [](const TypeContradiction& x, const TypeContradiction& y) {
    return std::tie(x.task, x.suspect, x.other) < std::tie(y.task, y.suspect, y.other);
  });
  return found;
}

std::string ProfileSummary(const Workload& workload, const ProfileRun& run) {
  std::ostringstream out;
  out << "profile: " << Plural(static_cast<long>(workload.tasks.size()), "task") << ", "
      << Plural(static_cast<long>(run.trials.size()), "distinct trial") << " (" << run.trials_run
      << " run, " << run.cache_hits << " from the cache"
      << (run.estimated ? ", " + std::to_string(run.estimated) + " estimated from another type"
                        : "")
      << ") in " << FormatDuration(run.wall_s) << "\n";
  if (run.analytic > 0) out << AnalyticLine(run) << "\n";
  const std::vector<WorkloadTask>& tasks = workload.tasks;
  for (size_t k = 0; k < tasks.size();) {
    // A table task's groups of one shape share their trials: one entry.
    size_t end = k + 1;
    long fewest = tasks[k].steps, most = tasks[k].steps;
    while (!tasks[k].group.empty() && end < tasks.size() && !tasks[end].group.empty() &&
           tasks[end].trial_key == tasks[k].trial_key) {
      fewest = std::min(fewest, tasks[end].steps);
      most = std::max(most, tasks[end].steps);
      ++end;
    }
    if (end - k > 1) {
      out << "  " << Plural(static_cast<long>(end - k), "group") << " of one shape (" << fewest
          << " to " << most << " steps; their trials are shared), the first:\n";
    }
    TaskLines(tasks[k], k, run, out);
    k = end;
  }
  const std::vector<TypeContradiction> suspect = FindTypeContradictions(workload, run);
  if (!suspect.empty()) {
    out << "suspect measurements: slow on the GPU type where the rest are fast, likely "
           "contention while measured (planned as measured; `saturn profile --refresh` "
           "measures every trial again)\n";
    for (const TypeContradiction& c : suspect)
      out << "  " << ContradictionLine(workload, run, c) << "\n";
  }
  if (!run.pack_summary.empty()) out << "packs (planner/packing.h):\n" << run.pack_summary;
  return out.str();
}

}  // namespace saturn
