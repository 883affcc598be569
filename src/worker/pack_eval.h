// Evaluation of a pack's members (engine/pack.h), each as its task alone
// would be evaluated at the same step. At a pack checkpoint where a member's
// `eval.every` falls (or its last step), rank 0 writes that member's own
// checkpoint from the pack's (engine::WriteMemberCheckpoint) into a scratch
// folder, evaluates it on the member's own held-out data with the member's
// batch size and `eval.batches`, prints the evaluation line with
// `eval_member=K` (protocol/worker_protocol.h), and keeps the member's best
// model in its own task folder (--best-dir for a pack: the folder that holds
// its members' task folders, so `<DIR>/<member>/best`, where the member's
// evaluations alone keep theirs).
//
//   PackEvaluations evals(job.task, ctx, o.best_dir, select, o.checkpoint_dir + ".members");
//   run.eval_every = evals.Every();  // 0 when no member evaluates
//   run.on_eval_checkpoint = [&](int64_t step, const std::string& checkpoint) {
//     evals.At(step, checkpoint, last_losses);
//   };
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/technique.h"
#include "protocol/best_model.h"

namespace saturn::worker {

// Keeps the model of `checkpoint` (of `task`, built as `model`) as its best
// when this evaluation improves on the best so far (protocol/best_model.h);
// an export that fails keeps the previous best and says so on stderr.
// A task alone's evaluations, and a pack's members'.
void KeepIfBest(BestModelKeeper& best, const std::string& checkpoint, const engine::Model& model,
                const engine::TaskSpec& task, int64_t step, const engine::EvalResult& r);

class PackEvaluations {
 public:
  // `ctx`: the pack's (its device, on rank 0). `best_root` empty: no best
  // models kept. Builds each evaluating member's model and held-out data.
  PackEvaluations(const engine::TaskSpec& pack, engine::TrainContext& ctx, std::string best_root,
                  std::optional<BestMetric> select, std::string scratch);
  ~PackEvaluations();

  // The steps between the pack's evaluations: the greatest common divisor
  // of its members' eval.every; 0 when none evaluates.
  int64_t Every() const { return every_; }
  // Evaluates the members due after `steps_done` on the pack's checkpoint
  // (`losses[k]`: member k's last training loss, for its checkpoint's
  // meta), printing each one's line; returns the seconds it took.
  double At(int64_t steps_done, const std::string& pack_checkpoint,
            const std::vector<double>& losses);

 private:
  struct Member;
  const engine::TaskSpec& pack_;
  engine::TrainContext& ctx_;
  std::string scratch_;
  int64_t every_ = 0;
  std::vector<std::unique_ptr<Member>> members_;
};

}  // namespace saturn::worker
