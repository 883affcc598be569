#include "worker/worker.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>

#include "common/clock.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "engine/checkpoint.h"
#include "engine/errors.h"
#include "engine/estimate.h"
#include "engine/eval.h"
#include "engine/pack.h"
#include "engine/plugin.h"
#include "engine/technique.h"
#include "protocol/best_model.h"
#include "protocol/worker_protocol.h"
#include "worker/array_job.h"
#include "worker/launcher.h"
#include "worker/pack_job.h"
#include "worker/results.h"

namespace saturn::worker {
namespace {

using engine::Knobs;
using engine::Technique;

std::atomic<bool> g_stop{false};

void OnTerminate(int) {
  g_stop.store(true);
}

Knobs ParseKnobs(const std::string& text) {
  if (text.empty()) return Knobs::object();
  std::string json = text.front() == '{' ? text : ReadFile(text);
  Knobs knobs = Knobs::parse(json, nullptr, false);
  if (knobs.is_discarded() || !knobs.is_object()) {
    throw InputError("", 0, "--knobs", "expected a JSON object, got " + Quote(json));
  }
  return knobs;
}

template <typename T>
std::vector<double> Doubles(const std::vector<T>& values) {
  return std::vector<double>(values.begin(), values.end());
}

struct Job {
  engine::TaskSpec task;
  const Technique* technique = nullptr;
  std::unique_ptr<engine::Model> model;
};

// Search mode: the technique's search on this rank; rank 0 writes the result.
int RunSearch(const WorkerRequest& o, const Job& job, engine::TrainContext& ctx,
              engine::Device& device, int rank, double flops_per_step) {
  // Everything a launch costs before the first trainer is built ends here.
  double ready_unix_s = UnixClock().Now();
  engine::SearchResult found = job.technique->Search(
      ctx, engine::SearchOptions{o.warmup, o.measure, o.out_path + ".checkpoint-probe"});
  if (rank != 0) return 0;
  WorkerSearchResult result = Infeasible(o, found.reason);
  result.ready_unix_s = ready_unix_s;
  if (found.feasible) {
    result.feasible = true;
    result.step_s = found.step_s;
    result.step_samples_s = found.step_samples_s;
    result.warmup_step_s = found.warmup_samples_s;
    result.peak_memory_bytes = Doubles(found.peak_memory_bytes);
    result.resident_bytes = Doubles(found.resident_bytes);
    result.setup_s = found.setup_s;
    result.checkpoint_s = found.checkpoint_s;
    result.knobs = found.knobs;
    result.stats = found.stats;
  }
  if (found.feasible && job.task.eval.every > 0) {
    // One evaluation as Execute runs it: writing the checkpoint it reads
    // (timed by the search) plus reading and evaluating the model.
    std::unique_ptr<engine::Dataset> held_out = engine::MakeEvalDataset(job.task, *job.model);
    double start = UnixClock().Now();
    engine::Evaluate(ctx, *held_out, job.task.eval.batches, engine::InitialParams(*job.model));
    result.eval_s = UnixClock().Now() - start + found.checkpoint_s;
  }
  result.candidates = found.candidates;
  result.capacity_bytes = static_cast<double>(device.CapacityBytes());
  result.model_flops_per_step = flops_per_step;
  if (found.feasible && !o.pack_sizes.empty())
    result.pack_sizes = MeasureArraySizes(o, job.task, device);
  result.done_unix_s = UnixClock().Now();  // what follows is shutting down
  WriteResult(o.out_path, result);
  return 0;
}

// Bytes this machine can give a trial's devices: $SATURN_HOST_MEMORY_GIB
// when set, else what the kernel says is available (MemAvailable), else
// the free physical pages.
int64_t HostBytesAvailable() {
  if (const char* gib = std::getenv("SATURN_HOST_MEMORY_GIB"); gib && *gib) {
    char* end = nullptr;
    double value = std::strtod(gib, &end);
    if (end && *end == '\0' && value >= 0) return static_cast<int64_t>(value * (1LL << 30));
    throw InputError("", 0, "SATURN_HOST_MEMORY_GIB", "expected GiB >= 0, got " + Quote(gib));
  }
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string key;
    int64_t kib = 0;
    if (fields >> key >> kib && key == "MemAvailable:") return kib * 1024;
  }
  return static_cast<int64_t>(sysconf(_SC_AVPHYS_PAGES)) * sysconf(_SC_PAGESIZE);
}

// What the trial's CPU devices would take of this machine together: the
// estimate's peaks, or, for a technique without an analytic model, one
// copy of the parameters, gradients and optimizer state.
int64_t HostBytesNeeded(const Job& job, const engine::EstimateContext& ctx,
                        const engine::SearchResult& estimate) {
  int64_t total = 0;
  for (int64_t peak : estimate.peak_memory_bytes)
    total += peak;
  if (total > 0) return total;
  std::vector<int64_t> params = job.model->BlockParamCounts();
  std::vector<int64_t> trainable = job.model->BlockTrainableCounts();
  int64_t per_trainable = 1 + static_cast<int64_t>(ctx.optimizer.Slots().size());
  for (size_t b = 0; b < params.size(); ++b)
    total += 4 * (params[b] + per_trainable * trainable[b]);
  return total;
}

// Search by analytic estimate (engine/estimate.h) instead of measuring,
// where --estimate asks: always, or (auto) where the trial's CPU devices
// would need more memory than this machine has. Writes the result and
// returns 0; nullopt: measure as usual.
std::optional<int> SearchByEstimate(const WorkerRequest& o, const Job& job) {
  if (o.estimate.empty() || (o.estimate == "auto" && o.device_kind != "cpu")) return std::nullopt;
  double ready_unix_s = UnixClock().Now();
  std::unique_ptr<engine::Optimizer> optimizer = engine::MakeOptimizer(job.task.optimizer);
  engine::DeviceRate rate;
  rate.peak_flops = o.peak_tflops * 1e12;
  rate.link_bytes_s = o.link_gb_s * 1e9;
  engine::EstimateContext ctx{job.task, *job.model, *optimizer, o.gpus, o.CapacityBytes(), rate};
  engine::SearchResult found = job.technique->Estimate(ctx);
  std::string why = "estimated as asked (--estimate)";
  if (o.estimate == "auto") {
    int64_t needed = HostBytesNeeded(job, ctx, found), available = HostBytesAvailable();
    if (needed <= available) return std::nullopt;
    why = "cannot run here: needs " + engine::FormatBytes(needed) +
          " of memory, this machine has " + engine::FormatBytes(available);
  }
  WorkerSearchResult result = Infeasible(o, found.reason);
  if (found.estimated.empty()) {
    result.reason = found.reason + " (" + why + ")";
  } else if (!(rate.peak_flops > 0) || (o.gpus > 1 && !(rate.link_bytes_s > 0))) {
    result.reason = why +
                    ", and there is no device speed to estimate with: name a known "
                    "gpu_type or declare tflops and link_gb_s in the cluster file";
  } else {
    result.estimated = found.estimated + "; " + why;
    result.feasible = found.feasible;
    result.step_s = found.step_s;
    result.peak_memory_bytes = Doubles(found.peak_memory_bytes);
    result.resident_bytes = Doubles(found.resident_bytes);
    result.checkpoint_s = found.checkpoint_s;
    result.knobs = found.knobs;
    result.stats = found.stats;
  }
  result.candidates = found.candidates;
  result.ready_unix_s = ready_unix_s;
  result.capacity_bytes = static_cast<double>(o.CapacityBytes());
  result.model_flops_per_step =
      3.0 * job.model->ForwardFlopsPerSample() * static_cast<double>(job.task.batch_size);
  result.done_unix_s = UnixClock().Now();
  WriteResult(o.out_path, result);
  return 0;
}

// Execute mode: train from --from-step to --to-step with step and eval lines;
// rank 0 saves the model and writes the result.
int RunExecute(const WorkerRequest& o, const Job& job, engine::TrainContext& ctx, int rank) {
  engine::ExecuteOptions run;
  run.from_step = o.from_step;
  run.to_step = o.to_step;
  run.checkpoint_dir = o.checkpoint_dir;
  run.checkpoint_every = o.checkpoint_every;
  run.keep_checkpoints = o.keep_checkpoints;
  run.stop = &g_stop;
  std::vector<double> losses;
  // A pack's members as tasks: their losses, own checkpoints and evaluations.
  std::optional<PackJob> pack;
  if (!job.task.pack.empty()) {
    pack.emplace(
        job.task, ctx,
        PackJob::Paths{o.checkpoint_dir, o.save_model, o.best_dir, o.select, o.keep_checkpoints});
    // A technique that splits a step's rows over its ranks needs one a rank.
    pack->Attach(run, job.technique->SplitsBatch() ? ctx.gpus : 1);
  }
  // Step times in progress lines include evaluation's share (the last
  // evaluation's seconds over eval.every), as the profile's step_s does.
  double eval_share_s = 0.0;
  run.on_step = [&](int64_t step, double loss, double step_s) {
    losses.push_back(loss);
    if (pack) {
      pack->RecordStep(step + 1);
      eval_share_s = pack->EvalShare();
    }
    if (rank != 0) return;
    std::printf(
        "%s\n",
        FormatStepLine({static_cast<long>(step), loss, step_s + eval_share_s, -1.0}).c_str());
    std::fflush(stdout);
  };
  std::unique_ptr<engine::Dataset> held_out;
  // The best evaluation's model, where the executor asks for it (not for a
  // pack: its members' evaluations are their own).
  std::optional<BestModelKeeper> best;
  if (rank == 0 && !o.best_dir.empty() && job.task.pack.empty())
    best.emplace(o.best_dir, *ParseBestMetric(o.select));
  if (job.task.eval.every > 0) {
    if (rank == 0) held_out = engine::MakeEvalDataset(job.task, *job.model);
    run.eval_every = job.task.eval.every;
    run.eval_batches = job.task.eval.batches;
    run.eval_data = held_out.get();
    run.on_eval = [&](int64_t steps_done, const engine::EvalResult& r,
                      const std::string& checkpoint) {
      eval_share_s = r.seconds / static_cast<double>(job.task.eval.every);
      std::printf("%s\n", FormatEvalLine({static_cast<long>(steps_done), r.loss, r.accuracy,
                                          r.seconds, r.loss_se, r.accuracy_se})
                              .c_str());
      std::fflush(stdout);
      if (best) KeepIfBest(*best, checkpoint, *job.model, job.task, steps_done, r);
    };
  }
  Knobs knobs = ParseKnobs(o.knobs);
  engine::ExecuteResult done = job.technique->Execute(ctx, knobs, run);
  if (rank != 0) return 0;
  PrintHeldOutAtEnd(ctx, done.checkpoint, done.completed_steps);
  if (!o.save_model.empty() && job.task.pack.empty()) {
    // model.pt, and for a torchscript task trained.pt beside it.
    std::filesystem::path folder = std::filesystem::path(o.save_model).parent_path();
    engine::ExportModel(done.checkpoint, *job.model, job.task.lora,
                        {o.save_model, (folder / "trained.pt").string(),
                         job.task.lora.Enabled() ? (folder / "adapters.pt").string() : ""});
  }
  if (pack) pack->Finish(done.checkpoint);
  WorkerExecuteResult result;
  result.completed_steps = static_cast<long>(done.completed_steps);
  result.final_loss = done.final_loss;
  result.preempted = done.preempted;
  result.checkpoint = done.checkpoint;
  result.peak_memory_bytes = Doubles(done.peak_memory_bytes);
  result.resident_bytes = Doubles(done.resident_bytes);
  result.losses = losses;
  result.knobs = knobs;
  result.stats = done.stats;
  for (size_t m = 0; pack && m < job.task.pack.size(); ++m)
    result.members.push_back(pack->ResultEntry(m));
  WriteResult(o.out_path, result);
  return 0;
}

// Pre-emption in execute mode: SIGTERM sets g_stop; the step finishes, a
// checkpoint is written, and the worker exits 0 (docs/worker.md).
void CatchTerminate(const WorkerRequest& o) {
  if (o.mode == WorkerMode::kExecute) {
    struct sigaction action {};
    action.sa_handler = OnTerminate;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, nullptr);
  }
  // The launcher starts ranks with SIGTERM blocked, so that one sent while
  // a rank was still starting is handled now rather than killing it.
  sigset_t terminate;
  sigemptyset(&terminate);
  sigaddset(&terminate, SIGTERM);
  sigprocmask(SIG_UNBLOCK, &terminate, nullptr);
}

