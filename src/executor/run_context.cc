#include "executor/run_context.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/fs.h"
#include "protocol/checkpoint_files.h"

namespace saturn {

namespace fs = std::filesystem;

std::string RunContext::TaskDir(int workload_task) const {
  return run_dir + "/tasks/" + workload.tasks[workload_task].name;
}

bool RunContext::Running(int j) const {
  return tasks[j].record.status == TaskStatus::kRunning && !tasks[j].stopping;
}

bool RunContext::Done(int j) const {
  TaskStatus s = tasks[j].record.status;
  return s == TaskStatus::kFinished || s == TaskStatus::kFailed || s == TaskStatus::kCancelled;
}

bool RunContext::AllDone() const {
  for (int j = 0; j < NumTasks(); ++j) {
    if (!Done(j)) return false;
  }
  return true;
}

events::TaskPlace RunContext::Where(int j) const {
  events::TaskPlace at;
  at.task = problem.tasks[j].name;
  if (std::optional<Assignment> a = placements.Last(j)) {
    const Option& o = problem.tasks[j].options[a->option];
    at.technique = o.technique;
    at.gpus = o.gpus;
    at.node = problem.nodes[a->node].name;
    at.gpu_ids = a->gpu_ids;
  }
  return at;
}

void RunContext::SaveTask(int j) {
  TaskRecord& r = tasks[j].record;
  if (placements.Last(j)) {
    events::TaskPlace at = Where(j);
    r.technique = at.technique;
    r.gpus = at.gpus;
    r.node = at.node;
    r.gpu_ids = at.gpu_ids;
  }
  state->SaveTask(r);
}

void RunContext::SavePlan(int index) {
  std::string text = PlanToJson(plan).dump(2) + "\n";
  WriteFileAtomic(run_dir + "/plan-" + std::to_string(index) + ".json", text);
  state->Set(meta::kPlan, text);
}

void RunContext::AdoptPlan(const Plan& next) {
  ++switches;
  state->Set(meta::kPlanSwitches, switches);
  plan = next;
  SavePlan(switches);
}

void RunContext::SaveProfile() {
  std::string text = ProfileToCsv(profile);
  state->Set(meta::kProfile, text);
  WriteFileAtomic(run_dir + "/profile.csv", text);
}

std::optional<std::pair<std::string, std::string>> RunContext::SavedProfile() {
  if (std::optional<std::string> text = state->Get(meta::kProfile)) {
    return std::make_pair(*text, run_dir + "/state.sqlite (profile)");
  }
  std::string path = run_dir + "/profile.csv";
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  return std::make_pair(ReadFile(path), path);
}

void RunContext::Requeue() {
  queues.Adopt(problem, plan, [&](int j) { return Running(j); });
}

long RunContext::NewestCheckpoint(int j) {
  std::string dir = TaskDirOf(j) + "/checkpoints";
  RemoveCheckpointLeftovers(dir);
  saturn::NewestCheckpoint newest = FindNewestCheckpoint(dir);
  const std::string& name = problem.tasks[j].name;
  for (const SkippedCheckpoint& bad : newest.skipped) {
    Emit(events::CheckpointSkipped(Now(), name, bad.step, bad.problem, newest.step));
    if (options.progress) {
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
