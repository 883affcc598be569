#include "engine/pack.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "engine/checkpoint.h"
#include "engine/comm.h"
#include "engine/data.h"
#include "engine/device.h"
#include "engine/model.h"

namespace saturn::engine {
namespace {

PackRows* g_active = nullptr;

class PackDataset final : public Dataset {
 public:
  PackDataset(std::vector<std::unique_ptr<Dataset>> members, std::vector<int64_t> batch_sizes)
      : members_(std::move(members)), rows_(std::move(batch_sizes)) {
    SetActivePackRows(&rows_);
  }
  ~PackDataset() override {
    if (ActivePackRows() == &rows_) SetActivePackRows(nullptr);
  }

  // Samples [first, first + count) of the pack: of step first / S (S the
  // stride: every member's rows), its samples first % S on among the rows
  // of the members still in; they never span two steps (techniques fetch
  // within one step).
  Batch Samples(int64_t first, int64_t count) const override {
    int64_t stride = rows_.Stride();
    int64_t step = first / stride, offset = first % stride;
    if (offset + count > rows_.BatchSize()) {
      throw std::logic_error("a pack's samples were fetched across two steps");
    }
    rows_.Activate(offset, count);
    std::vector<at::Tensor> inputs, targets;
    for (const PackRows::Segment& s : rows_.Segments(count)) {
      int64_t b = rows_.SizeOf(s.member), start = rows_.StartOf(s.member);
      Batch part = members_[static_cast<size_t>(s.member)]->Samples(
          step * b + (offset + s.begin - start), s.count);
      inputs.push_back(part.inputs);
      targets.push_back(part.targets);
    }
    if (inputs.size() == 1) return {inputs[0], targets[0]};
    return {at::cat(inputs, 0), at::cat(targets, 0)};
  }

 private:
  std::vector<std::unique_ptr<Dataset>> members_;
  mutable PackRows rows_;
};

class PackOptimizer final : public Optimizer {
 public:
  explicit PackOptimizer(std::vector<std::unique_ptr<Optimizer>> members)
      : Optimizer(members.at(0)->Spec()), members_(std::move(members)) {}
  std::vector<std::string> Slots() const override { return members_[0]->Slots(); }
  // Parameters of no member (none train in a LoRA pack) take member 0's.
  void Update(const at::Tensor& param, const at::Tensor& grad, std::vector<at::Tensor>& state,
              int64_t step) const override {
    members_[0]->Update(param, grad, state, step);
  }
  // A member that left its pack (PackRows::Leave) steps no more: an
  // optimizer that leaves its adapters and state as they are (a gradient of
  // zeros would still move them through Adam's moments or weight decay).
  const Optimizer& ForParam(const std::string& name) const override { return Model(ModelOf(name)); }
  bool PerParam() const override { return true; }
  int Models() const override { return static_cast<int>(members_.size()); }
  int ModelOf(const std::string& name) const override {
    int k = PackMemberOf(name);
    return k < 0 || k >= Models() ? 0 : k;
  }
  const Optimizer& Model(int index) const override {
    const PackRows* rows = ActivePackRows();
    if (rows && index < rows->Members() && rows->HasLeft(index))
      return *idle_[static_cast<size_t>(index)];
    return *members_[static_cast<size_t>(index)];
  }

 private:
  // Steps nothing; the member's spec and slots, so clipping and state are as before.
  class Idle final : public Optimizer {
   public:
    explicit Idle(const Optimizer& of) : Optimizer(of.Spec()), slots_(of.Slots()) {}
    std::vector<std::string> Slots() const override { return slots_; }
    void Update(const at::Tensor&, const at::Tensor&, std::vector<at::Tensor>&,
                int64_t) const override {}
    void UpdateFloats(float*, const float*, float* const*, int64_t, int64_t) const override {}

   private:
    std::vector<std::string> slots_;
  };
  std::vector<std::unique_ptr<Optimizer>> members_;
  std::vector<std::unique_ptr<Optimizer>> idle_ = MakeIdle(members_);