int RunRank(const WorkerRequest& o, const Job& job, int rank, int world_size) {
  CatchTerminate(o);
  engine::DeviceSpec spec;
  spec.kind = engine::ParseDeviceKind(o.device_kind);
  spec.index = o.DeviceId(rank);
  spec.threads = o.threads;
  spec.capacity_bytes = o.CapacityBytes();
  engine::Device device(spec);
  engine::CommOptions comm_options;
  comm_options.rank = rank;
  comm_options.size = world_size;
  comm_options.rendezvous_dir = o.rendezvous;
  comm_options.timeout_s = o.timeout_s;
  std::unique_ptr<engine::Communicator> comm = engine::Communicator::Create(comm_options, device);
  std::unique_ptr<engine::Dataset> data = engine::MakeDataset(job.task, *job.model);
  std::unique_ptr<engine::Optimizer> optimizer = engine::MakeTaskOptimizer(job.task);
  engine::TrainContext ctx{job.task, *job.model, *data, *optimizer, device, *comm, o.gpus};
  double flops_per_step =
      3.0 * job.model->ForwardFlopsPerSample() * static_cast<double>(job.task.batch_size);

  if (o.mode == WorkerMode::kSearch) return RunSearch(o, job, ctx, device, rank, flops_per_step);
  return RunExecute(o, job, ctx, rank);
}

