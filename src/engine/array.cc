// Fused arrays (engine/array.h).
#include "engine/array.h"

#include <ATen/core/grad_mode.h>

#include <algorithm>
#include <utility>

#include "common/error.h"
#include "engine/data.h"
#include "engine/model.h"
#include "engine/optimizer.h"

namespace saturn::engine {

struct FusedArray::Member {
  TaskSpec spec;
  std::unique_ptr<Model> model;
  std::unique_ptr<TableRows> data, eval;
  int64_t offset = 0;  // its first row in inputs_
  std::unique_ptr<Optimizer> optimizer;
  ArrayMemberResult result;
  std::vector<std::string> names;  // export names: each layer's weight, then its bias
};

namespace {

[[noreturn]] void MemberFails(const std::string& source, const TaskSpec& m, size_t k,
                              const std::string& field, const std::string& message) {
  throw InputError(source, 0, "array[" + std::to_string(k) + "]." + field,
                   "task " + Quote(m.name) + ": " + message);
}

nlohmann::json ShapeOf(const TaskSpec& t) {
  nlohmann::json shape = t.model;
  shape.erase("init");
  return shape;
}

// The layer of an mlp block: one Linear, its weight and bias, and their
// slot names.
struct LinearSlots {
  at::Tensor weight, bias;
  std::string weight_name, bias_name;
};
LinearSlots LinearOf(const Block& block) {
  LinearSlots out;
  for (const ParamSlot& slot : block.Params()) {
    if (slot.name.ends_with(".weight")) out.weight = *slot.tensor, out.weight_name = slot.name;
    if (slot.name.ends_with(".bias")) out.bias = *slot.tensor, out.bias_name = slot.name;
  }
  return out;
}

void RequireGrads(std::vector<at::Tensor>& tensors) {
  for (at::Tensor& t : tensors)
    t.requires_grad_(true);
}

}  // namespace

FusedArray::FusedArray(const std::vector<TaskSpec>& members, const std::string& source) {
  if (members.empty()) throw InputError(source, 0, "array", "an array needs at least one task");
  const TaskSpec& first = members[0];
  const std::vector<std::string> slots = MakeOptimizer(first.optimizer)->Slots();
  for (size_t k = 0; k < members.size(); ++k) {
    const TaskSpec& m = members[k];
    if (m.model_type != "mlp") {
      MemberFails(source, m, k, "model.type", "arrays take mlp models, not " + m.model_type);
    }
    if (ShapeOf(m) != ShapeOf(first)) {
      MemberFails(
          source, m, k, "model",
          "members are one architecture: " + ShapeOf(first).dump() + ", got " + ShapeOf(m).dump());
    }
    if (m.batch_size != first.batch_size) {
      MemberFails(source, m, k, "batch_size",
                  "members share one batch size: " + std::to_string(first.batch_size) + ", got " +
                      std::to_string(m.batch_size));
    }
    std::unique_ptr<Optimizer> optimizer = MakeOptimizer(m.optimizer);
    if (optimizer->Slots() != slots) {
      MemberFails(source, m, k, "optimizer",
                  "members' optimizers keep the same state (adam and adamw alike, sgd with "
                  "momentum alike, sgd without), as " +
                      Quote(first.name) + "'s " + first.optimizer.type + " does");
    }
    if (m.optimizer.clip_grad_norm > 0.0) {
      MemberFails(source, m, k, "optimizer.clip_grad_norm",
                  "gradient clipping is not supported in an array yet; train it alone");
    }
    if (m.precision != "fp32") {
      MemberFails(source, m, k, "precision", "arrays train in fp32");
    }
    if (m.steps <= 0) MemberFails(source, m, k, "steps", "needs steps");
    if (m.data.type != "table") {
      MemberFails(source, m, k, "data.type", "arrays train table data, not " + m.data.type);
    }
    auto member = std::make_unique<Member>();
    member->spec = m;
    member->model = BuildModel(m);
    member->data = TableRows::Load(m, *member->model, false);
    member->eval = TableRows::Load(m, *member->model, true);
    member->optimizer = std::move(optimizer);
    member->result.name = m.name;
    members_.push_back(std::move(member));
  }
  batch_ = first.batch_size;
  mse_ = members_[0]->model->Loss() == LossKind::kMse;
  outputs_ = members_[0]->model->Input().classes;
}

FusedArray::~FusedArray() = default;

at::Tensor FusedArray::Forward(const at::Tensor& x) const {
  at::Tensor h = x;
  for (size_t l = 0; l < weights_.size(); ++l) {
    h = at::baddbmm(biases_[l].unsqueeze(1), h, weights_[l].transpose(1, 2));
    if (l + 1 < weights_.size()) h = at::relu(h);
  }
  return h;
}

// Keeps the members at `keep` (positions in active_), in that order.
void FusedArray::Compact(const std::vector<int>& keep) {
  at::NoGradGuard no_grad;
  at::Tensor index = at::tensor(std::vector<int64_t>(keep.begin(), keep.end()), at::kLong)
                         .to(weights_[0].device());
  auto shrink = [&](at::Tensor& t) { t = t.index_select(0, index).contiguous(); };
  for (size_t l = 0; l < weights_.size(); ++l) {
    shrink(weights_[l]);
    shrink(biases_[l]);
  }
  for (auto& slots : state_)
    for (at::Tensor& s : slots)
      shrink(s);
  RequireGrads(weights_);
  RequireGrads(biases_);
  std::vector<int> active;
  for (int position : keep)
    active.push_back(active_[static_cast<size_t>(position)]);
  active_ = std::move(active);
}

// The held-out loss (and a classifier's accuracy) of the member at
// `position` over all its held-out rows, into `result`.
void FusedArray::HeldOut(size_t position, ArrayMemberResult& result) const {
  const Member& m = *members_[static_cast<size_t>(active_[position])];
  const TableRows& rows = *m.eval;
  result.eval_samples = rows.Size();
  if (rows.Size() == 0) return;
  at::NoGradGuard no_grad;
  const at::Device device = weights_[0].device();
  at::Tensor h = rows.Inputs().to(device);
  const auto p = static_cast<int64_t>(position);
  for (size_t l = 0; l < weights_.size(); ++l) {
    h = at::addmm(biases_[l][p], h, weights_[l][p].t());
    if (l + 1 < weights_.size()) h = at::relu(h);
  }
  at::Tensor targets = rows.Targets().to(device);
  // The mean the member alone reports (engine/eval.h: LossSum over the rows).
  const auto n = static_cast<double>(rows.Size());
  result.eval_loss = m.model->LossSum(h, targets).item<double>() / n;
  if (!mse_) result.eval_accuracy = h.argmax(-1).eq(targets).sum().item<double>() / n;
}

// Every member's initial weights (its blocks, as alone), stacked on
// `device`, with zero optimizer state; every member's training rows in one
// host tensor.
void FusedArray::Stack(const at::Device& device) {
  const Model& first = *members_[0]->model;
  std::vector<at::Tensor> inputs, targets;
  int64_t offset = 0;
  for (auto& m : members_) {
    m->offset = offset;
    offset += m->data->Size();
    inputs.push_back(m->data->Inputs());
    targets.push_back(m->data->Targets());
  }
  inputs_ = at::cat(inputs);
  targets_ = at::cat(targets);
  for (int l = 0; l < first.NumBlocks(); ++l) {
    std::vector<at::Tensor> w, b;
    for (auto& m : members_) {
      std::unique_ptr<Block> block = m->model->BuildBlock(l, true);
      LinearSlots linear = LinearOf(*block);
      w.push_back(linear.weight);
      b.push_back(linear.bias);
      m->names.push_back(m->model->ExportName(l, linear.weight_name));
      m->names.push_back(m->model->ExportName(l, linear.bias_name));
    }
    weights_.push_back(at::stack(w).to(device).contiguous());
    biases_.push_back(at::stack(b).to(device).contiguous());
  }
  const size_t slots = members_[0]->optimizer->Slots().size();
  for (const std::vector<at::Tensor>* group : {&weights_, &biases_})
    for (const at::Tensor& t : *group) {
      std::vector<at::Tensor> state;
      for (size_t i = 0; i < slots; ++i)
        state.push_back(at::zeros_like(t));
      state_.push_back(std::move(state));
    }
  RequireGrads(weights_);
  RequireGrads(biases_);
  active_.clear();
  for (int k = 0; k < Members(); ++k)
    active_.push_back(k);
}

// Each active member's mean loss of step `step` [active], its graph kept.
at::Tensor FusedArray::StepLosses(int64_t step) {
  const auto a = static_cast<int64_t>(active_.size());
  at::Tensor index = at::empty({a * batch_}, at::kLong);
  int64_t* rows = index.data_ptr<int64_t>();
  for (int64_t i = 0; i < a; ++i) {
    const Member& m = *members_[static_cast<size_t>(active_[static_cast<size_t>(i)])];
    for (int64_t j = 0; j < batch_; ++j)
      rows[i * batch_ + j] = m.offset + m.data->RowOf(step * batch_ + j);
  }
  const at::Device device = weights_[0].device();
  at::Tensor x = inputs_.index_select(0, index).view({a, batch_, -1}).to(device);
  at::Tensor t = targets_.index_select(0, index).to(device);
  at::Tensor out = Forward(x);
  if (mse_) {
    return (out - t.view({a, batch_, -1})).square().sum({1, 2}) /
           static_cast<double>(batch_ * outputs_);
  }
  return at::cross_entropy_loss(out.reshape({-1, outputs_}), t, {}, at::Reduction::None)
             .view({a, batch_})
             .sum(1) /
         static_cast<double>(batch_);
}

// Each active member's optimizer steps its slice of every stacked tensor.
void FusedArray::Update(int64_t step) {
  at::NoGradGuard no_grad;
  size_t p = 0;
  for (std::vector<at::Tensor>* group : {&weights_, &biases_}) {
    for (at::Tensor& param : *group) {
      at::Tensor grad = param.grad().contiguous();
      std::vector<at::Tensor>& state = state_[p++];
      const int64_t n = param.numel() / param.size(0);
      const bool host = param.device().is_cpu();
      for (size_t i = 0; i < active_.size(); ++i) {
        const Optimizer& opt = *members_[static_cast<size_t>(active_[i])]->optimizer;
        const auto k = static_cast<int64_t>(i);
        if (host) {
          float* slots[2] = {nullptr, nullptr};
          for (size_t s = 0; s < state.size(); ++s)
            slots[s] = state[s].data_ptr<float>() + k * n;
          opt.UpdateFloats(param.data_ptr<float>() + k * n, grad.data_ptr<float>() + k * n, slots,
                           n, step + 1);
        } else {
          std::vector<at::Tensor> slices;
          for (const at::Tensor& s : state)
            slices.push_back(s.select(0, k));
          opt.Update(param.select(0, k), grad.select(0, k), slices, step + 1);
        }
      }
      param.mutable_grad() = at::Tensor();
    }
  }
}

// The member at `position` ends: its held-out loss and weights.
void FusedArray::Finish(size_t position,
                        const std::function<void(const ArrayMemberResult&)>& on_end) {
  Member& m = *members_[static_cast<size_t>(active_[position])];
  HeldOut(position, m.result);
  const auto p = static_cast<int64_t>(position);
  size_t name = 0;
  for (size_t l = 0; l < weights_.size(); ++l) {
    m.result.params.emplace_back(m.names[name++], weights_[l][p].detach().cpu().clone());
    m.result.params.emplace_back(m.names[name++], biases_[l][p].detach().cpu().clone());
  }
  if (on_end) on_end(m.result);
}

ArrayResult FusedArray::Train(const at::Device& device,
                              const std::function<void(const ArrayMemberResult&)>& on_end,
                              const std::function<bool(int64_t, double)>& on_step) {
  Stack(device);
  int64_t step = 0;
  while (!active_.empty()) {
    std::vector<int> keep;
    for (size_t i = 0; i < active_.size(); ++i) {
      if (members_[static_cast<size_t>(active_[i])]->spec.steps > step) {
        keep.push_back(static_cast<int>(i));
      } else {
        Finish(i, on_end);
      }
    }
    if (keep.empty()) break;
    if (keep.size() < active_.size()) Compact(keep);
    at::Tensor losses = StepLosses(step);
    losses.sum().backward();
    at::Tensor host = losses.detach().to(at::kDouble).cpu().contiguous();
    const double* loss = host.data_ptr<double>();
    double mean = 0.0;
    for (size_t i = 0; i < active_.size(); ++i) {
      members_[static_cast<size_t>(active_[i])]->result.losses.push_back(loss[i]);
      mean += loss[i] / static_cast<double>(active_.size());
    }
    Update(step);
    ++step;
    if (on_step && !on_step(step, mean)) break;
  }
  ArrayResult result;
  result.steps = step;
  for (auto& m : members_)
    result.members.push_back(std::move(m->result));
  return result;
}

}  // namespace saturn::engine