  static std::vector<std::unique_ptr<Optimizer>> MakeIdle(
      const std::vector<std::unique_ptr<Optimizer>>& members) {
    std::vector<std::unique_ptr<Optimizer>> out;
    for (const auto& m : members)
      out.push_back(std::make_unique<Idle>(*m));
    return out;
  }
};

}  // namespace

PackRows::PackRows(std::vector<int64_t> batch_sizes)
    : sizes_(std::move(batch_sizes)), left_(sizes_.size(), false), sums_(sizes_.size(), 0.0) {
  Layout();
  stride_ = total_;
}

void PackRows::Layout() {
  starts_.clear();
  total_ = 0;
  for (size_t m = 0; m < sizes_.size(); ++m) {
    starts_.push_back(total_);
    if (!left_[m]) total_ += sizes_[m];
  }
  offset_ = 0;
  count_ = total_;
}

void PackRows::Leave(int member) {
  left_.at(static_cast<size_t>(member)) = true;
  Layout();
}

void PackRows::Activate(int64_t offset, int64_t count) {
  offset_ = offset;
  count_ = count;
}

std::vector<PackRows::Segment> PackRows::Segments(int64_t rows) const {
  std::vector<Segment> out;
  if (count_ <= 0 || rows % count_ != 0) {
    throw std::logic_error("a pack's layer saw " + std::to_string(rows) + " rows for " +
                           std::to_string(count_) + " samples");
  }
  int64_t per_sample = rows / count_;
  for (size_t m = 0; m < sizes_.size(); ++m) {
    if (left_[m]) continue;
    int64_t begin = std::max(offset_, starts_[m]);
    int64_t end = std::min(offset_ + count_, starts_[m] + sizes_[m]);
    if (end <= begin) continue;
    out.push_back(
        {static_cast<int>(m), (begin - offset_) * per_sample, (end - begin) * per_sample});
  }
  return out;
}

at::Tensor PackRows::WeightedLossSum(const at::Tensor& per_sample) {
  // Each member's sum over its own samples (deterministic, unlike an
  // index_add of them on a GPU), read back to the host in one copy, not
  // one device sync a member.
  std::vector<at::Tensor> parts;
  std::vector<double> weights;
  std::vector<int> members;
  for (const Segment& s : Segments(per_sample.size(0))) {
    parts.push_back(per_sample.narrow(0, s.begin, s.count).sum());
    weights.push_back(static_cast<double>(total_) / static_cast<double>(sizes_[s.member]));
    members.push_back(s.member);
  }
  at::Tensor sums = at::stack(parts);
  at::Tensor host = sums.detach().to(at::kCPU, at::kDouble);
  const double* values = host.data_ptr<double>();
  for (size_t i = 0; i < members.size(); ++i)
    sums_[static_cast<size_t>(members[i])] += values[i];
  at::Tensor weight = at::tensor(weights, at::kDouble).to(sums.options());
  return (sums * weight).sum();
}

std::vector<double> PackRows::TakeMemberLosses() {
  std::vector<double> out = sums_;
  std::fill(sums_.begin(), sums_.end(), 0.0);
  return out;
}

PackRows* ActivePackRows() {
  return g_active;
}

void SetActivePackRows(PackRows* rows) {
  g_active = rows;
}

std::unique_ptr<Dataset> MakePackDataset(const TaskSpec& pack, const Model& model) {
  std::vector<std::unique_ptr<Dataset>> data;
  std::vector<int64_t> sizes;
  for (const TaskSpec& m : pack.pack) {
    data.push_back(MakeDataset(m, model));
    sizes.push_back(m.batch_size);
  }
  return std::make_unique<PackDataset>(std::move(data), std::move(sizes));
}

std::unique_ptr<Optimizer> MakeTaskOptimizer(const TaskSpec& task) {
  if (task.pack.empty()) return MakeOptimizer(task.optimizer);
  std::vector<std::unique_ptr<Optimizer>> members;
  for (const TaskSpec& m : task.pack)
    members.push_back(MakeOptimizer(m.optimizer));
  return std::make_unique<PackOptimizer>(std::move(members));
}

int PackMemberOf(const std::string& slot_name) {
  size_t at = slot_name.rfind('@');
  if (at == std::string::npos || at + 1 >= slot_name.size()) return -1;
  char* end = nullptr;
  long k = std::strtol(slot_name.c_str() + at + 1, &end, 10);
  return *end == '\0' ? static_cast<int>(k) : -1;
}

std::string WriteMemberCheckpoint(const std::string& pack_checkpoint, const TaskSpec& pack, int m,
                                  const Model& member_model, double loss, const std::string& dir,
                                  const Device& device) {
  const TaskSpec& member = pack.pack[static_cast<size_t>(m)];
  CheckpointReader in(pack_checkpoint);
  const CheckpointMeta& from = in.Meta();
  std::unique_ptr<Communicator> solo = Communicator::Create(CommOptions{}, device);
  const std::string suffix = "@" + std::to_string(m);
  std::string path;
  {
    CheckpointWriter out(dir, from.step, *solo);
    for (int b = 0; b < from.blocks; ++b) {
      NamedTensors mine;
      for (auto& [name, tensor] : in.ReadBlock(b)) {
        if (name.size() <= suffix.size() ||
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
          continue;
        mine.emplace_back(name.substr(0, name.size() - suffix.size()), tensor);
      }
      out.WriteBlock(b, mine);
    }
    CheckpointMeta meta = from;
    meta.data_cursor = from.step * member.batch_size;
    meta.batch_size = member.batch_size;
    meta.seed = member.seed;
    meta.finetune = member.finetune;
    meta.optimizer = member.optimizer.type;
    meta.loss = loss;
    meta.base = FrozenBaseOf(member_model, member.seed);
    path = out.Commit(meta);
  }
  return path;
}

std::string WritePackCheckpoint(const std::vector<std::string>& member_checkpoints,
                                const TaskSpec& pack, const Model& pack_model, int64_t step,
                                const std::string& dir, const Device& device) {
  if (member_checkpoints.size() != pack.pack.size()) {
    throw std::logic_error("WritePackCheckpoint: one checkpoint per member");
  }
  std::vector<std::unique_ptr<CheckpointReader>> in;
  double loss = 0.0;  // the pack's: the sum of its members' mean losses
  for (size_t m = 0; m < pack.pack.size(); ++m) {
    const TaskSpec& member = pack.pack[m];
    in.push_back(std::make_unique<CheckpointReader>(member_checkpoints[m]));
    const CheckpointMeta& meta = in.back()->Meta();
    auto refuse = [&](const std::string& field, const std::string& why) {
      throw InputError(member_checkpoints[m] + "/meta.json", 0, field,
                       "member " + Quote(member.name) + " cannot join the pack from it: " + why);
    };
    if (meta.step != step)
      refuse("step", "it is of step " + std::to_string(meta.step) + ", the pack starts at " +
                         std::to_string(step));
    if (meta.model != member.model || meta.finetune != member.finetune ||
        meta.optimizer != member.optimizer.type || meta.batch_size != member.batch_size ||
        meta.blocks != pack_model.NumBlocks()) {
      refuse("model", "it was written for a different task");
    }
    CheckFrozenBase(*in.back(), pack_model, member.seed);
    loss += meta.loss;
  }
  std::unique_ptr<Communicator> solo = Communicator::Create(CommOptions{}, device);
  CheckpointWriter out(dir, step, *solo);
  for (int b = 0; b < pack_model.NumBlocks(); ++b) {
    NamedTensors block;
    for (size_t m = 0; m < in.size(); ++m) {
      const std::string suffix = "@" + std::to_string(m);
      for (auto& [name, tensor] : in[m]->ReadBlock(b))
        block.emplace_back(name + suffix, tensor);
    }
    out.WriteBlock(b, block);
  }
  CheckpointMeta meta = in[0]->Meta();
  meta.data_cursor = step * pack.batch_size;
  meta.batch_size = pack.batch_size;
  meta.seed = pack.seed;
  meta.model = pack.model;
  meta.finetune = pack.finetune;
  meta.optimizer = pack.optimizer.type;
  meta.loss = loss;
  meta.technique = "pack";
  meta.base = FrozenBaseOf(pack_model, pack.seed);
  return out.Commit(meta);
}

}  // namespace saturn::engine
