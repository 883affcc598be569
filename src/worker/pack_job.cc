#include "worker/pack_job.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>
#include <optional>

#include "common/clock.h"
#include "common/fs.h"
#include "engine/checkpoint.h"
#include "engine/data.h"
#include "engine/eval.h"
#include "engine/model.h"
#include "engine/optimizer.h"
#include "engine/pack.h"
#include "protocol/checkpoint_files.h"
#include "protocol/worker_protocol.h"

namespace saturn::worker {

namespace fs = std::filesystem;

void KeepIfBest(BestModelKeeper& best, const std::string& checkpoint, const engine::Model& model,
                const engine::TaskSpec& task, int64_t step, const engine::EvalResult& r) {
  double value =
      best.by().metric == "eval_accuracy" ? (r.accuracy >= 0 ? r.accuracy : NAN) : r.loss;
  if (!best.Improves(value)) return;
  try {
    best.Replace(static_cast<long>(step), value, [&](const std::string& into) {
      engine::ExportModel(checkpoint, model, task.lora,
                          {into + "/model.pt", into + "/trained.pt",
                           task.lora.Enabled() ? into + "/adapters.pt" : ""});
    });
  } catch (const std::exception& e) {
    // The best so far stays; training goes on.
    std::fprintf(stderr, "saturn-worker: warning: %s's best model (step %ld) not kept: %s\n",
                 task.name.c_str(), static_cast<long>(step), e.what());
  }
}

namespace {

// The pack's rows set aside while a member's own model runs alone.
class PackRowsAside {
 public:
  PackRowsAside() : rows_(engine::ActivePackRows()) { engine::SetActivePackRows(nullptr); }
  ~PackRowsAside() { engine::SetActivePackRows(rows_); }
  PackRowsAside(const PackRowsAside&) = delete;
  PackRowsAside& operator=(const PackRowsAside&) = delete;

