#include "engine/data.h"

#include <torch/csrc/jit/serialization/pickle.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "common/mix.h"
#include "engine/device.h"
#include "engine/pack.h"
#include "tokenizer/token_file.h"

namespace saturn::engine {
namespace {

uint64_t SampleKey(uint64_t seed, int64_t index) {
  return SplitMix64(SplitMix64(seed) ^ static_cast<uint64_t>(index));
}

// Elements [begin, end) of a sequence file that one split draws windows from.
struct Range {
  int64_t begin = 0, end = 0;
};

// The held-out split of a sequence file of `size` elements: its last tenth,
// at least seq_len + 2 elements; the rest trains.
int64_t HeldOutStart(int64_t size, int64_t seq_len) {
  return size - std::max(size / 10, seq_len + 2);
}

// Evaluation windows are drawn with another seed than training's.
uint64_t EvalSeed(uint64_t seed) {
  return SplitMix64(seed ^ 0xe7a1e7a1e7a1e7a1ULL);
}

// The first sample index of synthetic data's held-out samples: the stream
// from here on, which training never reaches.
constexpr int64_t kSyntheticHeldOut = int64_t{1} << 40;

class TextDataset final : public Dataset {
 public:
  TextDataset(std::string bytes, int64_t seq_len, uint64_t seed, Range range)
      : bytes_(std::move(bytes)), seq_len_(seq_len), seed_(seed), range_(range) {}

  Batch Samples(int64_t first, int64_t count) const override {
    at::Tensor window = at::empty({count, seq_len_ + 1}, at::kLong);
    int64_t* out = window.data_ptr<int64_t>();
    uint64_t starts = static_cast<uint64_t>(range_.end - range_.begin - seq_len_);
    for (int64_t i = 0; i < count; ++i) {
      uint64_t start = range_.begin + SampleKey(seed_, first + i) % starts;
      for (int64_t t = 0; t <= seq_len_; ++t) {
        out[i * (seq_len_ + 1) + t] = static_cast<unsigned char>(bytes_[start + t]);
      }
    }
    return {window.narrow(1, 0, seq_len_).contiguous(), window.narrow(1, 1, seq_len_).contiguous()};
  }

 private:
  std::string bytes_;
  int64_t seq_len_;
  uint64_t seed_;
  Range range_;
};

// Another dataset's samples from `offset` on.
class OffsetDataset final : public Dataset {
 public:
  OffsetDataset(std::unique_ptr<Dataset> inner, int64_t offset)
      : inner_(std::move(inner)), offset_(offset) {}
  Batch Samples(int64_t first, int64_t count) const override {
    return inner_->Samples(offset_ + first, count);
  }

 private:
  std::unique_ptr<Dataset> inner_;
  int64_t offset_;
};

// Byte sequences x[t+1] = (x[t] * a + b) mod 256 with seeded (x0, a, b): a
// next-byte pattern a small model learns from the context.
class SyntheticTokens final : public Dataset {
 public:
  // Ids below min(256, vocab).
  SyntheticTokens(int64_t seq_len, int64_t vocab, uint64_t seed)
      : seq_len_(seq_len), modulus_(std::min<int64_t>(256, vocab)), seed_(seed) {}

  Batch Samples(int64_t first, int64_t count) const override {
    at::Tensor window = at::empty({count, seq_len_ + 1}, at::kLong);
    int64_t* out = window.data_ptr<int64_t>();
    for (int64_t i = 0; i < count; ++i) {
      uint64_t key = SampleKey(seed_, first + i);
      int64_t x = static_cast<int64_t>(key & 255) % modulus_,
              a = static_cast<int64_t>((key >> 8) % 4) * 2 + 1,
              b = static_cast<int64_t>((key >> 16) % 7) + 1;
      for (int64_t t = 0; t <= seq_len_; ++t) {
        out[i * (seq_len_ + 1) + t] = x;
        x = (x * a + b) % modulus_;
      }
    }
    return {window.narrow(1, 0, seq_len_).contiguous(), window.narrow(1, 1, seq_len_).contiguous()};
  }