// A pack that starts at a step its folder has no checkpoint of, its members
// bringing theirs from that step (<checkpoint dir>/<member>/checkpoint-<step>,
// as the executor lays out members that trained apart: a pack split, or
// one stopped after members left): the pack's checkpoint is made from them
// first, before any rank starts. InputError when a member's is missing.
void JoinPackAtStart(const WorkerRequest& o, const Job& job) {
  if (o.mode != WorkerMode::kExecute || job.task.pack.empty() || o.from_step <= 0 ||
      o.checkpoint_dir.empty() ||
      std::filesystem::exists(engine::CheckpointPath(o.checkpoint_dir, o.from_step)))
    return;
  std::vector<std::string> members;
  for (const engine::TaskSpec& m : job.task.pack)
    members.push_back(engine::CheckpointPath(o.checkpoint_dir + "/" + m.name, o.from_step));
  engine::Device cpu(engine::DeviceSpec{});
  engine::WritePackCheckpoint(members, job.task, *job.model, o.from_step, o.checkpoint_dir, cpu);
}

int Launch(const WorkerRequest& o) {
  bool own_dir = o.rendezvous.empty();
  std::string dir = own_dir ? MakeRendezvousDir() : o.rendezvous;
  // Each rank gets this request and, from LaunchRanks, its rank, the
  // group's size and the rendezvous.
  WorkerRequest rank_request = o;
  rank_request.rendezvous.clear();
  LaunchResult launched = LaunchRanks(ToArgv(rank_request), o.gpus, dir);
  int status = launched.status;
  if (status == 3 && o.mode == WorkerMode::kSearch) {
    WriteResult(o.out_path, Infeasible(o, launched.message));
    status = 0;
  } else if (status != 0) {
    std::fprintf(stderr, "saturn-worker: rank %d failed: %s\n", launched.failed_rank,
                 launched.message.c_str());
  }
  if (own_dir) std::filesystem::remove_all(dir);
  return status;
}

