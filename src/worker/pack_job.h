// What a pack's execute adds to a task's (engine/pack.h), so that each
// member stays a task:
//   - each member's own mean loss at every step (from the pack's rows);
//   - each member's own checkpoint beside each of the pack's, periodic and
//     last (engine::WriteMemberCheckpoint, into <checkpoint-dir>/<member>/,
//     pruned as the pack's are): after a crash, a split or the member's end
//     it goes on from there, alone or in another pack, as from its own; at
//     the last one also its model.pt and adapters.pt
//     (<folder of --save-model>/<member>/);
//   - each member's evaluations as its task alone's: at each step its own
//     `eval.every` falls on, and after its last, rank 0 evaluates the
//     member's own checkpoint on the member's held-out data with its batch
//     size and `eval.batches`, prints the evaluation line with
//     `eval_member=K` (protocol/worker_protocol.h), and keeps the member's
//     best model in its own task folder (a pack's --best-dir is the folder
//     of its members' task folders: `<DIR>/<member>/best`, where the
//     member's evaluations alone keep theirs).
//
//   PackJob pack(job.task, ctx, {o.checkpoint_dir, o.save_model, o.best_dir, o.select,
//                                o.keep_checkpoints});
//   pack.Attach(run);          // ExecuteOptions' hooks
//   ... run.on_step calls pack.RecordStep() on every rank ...
//   pack.Finish(done.checkpoint);  // rank 0: the members' own last checkpoints and models
#pragma once

#include <cstdint>
#include <memory>
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

class PackJob {
 public:
  struct Paths {
    std::string checkpoint_dir;  // the pack's
    std::string save_model;      // the pack's --save-model ("": no models exported)
    std::string best_dir;        // the folder of the members' task folders ("": no best kept)
    std::string select;          // METRIC:MODE, with best_dir
    int keep_checkpoints = 0;
  };
  PackJob(const engine::TaskSpec& pack, engine::TrainContext& ctx, Paths paths);
  ~PackJob();

  // Sets `run`'s hooks: members' own checkpoints at the pack's periodic
  // ones; their evaluations (eval_every, eval_when, on_eval_checkpoint).
  void Attach(engine::ExecuteOptions& run);
  // After each step, on every rank: each member's mean loss (summed over
  // the ranks: collective).
  void RecordStep();
  const std::vector<std::vector<double>>& MemberLosses() const { return losses_; }
  // Seconds the members' evaluations add to a step, by their last ones
  // (each one's seconds over its eval.every), for the step lines.
  double EvalShare() const;
  // Rank 0, after the last step: each member's own checkpoint, model and
  // adapters from the pack's last checkpoint.
  void Finish(const std::string& checkpoint);

 private:
  struct Member;
  bool Due(const engine::TaskSpec& member, int64_t steps_done) const;
  // Rank 0: member k's own checkpoint at the pack's `checkpoint`, written
  // into `dir`.
  std::string MemberCheckpoint(size_t k, const std::string& checkpoint, const std::string& dir);
  void WriteMembersOwn(const std::string& checkpoint, bool export_models);
  void Evaluate(int64_t steps_done, const std::string& checkpoint);

  const engine::TaskSpec& pack_;
  engine::TrainContext& ctx_;
  Paths paths_;
  int64_t every_ = 0;  // gcd of the members' eval.every; 0: none evaluates
  std::vector<std::vector<double>> losses_;
  std::vector<std::unique_ptr<Member>> members_;  // rank 0: one per member
};

}  // namespace saturn::worker
