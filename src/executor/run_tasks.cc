// A Run's tasks as its drivers see them (part of run.h): submissions,
// cancellations, and the view of every task in every stage of its life.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <deque>
#include <filesystem>

#include "common/error.h"
#include "common/format.h"
#include "executor/progress.h"
#include "executor/run_impl.h"
#include "executor/run_setup.h"
#include "launch/worker.h"

namespace saturn {

using nlohmann::json;

namespace {

// The submitted workload on the run's cluster: a workload without a
// `cluster` gets the run's (appended, so line numbers hold); one with its
// own is parsed as written and then runs on the run's.
Workload ParseSubmission(const Submission& s, const std::string& cluster_file,
                         const Cluster& cluster, long max_tasks) {
  std::string text = s.text;
  bool has_cluster = false;
  size_t first = text.find_first_not_of(" \t\r\n");
  bool is_json = first != std::string::npos && text[first] == '{';
  try {
    YAML::Node root = YAML::Load(text);
    has_cluster = root.IsMap() && root["cluster"];
  } catch (const YAML::Exception&) {
    // ParseWorkload reports it with its line.
  }
  if (!has_cluster) {
    if (is_json) {
      try {
        json j = json::parse(text);
        j["cluster"] = cluster_file;
        text = j.dump();
      } catch (const json::exception& e) {
        throw InputError(s.source, 0, "", std::string("not valid JSON: ") + e.what());
      }
    } else {
      text += (text.empty() || text.back() == '\n' ? "" : "\n");
      std::string quoted;
      for (char c : cluster_file)
        quoted += c == '\'' ? std::string("''") : std::string(1, c);
      text += "cluster: '" + quoted + "'\n";
    }
  }
  Workload w = ParseWorkload(text, s.source, s.base_dir, {}, max_tasks);
  if (w.tasks.empty()) throw InputError(s.source, 0, "tasks", "expected at least one task");
  w.cluster = cluster;
  return w;
}

double MedianOf(std::deque<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

RunAnswer Refuse(RunAnswer::Kind kind, std::string error) {
  RunAnswer a;
  a.kind = kind;
  a.error = std::move(error);
  return a;
}

void AddPlugins(Workload& into, const Workload& from) {
  for (const std::string& p : from.plugins) {
    if (std::find(into.plugins.begin(), into.plugins.end(), p) == into.plugins.end()) {
      into.plugins.push_back(p);
    }
  }
}

}  // namespace

Workload Run::CheckSubmission(const Submission& submission) const {
  const RunContext& run = impl_->run;
  if (!std::filesystem::path(submission.base_dir).is_absolute()) {
    throw InputError("", 0, "base_dir", "expected the submitter's folder as an absolute path");
  }
  Workload w = ParseSubmission(submission, run.site.run_dir + "/cluster.yaml",
                               run.tasks.workload().cluster, run.options().max_tasks);
  bool engine_tasks = std::any_of(w.tasks.begin(), w.tasks.end(),
                                  [](const WorkloadTask& t) { return !t.is_command; });
  if (engine_tasks) {
    std::string worker = run.site.worker.empty() ? FindWorkerBinary() : run.site.worker;
    AvailableTechniques(w, worker);
  }
  return w;
}

// Each submission's tasks are an early-stopping group of their own, even
// when two submissions come from files of one name.
void GroupSubmission(Workload& w, long seq) {
  for (WorkloadTask& t : w.tasks) {
    if (t.early_stop.enabled()) t.stop_group = "submission-" + std::to_string(seq);
  }
}

Workload ParseStoredSubmission(const RunContext& run, const Submission& s) {
  Workload w = ParseSubmission(s, run.site.run_dir + "/cluster.yaml", run.tasks.workload().cluster,
                               run.options().max_tasks);
  GroupSubmission(w, s.seq);
  return w;
}

RunAnswer Run::Submit(Submission submission, Workload workload) {
  Impl& impl = *impl_;
  RunContext& run = impl.run;
  std::set<std::string> pending;
  for (const std::string& n : impl.arrivals->Submitted())
    pending.insert(n);
  for (const std::string& n : impl.arrivals->Profiling())
    pending.insert(n);
  std::set<std::string> replaced;
  std::string taken;
  bool any_live = false;
  for (const WorkloadTask& t : workload.tasks) {
    int j = run.tasks.IndexOf(t.name);
    TaskStatus s = pending.count(t.name) ? TaskStatus::kProfiling
                   : j >= 0              ? run.tasks[j].record.status
                                         : TaskStatus::kCancelled;
    if (s == TaskStatus::kCancelled) {
      if (j >= 0) replaced.insert(t.name);
      continue;
    }
    any_live = any_live || !IsEnded(s);
    taken += (taken.empty() ? "" : ", ") + Quote(t.name) + " (" + std::string(ToString(s)) + ")";
  }
  if (!taken.empty()) {
    // Only a cancelled task is replaced by a new one of its name.
    return Refuse(RunAnswer::kConflict,
                  submission.source + ": the service already has task " + taken +
                      "; give the new one another name" +
                      (any_live ? ", or cancel a task that has not ended to replace it" : ""));
  }
  if (!replaced.empty()) LeaveRun(run, replaced);
  RunAnswer answer;
  answer.submission = run.site.state->AddSubmission(submission);
  GroupSubmission(workload, answer.submission);
  json cancels = json::parse(run.site.state->Get(meta::kCancelRequests).value_or("[]"));
  for (const WorkloadTask& t : workload.tasks) {
    answer.tasks.push_back(t.name);
    impl.submitted[t.name] = {run.Now(), std::nullopt, "", false};
    // A fresh record: a restart profiles it again even if an older task of
    // this name was cancelled.
    TaskRecord fresh;
    fresh.name = t.name;
    fresh.status = TaskStatus::kSubmitted;
    run.site.state->SaveTask(fresh);
    cancels.erase(std::remove(cancels.begin(), cancels.end(), json(t.name)), cancels.end());
  }
  run.site.state->Set(meta::kCancelRequests, cancels.dump());
  AddPlugins(run.tasks.workload(), workload);
  impl.arrivals->Add(workload.tasks);
  return answer;
}

void Run::Impl::RememberCancel(const std::string& task) {
  json cancels = json::parse(run.site.state->Get(meta::kCancelRequests).value_or("[]"));
  cancels.push_back(task);
  run.site.state->Set(meta::kCancelRequests, cancels.dump());
}

void Run::Impl::CancelUnjoined(const std::string& task, bool joins) {
  TaskRecord r;
  r.name = task;
  r.status = TaskStatus::kCancelled;
  r.end_s = run.Now();
  run.site.state->SaveTask(r);
  // One being profiled is cancelled through the dispatcher once it joins.
  if (!joins) {
    run.Emit(events::TaskCancelled(run.Now(), events::TaskPlace{task, "", 0, "", {}}, 0));
  }
}

RunAnswer Run::Cancel(const std::string& task) {
  Impl& impl = *impl_;
  RunContext& run = impl.run;
  RunAnswer answer;
  answer.status = TaskStatus::kCancelled;
  if (int j = run.tasks.IndexOf(task); j >= 0) {
    TaskStatus s = run.tasks[j].record.status;
    if (s == TaskStatus::kCancelled) return answer;
    if (run.Done(j)) {
      return Refuse(RunAnswer::kConflict, "task " + Quote(task) + " has already " +
                                              std::string(ToString(s)) +
                                              "; there is nothing to cancel");
    }
    impl.RememberCancel(task);
    impl.dispatcher->Cancel(j);
    run.Requeue();
    answer.status = run.tasks[j].record.status;
    return answer;
  }
  auto known = impl.submitted.find(task);
  Impl::Submitted* life = known == impl.submitted.end() ? nullptr : &known->second;
  if (life && (life->ended == TaskStatus::kCancelled || life->cancel_on_join)) return answer;
  if (life && life->ended == TaskStatus::kFailed) {
    return Refuse(RunAnswer::kConflict,
                  "task " + Quote(task) + " has already failed: " + life->error);
  }
  if (impl.arrivals->Remove(task)) {
    impl.RememberCancel(task);
    impl.submitted[task].ended = TaskStatus::kCancelled;
    impl.CancelUnjoined(task, /*joins=*/false);
    return answer;
  }
  auto profiling = impl.arrivals->Profiling();
  if (std::find(profiling.begin(), profiling.end(), task) != profiling.end()) {
    impl.RememberCancel(task);
    impl.submitted[task].cancel_on_join = true;
    // Durable now: a restart before it joins does not profile it again.
    impl.CancelUnjoined(task, /*joins=*/true);
    return answer;
  }
  return Refuse(RunAnswer::kNotFound, "no task " + Quote(task));
}

void Run::Impl::AfterArrivals() {
  for (const Arrivals::Rejected& r : arrivals->Poll()) {
    Submitted& life = submitted[r.task];
    life.ended = TaskStatus::kFailed;
    life.error = r.reason;
    run.Emit(events::TaskFailed(run.Now(), events::TaskPlace{r.task, "", 0, "", {}}, r.reason, 0,
                                true, 0));
  }
  for (int j = 0; j < run.NumTasks(); ++j) {
    auto it = submitted.find(run.tasks.problem().tasks[j].name);
    if (it == submitted.end() || !it->second.cancel_on_join) continue;
    it->second.cancel_on_join = false;
    dispatcher->Cancel(j);
  }
}

std::vector<TaskView> Run::Tasks() const {
  const Impl& impl = *impl_;
  const RunContext& run = impl.run;
  double now = run.Now();
  std::map<std::string, const PlanTask*> planned;
  for (const PlanTask& p : run.plan().tasks)
    planned[p.task] = &p;
  auto submitted_at = [&](const std::string& name) -> std::optional<double> {
    auto it = impl.submitted.find(name);
    if (it == impl.submitted.end()) return std::nullopt;
    return it->second.at_s;
  };
  std::vector<TaskView> views;
  const std::vector<HyperParameters> hyperparameters = HyperParametersOf(run);
  for (int j = 0; j < run.NumTasks(); ++j) {
    const LiveTask& l = run.tasks[j];
    const TaskRecord& r = l.record;
    TaskView v;
    static_cast<TaskState&>(v) = r;
    auto it = planned.find(r.name);
    const PlanTask* p = it == planned.end() ? nullptr : it->second;
    // A task yet to run shows where the plan puts it; one that ended without
    // ever running (cancelled before it started) ran nowhere and shows none.
    const PlanTask* to_run = run.Done(j) ? nullptr : p;
    bool finished = r.status == TaskStatus::kFinished;
    v.placed = !r.technique.empty() || to_run != nullptr;
    if (r.technique.empty() && to_run) {
      v.technique = to_run->technique;
      v.gpus = to_run->gpus;
      v.node = to_run->node;
      v.gpu_ids = to_run->gpu_ids;
    }
    v.steps = run.Steps(j);
    v.steps_done = finished ? run.Steps(j) : std::max(l.reported.step, r.checkpoint_step);
    if (run.Running(j) && !l.reported.recent_step_s.empty()) {
      v.eta_s = now + MedianOf(l.reported.recent_step_s) *
                          static_cast<double>(std::max(0L, run.Steps(j) - l.reported.step));
    } else if (!run.Done(j) && p) {
      v.eta_s = p->end_s;
    }
    if (p) v.planned_start_s = p->start_s;
    if (finished) {
      v.loss = r.final_loss;
    } else if (l.reported.step > 0 && !(run.Running(j) && l.pack_host >= 0)) {
      // A member's own loss is known when its pack's worker exits.
      v.loss = l.reported.last_loss;
    }
    v.pack = !l.pack.empty() ? l.pack : to_run && !l.unpacked ? to_run->pack : "";
    v.submitted_s = submitted_at(r.name);
    for (const auto& [path, value] : hyperparameters[static_cast<size_t>(j)])
      v.hyperparameters[path] = value;
    if (const EvalPoint* e = LatestEval(EvalsOfTask(run.evals, r.name))) v.eval = *e;
    views.push_back(std::move(v));
  }
  // A shuffled early-stopping group as written (early_stop's order).
  views = InWrittenOrder(run, std::move(views));
  auto unjoined = [&](const std::string& name, TaskStatus status, const std::string& error) {
    TaskView v;
    v.name = name;
    v.status = status;
    v.error = error;
    v.submitted_s = submitted_at(name);
    views.push_back(std::move(v));
  };
  for (const std::string& n : impl.arrivals->Profiling()) {
    auto it = impl.submitted.find(n);
    bool cancelled = it != impl.submitted.end() && it->second.cancel_on_join;
    unjoined(n, cancelled ? TaskStatus::kCancelled : TaskStatus::kProfiling, "");
  }
  for (const std::string& n : impl.arrivals->Submitted())
    unjoined(n, TaskStatus::kSubmitted, "");
  for (const auto& [n, life] : impl.submitted) {
    if (life.ended && run.tasks.IndexOf(n) < 0) unjoined(n, *life.ended, life.error);
  }
  return views;
}

std::vector<EvalPoint> Run::Evaluations(const std::string& task) const {
  std::vector<EvalPoint> out;
  if (const auto* evals = EvalsOfTask(impl_->run.evals, task)) {
    for (const auto& [step, e] : *evals)
      out.push_back(e);
  }
  return out;
}

json Run::BestSoFar() const {
  std::map<std::string, std::string> best_of;
  // Not the kept best models: read from disk, too slow for every view.
  // In the order written, as the report's.
  return BestOfSweeps(InWrittenOrder(impl_->run, ReportTasks(impl_->run, /*best_models=*/false)),
                      impl_->run.evals, best_of, Ranking::kSoFar);
}

}  // namespace saturn
