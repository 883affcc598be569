#include "engine/model.h"

#include <algorithm>

#include "common/error.h"
#include "common/mix.h"
#include "engine/device.h"
#include "engine/formats/weight_index.h"
#include "engine/pack.h"
#include "engine/phases.h"
#include "engine/weights.h"

namespace saturn::engine {

std::map<std::string, ParamShard> Block::SplitTensorParallel(const TensorGroup&) {
  return {};
}

int64_t Block::ParamCount() const {
  int64_t count = 0;
  for (const ParamSlot& slot : params_)
    count += slot.tensor->numel();
  return count;
}

int64_t Block::TrainableCount() const {
  int64_t count = 0;
  for (const ParamSlot& slot : params_)
    if (slot.trainable) count += slot.tensor->numel();
  return count;
}

ParamFactory::ParamFactory(uint64_t seed, int block_index, Mode mode)
    : mode_(mode),
      seed_(seed),
      block_index_(block_index),
      generator_(at::make_generator<at::CPUGeneratorImpl>(
          SplitMix64(SplitMix64(seed) ^ static_cast<uint64_t>(block_index)))) {}

at::Tensor ParamFactory::Empty(at::IntArrayRef shape) const {
  if (mode_ == Mode::kShapes)
    return at::empty(shape, at::TensorOptions().dtype(at::kFloat).device(at::kMeta));
  HostMemoryScope host;
  return at::empty(shape, at::kFloat);
}

at::Tensor ParamFactory::Normal(at::IntArrayRef shape, double std) {
  at::Tensor t = Empty(shape);
  if (Fills()) t.normal_(0.0, std, generator_);
  return t;
}

at::Tensor ParamFactory::Uniform(at::IntArrayRef shape, double bound) {
  at::Tensor t = Empty(shape);
  if (Fills()) t.uniform_(-bound, bound, generator_);
  return t;
}

at::Tensor ParamFactory::Zeros(at::IntArrayRef shape) {
  at::Tensor t = Empty(shape);
  if (Fills()) t.zero_();
  return t;
}

at::Tensor ParamFactory::Ones(at::IntArrayRef shape) {
  at::Tensor t = Empty(shape);
  if (Fills()) t.fill_(1.0);
  return t;
}

namespace {

// The generator of a block's adapters for the task seeded `seed`.
at::Generator AdapterGenerator(uint64_t seed, int block_index) {
  return at::make_generator<at::CPUGeneratorImpl>(
      SplitMix64(SplitMix64(seed ^ 0x10a4da97e45ULL) ^ static_cast<uint64_t>(block_index)));
}

}  // namespace

at::Tensor ParamFactory::AdapterUniform(at::IntArrayRef shape, double bound) {
  at::Tensor t = Empty(shape);
  if (!Materializes()) return t;
  if (!adapter_generator_.defined()) adapter_generator_ = AdapterGenerator(seed_, block_index_);
  t.uniform_(-bound, bound, adapter_generator_);
  return t;
}

at::Tensor ParamFactory::AdapterUniform(at::IntArrayRef shape, double bound, uint64_t seed,
                                        int member) {
  at::Tensor t = Empty(shape);
  if (!Materializes()) return t;
  auto it = member_generators_.find(member);
  if (it == member_generators_.end())
    it = member_generators_.emplace(member, AdapterGenerator(seed, block_index_)).first;
  t.uniform_(-bound, bound, it->second);
  return t;
}

at::Tensor ParamFactory::AdapterZeros(at::IntArrayRef shape) {
  at::Tensor t = Empty(shape);
  if (Materializes()) t.zero_();
  return t;
}

void Model::CheckData(const at::Tensor&, const at::Tensor&, const std::string&) const {}

namespace {

std::string ShapeText(const at::Tensor& t) {
  std::string text = "[";
  for (int64_t d = 0; d < t.dim(); ++d)
    text += (d ? ", " : "") + std::to_string(t.size(d));
  return text + "] " + std::string(c10::toString(t.scalar_type()));
}

}  // namespace

at::Tensor Model::LossSum(const at::Tensor& outputs, const at::Tensor& targets) const {
  PhaseScope phase(Phase::kForward);
  PackRows* pack = ActivePackRows();
  at::Tensor sum;
  if (Loss() == LossKind::kMse) {
    if (outputs.sizes() != targets.sizes() || !at::isFloatingType(targets.scalar_type())) {
      throw InputError("", 0, "model.loss",
                       "mse needs float targets shaped like the model's outputs " +
                           ShapeText(outputs) + ", got targets " + ShapeText(targets));
    }
    sum = at::mse_loss(outputs, targets, pack ? at::Reduction::None : at::Reduction::Sum);
  } else {
    bool fits = outputs.dim() == targets.dim() + 1 && targets.scalar_type() == at::kLong &&
                outputs.sizes().slice(0, targets.dim()) == targets.sizes();
    if (!fits) {
      throw InputError("", 0, "model.loss",
                       "cross_entropy needs logits [..., classes] and int64 targets [...], got "
                       "logits " +
                           ShapeText(outputs) + " and targets " + ShapeText(targets));
    }
    sum = at::cross_entropy_loss(outputs.reshape({-1, outputs.size(-1)}), targets.reshape({-1}), {},
                                 pack ? at::Reduction::None : at::Reduction::Sum);
  }
  if (targets.dim() == 0 || targets.size(0) == 0) return pack ? sum.sum() : sum;
  int64_t terms = targets.numel() / targets.size(0);
  int64_t items = LossItemsPerSample();
  // A pack's members each get their own mean (engine/pack.h).
  if (pack) sum = pack->WeightedLossSum(sum.reshape({targets.size(0), -1}).sum(1));
  if (terms == items) return sum;
  return sum * (static_cast<double>(items) / static_cast<double>(terms));
}

int64_t Model::LossItemsPerSample() const {
  InputShape input = Input();
  return input.kind == InputShape::Kind::kTokens ? input.seq_len : 1;
}

std::string Model::ExportName(int block, const std::string& name) const {
  return std::to_string(block) + "." + name;
}

bool Model::SaveTrained(const std::vector<std::pair<std::string, at::Tensor>>&,
                        const std::string&) const {
  return false;
}

std::vector<int64_t> Model::BlockParamCounts() const {
  std::vector<int64_t> counts;
  for (int i = 0; i < NumBlocks(); ++i)
    counts.push_back(BuildBlock(i, false)->ParamCount());
  return counts;
}

std::vector<int64_t> Model::BlockTrainableCounts() const {
  std::vector<int64_t> counts;
  for (int i = 0; i < NumBlocks(); ++i)
    counts.push_back(BuildBlock(i, false)->TrainableCount());
  return counts;
}

Model::~Model() = default;

std::unique_ptr<Block> Model::BuildBlock(int index, bool materialize) const {
  using Mode = ParamFactory::Mode;
  ParamFactory factory(Seed(), index,
                       !materialize ? Mode::kShapes
                       : init_      ? Mode::kEmpty
                                    : Mode::kRandom);
  std::unique_ptr<Block> block = MakeBlock(index, factory);
  if (materialize && init_) init_->Load(index, *block);
  return block;
}

std::unique_ptr<Block> Model::BuildBlockToFill(int index) const {
  ParamFactory factory(Seed(), index, ParamFactory::Mode::kEmpty);
  return MakeBlock(index, factory);
}

std::optional<std::string> Model::InitKeyOf(int block, const std::string& name,
                                            const WeightIndex&) const {
  for (const TiedParam& tied : TiedParams()) {
    for (const auto& copy : tied.copies) {
      if (copy.first == block && copy.second == name) {
        return ExportName(tied.copies[0].first, tied.copies[0].second);
      }
    }
  }
  return ExportName(block, name);
}

const ModelRegistry& BuiltinModels() {
  static const ModelRegistry* registry = [] {
    auto* r = new ModelRegistry;
    RegisterBuiltinModels(*r);
    return r;
  }();
  return *registry;
}

std::unique_ptr<Model> BuildModel(const TaskSpec& task) {
  const ModelFamily* family = BuiltinModels().Find(task.model_type);
  if (family == nullptr) {
    throw InputError(task.source, 0, "model.type", BuiltinModels().UnknownMessage(task.model_type));
  }
  std::unique_ptr<Model> model = family->Build(task);
  JsonFields fields(task.model, task.source, "model");
  if (fields.Has("init")) {
    model->SetInit(std::make_shared<PretrainedWeights>(fields.String("init"), *model));
  }
  return model;
}

}  // namespace saturn::engine
