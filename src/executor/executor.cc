#include "executor/executor.h"

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <future>
#include <map>
#include <optional>
#include <thread>

#include "common/clock.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "common/process.h"
#include "executor/run_state.h"
#include "launch/backend.h"
#include "launch/command_task.h"
#include "launch/worker.h"
#include "planner/planner.h"
#include "replan/dispatch.h"
#include "replan/replan.h"
#include "report/run_report.h"
#include "spec/workload.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// Set by SIGTERM/SIGINT: stop the run gracefully (workers checkpoint).
std::atomic<bool> g_interrupted{false};

void OnInterrupt(int) {
  g_interrupted = true;
}

// The newest complete checkpoint-<step> in a folder, or 0.
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

double Median(std::deque<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct Live {
  enum Status { kWaiting, kRunning, kFinished, kFailed } status = kWaiting;
  TaskRecord record;
  long step = 0;  // steps done (last report)
  std::deque<double> recent_step_s;
  double last_loss = 0.0;
  std::optional<Process> process;
  Assignment on;  // where it runs
  bool stopping = false;
  double stop_requested = 0.0;
  double segment_start = 0.0;
};

class Executor {
 public:
  explicit Executor(const RunOptions& o) : o_(o) {}

  RunSummary Run() {
    Prepare();
    Loop();
    return Finish();
  }

 private:
  // ---- time ---------------------------------------------------------------
  double Now() const { return clock_offset_ + (steady_.Now() - clock_start_); }

  // ---- set-up -------------------------------------------------------------
  void Prepare() {
    run_dir_ = fs::absolute(o_.run_dir.empty() ? DefaultRunDir(o_.workload_path) : o_.run_dir)
                   .lexically_normal()
                   .string();
    std::string workload_text = ReadFile(o_.workload_path);
    workload_ = LoadWorkloadFile(o_.workload_path, o_.plugins);
    std::error_code ec;
    bool exists = fs::exists(run_dir_ + "/state.sqlite", ec);
    if (exists && !o_.resume) {
      throw InputError(run_dir_, 0, "",
                       "a run already lives here; continue it with --resume or choose another "
                       "folder with --run-dir");
    }
    if (!exists && o_.resume) {
      throw InputError(run_dir_, 0, "--resume", "no run to resume here (no state.sqlite)");
    }
    // Checks that can refuse the run come before anything is written.
    worker_ = o_.profiler.worker;
    bool engine_tasks = std::any_of(workload_.tasks.begin(), workload_.tasks.end(),
                                    [](const WorkloadTask& t) { return !t.is_command; });
    if (worker_.empty() && engine_tasks) worker_ = FindWorkerBinary();
    // Plug-ins load and every task's techniques exist.
    if (engine_tasks) AvailableTechniques(workload_, worker_);
    backend_ = MakeBackend(o_.backend);
    if (workload_.from_allocation) {
      auto nodes = backend_->AllocatedNodes();
      if (!nodes) {
        throw InputError(o_.workload_path, 0, "cluster.from",
                         "the cluster comes from the Slurm allocation: run inside one (sbatch, "
                         "salloc) with --backend slurm, or list the nodes under cluster.nodes");
      }
      UseAllocation(workload_, *nodes);
    }
    backend_->CheckCluster(workload_.cluster);
    MakeDirectories(run_dir_);
    backend_->CheckSharedDir(run_dir_, workload_.cluster);
    state_.emplace(RunState::Open(run_dir_, !o_.resume));
    if (o_.resume) {
      if (state_->Get("workload") != workload_text) {
        throw InputError(o_.workload_path, 0, "",
                         "the workload changed since this run started; resume needs the same file");
      }
      // Resumed on other nodes (e.g. a requeued Slurm job): the plan names
      // the old ones, so the remaining work is planned afresh for these.
      std::optional<std::string> saved_cluster = state_->Get("cluster");
      std::string cluster_now = ClusterToYaml(workload_.cluster);
      bool moved = saved_cluster && *saved_cluster != cluster_now;
      clock_offset_ = std::stod(state_->Get("clock_s").value_or("0"));
      clock_start_ = steady_.Now();
      profile_ = moved ? ProfileOnNewCluster(*saved_cluster)
                       : ParseProfileCsv(ReadFile(run_dir_ + "/profile.csv"),
                                         run_dir_ + "/profile.csv", workload_.cluster);
      BuildProblem();
      plan_ = PlanFromJson(json::parse(*state_->Get("plan")), run_dir_);
      planned_makespan_ = std::stod(state_->Get("planned_makespan_s").value_or("0"));
      switches_ = std::stoi(state_->Get("plan_switches").value_or("0"));
      profiling_s_ = std::stod(state_->Get("profiling_s").value_or("0"));
      planning_s_ = std::stod(state_->Get("planning_s").value_or("0"));
      RestoreTasks();
      Emit(Event{Now(), "resumed", "", "", 0, "", {}, {}});
      if (moved) ReplanOnNewCluster(cluster_now);
    } else {
      clock_start_ = steady_.Now();
      std::string cluster = ClusterToYaml(workload_.cluster);
      state_->Set("workload", workload_text);
      state_->Set("cluster", cluster);
      WriteFileAtomic(run_dir_ + "/workload.yaml", workload_text);
      WriteFileAtomic(run_dir_ + "/cluster.yaml", cluster);
      ProfileAndPlan();
    }
    for (size_t k = 0; k < workload_.tasks.size(); ++k) {
      std::string dir = TaskDir(static_cast<int>(k));
      MakeDirectories(dir + "/checkpoints");
      if (!fs::exists(dir + "/task.json")) {
        WriteFileAtomic(dir + "/task.json", workload_.tasks[k].spec.dump(2) + "\n");
      }
    }
    double span = std::max(1.0, planned_makespan_);
    interval_ = o_.interval_s > 0 ? o_.interval_s : std::clamp(span / 10, 10.0, 1000.0);
    threshold_ = o_.threshold_s >= 0 ? o_.threshold_s : std::max(0.02 * span, 2 * o_.switch_cost_s);
    next_check_ = Now() + interval_;
    queues_.Adopt(problem_, plan_, [&](int j) { return Running(j); });
  }

  void ProfileAndPlan() {
    SteadyClock clock;
    double t0 = clock.Now();
    if (!o_.profile_path.empty()) {
      profile_ = LoadProfileFile(o_.profile_path, workload_.cluster);
    } else {
      ProfilerOptions p = o_.profiler;
      p.worker = worker_;
      p.progress = o_.progress;
      p.backend = backend_.get();
      p.checkpoint_every = o_.checkpoint_every;
      if (p.work_dir.empty()) p.work_dir = run_dir_ + "/trials";
      ProfileRun run = RunProfiler(workload_, p);
      profile_ = run.table;
      if (o_.progress) std::fputs(ProfileSummary(workload_, run).c_str(), stderr);
    }
    WriteFileAtomic(run_dir_ + "/profile.csv", ProfileToCsv(profile_));
    profiling_s_ = clock.Now() - t0;
    BuildProblem();
    t0 = clock.Now();
    PlanRequest request;
    request.solver = o_.solver;
    request.time_limit_s = o_.time_limit_s;
    request.seed = o_.seed;
    PlanResult planned = RunPlanner(problem_, request);
    planning_s_ = clock.Now() - t0;
    plan_ = planned.plan;
    planned_makespan_ = plan_.makespan_s;
    // Plan times are on the run clock, which starts after profiling and planning.
    clock_start_ = steady_.Now();
    SavePlan(0);
    state_->Set("planned_makespan_s", FormatNumber(planned_makespan_));
    state_->Set("profiling_s", FormatNumber(profiling_s_));
    state_->Set("planning_s", FormatNumber(planning_s_));
    for (int j = 0; j < problem_.NumTasks(); ++j) {
      live_[j].record.name = problem_.tasks[j].name;
      state_->SaveTask(live_[j].record);
    }
    Emit(Event{0.0,
               "plan",
               "",
               "",
               0,
               "",
               {},
               {{"makespan_s", plan_.makespan_s},
                {"solver", plan_.solver},
                {"status", plan_.status},
                {"profiling_s", profiling_s_},
                {"planning_s", planning_s_}}});
    if (o_.progress) {
      std::fprintf(stderr, "plan (%s, %s): %zu tasks, makespan %s (lower bound %s)\n",
                   plan_.solver.c_str(), plan_.status.c_str(), plan_.tasks.size(),
                   FormatDuration(plan_.makespan_s).c_str(),
                   FormatDuration(plan_.lower_bound_s).c_str());
    }
  }

  // Problem task j is workload task workload_index_[j].
  void BuildProblem() {
    problem_ = ProblemFromProfile(profile_, workload_.cluster);
    std::map<std::string, int> by_name;
    for (size_t k = 0; k < workload_.tasks.size(); ++k)
      by_name[workload_.tasks[k].name] = k;
    if (problem_.NumTasks() != static_cast<int>(workload_.tasks.size())) {
      throw InputError(o_.profile_path.empty() ? run_dir_ + "/profile.csv" : o_.profile_path, 0, "",
                       "the profile has " + std::to_string(problem_.NumTasks()) +
                           " tasks but the workload " + std::to_string(workload_.tasks.size()));
    }
    workload_index_.clear();
    for (const Task& t : problem_.tasks) {
      auto it = by_name.find(t.name);
      if (it == by_name.end()) {
        throw InputError(o_.profile_path, 0, "task " + Quote(t.name), "is not in the workload");
      }
      workload_index_.push_back(it->second);
    }
    live_.clear();
    live_.resize(problem_.NumTasks());
    busy_by_.assign(problem_.NumNodes(), {});
    for (int n = 0; n < problem_.NumNodes(); ++n)
      busy_by_[n].assign(problem_.nodes[n].gpus, -1);
  }

  void RestoreTasks() {
    std::map<std::string, TaskRecord> saved;
    for (TaskRecord& r : state_->Tasks())
      saved[r.name] = std::move(r);
    for (int j = 0; j < problem_.NumTasks(); ++j) {
      Live& l = live_[j];
      l.record = saved.count(problem_.tasks[j].name) ? saved[problem_.tasks[j].name] : TaskRecord{};
      l.record.name = problem_.tasks[j].name;
      if (l.record.status == "finished") {
        l.status = Live::kFinished;
      } else if (l.record.status == "failed") {
        l.status = Live::kFailed;
      } else {
        // Running when the orchestrator died: its worker got SIGTERM (and
        // checkpointed); make sure nothing of it is left, resume from disk.
        if (l.record.worker_pgid > 0) ::kill(-l.record.worker_pgid, SIGKILL);
        l.record.status = "waiting";
        l.record.worker_pgid = 0;
        if (!workload_.tasks[workload_index_[j]].is_command) {
          l.record.checkpoint_step = LatestCheckpoint(TaskDir(workload_index_[j]) + "/checkpoints");
        }
        l.status = Live::kWaiting;
      }
      l.step = l.record.checkpoint_step;
      state_->SaveTask(l.record);
    }
  }

  // The run's profile, its rows limited to what fits the nodes the run
  // resumes on (it was checked against `saved_cluster`, the old ones).
  ProfileTable ProfileOnNewCluster(const std::string& saved_cluster) {
    std::string path = run_dir_ + "/profile.csv";
    Cluster old = ParseCluster(YAML::Load(saved_cluster), run_dir_ + "/state.sqlite", "cluster");
    ProfileTable table = ParseProfileCsv(ReadFile(path), path, old);
    int max_gpus = workload_.cluster.MaxGpusPerNode();
    std::erase_if(table.rows, [&](const ProfileRow& r) { return r.gpus > max_gpus; });
    for (const WorkloadTask& t : workload_.tasks) {
      bool any = std::any_of(table.rows.begin(), table.rows.end(),
                             [&](const ProfileRow& r) { return r.task == t.name && r.feasible; });
      if (!any) {
        throw InputError(o_.workload_path, t.line, "task " + Quote(t.name),
                         "was profiled for larger nodes than this run resumes on (the largest "
                         "has " +
                             std::to_string(max_gpus) + " GPUs); resume it on nodes like:\n" +
                             saved_cluster);
      }
    }
    return table;
  }

  // Plans what is left for the nodes the run resumes on, from the tasks'
  // checkpoints (every technique and GPU count resumes from them).
  void ReplanOnNewCluster(const std::string& cluster_now) {
    ReplanDecision d = Replan(problem_, Snapshot(), Plan{}, Now(), Policy(o_.time_limit_s));
    estimated_end_ = d.new_end_s;
    AdoptPlan(d.plan);
    state_->Set("cluster", cluster_now);
    WriteFileAtomic(run_dir_ + "/cluster.yaml", cluster_now);
    Emit(Event{Now(),
               "plan_switched",
               "",
               "",
               0,
               "",
               {},
               {{"new_end_s", d.new_end_s}, {"preempted", json::array()}, {"why", "other nodes"}}});
    if (o_.progress) {
      std::fprintf(stderr, "[%s] resumed on other nodes; planned the rest for them: ends ~%s\n",
                   FormatDuration(Now()).c_str(), FormatDuration(d.new_end_s).c_str());
    }
  }

  std::string TaskDir(int workload_task) const {
    return run_dir_ + "/tasks/" + workload_.tasks[workload_task].name;
  }

  void SavePlan(int index) {
    std::string text = PlanToJson(plan_).dump(2) + "\n";
    WriteFileAtomic(run_dir_ + "/plan-" + std::to_string(index) + ".json", text);
    state_->Set("plan", text);
  }

  void Emit(const Event& e) { state_->Append(e); }

  Event TaskEvent(const std::string& kind, int j, json extra = json::object()) {
    const Live& l = live_[j];
    Event e;
    e.t = Now();
    e.kind = kind;
    e.task = problem_.tasks[j].name;
    if (l.on.option >= 0) {
      const Option& o = problem_.tasks[j].options[l.on.option];
      e.technique = o.technique;
      e.gpus = o.gpus;
      e.node = problem_.nodes[l.on.node].name;
      e.gpu_ids = l.on.gpu_ids;
    }
    e.extra = std::move(extra);
    return e;
  }

  bool Running(int j) const { return live_[j].status == Live::kRunning && !live_[j].stopping; }
  bool Done(int j) const {
    return live_[j].status == Live::kFinished || live_[j].status == Live::kFailed;
  }
  long Steps(int j) const { return workload_.tasks[workload_index_[j]].steps; }

  // ---- workers ------------------------------------------------------------
  void Start(int j, const Assignment& a) {
    Live& l = live_[j];
    const WorkloadTask& task = workload_.tasks[workload_index_[j]];
    const Option& option = problem_.tasks[j].options[a.option];
    const ClusterNode& node = workload_.cluster.nodes[a.node];
    std::string dir = TaskDir(workload_index_[j]);
    WorkerCall call;
    call.mode = WorkerCall::kExecute;
    call.task_path = dir + "/task.json";
    call.technique = option.technique;
    call.gpus = option.gpus;
    call.out_path = dir + "/result.json";
    call.device_kind = node.device;
    if (node.device != "cuda") call.device_ids = a.gpu_ids;
    call.memory_gib = node.gpu_memory_gib.value_or(0.0);
    call.threads = node.threads_per_gpu;
    call.from_step = l.record.checkpoint_step;
    call.to_step = task.steps;
    call.checkpoint_dir = dir + "/checkpoints";
    call.checkpoint_every = CheckpointInterval(task.steps, o_.checkpoint_every);
    call.save_model = dir + "/model.pt";
    if (backend_->LaunchesRanks() && option.gpus > 1) {
      call.rank_from_env = true;
      call.rendezvous = dir + "/rendezvous-" + std::to_string(++launches_);
    }
    call.plugins = workload_.plugins;
    if (const ProfileRow* row = profile_.Find(task.name, option.technique, option.gpus)) {
      call.knobs_json = profile_.Extra(*row, "knobs");
    }
    std::error_code ec;
    fs::remove(call.out_path, ec);
    WorkerJob job;
    if (task.is_command) {
      CommandCall c;
      c.technique = option.technique;
      c.gpus = option.gpus;
      c.gpu_ids = a.gpu_ids;
      c.node = node.name;
      c.start_step = l.record.checkpoint_step;
      c.steps = task.steps;
      c.checkpoint_dir = call.checkpoint_dir;
      c.device_kind = node.device;
      job = CommandJob(task.spec, c);
    } else {
      job.argv = WorkerArgv(worker_, call);
      job.env = WorkerEnv();
    }
    job.node = node.name;
    job.gpu_ids = a.gpu_ids;
    job.device_kind = node.device;
    job.ranks = option.gpus;
    job.pipe_stdout = true;
    job.stderr_path = dir + "/worker.log";
    l.process.emplace(backend_->Start(job));
    l.status = Live::kRunning;
    l.stopping = false;
    l.on = a;
    l.step = l.record.checkpoint_step;
    l.recent_step_s.clear();
    l.segment_start = Now();
    for (int g : a.gpu_ids)
      busy_by_[a.node][g] = j;
    l.record.status = "running";
    l.record.technique = option.technique;
    l.record.gpus = option.gpus;
    l.record.node = node.name;
    l.record.gpu_ids = a.gpu_ids;
    l.record.worker_pgid = l.process->pid();
    if (l.record.first_start_s < 0) l.record.first_start_s = Now();
    state_->SaveTask(l.record);
    Emit(TaskEvent("task_started", j, {{"step", l.record.checkpoint_step}}));
  }

  void ReadProgress(int j) {
    Live& l = live_[j];
    std::string log = TaskDir(workload_index_[j]) + "/worker.out";
    std::string lines;
    while (auto line = l.process->ReadLine(0.0)) {
      lines += *line + "\n";
      StepReport r;
      if (!ParseStepLine(*line, &r)) continue;
      l.step = r.step + 1;
      l.last_loss = r.loss;
      if (r.step_s > 0) {
        l.recent_step_s.push_back(r.step_s);
        if (l.recent_step_s.size() > 20) l.recent_step_s.pop_front();
      }
      long every = std::max(1L, Steps(j) / 500);
      if (r.step % every == 0 || l.step == Steps(j)) state_->AddLoss(l.record.name, r.step, r.loss);
    }
    if (!lines.empty()) AppendText(log, lines);
  }

  static void AppendText(const std::string& path, const std::string& text) {
    FILE* f = std::fopen(path.c_str(), "a");
    if (!f) return;
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }

  void HandleExit(int j, int status) {
    Live& l = live_[j];
    ReadProgress(j);
    for (int g : l.on.gpu_ids)
      busy_by_[l.on.node][g] = -1;
    std::string dir = TaskDir(workload_index_[j]);
    l.record.worker_pgid = 0;
    l.record.steps_done = l.step;
    bool was_stopping = l.stopping;
    l.stopping = false;
    l.process.reset();
    std::optional<ExecuteResult> result;
    if (ExitedCleanly(status) && workload_.tasks[workload_index_[j]].is_command) {
      // A user's program: a clean exit after SIGTERM is a checkpoint at the
      // last step it reported; otherwise it ran to the end.
      result = ExecuteResult{};
      result->completed_steps = was_stopping ? l.step : Steps(j);
      result->final_loss = l.last_loss;
      result->preempted = was_stopping;
    } else if (ExitedCleanly(status)) {
      try {
        result = ReadExecuteResult(dir + "/result.json");
      } catch (const std::exception& e) {
        status = 1 << 8;  // treat a protocol breach as a failure
        l.record.error = e.what();
      }
    }
    if (result && result->completed_steps >= Steps(j)) {
      l.status = Live::kFinished;
      l.record.status = "finished";
      l.record.checkpoint_step = result->completed_steps;
      l.record.final_loss = result->final_loss;
      l.record.end_s = Now();
      l.record.error.clear();
      state_->AddLoss(l.record.name, Steps(j) - 1, result->final_loss);
      state_->SaveTask(l.record);
      Emit(TaskEvent("task_finished", j, {{"steps", Steps(j)}, {"loss", result->final_loss}}));
      return;
    }
    l.status = Live::kWaiting;
    l.record.status = "waiting";
    // A user's program keeps checkpoints in its own format: Saturn only knows
    // the steps it reported at pre-emptions.
    bool own_checkpoints = workload_.tasks[workload_index_[j]].is_command;
    auto latest = [&] {
      return own_checkpoints ? l.record.checkpoint_step : LatestCheckpoint(dir + "/checkpoints");
    };
    if (result || was_stopping) {
      l.record.checkpoint_step = result ? result->completed_steps : latest();
      state_->SaveTask(l.record);
      Emit(TaskEvent("task_stopped", j,
                     {{"reason", "preempted"}, {"step", l.record.checkpoint_step}}));
      return;
    }
    ++l.record.attempts;
    std::string tail = LastLines(dir + "/worker.log", 8);
    l.record.error = DescribeExit(status) + (tail.empty() ? "" : ": " + tail);
    l.record.checkpoint_step = latest();
    bool give_up = l.record.attempts > o_.max_retries;
    if (give_up) {
      l.status = Live::kFailed;
      l.record.status = "failed";
      l.record.end_s = Now();
    }
    state_->SaveTask(l.record);
    Emit(TaskEvent("task_failed", j,
                   {{"error", l.record.error},
                    {"attempt", l.record.attempts},
                    {"gave_up", give_up},
                    {"step", l.record.checkpoint_step}}));
    if (o_.progress) {
      std::fprintf(stderr, "task %s failed (attempt %d%s): %s\n", l.record.name.c_str(),
                   l.record.attempts, give_up ? ", giving up" : ", will retry",
                   DescribeExit(status).c_str());
    }
  }

  void Poll() {
    for (int j = 0; j < problem_.NumTasks(); ++j) {
      Live& l = live_[j];
      if (l.status != Live::kRunning) continue;
      ReadProgress(j);
      if (auto status = l.process->Poll()) {
        HandleExit(j, *status);
        continue;
      }
      if (l.stopping && Now() - l.stop_requested > o_.stop_grace_s) backend_->Kill(*l.process);
    }
  }

  void Dispatch() {
    auto gpu_free = [&](int n, int g) { return busy_by_[n][g] < 0; };
    auto done = [&](int j) { return Done(j); };
    for (int j : queues_.Order()) {
      if (live_[j].status != Live::kWaiting) continue;
      if (queues_.CanStart(j, gpu_free, done)) Start(j, *queues_.Get(j));
    }
  }

  void Preempt(int j) {
    Live& l = live_[j];
    if (l.status != Live::kRunning || l.stopping) return;
    l.stopping = true;
    l.stop_requested = Now();
    backend_->Stop(*l.process);
  }

  // ---- introspection ------------------------------------------------------
  std::vector<TaskProgress> Snapshot() const {
    std::vector<TaskProgress> progress(problem_.NumTasks());
    for (int j = 0; j < problem_.NumTasks(); ++j) {
      const Live& l = live_[j];
      TaskProgress& p = progress[j];
      p.finished = Done(j);
      p.done = std::min(1.0, static_cast<double>(l.step) / std::max(1L, Steps(j)));
      p.has_checkpoint = l.record.checkpoint_step > 0;
      if (Running(j)) {
        p.running = RunningOn{l.on.option, l.on.node, l.on.gpu_ids};
        if (l.recent_step_s.size() >= 3) {
          double profiled = problem_.tasks[j].options[l.on.option].runtime_s / Steps(j);
          p.slowdown = Median(l.recent_step_s) / profiled;
        }
      }
      p.slowdown = std::isfinite(p.slowdown) && p.slowdown > 0 ? p.slowdown : 1.0;
    }
    return progress;
  }

  void MaybeReplan() {
    if (!o_.introspection) return;
    if (pending_.valid()) {
      if (pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
      Apply(pending_.get());
      next_check_ = Now() + interval_;
      return;
    }
    if (Now() < next_check_) return;
    ReplanPolicy policy = Policy(std::min(o_.time_limit_s, std::max(1.0, interval_ / 4)));
    double now = Now();
    pending_ = std::async(std::launch::async,
                          [problem = problem_, progress = Snapshot(), plan = plan_, now, policy] {
                            return Replan(problem, progress, plan, now, policy);
                          });
  }

  // Re-planning settings; each call gets its own seed.
  ReplanPolicy Policy(double time_limit_s) {
    ReplanPolicy policy;
    policy.solver = o_.solver;
    policy.time_limit_s = time_limit_s;
    policy.seed = o_.seed + static_cast<uint64_t>(++replans_);
    policy.threshold_s = threshold_;
    policy.switch_cost_s = o_.switch_cost_s;
    return policy;
  }

  // Follows `plan` from now on (saved as plan-<switches>.json).
  void AdoptPlan(const Plan& plan) {
    ++switches_;
    state_->Set("plan_switches", std::to_string(switches_));
    plan_ = plan;
    SavePlan(switches_);
  }

  void Apply(const ReplanDecision& d) {
    estimated_end_ = d.switch_plan ? d.new_end_s : d.current_end_s;
    if (!d.switch_plan) return;
    AdoptPlan(d.plan);
    // Tasks the new plan moves: the ones it pre-empts, and any that started
    // while it was being solved somewhere other than where it puts them.
    std::map<std::string, int> index;
    for (int j = 0; j < problem_.NumTasks(); ++j)
      index[problem_.tasks[j].name] = j;
    std::vector<std::string> moved = d.preempted;
    for (const PlanTask& t : plan_.tasks) {
      int j = index.at(t.task);
      const Live& l = live_[j];
      if (!Running(j)) continue;
      const Option& o = problem_.tasks[j].options[l.on.option];
      if (o.technique != t.technique || o.gpus != t.gpus ||
          problem_.nodes[l.on.node].name != t.node || l.on.gpu_ids != t.gpu_ids) {
        if (std::find(moved.begin(), moved.end(), t.task) == moved.end()) moved.push_back(t.task);
      }
    }
    for (const std::string& name : moved)
      Preempt(index.at(name));
    Emit(Event{Now(),
               "plan_switched",
               "",
               "",
               0,
               "",
               {},
               {{"old_end_s", d.current_end_s}, {"new_end_s", d.new_end_s}, {"preempted", moved}}});
    queues_.Adopt(problem_, plan_, [&](int j) { return Running(j); });
    if (o_.progress)
      std::fprintf(stderr, "[%s] %s\n", FormatDuration(Now()).c_str(), d.summary.c_str());
  }

  // ---- the loop -----------------------------------------------------------
  void Loop() {
    double last_save = -1e9, last_print = -1e9;
    struct sigaction action {};
    action.sa_handler = OnInterrupt;
    sigaction(SIGTERM, &action, nullptr);
    sigaction(SIGINT, &action, nullptr);
    while (true) {
      Poll();
      bool all_done = true;
      for (int j = 0; j < problem_.NumTasks(); ++j)
        all_done = all_done && Done(j);
      if (all_done) break;
      if (g_interrupted) {
        Interrupt();
        break;
      }
      MaybeReplan();
      Dispatch();
      double now = Now();
      if (now - last_save >= 1.0) {
        state_->Set("clock_s", FormatNumber(now));
        last_save = now;
      }
      if (o_.progress && now - last_print >= 10.0) {
        PrintProgress();
        last_print = now;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (pending_.valid()) pending_.wait();
    state_->Set("clock_s", FormatNumber(Now()));
  }

  // Stops every worker the way a plan switch does (they checkpoint), records
  // where each task is, and leaves the run resumable.
  void Interrupt() {
    interrupted_ = true;
    if (o_.progress) std::fprintf(stderr, "interrupted: stopping workers (they checkpoint)...\n");
    for (int j = 0; j < problem_.NumTasks(); ++j)
      Preempt(j);
    while (true) {
      Poll();
      bool any = false;
      for (const Live& l : live_)
        any = any || l.status == Live::kRunning;
      if (!any) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    Emit(Event{Now(), "run_interrupted", "", "", 0, "", {}, {}});
  }

  void PrintProgress() {
    int finished = 0, failed = 0;
    std::string running;
    for (int j = 0; j < problem_.NumTasks(); ++j) {
      const Live& l = live_[j];
      finished += l.status == Live::kFinished;
      failed += l.status == Live::kFailed;
      if (l.status != Live::kRunning) continue;
      double pct = 100.0 * l.step / std::max(1L, Steps(j));
      std::string eta = l.recent_step_s.empty()
                            ? "?"
                            : FormatDuration(Median(l.recent_step_s) * (Steps(j) - l.step));
      const Option& o = problem_.tasks[j].options[l.on.option];
      running += "  " + l.record.name + " " + FormatFixed(pct, 0) + "% (" + o.technique + " x" +
                 std::to_string(o.gpus) + ", ETA " + eta + ")";
    }
    double end = estimated_end_ > 0 ? estimated_end_ : planned_makespan_;
    std::fprintf(stderr, "[%s] %d/%d done%s, plan ends ~%s (first plan %s)%s\n",
                 FormatDuration(Now()).c_str(), finished, problem_.NumTasks(),
                 failed ? (", " + std::to_string(failed) + " failed").c_str() : "",
                 FormatDuration(end).c_str(), FormatDuration(planned_makespan_).c_str(),
                 running.empty() ? "" : ("\n" + running).c_str());
  }

  RunSummary Finish() {
    RunSummary s;
    s.run_dir = run_dir_;
    s.interrupted = interrupted_;
    for (int j = 0; j < problem_.NumTasks(); ++j) {
      s.finished += live_[j].status == Live::kFinished;
      s.failed += live_[j].status == Live::kFailed;
      s.makespan_s = std::max(s.makespan_s, live_[j].record.end_s);
    }
    s.planned_makespan_s = planned_makespan_;
    s.plan_switches = switches_;
    s.profiling_s = profiling_s_;
    s.planning_s = planning_s_;
    if (s.interrupted) return s;
    Emit(Event{Now(),
               "run_finished",
               "",
               "",
               0,
               "",
               {},
               {{"finished", s.finished}, {"failed", s.failed}, {"makespan_s", s.makespan_s}}});
    RunReportInput report;
    report.workload = o_.workload_path;
    report.run_dir = run_dir_;
    report.cluster = workload_.cluster;
    report.first_plan = LoadPlanFile(run_dir_ + "/plan-0.json");
    report.makespan_s = s.makespan_s;
    report.profiling_s = profiling_s_;
    report.planning_s = planning_s_;
    for (int j = 0; j < problem_.NumTasks(); ++j) {
      const TaskRecord& r = live_[j].record;
      report.tasks.push_back({r.name, r.status, r.technique, r.gpus, r.node, r.first_start_s,
                              r.end_s, Steps(j),
                              r.status == "finished" ? Steps(j) : r.checkpoint_step, r.final_loss,
                              r.attempts, r.error, state_->Losses(r.name)});
    }
    report.events = state_->Events();
    WriteRunReport(report);
    return s;
  }

  RunOptions o_;
  std::string run_dir_;
  Workload workload_;
  std::optional<RunState> state_;
  std::unique_ptr<LaunchBackend> backend_;
  std::string worker_;
  ProfileTable profile_;
  Problem problem_;
  std::vector<int> workload_index_;
  std::vector<Live> live_;
  std::vector<std::vector<int>> busy_by_;
  PlanQueues queues_;
  Plan plan_;
  SteadyClock steady_;
  double clock_start_ = 0.0;
  double clock_offset_ = 0.0;
  double planned_makespan_ = 0.0;
  double estimated_end_ = 0.0;
  double interval_ = 60.0;
  double threshold_ = 0.0;
  double next_check_ = 0.0;
  double profiling_s_ = 0.0;
  double planning_s_ = 0.0;
  int switches_ = 0;
  int replans_ = 0;
  int launches_ = 0;
  bool interrupted_ = false;
  std::future<ReplanDecision> pending_;
};

}  // namespace

std::string DefaultRunDir(const std::string& workload_path) {
  return "saturn-runs/" + fs::path(workload_path).filename().string();
}

RunSummary RunWorkload(const RunOptions& options) {
  return Executor(options).Run();
}

}  // namespace saturn
