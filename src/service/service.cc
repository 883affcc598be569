#include "service/service.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "common/defaults.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "executor/arrivals.h"
#include "executor/dispatcher.h"
#include "executor/progress.h"
#include "executor/replanner.h"
#include "executor/run_context.h"
#include "executor/run_loop.h"
#include "executor/run_setup.h"
#include "launch/worker.h"
#include "contracts/cluster.h"

namespace saturn {

using nlohmann::json;
namespace fs = std::filesystem;

struct Service::Request {
  enum Kind { kSubmit, kCancel } kind = kSubmit;
  Workload workload;
  Submission submission;
  std::string task;
  std::promise<Reply> reply;
};

namespace {

// The submitted workload on the service's cluster: a workload without a
// `cluster` gets the service's (appended, so line numbers hold); one with
// its own is parsed as written and then run on the service's.
Workload ParseSubmission(const Submission& s, const std::string& cluster_file,
                         const Cluster& cluster, long max_tasks) {
  std::string text = s.text;
  bool has_cluster = false;
  bool is_json = text.find_first_not_of(" \t\r\n") != std::string::npos &&
                 text[text.find_first_not_of(" \t\r\n")] == '{';
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

}  // namespace

Service::Service(const ServeOptions& options, const Clock& clock)
    : options_(options), run_(std::make_unique<RunContext>(options.run, clock)) {
  SetUp();
}

Service::~Service() = default;

void Service::SetUp() {
  RunContext& run = *run_;
  run.site.run_dir = fs::absolute(options_.state_dir).lexically_normal().string();
  if (options_.cluster_path.empty()) {
    throw InputError("", 0, "--cluster", "required: the cluster file the service runs on");
  }
  run.tasks.workload().cluster = LoadClusterFile(options_.cluster_path);
  run.tasks.workload().source = run.site.run_dir + "/submissions";
  run.tasks.workload().base_dir = run.site.run_dir;
  run.site.backend = MakeBackend(options_.run.backend);
  run.site.backend->CheckCluster(run.tasks.workload().cluster);
  MakeDirectories(run.site.run_dir);
  run.site.backend->CheckSharedDir(run.site.run_dir, run.tasks.workload().cluster);
  bool existed = fs::exists(run.site.run_dir + "/state.sqlite");
  run.site.state.emplace(RunState::Open(run.site.run_dir, true));
  worker_ = options_.run.profiler.worker;
  if (worker_.empty()) {
    try {
      worker_ = FindWorkerBinary();
    } catch (const std::exception&) {
      // No engine here: only users' own programs (command tasks) can run;
      // an engine task's submission is refused with FindWorkerBinary's reason.
    }
  }
  run.site.worker = worker_;
  for (const Event& e : existed ? run.site.state->Events() : std::vector<Event>{}) {
    std::string line = EventToJsonLine(e);
    PushEvent(line.substr(0, line.size() - 1));
  }
  run.SetEventListener([this](const Event& e) {
    std::string line = EventToJsonLine(e);
    PushEvent(line.substr(0, line.size() - 1));
  });
  const RunOptions& o = options_.run;
  run.SetIntrospection(
      o.interval_s > 0 ? o.interval_s : defaults::kServiceIntervalS,
      o.threshold_s >= 0 ? o.threshold_s : defaults::kThresholdSwitchCosts * o.switch_cost_s);
  run.tasks.Build(run.ProfileSource());
  dispatcher_ = std::make_unique<Dispatcher>(run);
  arrivals_ = std::make_unique<Arrivals>(run, *dispatcher_);
  if (existed) {
    Restart();
  } else {
    run.clock.Start();
    std::string cluster = ClusterToYaml(run.tasks.workload().cluster);
    run.site.state->Set(meta::kCluster, cluster);
    WriteFileAtomic(run.site.run_dir + "/cluster.yaml", cluster);
  }
  Publish(true);
}

// A service killed and started again: every stored submission comes back;
// tasks that had joined continue from their checkpoints, the others are
// profiled again (the cache answers most trials).
void Service::Restart() {
  RunContext& run = *run_;
  RunState& state = *run.site.state;
  run.clock.Start(state.ResumeClock());
  std::string cluster_now = ClusterToYaml(run.tasks.workload().cluster);
  WriteFileAtomic(run.site.run_dir + "/cluster.yaml", cluster_now);
  std::vector<WorkloadTask> latest;  // the newest submission of each name wins
  for (const Submission& s : state.Submissions()) {
    Workload w = ParseSubmission(s, run.site.run_dir + "/cluster.yaml",
                                 run.tasks.workload().cluster, options_.run.max_tasks);
    for (const std::string& p : w.plugins) {
      auto& plugins = run.tasks.workload().plugins;
      if (std::find(plugins.begin(), plugins.end(), p) == plugins.end()) plugins.push_back(p);
    }
    for (WorkloadTask& t : w.tasks) {
      std::erase_if(latest, [&](const WorkloadTask& o) { return o.name == t.name; });
      latest.push_back(std::move(t));
    }
  }
  std::set<std::string> profiled;
  if (auto saved = run.SavedProfile()) {
    run.tasks.profile() =
        ParseProfileCsv(saved->first, saved->second, run.tasks.workload().cluster);
    for (const std::string& name : run.tasks.profile().TaskNames())
      profiled.insert(name);
  }
  std::map<std::string, TaskRecord> records;
  for (TaskRecord& r : state.Tasks())
    records[r.name] = std::move(r);
  std::vector<WorkloadTask> again;
  for (WorkloadTask& t : latest) {
    if (profiled.count(t.name)) {
      run.tasks.workload().tasks.push_back(std::move(t));
    } else if (!records.count(t.name) || records[t.name].status != TaskStatus::kCancelled) {
      again.push_back(std::move(t));
    }
  }
  std::set<std::string> joined;
  for (const WorkloadTask& t : run.tasks.workload().tasks)
    joined.insert(t.name);
  std::erase_if(run.tasks.profile().rows,
                [&](const ProfileRow& r) { return !joined.count(r.task); });
  run.tasks.Build(run.ProfileSource());
  run.RestorePlan();
  RestoreTasks(run);
  json cancels = json::parse(state.Get(meta::kCancelRequests).value_or("[]"));
  for (int j = 0; j < run.NumTasks(); ++j) {
    TaskRecord& r = run.tasks[j].record;
    if (run.Done(j) || std::find(cancels.begin(), cancels.end(), r.name) == cancels.end()) continue;
    r.status = TaskStatus::kCancelled;
    run.SaveTask(j);
  }
  run.Emit(events::Resumed(run.Now()));
  if (run.NumTasks() > 0 && !run.AllDone()) ExtendPlan(run, nullptr, {});
  state.Set(meta::kCluster, cluster_now);
  arrivals_->Add(std::move(again));
}

Service::Reply Service::Submit(const std::string& text, const std::string& source,
                               const std::string& base_dir) {
  auto request = std::make_unique<Request>();
  request->kind = Request::kSubmit;
  request->submission = {0, source.empty() ? "submission" : source, base_dir, text};
  try {
    if (!fs::path(base_dir).is_absolute()) {
      throw InputError("", 0, "base_dir", "expected the submitter's folder as an absolute path");
    }
    request->workload = ParseSubmission(request->submission, run_->site.run_dir + "/cluster.yaml",
                                        run_->tasks.workload().cluster, options_.run.max_tasks);
    bool engine_tasks = std::any_of(request->workload.tasks.begin(), request->workload.tasks.end(),
                                    [](const WorkloadTask& t) { return !t.is_command; });
    if (engine_tasks) {
      std::string worker = worker_.empty() ? FindWorkerBinary() : worker_;
      AvailableTechniques(request->workload, worker);
    }
  } catch (const InputError& e) {
    return {400, {{"error", e.what()}}};
  } catch (const SystemError& e) {  // the service's machine refused, not the workload
    return {503, {{"error", e.what()}}};
  } catch (const std::runtime_error& e) {
    return {400, {{"error", e.what()}}};
  }
  return Post(std::move(request));
}

Service::Reply Service::Cancel(const std::string& task) {
  auto request = std::make_unique<Request>();
  request->kind = Request::kCancel;
  request->task = task;
  return Post(std::move(request));
}

Service::Reply Service::Post(std::unique_ptr<Request> request) {
  std::future<Reply> reply = request->reply.get_future();
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_.push_back(std::move(request));
  }
  if (reply.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
    return {503, {{"error", "the service did not answer in time; ask again"}}};
  }
  return reply.get();
}

void Service::HandleRequests() {
  std::deque<std::unique_ptr<Request>> requests;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    requests.swap(inbox_);
  }
  if (requests.empty()) return;
  std::vector<Reply> replies;
  for (auto& request : requests) {
    try {
      replies.push_back(request->kind == Request::kSubmit ? DoSubmit(*request)
                                                          : DoCancel(request->task));
    } catch (const std::exception& e) {
      replies.push_back({500, {{"error", e.what()}}});
    }
  }
  // Answered once the views show what the requests changed.
  Publish(true);
  for (size_t i = 0; i < requests.size(); ++i)
    requests[i]->reply.set_value(replies[i]);
}

