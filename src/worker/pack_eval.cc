#include "worker/pack_eval.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "common/clock.h"
#include "engine/checkpoint.h"
#include "engine/data.h"
#include "engine/eval.h"
#include "engine/model.h"
#include "engine/optimizer.h"
#include "engine/pack.h"
#include "protocol/worker_protocol.h"

namespace saturn::worker {

namespace fs = std::filesystem;

// An evaluating member: what evaluating it alone needs.
struct PackEvaluations::Member {
  int index = 0;
  std::unique_ptr<engine::Model> model;
  std::unique_ptr<engine::Dataset> held_out;
  std::unique_ptr<engine::Optimizer> optimizer;  // TrainContext wants one; unused
  std::optional<BestModelKeeper> best;
};

PackEvaluations::PackEvaluations(const engine::TaskSpec& pack, engine::TrainContext& ctx,
                                 std::string best_root, std::optional<BestMetric> select,
                                 std::string scratch)
    : pack_(pack), ctx_(ctx), scratch_(std::move(scratch)) {
  for (size_t k = 0; k < pack.pack.size(); ++k) {
    const engine::TaskSpec& task = pack.pack[k];
    if (task.eval.every <= 0) continue;
    every_ = std::gcd(every_, task.eval.every);
    if (ctx.comm.Rank() != 0) continue;  // rank 0 evaluates
    auto m = std::make_unique<Member>();
    m->index = static_cast<int>(k);
    m->model = engine::BuildModel(task);
    m->held_out = engine::MakeEvalDataset(task, *m->model);
    m->optimizer = engine::MakeOptimizer(task.optimizer);
    if (!best_root.empty() && select)
      m->best.emplace(best_root + "/" + task.name + "/best", *select);
    members_.push_back(std::move(m));
  }
}

PackEvaluations::~PackEvaluations() = default;

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

double PackEvaluations::At(int64_t steps_done, const std::string& pack_checkpoint,
                           const std::vector<double>& losses) {
  const double start = MonotonicSeconds();
  PackRowsAside aside;
  for (const std::unique_ptr<Member>& m : members_) {
    const engine::TaskSpec& task = pack_.pack[static_cast<size_t>(m->index)];
    // As alone: every eval.every steps, and after its last step.
    if (steps_done % task.eval.every != 0 && steps_done != task.steps) continue;
    const double began = MonotonicSeconds();
    const std::string dir = scratch_ + "/" + task.name;
    const double loss = static_cast<size_t>(m->index) < losses.size() ? losses[m->index] : 0.0;
    std::string own = engine::WriteMemberCheckpoint(pack_checkpoint, pack_, m->index, *m->model,
                                                    loss, dir, ctx_.device);
    engine::TrainContext member{task,        *m->model, *m->held_out, *m->optimizer,
                                ctx_.device, ctx_.comm, ctx_.gpus};
    engine::EvalResult r = engine::Evaluate(member, *m->held_out, task.eval.batches,
                                            engine::CheckpointParams(own, *m->model));
    r.seconds = MonotonicSeconds() - began;
    EvalReport line{static_cast<long>(steps_done),
                    r.loss,
                    r.accuracy,
                    r.seconds,
                    r.loss_se,
                    r.accuracy_se,
                    m->index};
    std::printf("%s\n", FormatEvalLine(line).c_str());
    std::fflush(stdout);
    if (m->best) KeepIfBest(*m->best, own, *m->model, task, steps_done, r);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  std::error_code ec;
  fs::remove(scratch_, ec);  // once empty
  return MonotonicSeconds() - start;
}

}  // namespace saturn::worker