 private:
  int64_t seq_len_;
  int64_t modulus_;
  uint64_t seed_;
};

// Images or vectors: a seeded prototype per class plus per-sample noise.
class SyntheticClasses final : public Dataset {
 public:
  SyntheticClasses(std::vector<int64_t> sample_shape, int64_t classes, uint64_t seed)
      : sample_shape_(std::move(sample_shape)), classes_(classes), seed_(seed) {
    std::vector<int64_t> shape{classes};
    shape.insert(shape.end(), sample_shape_.begin(), sample_shape_.end());
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(SplitMix64(seed ^ 0x5eed));
    HostMemoryScope host;
    prototypes_ = at::randn(shape, generator, at::kFloat);
  }

  Batch Samples(int64_t first, int64_t count) const override {
    std::vector<int64_t> shape{count};
    shape.insert(shape.end(), sample_shape_.begin(), sample_shape_.end());
    at::Tensor inputs = at::empty(shape, at::kFloat);
    at::Tensor targets = at::empty({count}, at::kLong);
    for (int64_t i = 0; i < count; ++i) {
      uint64_t key = SampleKey(seed_, first + i);
      int64_t label = static_cast<int64_t>(key % static_cast<uint64_t>(classes_));
      at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(key);
      at::Tensor noise = at::randn(sample_shape_, generator, at::kFloat);
      inputs[i].copy_(prototypes_[label] + noise * 0.5);
      targets[i] = label;
    }
    return {inputs, targets};
  }

 private:
  std::vector<int64_t> sample_shape_;
  int64_t classes_;
  uint64_t seed_;
  at::Tensor prototypes_;
};

// Token ids from a token file (uint16, or uint32 for large vocabularies):
// windows of seq_len+1 ids at seeded positions (inputs: ids, targets: the
// next ids).
template <typename Id>
class TokensDataset final : public Dataset {
 public:
  TokensDataset(std::vector<Id> ids, int64_t seq_len, uint64_t seed, Range range)
      : ids_(std::move(ids)), seq_len_(seq_len), seed_(seed), range_(range) {}

  Batch Samples(int64_t first, int64_t count) const override {
    at::Tensor window = at::empty({count, seq_len_ + 1}, at::kLong);
    int64_t* out = window.data_ptr<int64_t>();
    uint64_t starts = static_cast<uint64_t>(range_.end - range_.begin - seq_len_);
    for (int64_t i = 0; i < count; ++i) {
      uint64_t start = range_.begin + SampleKey(seed_, first + i) % starts;
      std::copy_n(ids_.begin() + static_cast<int64_t>(start), seq_len_ + 1,
                  out + i * (seq_len_ + 1));
    }
    return {window.narrow(1, 0, seq_len_).contiguous(), window.narrow(1, 1, seq_len_).contiguous()};
  }

 private:
  std::vector<Id> ids_;
  int64_t seq_len_;
  uint64_t seed_;
  Range range_;
};

// Rows of two tensors saved from Python: sample i is row i mod N.
class TensorsDataset final : public Dataset {
 public:
  TensorsDataset(at::Tensor inputs, at::Tensor targets)
      : inputs_(std::move(inputs)), targets_(std::move(targets)) {}

  Batch Samples(int64_t first, int64_t count) const override {
    at::Tensor rows = at::arange(first, first + count, at::kLong).remainder_(inputs_.size(0));
    return {inputs_.index_select(0, rows), targets_.index_select(0, rows)};
  }