Service::Reply Service::DoSubmit(Request& request) {
  RunContext& run = *run_;
  std::set<std::string> pending;
  for (const std::string& n : arrivals_->Queued())
    pending.insert(n);
  for (const std::string& n : arrivals_->Profiling())
    pending.insert(n);
  std::set<std::string> replaced;
  std::string taken;
  for (const WorkloadTask& t : request.workload.tasks) {
    int j = run.tasks.IndexOf(t.name);
    bool cancelled = j >= 0 && run.tasks[j].record.status == TaskStatus::kCancelled;
    if (pending.count(t.name) || (j >= 0 && !cancelled)) {
      taken += (taken.empty() ? "" : ", ") + Quote(t.name);
    } else if (cancelled) {
      replaced.insert(t.name);
    }
  }
  if (!taken.empty()) {
    return {409,
            {{"error", request.submission.source + ": the service already has task " + taken +
                           "; cancel it first or give the new one another name"}}};
  }
  if (!replaced.empty()) LeaveRun(run, replaced);
  request.submission.seq = run.site.state->AddSubmission(request.submission);
  json cancels = json::parse(run.site.state->Get(meta::kCancelRequests).value_or("[]"));
  json ids = json::array();
  for (const WorkloadTask& t : request.workload.tasks) {
    ids.push_back(t.name);
    rejected_.erase(t.name);
    cancel_on_join_.erase(t.name);
    losses_.erase(t.name);
    losses_final_.erase(t.name);
    submitted_at_[t.name] = run.Now();
    // A fresh record: a restart profiles it again even if an older task of
    // this name was cancelled.
    TaskRecord fresh;
    fresh.name = t.name;
    run.site.state->SaveTask(fresh);
    cancels.erase(std::remove(cancels.begin(), cancels.end(), json(t.name)), cancels.end());
  }
  run.site.state->Set(meta::kCancelRequests, cancels.dump());
  for (const std::string& p : request.workload.plugins) {
    auto& plugins = run.tasks.workload().plugins;
    if (std::find(plugins.begin(), plugins.end(), p) == plugins.end()) plugins.push_back(p);
  }
  arrivals_->Add(request.workload.tasks);
  return {201, {{"tasks", ids}, {"submission", request.submission.seq}}};
}

