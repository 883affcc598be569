// What a pack's execute adds to a task's (engine/pack.h), so that each
// member stays a task:
//   - each member's own mean loss at every step (from the pack's rows);
//   - each member's own checkpoint beside each of the pack's, periodic and
//     last (engine::WriteMemberCheckpoint, into <checkpoint-dir>/<member>/,
//     pruned as the pack's are): after a crash, a split or the member's end
//     it goes on from there, alone or in another pack, as from its own; at
//     the last one also its model.pt and adapters.pt
//     (<folder of --save-model>/<member>/);
//   - each member's end at its own step count, or where the executor asks
//     it to leave (its early_stop: rule or saturn cancel stops it: the file
//     <checkpoint-dir>/<member>/leave), the pack going on with the
//     others in this worker (engine::PackRows::Leave: the rest step faster,
//     nothing starts again): at its last step rank 0 writes its own
//     checkpoint, model and adapters as at the pack's last one, then
//     <checkpoint-dir>/<member>/left.json (its name, completed_steps and
//     losses, as its entry of the result) and the line
//     "saturn: left_member=K left_step=S" (protocol/worker_protocol.h), on
//     which the executor settles it as finished while the others train on;
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
//   pack.Attach(run, min_rows);   // ExecuteOptions' hooks; may end run.to_step sooner
//   ... run.on_step calls pack.RecordStep(step + 1) on every rank ...
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
  // ones; their evaluations and ends (eval_every, eval_when,
  // on_eval_checkpoint). A technique that splits each step's rows over its
  // ranks needs `min_rows` of them: where members that end would leave
  // fewer to those still in, the run ends at that step (run.to_step), and
  // the executor starts the rest again from their checkpoints.
  void Attach(engine::ExecuteOptions& run, int64_t min_rows);
  // After step `steps_done` - 1, on every rank: each member's mean loss
  // (summed over the ranks: collective); members whose last step it was
  // (before the run's last), or that the executor asked to leave
  // (<checkpoint-dir>/<member>/leave exists), leave the pack's rows. Where
  // those still in would then have fewer than `min_rows`, the run ends
  // after this step instead (ExecuteOptions::end_after), every member in.
  void RecordStep(int64_t steps_done);
  // Member k's entry of the result: its name and losses, and where it
  // ended before the run's last step, its completed_steps.
  nlohmann::json ResultEntry(size_t k) const;
  // Seconds the members' evaluations add to a step, by their last ones
  // (each one's seconds over its eval.every), for the step lines.
  double EvalShare() const;
  // Rank 0, after the last step: each member's own checkpoint, model and
  // adapters from the pack's last checkpoint.
  void Finish(const std::string& checkpoint);

 private:
  struct Member;
  // Whether member k evaluates after `steps_done` steps.
  bool Due(size_t k, int64_t steps_done) const;
  // Rank 0: member k's own checkpoint at the pack's `checkpoint`, written
  // into `dir`.
  std::string MemberCheckpoint(size_t k, const std::string& checkpoint, const std::string& dir);
  void WriteMembersOwn(const std::string& checkpoint, bool export_models);
  void ExportMember(size_t k, const std::string& checkpoint);
  void Evaluate(int64_t steps_done, const std::string& checkpoint);
  // Where the executor asks member k to leave (it stops: its early_stop:
  // rule, saturn cancel): a file, which rank 0 looks for after each step.
  std::string LeaveRequest(size_t k) const;
  // Whether member k ends at `steps_done`, before the run's last step.
  bool EndsAt(size_t k, int64_t steps_done) const;
  // Rank 0: member k, whose last step this was, handed to the executor.
  void HandOver(size_t k, int64_t steps_done, const std::string& checkpoint);

  const engine::TaskSpec& pack_;
  engine::TrainContext& ctx_;
  Paths paths_;
  int64_t every_ = 0;     // gcd of the members' eval.every; 0: none evaluates
  int64_t to_step_ = 0;   // the run's last step
  int64_t min_rows_ = 1;  // rows the technique splits a step into
  bool end_now_ = false;  // members asked to leave, the rest cannot go on alone
  std::vector<std::vector<double>> losses_;
  std::vector<int64_t> leaves_at_;  // per member: the step it leaves after; -1: the run's end
  std::vector<int64_t> left_at_;    // per member: where it left; 0: in
  std::vector<bool> handed_over_;   // its own files written when it left (rank 0's)
  std::vector<std::unique_ptr<Member>> members_;  // rank 0: one per member
};

}  // namespace saturn::worker