 private:
  at::Tensor inputs_, targets_;
};

// The ids of a token file's bytes (tokenizer/token_file.h: headerless uint16,
// or uint16 or uint32 after a header; docs/contracts.md, Contract 5), each
// below data.vocab.
template <typename Id>
std::vector<Id> ReadTokens(const TaskSpec& task, const std::string& path, std::string_view bytes,
                           const TokenFileLayout& layout) {
  std::vector<Id> ids(layout.count);
  for (size_t i = 0; i < ids.size(); ++i) {
    uint32_t id = layout.Id(bytes, i);
    ids[i] = static_cast<Id>(id);
    if (id >= task.data.vocab) {
      throw InputError(path, 0, "",
                       "token id " + std::to_string(id) + " at position " + std::to_string(i) +
                           " is not below data.vocab " + std::to_string(task.data.vocab));
    }
  }
  int64_t seq_len = task.data.seq_len;
  if (static_cast<int64_t>(ids.size()) < seq_len + 2) {
    throw InputError(path, 0, "",
                     "has " + std::to_string(ids.size()) + " token ids; data.seq_len " +
                         std::to_string(seq_len) + " needs at least " +
                         std::to_string(seq_len + 2));
  }
  return ids;
}

// float32 for floating tensors, int64 for integer ones.
at::Tensor Normalized(const at::Tensor& t) {
  if (at::isFloatingType(t.scalar_type())) return t.to(at::kFloat).contiguous();
  if (at::isIntegralType(t.scalar_type(), /*includeBool=*/false))
    return t.to(at::kLong).contiguous();
  return t;
}

std::string ShapeOf(const at::Tensor& t) {
  std::string text = "[";
  for (int64_t d = 0; d < t.dim(); ++d)
    text += (d ? ", " : "") + std::to_string(t.size(d));
  return text + "] " + std::string(c10::toString(t.scalar_type()));
}

std::pair<at::Tensor, at::Tensor> ReadTensors(const std::string& path) {
  std::string bytes = ReadFile(path);
  c10::IValue value;
  try {
    value = torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const std::exception& e) {
    throw InputError(path, 0, "",
                     "not a file written by torch.save([inputs, targets], path): " + ErrorText(e));
  }
  std::vector<c10::IValue> items;
  if (value.isList()) {
    for (const c10::IValue& item : value.toListRef())
      items.push_back(item);
  } else if (value.isTuple()) {
    for (const c10::IValue& item : value.toTupleRef().elements())
      items.push_back(item);
  }
  if (items.size() != 2 || !items[0].isTensor() || !items[1].isTensor()) {
    throw InputError(
        path, 0, "",
        "expected torch.save([inputs, targets], path) with two tensors, got " + value.tagKind());
  }
  at::Tensor inputs = Normalized(items[0].toTensor()), targets = Normalized(items[1].toTensor());
  if (inputs.dim() < 1 || targets.dim() < 1 || inputs.size(0) != targets.size(0) ||
      inputs.size(0) == 0) {
    throw InputError(path, 0, "",
                     "inputs " + ShapeOf(inputs) + " and targets " + ShapeOf(targets) +
                         " need the same number of rows (dimension 0), at least one");
  }
  return {inputs, targets};
}

// Checks two samples against a zoo model's input shape (torchscript models
// check themselves, Model::CheckData).
void CheckZooShapes(const Batch& b, const InputShape& input, const std::string& where) {
  std::vector<int64_t> inputs{2}, targets{2};
  at::ScalarType input_type = at::kFloat;
  if (input.kind == InputShape::Kind::kTokens) {
    inputs.push_back(input.seq_len), targets.push_back(input.seq_len);
    input_type = at::kLong;
  } else if (input.kind == InputShape::Kind::kImage) {
    inputs.insert(inputs.end(), {input.channels, input.image_size, input.image_size});
  } else {
    inputs.push_back(input.width);
  }
  if (b.inputs.sizes() != at::IntArrayRef(inputs) || b.inputs.scalar_type() != input_type ||
      b.targets.sizes() != at::IntArrayRef(targets) || b.targets.scalar_type() != at::kLong) {
    at::Tensor want_in = at::empty(inputs, input_type), want_out = at::empty(targets, at::kLong);
    throw InputError(where, 0, "",
                     "samples (inputs " + ShapeOf(b.inputs) + ", targets " + ShapeOf(b.targets) +
                         " for 2 samples) do not fit the model, which takes inputs " +
                         ShapeOf(want_in) + " and targets " + ShapeOf(want_out));
  }
  int64_t classes = input.classes;
  if (b.targets.min().item<int64_t>() < 0 || b.targets.max().item<int64_t>() >= classes) {
    throw InputError(where, 0, "",
                     "targets must be class ids in [0, " + std::to_string(classes) + ")");
  }
  if (input.kind == InputShape::Kind::kTokens &&
      (b.inputs.min().item<int64_t>() < 0 || b.inputs.max().item<int64_t>() >= classes)) {
    throw InputError(where, 0, "",
                     "inputs must be token ids in [0, " + std::to_string(classes) + ")");
  }
}

enum class Split { kTrain, kEval };

// The elements of a sequence file of `size` elements that `split` uses:
// everything, unless the task evaluates on a held-out part of the file.
Range RangeOf(const TaskSpec& task, Split split, int64_t size, int64_t seq_len,
              const std::string& where) {
  bool own_file = !task.data.eval_path.empty();
  if (task.eval.every == 0 || own_file) return {0, size};
  int64_t cut = HeldOutStart(size, seq_len);
  if (cut < seq_len + 2) {
    throw InputError(where, 0, "",
                     "is too short to hold out its last tenth for evaluation (" +
                         std::to_string(size) + " elements, seq_len " + std::to_string(seq_len) +
                         "); give more data or a separate held-out file (data.eval_path)");
  }
  return split == Split::kTrain ? Range{0, cut} : Range{cut, size};
}

// Rows [0, N - h) train and the last h = max(1, N / 10) rows are held out,
// unless the task does not evaluate or has its own held-out file.
std::pair<at::Tensor, at::Tensor> RowsOf(const TaskSpec& task, Split split, at::Tensor inputs,
                                         at::Tensor targets, const std::string& where) {
  if (task.eval.every == 0 || !task.data.eval_path.empty()) return {inputs, targets};
  int64_t rows = inputs.size(0), held = std::max<int64_t>(1, rows / 10);
  if (rows < 2) {
    throw InputError(where, 0, "",
                     "has 1 row: nothing is left to train on after holding out rows for "
                     "evaluation; give more rows or a separate held-out file (data.eval_path)");
  }
  int64_t first = split == Split::kTrain ? 0 : rows - held;
  int64_t count = split == Split::kTrain ? rows - held : held;
  return {inputs.narrow(0, first, count).contiguous(),
          targets.narrow(0, first, count).contiguous()};
}

std::unique_ptr<Dataset> MakeSplit(const TaskSpec& task, const Model& model, Split split) {
  if (task.data.type == "table") return MakeTableDataset(task, model, split == Split::kEval);
  InputShape input = model.Input();
  bool tokens = input.kind == InputShape::Kind::kTokens;
  bool any = input.kind == InputShape::Kind::kAny;
  bool eval_file = split == Split::kEval && !task.data.eval_path.empty();
  const std::string& path = eval_file ? task.data.eval_path : task.data.path;
  uint64_t seed = split == Split::kEval ? EvalSeed(task.seed) : task.seed;
  if (task.data.type == "tokens" || task.data.type == "tensors") {
    HostMemoryScope host;
    std::unique_ptr<Dataset> data;
    if (task.data.type == "tokens") {
      if (!tokens && !any) {
        throw InputError(
            task.source, 0, "data.type",
            "tokens data feeds language models (gpt, gpt2, torchscript), not " + task.model_type);
      }
      if (tokens && (task.data.seq_len != input.seq_len || task.data.vocab > input.classes)) {
        throw InputError(
            task.source, 0, "data",
            "the " + task.model_type + " model takes seq_len " + std::to_string(input.seq_len) +
                " and ids below its vocab " + std::to_string(input.classes) + "; got seq_len " +
                std::to_string(task.data.seq_len) + ", vocab " + std::to_string(task.data.vocab));
      }
      std::string bytes = ReadFile(path);
      TokenFileLayout layout = ReadTokenFileLayout(bytes, path);
      auto dataset = [&]<typename Id>(std::vector<Id> ids) -> std::unique_ptr<Dataset> {
        Range range =
            RangeOf(task, split, static_cast<int64_t>(ids.size()), task.data.seq_len, path);
        return std::make_unique<TokensDataset<Id>>(std::move(ids), task.data.seq_len, seed, range);
      };
      data = layout.id_bytes == 2 ? dataset(ReadTokens<uint16_t>(task, path, bytes, layout))
                                  : dataset(ReadTokens<uint32_t>(task, path, bytes, layout));
    } else {
      auto [all_inputs, all_targets] = ReadTensors(path);
      auto [inputs, targets] = RowsOf(task, split, all_inputs, all_targets, path);
      if (!any && input.kind != InputShape::Kind::kTokens) {
        int64_t low = targets.min().item<int64_t>(), high = targets.max().item<int64_t>();
        if (targets.scalar_type() == at::kLong && (low < 0 || high >= input.classes)) {
          throw InputError(path, 0, "",
                           "targets must be class ids in [0, " + std::to_string(input.classes) +
                               "), got " + std::to_string(low) + " .. " + std::to_string(high));
        }
      }
      data = std::make_unique<TensorsDataset>(std::move(inputs), std::move(targets));
    }
    Batch sample = data->Samples(0, 2);
    if (any) {
      model.CheckData(sample.inputs, sample.targets, path);
    } else {
      CheckZooShapes(sample, input, path);
    }
    return data;
  }
  if (any) {
    throw InputError(task.source, 0, "data.type",
                     task.data.type + " data cannot feed a " + task.model_type +
                         " model, whose input shape comes from its data: use tokens (uint16 ids) "
                         "or tensors (torch.save([inputs, targets]))");
  }
  if (task.data.type == "text") {
    if (!tokens || input.classes != 256) {
      throw InputError(
          task.source, 0, "data.type",
          tokens ? "text data is bytes, for the byte-level gpt; " + task.model_type +
                       " takes token ids: tokens data (uint16) or synthetic"
                 : "text data needs a gpt model; use synthetic data for " + task.model_type);
    }
    std::string bytes = ReadFile(path);
    if (static_cast<int64_t>(bytes.size()) < input.seq_len + 2) {
      throw InputError(task.source, 0, "data.path",
                       path + " has " + std::to_string(bytes.size()) + " bytes; seq_len " +
                           std::to_string(input.seq_len) + " needs at least " +
                           std::to_string(input.seq_len + 2));
    }
    Range range = RangeOf(task, split, static_cast<int64_t>(bytes.size()), input.seq_len, path);
    return std::make_unique<TextDataset>(std::move(bytes), input.seq_len, seed, range);
  }
  std::unique_ptr<Dataset> data;
  if (tokens) {
    data = std::make_unique<SyntheticTokens>(input.seq_len, input.classes, task.data.seed);
  } else if (input.kind == InputShape::Kind::kImage) {
    data = std::make_unique<SyntheticClasses>(
        std::vector<int64_t>{input.channels, input.image_size, input.image_size}, input.classes,
        task.data.seed);
  } else {
    data = std::make_unique<SyntheticClasses>(std::vector<int64_t>{input.width}, input.classes,
                                              task.data.seed);
  }
  if (split == Split::kEval)
    return std::make_unique<OffsetDataset>(std::move(data), kSyntheticHeldOut);
  return data;
}

}  // namespace

std::unique_ptr<Dataset> MakeDataset(const TaskSpec& task, const Model& model) {
  if (!task.pack.empty()) return MakePackDataset(task, model);
  return MakeSplit(task, model, Split::kTrain);
}

std::unique_ptr<Dataset> MakeEvalDataset(const TaskSpec& task, const Model& model) {
  return MakeSplit(task, model, Split::kEval);
}

}  // namespace saturn::engine
