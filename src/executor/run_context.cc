#include "executor/run_context.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "common/fs.h"

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
  const LiveTask& l = tasks[j];
  events::TaskPlace at;
  at.task = problem.tasks[j].name;
  if (l.on.option >= 0) {
    const Option& o = problem.tasks[j].options[l.on.option];
    at.technique = o.technique;
    at.gpus = o.gpus;
    at.node = problem.nodes[l.on.node].name;
    at.gpu_ids = l.on.gpu_ids;
  }
  return at;
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

void RunContext::Requeue() {
  queues.Adopt(problem, plan, [&](int j) { return Running(j); });
}

long LatestCheckpoint(const std::string& dir) {
  long best = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("checkpoint-", 0) != 0 || name.find('.') != std::string::npos) continue;
    if (!fs::exists(e.path() / "meta.json", ec)) continue;
    char* end = nullptr;
    long step = std::strtol(name.c_str() + 11, &end, 10);
    if (*end == '\0') best = std::max(best, step);
  }
  return best;
}

}  // namespace saturn
