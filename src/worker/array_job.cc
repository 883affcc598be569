#include "worker/array_job.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "common/clock.h"
#include "common/error.h"
#include "common/fs.h"
#include "engine/array.h"
#include "engine/checkpoint.h"
#include "engine/data.h"
#include "engine/device.h"
#include "engine/eval.h"
#include "protocol/worker_protocol.h"
#include "worker/results.h"

namespace saturn::worker {
namespace {

// The members with their steps cut to `steps` (a search's).
std::vector<engine::TaskSpec> Members(const engine::TaskSpec& task, int64_t steps) {
  std::vector<engine::TaskSpec> members = task.pack;
  for (engine::TaskSpec& m : members)
    if (steps > 0) m.steps = std::min(m.steps, steps);
  return members;
}

// The array of `members`, trained for the search's steps: its step time,
// setup and peak memory. Out of the device's memory (the emulated hard
// limit or a CUDA allocation) it is infeasible, not the end of the process.
WorkerSearchResult MeasureArray(const WorkerRequest& o,
                                const std::vector<engine::TaskSpec>& members,
                                const engine::Device& device) {
  WorkerSearchResult result = Infeasible(o, "");
  result.members = static_cast<int>(members.size());
  std::vector<double> times;
  try {
    double setup_start = UnixClock().Now();
    engine::FusedArray array(members, o.task_path);
    result.setup_s = UnixClock().Now() - setup_start;
    double last = UnixClock().Now();
    device.ResetPeak();
    array.Train(device.TorchDevice(), {}, [&](int64_t done, double) {
      device.Synchronize();
      double now = UnixClock().Now();
      (done <= o.warmup ? result.warmup_step_s : times).push_back(now - last);
      last = now;
      return true;
    });
  } catch (const std::exception& e) {
    if (!engine::IsOutOfMemory(e)) throw;
    result.reason = "the array does not fit the device's memory: " + engine::ErrorText(e);
    return result;
  }
  if (times.empty()) times = result.warmup_step_s;
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  result.feasible = !device.OverCapacity();
  if (!result.feasible) result.reason = "the array does not fit the device's memory";
  result.step_s = sorted[sorted.size() / 2];
  result.step_samples_s = times;
  result.peak_memory_bytes = {static_cast<double>(device.PeakBytes())};
  result.resident_bytes = {static_cast<double>(device.LiveBytes())};
  result.capacity_bytes = static_cast<double>(device.CapacityBytes());
  return result;
}

int Search(const WorkerRequest& o, const engine::TaskSpec& task, const engine::Device& device) {
  const double ready_unix_s = UnixClock().Now();
  WorkerSearchResult result = MeasureArray(o, Members(task, o.warmup + o.measure), device);
  result.ready_unix_s = ready_unix_s;
  result.done_unix_s = UnixClock().Now();
  WriteResult(o.out_path, result);
  return 0;
}

int Execute(const WorkerRequest& o, const engine::TaskSpec& task, const engine::Device& device,
            const std::atomic<bool>* stop) {
  if (o.from_step != 0) {
    throw InputError("", 0, "--from-step",
                     "an array keeps no checkpoint yet: it trains from step 0");
  }
  engine::FusedArray array(Members(task, 0), o.task_path);
  std::filesystem::path models = std::filesystem::path(o.save_model).parent_path();
  WorkerExecuteResult result;
  // A progress line at most every kLineEvery seconds and at the last step
  // (thousands of steps of ~50 us: a line each would cost the worker and the
  // executor reading it more than the steps); every step's loss is in the result.
  constexpr double kLineEvery = 0.02;
  int64_t last_steps = 0, longest = 0;
  for (const engine::TaskSpec& m : task.pack)
    longest = std::max(longest, m.steps);
  double last = UnixClock().Now();
  engine::ArrayResult trained = array.Train(
      device.TorchDevice(),
      [&](const engine::ArrayMemberResult& m) {
        if (o.save_model.empty()) return;
        std::filesystem::create_directories(models / m.name);
        // Flushed to disk all at once before the result names them: a flush
        // per member took most of an array's time at hundreds of members.
        engine::WriteTensorFile((models / m.name / "model.pt").string(), m.params,
                                /*flushed=*/false);
      },
      [&](int64_t done, double mean) {
        result.losses.push_back(mean);
        double now = UnixClock().Now();
        bool stopping = stop && stop->load();
        if (now - last >= kLineEvery || done >= longest || stopping) {
          double step_s = (now - last) / static_cast<double>(done - last_steps);
          std::printf("%s\n",
                      FormatStepLine({static_cast<long>(done), mean, step_s, -1.0}).c_str());
          std::fflush(stdout);
          last = now;
          last_steps = done;
        }
        return !stopping;
      });
  result.completed_steps = static_cast<long>(trained.steps);
  result.preempted = stop && stop->load();
  result.final_loss = result.losses.empty() ? 0.0 : result.losses.back();
  result.peak_memory_bytes = {static_cast<double>(device.PeakBytes())};
  result.resident_bytes = {static_cast<double>(device.LiveBytes())};
  for (size_t k = 0; k < trained.members.size(); ++k) {
    const engine::ArrayMemberResult& m = trained.members[k];
    bool ended = !m.params.empty();
    nlohmann::json entry = {{"name", m.name},
                            {"losses", ended ? m.losses : std::vector<double>{}},
                            {"completed_steps", ended ? static_cast<long>(m.losses.size()) : 0L}};
    if (ended) {
      entry["eval_loss"] = m.eval_loss;
      if (m.eval_accuracy >= 0) entry["eval_accuracy"] = m.eval_accuracy;
      entry["eval_samples"] = m.eval_samples;
    }
    result.members.push_back(std::move(entry));
  }
  if (!o.save_model.empty() && std::filesystem::exists(models)) SyncFileSystem(models.string());
  WriteResult(o.out_path, result);
  return 0;
}

}  // namespace

std::vector<WorkerSearchResult> MeasureArraySizes(const WorkerRequest& o,
                                                  const engine::TaskSpec& task,
                                                  const engine::Device& device) {
  std::vector<WorkerSearchResult> out;
  engine::TaskSpec member = task;
  member.steps = std::min(member.steps, static_cast<int64_t>(o.warmup + o.measure));
  for (int k : o.pack_sizes) {
    std::vector<engine::TaskSpec> members(static_cast<size_t>(k), member);
    for (int i = 0; i < k; ++i)
      members[static_cast<size_t>(i)].name = task.name + "-member" + std::to_string(i + 1);
    try {
      out.push_back(MeasureArray(o, members, device));
    } catch (const std::exception& e) {
      // The task's own search stands; this size and larger ones are not
      // measured (no entry: not a verdict on the size, which may be tried
      // again), the error in the log.
      std::fprintf(stderr, "saturn-worker: an array of %d failed: %s\n", k,
                   engine::ErrorText(e).c_str());
      break;
    }
    if (!out.back().feasible) break;  // larger ones would not fit either
  }
  return out;
}

int RunArrayJob(const WorkerRequest& o, const engine::TaskSpec& task,
                const std::atomic<bool>* stop) {
  if (o.technique != "single" || o.gpus != 1) {
    std::string why = "arrays (table tasks trained together) train on one device with single";
    if (o.mode != WorkerMode::kSearch) throw InputError("", 0, "--technique", why);
    WriteResult(o.out_path, Infeasible(o, why));
    return 0;
  }
  engine::DeviceSpec spec;
  spec.kind = engine::ParseDeviceKind(o.device_kind);
  spec.index = o.DeviceId(0);
  spec.threads = o.threads;
  spec.capacity_bytes = o.CapacityBytes();
  engine::Device device(spec);
  if (o.mode == WorkerMode::kSearch) return Search(o, task, device);
  return Execute(o, task, device, stop);
}

void PrintHeldOutAtEnd(const engine::TrainContext& ctx, const std::string& checkpoint,
                       int64_t completed_steps) {
  const engine::TaskSpec& task = ctx.task;
  if (task.data.type != "table" || task.eval.every > 0 || !task.pack.empty() ||
      checkpoint.empty() || completed_steps < task.steps) {
    return;
  }
  std::unique_ptr<engine::TableRows> rows = engine::TableRows::Load(task, ctx.model, true);
  engine::EvalResult r = engine::EvaluateBatches(ctx, {{rows->Inputs(), rows->Targets()}},
                                                 engine::CheckpointParams(checkpoint, ctx.model));
  std::printf("%s\n", FormatEvalLine({static_cast<long>(completed_steps), r.loss, r.accuracy,
                                      r.seconds, -1.0, -1.0})
                          .c_str());
  std::fflush(stdout);
}

}  // namespace saturn::worker