Service::Reply Service::DoCancel(const std::string& task) {
  RunContext& run = *run_;
  auto remember = [&] {
    json cancels = json::parse(run.site.state->Get(meta::kCancelRequests).value_or("[]"));
    cancels.push_back(task);
    run.site.state->Set(meta::kCancelRequests, cancels.dump());
  };
  for (int j = 0; j < run.NumTasks(); ++j) {
    if (run.tasks.problem().tasks[j].name != task) continue;
    TaskStatus s = run.tasks[j].record.status;
    if (s == TaskStatus::kCancelled) return {200, {{"task", task}, {"status", "cancelled"}}};
    if (run.Done(j)) {
      return {409,
              {{"error", "task " + Quote(task) + " has already " + std::string(ToString(s)) +
                             "; there is nothing to cancel"}}};
    }
    remember();
    dispatcher_->Cancel(j);
    run.Requeue();
    return {200, {{"task", task}, {"status", ToString(run.tasks[j].record.status)}}};
  }
  if (arrivals_->Remove(task)) {
    remember();
    TaskRecord r;
    r.name = task;
    r.status = TaskStatus::kCancelled;
    run.site.state->SaveTask(r);
    run.Emit(events::TaskCancelled(run.Now(), events::TaskPlace{task, "", 0, "", {}}, 0));
    return {200, {{"task", task}, {"status", "cancelled"}}};
  }
  auto profiling = arrivals_->Profiling();
  if (std::find(profiling.begin(), profiling.end(), task) != profiling.end()) {
    remember();
    cancel_on_join_.insert(task);
    // Durable now: a restart before it joins does not profile it again.
    TaskRecord r;
    r.name = task;
    r.status = TaskStatus::kCancelled;
    run.site.state->SaveTask(r);
    return {200, {{"task", task}, {"status", "cancelled"}}};
  }
  if (rejected_.count(task)) {
    return {409, {{"error", "task " + Quote(task) + " has already failed: " + rejected_[task]}}};
  }
  return {404, {{"error", "no task " + Quote(task)}}};
}

void Service::AfterArrivals() {
  RunContext& run = *run_;
  for (const Arrivals::Rejected& r : arrivals_->Poll()) {
    rejected_[r.task] = r.reason;
    run.Emit(events::TaskFailed(run.Now(), events::TaskPlace{r.task, "", 0, "", {}}, r.reason, 0,
                                true, 0));
  }
  if (cancel_on_join_.empty()) return;
  for (int j = 0; j < run.NumTasks(); ++j) {
    if (cancel_on_join_.erase(run.tasks.problem().tasks[j].name)) dispatcher_->Cancel(j);
  }
}

void Service::Run(const std::atomic<bool>& stop) {
  RunContext& run = *run_;
  Replanner replanner(run, *dispatcher_);
  RunLoop loop(run, *dispatcher_, replanner);
  LoopHooks hooks;
  hooks.before = [&] { HandleRequests(); };
  hooks.after_poll = [&] { AfterArrivals(); };
  hooks.stop = [&] { return stop.load(); };
  hooks.may_replan = [&] { return !arrivals_->Busy(); };
  hooks.after = [&] {
    StreamProgress();
    Publish(false);
  };
  loop.Run(hooks);
  replanner.Wait();
  arrivals_->Wait();
  // Every worker checkpoints; a restart resumes them.
  loop.Drain();
  loop.Finish();
  Publish(true);
}

}  // namespace saturn