 private:
  engine::PackRows* rows_;
};

}  // namespace

// A member as its task alone (rank 0): its model (shapes and where its base
// lies: light), and its best model kept.
struct PackJob::Member {
  std::unique_ptr<engine::Model> model;
  std::unique_ptr<engine::Optimizer> optimizer;  // TrainContext wants one; unused
  std::optional<BestModelKeeper> best;
  double last_eval_s = 0.0;
};

PackJob::PackJob(const engine::TaskSpec& pack, engine::TrainContext& ctx, Paths paths)
    : pack_(pack),
      ctx_(ctx),
      paths_(std::move(paths)),
      losses_(pack.pack.size()),
      leaves_at_(pack.pack.size(), -1),
      left_at_(pack.pack.size(), 0),
      handed_over_(pack.pack.size(), false) {
  std::optional<BestMetric> select;
  if (!paths_.best_dir.empty()) select = ParseBestMetric(paths_.select);
  for (const engine::TaskSpec& task : pack.pack) {
    if (task.eval.every > 0) every_ = std::gcd(every_, task.eval.every);
    if (ctx.comm.Rank() != 0) continue;
    auto m = std::make_unique<Member>();
    m->model = engine::BuildModel(task);
    m->optimizer = engine::MakeOptimizer(task.optimizer);
    if (task.eval.every > 0 && select)
      m->best.emplace(paths_.best_dir + "/" + task.name + "/best", *select);
    members_.push_back(std::move(m));
  }
}

PackJob::~PackJob() = default;

void PackJob::Attach(engine::ExecuteOptions& run, int64_t min_rows) {
  run.on_checkpoint = [this](int64_t, const std::string& checkpoint) {
    WriteMembersOwn(checkpoint, /*export_models=*/false);
  };
  min_rows_ = min_rows;
  // Members leave as they end; where those still in would have fewer rows
  // than the technique splits a step into, the run ends there instead.
  std::vector<int64_t> ends;
  for (const engine::TaskSpec& m : pack_.pack)
    if (m.steps > run.from_step && m.steps < run.to_step) ends.push_back(m.steps);
  std::sort(ends.begin(), ends.end());
  for (int64_t end : ends) {
    int64_t rows = 0;
    for (const engine::TaskSpec& m : pack_.pack)
      if (m.steps > end) rows += m.batch_size;
    if (rows < min_rows) {
      run.to_step = end;
      break;
    }
  }
  to_step_ = run.to_step;
  engine::PackRows* rows_now = engine::ActivePackRows();
  for (size_t k = 0; k < pack_.pack.size(); ++k) {
    const int64_t steps = pack_.pack[k].steps;
    if (steps < to_step_) leaves_at_[k] = steps;
    // Ended before the run's first step (handed over, then the run was
    // killed before the executor settled it): out from the start, its
    // own files as the hand-over left them, settled from the result.
    if (steps <= run.from_step && rows_now) {
      rows_now->Leave(static_cast<int>(k));
      left_at_[k] = steps;
      handed_over_[k] = true;
    }
  }
  run.end_after = [this](int64_t steps_done) { return end_now_ && steps_done < to_step_; };
  // Evaluations, and where a member ends, its hand-over (each writes the
  // pack's checkpoint): only where a member is due or ends (the members'
  // eval.every may share a small divisor: 99 and 100, 1).
  run.eval_every = std::max<int64_t>(every_, 1);
  run.eval_when = [this](int64_t steps_done) {
    for (size_t k = 0; k < pack_.pack.size(); ++k) {
      if (Due(k, steps_done) || EndsAt(k, steps_done)) return true;
    }
    return false;
  };
  run.on_eval_checkpoint = [this](int64_t steps_done, const std::string& checkpoint) {
    Evaluate(steps_done, checkpoint);
  };
}

std::string PackJob::LeaveRequest(size_t k) const {
  return paths_.checkpoint_dir + "/" + pack_.pack[k].name + "/leave";
}

void PackJob::RecordStep(int64_t steps_done) {
  engine::PackRows* rows = engine::ActivePackRows();
  if (!rows) return;
  const size_t k = pack_.pack.size();
  // Each member's loss sum, then whether the executor asks it to leave
  // (rank 0 looks), summed over the ranks in one collective.
  std::vector<double> sums = rows->TakeMemberLosses();
  sums.resize(2 * k, 0.0);
  for (size_t m = 0; m < k && ctx_.comm.Rank() == 0; ++m) {
    std::error_code ec;
    if (!rows->HasLeft(static_cast<int>(m)) && fs::exists(LeaveRequest(m), ec)) sums[k + m] = 1.0;
  }
  sums = ctx_.comm.SumsOf(sums);
  double items = static_cast<double>(ctx_.model.LossItemsPerSample());
  int64_t rows_left = 0;
  std::vector<size_t> leaving;
  for (size_t m = 0; m < k; ++m) {
    if (rows->HasLeft(static_cast<int>(m))) continue;
    losses_[m].push_back(sums[m] / (items * static_cast<double>(pack_.pack[m].batch_size)));
    if (sums[k + m] > 0.5 && steps_done < to_step_) leaves_at_[m] = steps_done;
    if (EndsAt(m, steps_done)) {
      leaving.push_back(m);
    } else {
      rows_left += pack_.pack[m].batch_size;
    }
  }
  if (leaving.empty()) return;
  if (rows_left < min_rows_) {
    // Those still in cannot go on alone here: the run ends after this step
    // with everyone in it, and the executor starts the rest again.
    for (size_t m : leaving)
      leaves_at_[m] = -1;
    end_now_ = true;
    return;
  }
  for (size_t m : leaving) {
    rows->Leave(static_cast<int>(m));
    left_at_[m] = steps_done;
  }
}

bool PackJob::EndsAt(size_t k, int64_t steps_done) const {
  return leaves_at_[k] == steps_done && steps_done < to_step_;
}

nlohmann::json PackJob::ResultEntry(size_t k) const {
  nlohmann::json entry = {{"name", pack_.pack[k].name}, {"losses", losses_[k]}};
  if (left_at_[k] > 0) entry["completed_steps"] = left_at_[k];
  return entry;
}

double PackJob::EvalShare() const {
  double share = 0.0;
  for (size_t k = 0; k < members_.size(); ++k) {
    int64_t every = pack_.pack[k].eval.every;
    if (every > 0) share += members_[k]->last_eval_s / static_cast<double>(every);
  }
  return share;
}

bool PackJob::Due(size_t k, int64_t steps_done) const {
  // As alone: every eval.every steps, and after its last step; not after it
  // left the pack.
  const engine::TaskSpec& member = pack_.pack[k];
  if (member.eval.every <= 0 || (left_at_[k] > 0 && steps_done > left_at_[k])) return false;
  return steps_done % member.eval.every == 0 || steps_done == member.steps;
}

std::string PackJob::MemberCheckpoint(size_t k, const std::string& checkpoint,
                                      const std::string& dir) {
  const std::vector<double>& losses = losses_[k];
  return engine::WriteMemberCheckpoint(checkpoint, pack_, static_cast<int>(k), *members_[k]->model,
                                       losses.empty() ? 0.0 : losses.back(), dir, ctx_.device);
}

void PackJob::WriteMembersOwn(const std::string& checkpoint, bool export_models) {
  const int64_t step = engine::CheckpointReader(checkpoint).Meta().step;
  for (size_t k = 0; k < pack_.pack.size(); ++k) {
    if (handed_over_[k]) continue;
    const engine::TaskSpec& task = pack_.pack[k];
    const std::string dir = paths_.checkpoint_dir + "/" + task.name;
    std::string written = MemberCheckpoint(k, checkpoint, dir);
    PruneCheckpoints(dir, step, paths_.keep_checkpoints);
    if (export_models) ExportMember(k, written);
  }
}

// Its model.pt and adapters.pt from its own checkpoint, into
// <folder of --save-model>/<member>/.
void PackJob::ExportMember(size_t k, const std::string& checkpoint) {
  if (paths_.save_model.empty()) return;
  const engine::TaskSpec& task = pack_.pack[k];
  fs::path folder = fs::path(paths_.save_model).parent_path() / task.name;
  fs::create_directories(folder);
  engine::ExportModel(checkpoint, *members_[k]->model, task.lora,
                      {(folder / "model.pt").string(), "", (folder / "adapters.pt").string()});
}

void PackJob::HandOver(size_t k, int64_t steps_done, const std::string& checkpoint) {
  const engine::TaskSpec& task = pack_.pack[k];
  const std::string dir = paths_.checkpoint_dir + "/" + task.name;
  // Written where the pack's periodic checkpoint fell on this step.
  std::string own = engine::CheckpointPath(dir, steps_done);
  std::error_code ec;
  if (!fs::exists(own + "/meta.json", ec)) own = MemberCheckpoint(k, checkpoint, dir);
  PruneCheckpoints(dir, steps_done, paths_.keep_checkpoints);
  ExportMember(k, own);
  WriteFileAtomic(dir + "/left.json", ResultEntry(k).dump() + "\n");
  handed_over_[k] = true;
  std::printf("%s\n",
              FormatMemberLeftLine({static_cast<long>(k), static_cast<long>(steps_done)}).c_str());
  std::fflush(stdout);
}

void PackJob::Finish(const std::string& checkpoint) {
  if (!checkpoint.empty()) WriteMembersOwn(checkpoint, /*export_models=*/true);
}

void PackJob::Evaluate(int64_t steps_done, const std::string& checkpoint) {
  PackRowsAside aside;
  const std::string scratch = paths_.checkpoint_dir + ".members";
  for (size_t k = 0; k < pack_.pack.size(); ++k) {
    const engine::TaskSpec& task = pack_.pack[k];
    if (!Due(k, steps_done)) continue;
    Member& m = *members_[k];
    const double began = MonotonicSeconds();
    // Its own checkpoint at this step, where the pack's periodic one wrote it.
    std::string own = engine::CheckpointPath(paths_.checkpoint_dir + "/" + task.name, steps_done);
    std::error_code ec;
    const bool written = fs::exists(own + "/meta.json", ec);
    if (!written) own = MemberCheckpoint(k, checkpoint, scratch + "/" + task.name);
    // Its held-out data only while it evaluates (a grid's members would each
    // keep a copy of one file).
    std::unique_ptr<engine::Dataset> held_out = engine::MakeEvalDataset(task, *m.model);
    engine::TrainContext member{task,        *m.model,  *held_out, *m.optimizer,
                                ctx_.device, ctx_.comm, ctx_.gpus};
    engine::EvalResult r = engine::Evaluate(member, *held_out, task.eval.batches,
                                            engine::CheckpointParams(own, *m.model));
    r.seconds = MonotonicSeconds() - began;
    m.last_eval_s = r.seconds;
    EvalReport line{
        static_cast<long>(steps_done), r.loss, r.accuracy, r.seconds, r.loss_se, r.accuracy_se,
        static_cast<long>(k)};
    std::printf("%s\n", FormatEvalLine(line).c_str());
    std::fflush(stdout);
    if (m.best) KeepIfBest(*m.best, own, *m.model, task, steps_done, r);
    if (!written) fs::remove_all(scratch + "/" + task.name, ec);
  }
  std::error_code ec;
  fs::remove(scratch, ec);  // once empty
  for (size_t k = 0; k < pack_.pack.size(); ++k)
    if (EndsAt(k, steps_done)) HandOver(k, steps_done, checkpoint);
}

}  // namespace saturn::worker