int Fail(const WorkerRequest& o, int status, const std::string& kind, const std::string& message) {
  std::string who = o.IsRank() ? "rank " + std::to_string(o.rank) + ": " : "";
  std::string line = kind.empty() ? message : kind + ": " + message;
  std::fprintf(stderr, "saturn-worker: %s%s\n", who.c_str(), line.c_str());
  if (o.IsRank() && !o.rendezvous.empty()) {
    try {
      WriteFileAtomic(FailureNotePath(o.rendezvous, o.rank), line + "\n");
    } catch (const std::exception&) {
      // The message is on stderr already; the launcher falls back to the status.
    }
  }
  return status;
}

}  // namespace

// `saturn-worker techniques`: what this worker can train with, after
// loading the plug-ins (the profiler and executor check plug-ins with it
// before anything runs).
int ListTechniques(const WorkerRequest& o) {
  std::map<std::string, std::string> source;
  for (const std::string& path : o.plugins) {
    for (const std::string& name : engine::LoadTechniquePlugin(path, engine::Techniques()))
      source[name] = path;
  }
  std::vector<WorkerTechnique> list;
  const engine::TechniqueRegistry& registry = engine::Techniques();
  for (const std::string& name : registry.Names()) {
    const Technique& t = registry.Get(name);
    WorkerTechnique w;
    w.name = name;
    w.description = std::string(t.Description());
    w.one_process = t.ProcessLayout() == Technique::Layout::kOneProcess;
    w.min_gpus = t.MinGpus();
    w.max_gpus = t.MaxGpus();
    w.splits_batch = t.SplitsBatch();
    w.takes_packs = t.TakesPacks();
    w.plugin = source.count(name) ? source[name] : "";
    list.push_back(std::move(w));
  }
  nlohmann::json out = ToJson(list);
  std::printf("%s\n", out.dump(2).c_str());
  return 0;
}

