#include "profiler/trial_runner.h"

#include <algorithm>
#include <filesystem>
#include <functional>

#include "common/clock.h"
#include "common/format.h"
#include "common/fs.h"
#include "launch/command_task.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string Hash(const std::string& text) {
  return std::to_string(std::hash<std::string>{}(text));
}

}  // namespace

TrialRunner::Running TrialRunner::Start(int index, const Trial& t, const json& task_spec,
                                        const std::optional<TrialDevices::Lease>& lease) {
  double spawned_unix_s = UnixClock().Now();
  std::string stem = Hash(t.trial_key) + "-" + t.technique + "-" + std::to_string(t.gpus);
  std::string task_path = dir_ + "/" + Hash(t.trial_key) + ".task.json";
  if (!fs::exists(task_path)) WriteFileAtomic(task_path, task_spec.dump(2) + "\n");
  std::string result_path = dir_ + "/" + stem + ".result.json";
  std::string log_path = dir_ + "/" + stem + ".log";
  std::error_code ec;
  fs::remove(result_path, ec);
  fs::remove(log_path, ec);
  // A user's program resumes from what it finds there: each trial starts at step 0.
  std::string checkpoint_dir = dir_ + "/" + stem + ".checkpoints";
  fs::remove_all(checkpoint_dir, ec);
  bool command = IsCommandTask(task_spec);
  WorkerRequest call;
  call.mode = WorkerMode::kSearch;
  call.task_path = task_path;
  call.technique = t.technique;
  call.gpus = t.gpus;
  call.out_path = result_path;
  call.device_kind = t.device_kind;
  call.memory_gib = t.memory_gib;
  call.threads = t.threads;
  call.timeout_s = std::max(10.0, o_.trial_timeout_s / 2);
  call.warmup = o_.warmup;
  call.measure = o_.measure;
  call.estimate = o_.estimate;
  const std::optional<DeviceSpeed>& speed =
      task_spec.value("precision", "fp32") == "bf16" ? t.speed_bf16 : t.speed_fp32;
  if (speed) {
    call.peak_tflops = speed->tflops;
    call.link_gb_s = speed->link_gb_s;
  }
  for (auto [members, trial] : t.riders)
    call.pack_sizes.push_back(members);
  call.plugins = plugins_;
  // A user's program is profiled by running it for a few steps.
  call.to_step = CommandSteps();
  call.checkpoint_dir = checkpoint_dir;
  JobTarget target;
  // No node: the backend picks one; a program sees SATURN_NODE=profiling.
  target.node_label = "profiling";
  if (lease) {
    target.node = lease->node;
    target.gpu_ids = lease->gpu_ids;
  } else {
    // A trial of a named GPU type runs on a node of that type.
    if (!t.gpu_type.empty()) target.node = t.node;
    for (int g = 0; g < t.gpus; ++g)
      target.gpu_ids.push_back(g);
  }
  target.ranks = 1;  // the worker starts its own ranks; a program, its own processes
  WorkerJob job = TaskJob(task_spec, worker_, call, target);
  job.stdout_path = log_path;
  job.stderr_path = log_path;
  return Running{index,    backend_.Start(job), command ? "" : result_path,
                 log_path, clock_.Now(),        spawned_unix_s,
                 lease};
}

void TrialRunner::Finish(Running& r, Trial& t, bool timed_out) {
  double ended_unix_s = UnixClock().Now();
  t.wall_s = Age(r);
  std::string tail = LastLines(r.log_path, 5);
  if (timed_out) {
    t.result = {};
    t.result.reason =
        "timed out after " + FormatDuration(TrialTimeout(t, o_)) + " (the trial was killed)";
    t.transient = true;
    return;
  }
  int status = *r.process.status();
  if (r.result_path.empty()) {  // a user's program
    t.result = CommandSearchResult(r.log_path, status, t.wall_s, CommandSteps(), Warmup());
    return;
  }
  if (ExitedCleanly(status)) {
    try {
      t.result = ReadSearchResult(r.result_path);
      // An analytic estimate's process says nothing of a real launch's cost.
      if (t.result.estimated.empty()) SetLaunchCost(t.result, r.spawned_unix_s, ended_unix_s);
      return;
    } catch (const std::exception& e) {
      t.result = {};
      t.result.reason = std::string("worker broke the protocol: ") + e.what();
      t.transient = true;
      return;
    }
  }
  t.result = {};
  int code = ExitCode(status);
  t.result.reason = std::string(code == kWorkerBadInput ? "rejected by the worker"
                                : code == kWorkerOom    ? "out of memory"
                                                        : "worker failed") +
                    " (" + DescribeExit(status) + ")" + (tail.empty() ? "" : ": " + tail);
  // A bad-input or out-of-memory exit is a property of the configuration.
  t.transient = code != kWorkerBadInput && code != kWorkerOom;
}

}  // namespace saturn
