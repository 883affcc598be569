// ProfileSummary (profiler.h): what profiling found, per task, for stderr.
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/format.h"
#include "profiler/profiler.h"
#include "profiler/table.h"

namespace saturn {
namespace {

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
        << (EvalEvery(task) > 0 ? ", evaluation included" : "")
        << (f.trial->estimated_from.empty() ? "" : ", estimated " + f.trial->estimated_from)
        << ")\n";
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

}  // namespace

std::string ProfileSummary(const Workload& workload, const ProfileRun& run) {
  std::ostringstream out;
  out << "profile: " << Plural(static_cast<long>(workload.tasks.size()), "task") << ", "
      << Plural(static_cast<long>(run.trials.size()), "distinct trial") << " (" << run.trials_run
      << " run, " << run.cache_hits << " from the cache"
      << (run.estimated ? ", " + std::to_string(run.estimated) + " estimated from another type"
                        : "")
      << ") in " << FormatDuration(run.wall_s) << "\n";
  for (size_t k = 0; k < workload.tasks.size(); ++k)
    TaskLines(workload.tasks[k], k, run, out);
  return out.str();
}

}  // namespace saturn
