// Fused arrays: many small models of one architecture trained in one
// process as one array (Horizontally Fused Training Arrays, MLSys 2021;
// learning over groups, docs/groups.md).
//
// The members are mlp tasks of one shape (layers, width, inputs, outputs,
// loss), one batch size and one optimizer type; each brings its own data
// (a table group), seed, steps and hyper-parameters (learning rate, betas,
// weight decay, momentum, schedule). Each layer's weights are stacked
// [members, out, in], and one step of every member still training is one
// batched product per layer (baddbmm), each member's rows only through its
// own weights. What makes a member train exactly as it would alone (the
// single technique):
//   - its weights start as its task alone starts them (its model's blocks,
//     drawn from its seed);
//   - its samples of step s are its samples of step s alone (the rows its
//     table Dataset would give: TableRows, engine/data.h; arrays train
//     table data, and gather every member's rows of a step at once);
//   - its loss is its own mean, and the array's loss the sum of the means,
//     so each member's gradient is the gradient of its own mean;
//   - its optimizer is its own (engine/optimizer.h, the same update code),
//     stepping its slice of each stacked tensor and its state;
//   - it ends at its own steps: the array drops it and goes on with the
//     rest (the stacked tensors shrink to the members still training).
// Gradient clipping and bf16 are not supported in an array (an InputError
// names the member). A member does not evaluate during training (its
// eval: is not run; the profiler keeps tasks that evaluate out of arrays);
// its held-out loss is taken at its end over all its held-out rows.
//
//   FusedArray array(members, "array.json");           // InputError if they cannot share
//   ArrayResult r = array.Train(device);                // every member to its steps
//   r.members[k].losses, .eval_loss, .params           // params keyed by ExportName
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/task.h"

namespace saturn::engine {

class Model;
class Optimizer;

struct ArrayMemberResult {
  std::string name;
  std::vector<double> losses;   // its mean training loss, step by step
  double eval_loss = 0.0;       // mean over all its held-out samples at its end
  double eval_accuracy = -1.0;  // a classifier's, likewise; < 0: a regression
  int64_t eval_samples = 0;
  // Its trained weights, keyed as in model.pt (Model::ExportName), on the host.
  std::vector<std::pair<std::string, at::Tensor>> params;
};

struct ArrayResult {
  std::vector<ArrayMemberResult> members;  // in the members' order
  int64_t steps = 0;                       // array steps (the longest member's)
};

class FusedArray {
 public:
  // InputError naming `source` and the member's field when the members
  // cannot share an array.
  FusedArray(const std::vector<TaskSpec>& members, const std::string& source);
  ~FusedArray();
  FusedArray(const FusedArray&) = delete;
  FusedArray& operator=(const FusedArray&) = delete;

  int Members() const { return static_cast<int>(members_.size()); }
  // Trains every member to its steps on `device` (a cpu or cuda device),
  // once per array;
  // `on_end` (optional) is called as each member ends, with its result;
  // `on_step` after each array step with the steps done and the mean of
  // the members' losses; it returns false to stop there (the members not
  // ended then have no held-out loss or weights in the result).
  ArrayResult Train(const at::Device& device,
                    const std::function<void(const ArrayMemberResult&)>& on_end = {},
                    const std::function<bool(int64_t, double)>& on_step = {});

 private:
  struct Member;
  void Stack(const at::Device& device);
  void Compact(const std::vector<int>& keep);
  void Finish(size_t position, const std::function<void(const ArrayMemberResult&)>& on_end);
  void HeldOut(size_t position, ArrayMemberResult& result) const;
  at::Tensor Forward(const at::Tensor& x) const;
  at::Tensor StepLosses(int64_t step);
  void Update(int64_t step);

  std::vector<std::unique_ptr<Member>> members_;
  std::vector<int> active_;                     // members still training, by slot
  std::vector<at::Tensor> weights_, biases_;    // per layer: [active, out, in], [active, out]
  std::vector<std::vector<at::Tensor>> state_;  // per stacked tensor (weights, then biases)
  at::Tensor inputs_, targets_;                 // every member's training rows, one after another
  bool mse_ = false;
  int64_t batch_ = 0, outputs_ = 0;
};

}  // namespace saturn::engine
