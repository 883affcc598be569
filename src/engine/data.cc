#include "engine/data.h"

#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "engine/device.h"

namespace saturn::engine {
namespace {

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

uint64_t SampleKey(uint64_t seed, int64_t index) {
  return Mix(Mix(seed) ^ static_cast<uint64_t>(index));
}

class TextDataset final : public Dataset {
 public:
  TextDataset(std::string bytes, int64_t seq_len, uint64_t seed)
      : bytes_(std::move(bytes)), seq_len_(seq_len), seed_(seed) {}

  Batch Samples(int64_t first, int64_t count) const override {
    at::Tensor window = at::empty({count, seq_len_ + 1}, at::kLong);
    int64_t* out = window.data_ptr<int64_t>();
    uint64_t starts = bytes_.size() - static_cast<uint64_t>(seq_len_);
    for (int64_t i = 0; i < count; ++i) {
      uint64_t start = SampleKey(seed_, first + i) % starts;
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
};

// Byte sequences x[t+1] = (x[t] * a + b) mod 256 with seeded (x0, a, b): a
// next-byte pattern a small model learns from the context.
class SyntheticTokens final : public Dataset {
 public:
  SyntheticTokens(int64_t seq_len, uint64_t seed) : seq_len_(seq_len), seed_(seed) {}

  Batch Samples(int64_t first, int64_t count) const override {
    at::Tensor window = at::empty({count, seq_len_ + 1}, at::kLong);
    int64_t* out = window.data_ptr<int64_t>();
    for (int64_t i = 0; i < count; ++i) {
      uint64_t key = SampleKey(seed_, first + i);
      int64_t x = static_cast<int64_t>(key & 255), a = static_cast<int64_t>((key >> 8) % 4) * 2 + 1,
              b = static_cast<int64_t>((key >> 16) % 7) + 1;
      for (int64_t t = 0; t <= seq_len_; ++t) {
        out[i * (seq_len_ + 1) + t] = x;
        x = (x * a + b) % 256;
      }
    }
    return {window.narrow(1, 0, seq_len_).contiguous(), window.narrow(1, 1, seq_len_).contiguous()};
  }

 private:
  int64_t seq_len_;
  uint64_t seed_;
};

// Images or vectors: a seeded prototype per class plus per-sample noise.
class SyntheticClasses final : public Dataset {
 public:
  SyntheticClasses(std::vector<int64_t> sample_shape, int64_t classes, uint64_t seed)
      : sample_shape_(std::move(sample_shape)), classes_(classes), seed_(seed) {
    std::vector<int64_t> shape{classes};
    shape.insert(shape.end(), sample_shape_.begin(), sample_shape_.end());
    at::Generator generator = at::make_generator<at::CPUGeneratorImpl>(Mix(seed ^ 0x5eed));
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

}  // namespace

std::unique_ptr<Dataset> MakeDataset(const TaskSpec& task, const Model& model) {
  InputShape input = model.Input();
  bool tokens = input.kind == InputShape::Kind::kTokens;
  if (task.data.type == "text") {
    if (!tokens) {
      throw InputError(task.source, 0, "data.type",
                       "text data needs a gpt model; use synthetic data for " + task.model_type);
    }
    std::string bytes = ReadFile(task.data.path);
    if (static_cast<int64_t>(bytes.size()) < input.seq_len + 2) {
      throw InputError(task.source, 0, "data.path",
                       task.data.path + " has " + std::to_string(bytes.size()) +
                           " bytes; seq_len " + std::to_string(input.seq_len) + " needs at least " +
                           std::to_string(input.seq_len + 2));
    }
    return std::make_unique<TextDataset>(std::move(bytes), input.seq_len, task.seed);
  }
  if (tokens) return std::make_unique<SyntheticTokens>(input.seq_len, task.data.seed);
  if (input.kind == InputShape::Kind::kImage) {
    return std::make_unique<SyntheticClasses>(
        std::vector<int64_t>{input.channels, input.image_size, input.image_size}, input.classes,
        task.data.seed);
  }
  return std::make_unique<SyntheticClasses>(std::vector<int64_t>{input.width}, input.classes,
                                            task.data.seed);
}

}  // namespace saturn::engine
