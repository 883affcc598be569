#include "executor/run_context.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/fs.h"
#include "protocol/checkpoint_files.h"

namespace saturn {

namespace fs = std::filesystem;

std::string RunContext::TaskDir(int workload_task) const {
  return site.run_dir + "/tasks/" + tasks.workload().tasks[static_cast<size_t>(workload_task)].name;
}

bool RunContext::Running(int j) const {
  return tasks[j].record.status == TaskStatus::kRunning && !tasks[j].stop.pending;
}

bool RunContext::Done(int j) const {
  return IsEnded(tasks[j].record.status);
}

bool RunContext::AllDone() const {
  for (int j = 0; j < NumTasks(); ++j) {
    if (!Done(j)) return false;
  }
  return true;
}

events::TaskPlace RunContext::Where(int j) const {
  events::TaskPlace at;
  const Problem& problem = tasks.problem();
  at.task = problem.tasks[j].name;
  // A pack's member runs where its host's worker does.
  int holder = tasks.HolderOf(j);
  if (std::optional<Assignment> a = tasks.placements().Last(holder)) {
    // The assignment indexes the holder's options (a member's may differ).
    const Option& o = problem.tasks[holder].options[a->option];
    at.technique = o.technique;
    at.gpus = o.gpus;
    at.node = problem.nodes[a->node].name;
    at.gpu_ids = a->gpu_ids;
  }
  return at;
}

void RunContext::SaveTask(int j) {
  TaskRecord& r = tasks[j].record;
  if (tasks.placements().Last(tasks.HolderOf(j))) {
    events::TaskPlace at = Where(j);
    r.technique = at.technique;
    r.gpus = at.gpus;
    r.node = at.node;
    r.gpu_ids = at.gpu_ids;
  }
  site.state->SaveTask(r);
}

void RunContext::Emit(const Event& event) {
  site.state->Append(event);
  if (on_event_) on_event_(event);
}

ReplanPolicy RunContext::NextReplanPolicy(double time_limit_s) {
  ReplanPolicy policy(options_.solve);
  policy.time_limit_s = time_limit_s;
  policy.seed = options_.solve.seed + static_cast<uint64_t>(++replans_);
  policy.threshold_s = threshold_s_;
  policy.switch_cost_s = options_.switch_cost_s;
  return policy;
}

void RunContext::SavePlan(int index) {
  std::string text = PlanToJson(plan_).dump(2) + "\n";
  WriteFileAtomic(site.run_dir + "/plan-" + std::to_string(index) + ".json", text);
  site.state->Set(meta::kPlan, text);
}

void RunContext::FollowFirstPlan(const Plan& plan, double profiling_s, double planning_s) {
  plan_ = plan;
  planned_makespan_s_ = plan.makespan_s;
  profiling_s_ = profiling_s;
  planning_s_ = planning_s;
  SavePlan(0);
  site.state->Set(meta::kPlannedMakespanS, planned_makespan_s_);
  site.state->Set(meta::kProfilingS, profiling_s_);
  site.state->Set(meta::kPlanningS, planning_s_);
}

void RunContext::RestorePlan() {
  RunState& state = *site.state;
  if (std::optional<std::string> text = state.Get(meta::kPlan)) {
    plan_ = PlanFromJson(nlohmann::json::parse(*text), site.run_dir);
  }
  planned_makespan_s_ = state.Get(meta::kPlannedMakespanS).value_or(0.0);
  switches_ = state.Get(meta::kPlanSwitches).value_or(0);
  profiling_s_ = state.Get(meta::kProfilingS).value_or(0.0);
  planning_s_ = state.Get(meta::kPlanningS).value_or(0.0);
}

void RunContext::AdoptPlan(const Plan& next) {
  ++switches_;
  site.state->Set(meta::kPlanSwitches, switches_);
  plan_ = next;
  SavePlan(switches_);
  if (planned_makespan_s_ <= 0) {
    planned_makespan_s_ = next.makespan_s;
    site.state->Set(meta::kPlannedMakespanS, planned_makespan_s_);
  }
}

void RunContext::FollowRetimed(Plan retimed) {
  for (const auto& [key, value] : plan_.extra.items()) {
    if (!retimed.extra.contains(key)) retimed.extra[key] = value;
  }
  plan_ = std::move(retimed);
  site.state->Set(meta::kPlan, PlanToJson(plan_).dump(2) + "\n");
}

void RunContext::DropFromPlan(const std::set<std::string>& names) {
  std::erase_if(plan_.tasks, [&](const PlanTask& t) { return names.count(t.task) > 0; });
}

void RunContext::Requeue() {
  queues_.Adopt(tasks.problem(), plan_, [&](int j) { return Running(j); });
}

std::string RunContext::ProfileSource() const {
  return options_.profile_path.empty() ? site.run_dir + "/profile.csv" : options_.profile_path;
}

void RunContext::RebuildTasks() {
  SaveProfile();
  for (int j : tasks.Rebuild(ProfileSource()))
    SaveTask(j);
}

void RunContext::SaveProfile() {
  std::string text = ProfileToCsv(tasks.profile());
  site.state->Set(meta::kProfile, text);
  WriteFileAtomic(site.run_dir + "/profile.csv", text);
}

std::optional<std::pair<std::string, std::string>> RunContext::SavedProfile() {
  if (std::optional<std::string> text = site.state->Get(meta::kProfile)) {
    return std::make_pair(*text, site.run_dir + "/state.sqlite (profile)");
  }
  std::string path = site.run_dir + "/profile.csv";
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  return std::make_pair(ReadFile(path), path);
}

long RunContext::NewestCheckpoint(int j) {
  std::string dir = TaskDirOf(j) + "/checkpoints";
  RemoveCheckpointLeftovers(dir);
  saturn::NewestCheckpoint newest = FindNewestCheckpoint(dir);
  const std::string& name = tasks.problem().tasks[j].name;
  for (const SkippedCheckpoint& bad : newest.skipped) {
    Emit(events::CheckpointSkipped(Now(), name, bad.step, bad.problem, newest.step));
    if (options_.progress) {
      std::fprintf(stderr,
                   "task %s: checkpoint-%ld is damaged (%s); set aside as %s.corrupt, "
                   "the task continues from step %ld\n",
                   name.c_str(), bad.step, bad.problem.c_str(),
                   CheckpointFolder(dir, bad.step).c_str(), newest.step);
    }
  }
  return newest.step;
}

}  // namespace saturn
