#include "worker/options.h"

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <iostream>

#include "common/error.h"

namespace saturn::worker {
namespace {

void AddPlugins(CLI::App& app, WorkerOptions& o) {
  app.add_option("--plugin", o.plugins, "technique plug-in (shared library) to load; repeatable")
      ->take_all()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void AddCommon(CLI::App& app, WorkerOptions& o) {
  app.add_option("--task", o.task_path, "task JSON (Contract 5 fields)")->required();
  app.add_option("--technique", o.technique,
                 "single, ddp, fsdp, pipeline, spill, tp, tp-ddp, pipeline-tp or a plug-in's")
      ->required();
  app.add_option("--gpus", o.gpus, "devices")->required();
  app.add_option("--out", o.out, "result JSON, written atomically by rank 0")->required();
  app.add_option("--device-kind", o.device_kind, "cpu or cuda");
  app.add_option("--device-ids", o.device_ids, "device ids, one per rank")->delimiter(',');
  app.add_option("--memory-gib", o.memory_gib, "device capacity in GiB");
  app.add_option("--threads", o.threads, "intra-op threads per device");
  app.add_option("--timeout-s", o.timeout_s, "collective and rendezvous timeout");
  app.add_option("--rank", o.rank, "this rank (set by the launcher)");
  app.add_option("--world-size", o.world_size, "ranks in the group");
  app.add_option("--rendezvous", o.rendezvous, "fresh directory shared by the ranks");
  app.add_flag("--rank-from-env", o.rank_from_env, "rank and size from SLURM_PROCID/NTASKS");
  AddPlugins(app, o);
}

int EnvInt(const char* name) {
  const char* value = std::getenv(name);
  char* end = nullptr;
  long n = value ? std::strtol(value, &end, 10) : -1;
  if (value == nullptr || *end != '\0' || n < 0) {
    throw InputError("", 0, "--rank-from-env", std::string(name) + " is not set to a rank");
  }
  return static_cast<int>(n);
}

void Check(const WorkerOptions& o) {
  auto fail = [](const char* flag, const std::string& message) {
    throw InputError("", 0, flag, message);
  };
  if (o.mode == Mode::kTechniques) return;
  if (o.gpus < 1) fail("--gpus", "expected an integer >= 1");
  if (o.threads < 1) fail("--threads", "expected an integer >= 1");
  if (!(o.timeout_s > 0) || !std::isfinite(o.timeout_s))
    fail("--timeout-s", "expected seconds > 0");
  if (!(o.memory_gib >= 0) || !std::isfinite(o.memory_gib))
    fail("--memory-gib", "expected GiB >= 0");
  if (!o.device_ids.empty() && static_cast<int>(o.device_ids.size()) != o.gpus) {
    fail("--device-ids", "expected " + std::to_string(o.gpus) + " ids, one per device");
  }
  if (o.IsRank()) {
    if (o.world_size < 1 || o.rank >= o.world_size) {
      fail("--rank", "expected 0 <= rank < --world-size");
    }
    if (o.world_size > 1 && o.rendezvous.empty()) fail("--rendezvous", "required with --rank");
  }
  if (o.mode == Mode::kSearch) {
    if (o.warmup < 0) fail("--warmup", "expected an integer >= 0");
    if (o.measure < 1) fail("--measure", "expected an integer >= 1");
  } else {
    if (o.from_step < 0) fail("--from-step", "expected an integer >= 0");
    if (o.to_step < o.from_step) fail("--to-step", "expected >= --from-step");
    if (o.checkpoint_every < 0) fail("--checkpoint-every", "expected an integer >= 0");
    if (o.keep_checkpoints < 0) fail("--keep-checkpoints", "expected an integer >= 0");
  }
}

}  // namespace

int WorkerOptions::DeviceId(int rank_index) const {
  return device_ids.empty() ? rank_index : device_ids.at(rank_index);
}

int64_t WorkerOptions::CapacityBytes() const {
  return static_cast<int64_t>(std::llround(memory_gib * 1024.0 * 1024.0 * 1024.0));
}

WorkerOptions ParseWorkerOptions(int argc, const char* const* argv) {
  WorkerOptions o;
  for (int i = 1; i < argc; ++i)
    o.args.emplace_back(argv[i]);
  CLI::App app{"saturn-worker: runs search or execute of one task (internal; docs/worker.md)"};
  app.require_subcommand(1);
  CLI::App* search = app.add_subcommand("search", "measure a technique on the task");
  AddCommon(*search, o);
  search->add_option("--warmup", o.warmup, "steps before measuring");
  search->add_option("--measure", o.measure, "steps measured");
  CLI::App* execute = app.add_subcommand("execute", "train steps [from, to)");
  AddCommon(*execute, o);
  execute->add_option("--from-step", o.from_step)->required();
  execute->add_option("--to-step", o.to_step)->required();
  execute->add_option("--checkpoint-dir", o.checkpoint_dir)->required();
  execute->add_option("--knobs", o.knobs, "knobs JSON (from search), or a file holding it");
  execute->add_option("--checkpoint-every", o.checkpoint_every);
  execute->add_option("--keep-checkpoints", o.keep_checkpoints,
                      "keep the newest N checkpoints (0: all)");
  execute->add_option("--save-model", o.save_model, "also write the final weights here");
  CLI::App* techniques =
      app.add_subcommand("techniques", "list the techniques (built-in and plug-ins') as JSON");
  AddPlugins(*techniques, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    std::exit(app.exit(e));
  } catch (const CLI::ParseError& e) {
    throw InputError("", 0, "", std::string("bad arguments: ") + e.what());
  }
  o.mode = search->parsed()       ? Mode::kSearch
           : techniques->parsed() ? Mode::kTechniques
                                  : Mode::kExecute;
  if (o.rank_from_env) {
    o.rank = EnvInt("SLURM_PROCID");
    o.world_size = EnvInt("SLURM_NTASKS");
  }
  Check(o);
  return o;
}

}  // namespace saturn::worker
