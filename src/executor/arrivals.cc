#include "executor/arrivals.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

#include "common/format.h"
#include "common/fs.h"
#include "executor/progress.h"
#include "executor/replanner.h"
#include "executor/run_setup.h"
#include "launch/worker.h"
#include "profiler/pack_trials.h"

namespace saturn {

namespace {

// What profiling a batch needs, copied from the run on its own thread, so a
// background profile reads nothing the run changes.
struct ArrivalProfile {
  Workload batch;
  ProfilerOptions options;
};

ArrivalProfile PrepareProfile(const RunContext& run, const std::vector<WorkloadTask>& tasks,
                              TrialDevices* devices) {
  ArrivalProfile a;
  a.batch.source = run.tasks.workload().source;
  a.batch.base_dir = run.tasks.workload().base_dir;
  a.batch.cluster = run.tasks.workload().cluster;
  a.batch.plugins = run.tasks.workload().plugins;
  a.batch.tasks = tasks;
  ProfilerOptions& p = a.options;
  p = run.options().profiler;
  p.worker = run.site.worker;
  bool engine_tasks = false;
  for (const WorkloadTask& t : tasks)
    engine_tasks = engine_tasks || !t.is_command;
  if (p.worker.empty() && engine_tasks) p.worker = FindWorkerBinary();
  p.backend = run.site.backend.get();
  p.checkpoint_every = run.options().checkpoint_every;
  p.packs = run.options().pack;  // arrivals that may share a pack are packed (replan/packed.h)
  p.devices = devices;
  // Trials of a batch that arrives while others train print nothing: the
  // run's own progress lines go on.
  p.progress = devices == nullptr && run.options().progress;
  if (p.work_dir.empty()) p.work_dir = run.site.run_dir + "/trials";
  return a;
}

}  // namespace

ProfileRun ProfileArrivals(const RunContext& run, const std::vector<WorkloadTask>& tasks,
                           TrialDevices* devices) {
  ArrivalProfile a = PrepareProfile(run, tasks, devices);
  return RunProfiler(a.batch, a.options);
}

namespace {

// A batch's profile names its pack classes pack1, pack2, ... as a first
// profile does: each becomes the run's label of the same class (tasks that
// may share a pack: PackClassOf), or a label the run does not use yet.
ProfileTable WithRunsPackClasses(const RunContext& run, const std::vector<WorkloadTask>& tasks,
                                 ProfileTable batch) {
  const int column = batch.ExtraColumn("pack_class");
  if (column < 0) return batch;
  std::map<std::string, std::string> label_of;  // class -> the run's label
  std::set<std::string> used;
  const ProfileTable& profile = run.tasks.profile();
  for (const ProfileRow& row : profile.rows) {
    std::string label = profile.Extra(row, "pack_class");
    if (label.empty() || !used.insert(label).second) continue;
    for (const WorkloadTask& t : run.tasks.workload().tasks)
      if (t.name == row.task) label_of.emplace(PackClassOf(t), label);
  }
  std::map<std::string, const WorkloadTask*> task;
  for (const WorkloadTask& t : tasks)
    task[t.name] = &t;
  std::map<std::string, std::string> renamed;  // the batch's label -> the run's
  int next = 1;
  for (ProfileRow& row : batch.rows) {
    if (row.extra.size() <= static_cast<size_t>(column) || !task.count(row.task)) continue;
    std::string& label = row.extra[static_cast<size_t>(column)];
    if (label.empty()) continue;
    auto [it, added] = renamed.emplace(label, "");
    if (added) {
      std::string cls = PackClassOf(*task[row.task]);
      auto known = label_of.find(cls);
      if (known != label_of.end()) {
        it->second = known->second;
      } else {
        while (used.count("pack" + std::to_string(next)))
          ++next;
        it->second = "pack" + std::to_string(next);
        used.insert(it->second);
        label_of.emplace(cls, it->second);
      }
    }
    label = it->second;
  }
  return batch;
}

}  // namespace

void JoinRun(RunContext& run, const std::vector<WorkloadTask>& tasks,
             const ProfileTable& profiled) {
  ProfileTable batch = WithRunsPackClasses(run, tasks, profiled);
  for (const WorkloadTask& t : tasks)
    run.tasks.workload().tasks.push_back(t);
  run.tasks.profile().Append(batch);
  run.RebuildTasks();
  WriteTaskFolders(run);
  for (const WorkloadTask& t : tasks) {
    int configurations = 0;
    for (const ProfileRow& r : profiled.rows)
      configurations += r.task == t.name && r.feasible;
    run.Emit(events::TaskArrived(run.Now(), t.name, configurations));
  }
}

void LeaveRun(RunContext& run, const std::set<std::string>& names) {
  for (int j = 0; j < run.NumTasks(); ++j) {
    if (names.count(run.tasks.problem().tasks[j].name) && !run.Done(j)) {
      throw std::logic_error("task " + run.tasks.problem().tasks[j].name +
                             " left the run unfinished");
    }
  }
  for (const std::string& name : names) {
    run.evals.erase(name);
    run.stopper.Forget(name);
  }
  std::erase_if(run.tasks.workload().tasks,
                [&](const WorkloadTask& t) { return names.count(t.name); });
  std::erase_if(run.tasks.profile().rows, [&](const ProfileRow& r) { return names.count(r.task); });
  run.DropFromPlan(names);
  run.RebuildTasks();
  for (const std::string& name : names) {
    std::string dir = run.site.run_dir + "/tasks/" + name;
    std::error_code ec;
    if (!std::filesystem::exists(dir, ec)) continue;
    for (int n = 1;; ++n) {
      std::string aside = dir + ".left-" + std::to_string(n);
      if (std::filesystem::exists(aside, ec)) continue;
      std::filesystem::rename(dir, aside, ec);
      break;
    }
  }
  run.Requeue();
}

void ExtendPlan(RunContext& run, Dispatcher* dispatcher, const std::vector<std::string>& arrived) {
  // Short: an arrival waits for this plan; the background re-planner
  // improves it at its next check.
  double time_limit_s =
      std::min(run.options().solve.time_limit_s, defaults::kArrivalPlanTimeLimitS);
  // Arrivals that may share a pack (an array of a table's groups, LoRA
  // tasks on one base) are packed with each other (replan/packed.h).
  std::optional<PackTerms> terms = RunPackTerms(run);
  ReplanPolicy policy = RunReplanPolicy(run, time_limit_s);
  policy.split_packs = false;  // quick; the background checks may split
  ReplanDecision d = Replan(run.tasks.problem(), Snapshot(run), run.plan(), run.Now(), policy,
                            terms ? &*terms : nullptr);
  std::vector<std::string> moved;
  if (dispatcher != nullptr) {
    moved = SwitchTo(run, *dispatcher, d);
  } else {
    AdoptReplan(run, d.plan);
    run.Requeue();
  }
  run.SetEstimatedEnd(d.new_end_s);
  run.Emit(events::PlanSwitched(run.Now(), events::SwitchWhy::kArrivals, d.current_end_s,
                                d.new_end_s, moved, arrived));
  if (run.options().progress) {
    std::fprintf(stderr, "[%s] %s joined; plan ends ~%s%s\n", FormatDuration(run.Now()).c_str(),
                 Plural(static_cast<long>(arrived.size()), "task").c_str(),
                 FormatDuration(d.plan.makespan_s).c_str(),
                 moved.empty() ? "" : (", moving " + Plural(moved.size(), "task")).c_str());
  }
}

void Arrivals::Add(std::vector<WorkloadTask> tasks) {
  if (!tasks.empty()) queue_.push_back(std::move(tasks));
}

std::vector<Arrivals::Rejected> Arrivals::Poll() {
  std::vector<Rejected> rejected;
  if (pending_.valid()) {
    if (pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return rejected;
    std::vector<WorkloadTask> batch = std::move(profiling_);
    profiling_.clear();
    try {
      ProfileRun profiled = pending_.get();
      std::vector<std::string> names;
      for (const WorkloadTask& t : batch)
        names.push_back(t.name);
      JoinRun(run_, batch, profiled.table);
      ExtendPlan(run_, &dispatcher_, names);
    } catch (const std::exception& e) {
      for (const WorkloadTask& t : batch)
        rejected.push_back({t.name, e.what()});
    }
  }
  if (!pending_.valid() && !queue_.empty()) {
    profiling_ = std::move(queue_.front());
    queue_.pop_front();
    try {
      pending_ = std::async(std::launch::async,
                            [a = PrepareProfile(run_, profiling_, &run_.tasks.placements())] {
                              return RunProfiler(a.batch, a.options);
                            });
    } catch (const std::exception& e) {
      for (const WorkloadTask& t : profiling_)
        rejected.push_back({t.name, e.what()});
      profiling_.clear();
    }
  }
  return rejected;
}

bool Arrivals::Remove(const std::string& task) {
  for (auto& batch : queue_) {
    auto it = std::find_if(batch.begin(), batch.end(),
                           [&](const WorkloadTask& t) { return t.name == task; });
    if (it == batch.end()) continue;
    batch.erase(it);
    std::erase_if(queue_, [](const std::vector<WorkloadTask>& b) { return b.empty(); });
    return true;
  }
  return false;
}

std::vector<std::string> Arrivals::Submitted() const {
  std::vector<std::string> names;
  for (const auto& batch : queue_)
    for (const WorkloadTask& t : batch)
      names.push_back(t.name);
  return names;
}

std::vector<std::string> Arrivals::Profiling() const {
  std::vector<std::string> names;
  for (const WorkloadTask& t : profiling_)
    names.push_back(t.name);
  return names;
}

void Arrivals::Wait() {
  if (pending_.valid()) pending_.wait();
}

}  // namespace saturn