int RunWorker(const WorkerRequest& o) {
  try {
    if (o.mode == WorkerMode::kTechniques) return ListTechniques(o);
    for (const std::string& path : o.plugins)
      engine::LoadTechniquePlugin(path, engine::Techniques());
    Job job;
    job.task = engine::LoadTask(o.task_path);
    if (!o.pack_sizes.empty() && (job.task.data.type != "table" || !job.task.pack.empty() ||
                                  o.technique != "single" || o.gpus != 1)) {
      throw InputError("", 0, "--pack-sizes",
                       "only a table task alone under single on one device measures arrays "
                       "of its copies");
    }
    if (job.task.array) {
      CatchTerminate(o);
      return RunArrayJob(o, job.task, &g_stop);
    }
    job.technique = &engine::Techniques().Get(o.technique);
    job.model = engine::BuildModel(job.task);
    if (o.IsRank()) return RunRank(o, job, o.rank, o.world_size);
    std::string unsupported = job.technique->Unsupported(job.task, *job.model, o.gpus);
    if (unsupported.empty() && !job.task.pack.empty() && !job.technique->TakesPacks()) {
      std::vector<std::string> takers;
      for (const std::string& name : engine::Techniques().Names())
        if (engine::Techniques().Get(name).TakesPacks()) takers.push_back(name);
      unsupported = o.technique + " does not train packs yet (" + JoinWithAnd(takers) + " do)";
    }
    if (!unsupported.empty()) {
      if (o.mode == WorkerMode::kExecute) throw InputError("", 0, "--technique", unsupported);
      WriteResult(o.out_path, Infeasible(o, unsupported));
      return 0;
    }
    JoinPackAtStart(o, job);
    if (o.mode == WorkerMode::kSearch) {
      if (std::optional<int> estimated = SearchByEstimate(o, job)) return *estimated;
    }
    if (job.technique->ProcessLayout() == Technique::Layout::kRankPerDevice && o.gpus > 1) {
      std::string missing = engine::MissingBackend(engine::ParseDeviceKind(o.device_kind));
      if (!missing.empty()) {
        if (o.mode == WorkerMode::kExecute) throw InputError("", 0, "--technique", missing);
        WriteResult(o.out_path, Infeasible(o, missing));
        return 0;
      }
      return Launch(o);
    }
    return RunRank(o, job, 0, 1);
  } catch (const InputError& e) {
    return Fail(o, 2, "error", e.what());
  } catch (const engine::PeerFailure& e) {
    return Fail(o, 4, "peer failure", e.what());
  } catch (const SystemError& e) {
    return Fail(o, 1, "error", e.what());
  } catch (const std::exception& e) {
    // Out-of-memory messages say so themselves.
    if (engine::IsOutOfMemory(e)) return Fail(o, 3, "", engine::ErrorText(e));
    return Fail(o, 1, "internal error", engine::ErrorText(e));
  }
}

}  // namespace saturn::worker
