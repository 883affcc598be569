#include "engine/weights.h"

#include <ATen/core/grad_mode.h>
#include <sys/stat.h>

#include <future>
#include <set>
#include <vector>

#include "common/error.h"
#include "engine/device.h"

namespace saturn::engine {
namespace {

std::string ShapeText(at::IntArrayRef shape) {
  std::string text = "[";
  for (size_t d = 0; d < shape.size(); ++d)
    text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

at::ScalarType TorchType(StoredDtype dtype) {
  switch (dtype) {
    case StoredDtype::kF32:
      return at::kFloat;
    case StoredDtype::kF16:
      return at::kHalf;
    case StoredDtype::kBF16:
      return at::kBFloat16;
    case StoredDtype::kF64:
      return at::kDouble;
    case StoredDtype::kI64:
      return at::kLong;
    case StoredDtype::kI32:
      return at::kInt;
    case StoredDtype::kI16:
      return at::kShort;
    case StoredDtype::kI8:
      return at::kChar;
    case StoredDtype::kU8:
      return at::kByte;
    case StoredDtype::kBool:
      return at::kBool;
  }
  return at::kFloat;
}

bool IsFloat(StoredDtype dtype) {
  return dtype == StoredDtype::kF32 || dtype == StoredDtype::kF16 || dtype == StoredDtype::kBF16 ||
         dtype == StoredDtype::kF64;
}

// "a, b, c and 4 more"
std::string Listed(const std::vector<std::string>& names) {
  std::string text;
  size_t shown = std::min<size_t>(names.size(), 6);
  for (size_t i = 0; i < shown; ++i)
    text += (i ? ", " : "") + Quote(names[i]);
  if (names.size() > shown) text += " and " + std::to_string(names.size() - shown) + " more";
  return text;
}

// The file's modification time in nanoseconds since the epoch (0 if it
// cannot be read: it was opened a moment ago).
int64_t ModifiedNs(const std::string& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return 0;
  return static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
}

}  // namespace

PretrainedWeights::PretrainedWeights(const std::string& path, const Model& model)
    : index_(IndexWeights(path)) {
  for (const auto& [name, tensor] : index_.tensors) {
    if (!files_.count(tensor.file)) files_[tensor.file] = std::make_unique<FileBytes>(tensor.file);
  }
  for (const auto& [file, bytes] : files_)
    stamps_.push_back({file, bytes->Size(), ModifiedNs(file)});
  std::set<std::string> used;
  std::vector<std::string> missing;
  for (int b = 0; b < model.NumBlocks(); ++b) {
    std::unique_ptr<Block> block = model.BuildBlock(b, /*materialize=*/false);
    for (const ParamSlot& slot : block->Params()) {
      std::optional<std::string> key = model.InitKeyOf(b, slot.name, index_);
      if (!key) continue;
      const StoredTensor* stored = index_.Find(*key);
      if (stored == nullptr) {
        if (!slot.adapter) missing.push_back(*key);
        continue;
      }
      if (stored->shape != slot.tensor->sizes().vec() || !IsFloat(stored->dtype)) {
        throw InputError(stored->file, 0, *key,
                         "is " + stored->Describe() + ", but the model (" + slot.name +
                             " of block " + std::to_string(b) + ") needs " +
                             ShapeText(slot.tensor->sizes()) +
                             " floats: is init a checkpoint of this model's sizes?");
      }
      sources_[{b, slot.name}] = *key;
      if (!used.insert(*key).second) repeated_.insert(*key);
    }
  }
  if (!missing.empty()) {
    throw InputError(index_.path, 0, "",
                     "lacks " + std::to_string(missing.size()) + " tensor(s) the model needs (" +
                         Listed(missing) + ") in its " + index_.format +
                         " weights: is init a checkpoint of this model (its type, layers)?");
  }
  std::vector<std::string> unused;
  for (const std::string& name : index_.names) {
    if (!used.count(name) && !model.IgnorableInitKey(name)) unused.push_back(name);
  }
  if (!unused.empty()) {
    throw InputError(index_.path, 0, "",
                     "holds " + std::to_string(unused.size()) +
                         " tensor(s) the model does not have (" + Listed(unused) +
                         "): is init a checkpoint of this model (its layers, its type)?");
  }
}

PretrainedWeights::~PretrainedWeights() = default;

const FileBytes& PretrainedWeights::File(const std::string& path) const {
  return *files_.at(path);
}

namespace {

// A parameter's bytes can be the file's own: float32, stored contiguously
// and aligned as a float, for a parameter that lives in host memory.
bool Mappable(const StoredTensor& stored, const at::Tensor& out) {
  return stored.dtype == StoredDtype::kF32 && stored.Contiguous() && stored.offset % 4 == 0 &&
         out.is_cpu() && out.scalar_type() == at::kFloat;
}

// A tensor viewing `stored`'s bytes in the file, mapped copy-on-write
// (formats/bytes.h MappedBytes), unmapped when the last tensor using it is
// freed: the parameter itself for a float32 one (Mappable), else the source
// a converted parameter is copied from.
at::Tensor MapTensor(const FileBytes& file, const StoredTensor& stored,
                     std::shared_ptr<MappedBytes>& mapped) {
  mapped = file.Map(stored.offset, stored.SpanBytes());
  std::shared_ptr<MappedBytes> keep = mapped;
  return at::from_blob(
      keep->data(), stored.shape, stored.strides, [keep](void*) mutable { keep.reset(); },
      at::TensorOptions().dtype(TorchType(stored.dtype)));
}

// Whether `stored`'s elements are aligned to their size in the file (so a
// view of the mapping may be computed on directly).
bool Aligned(const StoredTensor& stored) {
  return stored.offset % static_cast<uint64_t>(at::elementSize(TorchType(stored.dtype))) == 0;
}

}  // namespace

void PretrainedWeights::ReadRaw(const StoredTensor& stored, std::vector<uint64_t>& buffer) const {
  uint64_t span = stored.SpanBytes();
  buffer.resize((span + 7) / 8);
  File(stored.file).ReadInto(stored.offset, span, buffer.data());
}

void PretrainedWeights::Convert(const StoredTensor& stored, const std::vector<uint64_t>& raw,
                                at::Tensor& out) const {
  at::Tensor view = at::from_blob(const_cast<uint64_t*>(raw.data()), stored.shape, stored.strides,
                                  at::TensorOptions().dtype(TorchType(stored.dtype)));
  out.copy_(view);
}

void PretrainedWeights::Load(int index, Block& block) const {
  at::NoGradGuard no_grad;
  HostMemoryScope host;
  // What to read, in the block's order; a tied copy whose first copy is
  // alive is that tensor instead.
  struct Job {
    const StoredTensor* stored;
    at::Tensor out;
    at::Tensor source;                    // the stored bytes, mapped (if aligned)
    std::shared_ptr<MappedBytes> mapped;  // set: `source` is mapped
    bool direct = false;                  // `out` is `source`: the file's own bytes
  };
  std::vector<Job> jobs;
  for (const ParamSlot& slot : block.Params()) {
    auto it = sources_.find({index, slot.name});
    if (it == sources_.end()) continue;  // keeps its initial values (an adapter)
    const std::string& key = it->second;
    std::unique_lock<std::mutex> lock(shared_mutex_, std::defer_lock);
    if (repeated_.count(key)) {
      lock.lock();
      auto read = shared_.find(key);
      if (read != shared_.end()) {
        if (auto alive = read->second.lock()) {
          // The same stored tensor, read already for a tied copy in this
          // process: shared, neither read nor copied again (a BlockSet shares
          // tied copies anyway; a technique that moves or shards parameters
          // makes its own tensors from it).
          *slot.tensor = at::Tensor(alive);
          continue;
        }
      }
    }
    Job job{index_.Find(key), *slot.tensor, at::Tensor(), nullptr, false};
    if (Aligned(*job.stored)) {
      job.source = MapTensor(File(job.stored->file), *job.stored, job.mapped);
      if (Mappable(*job.stored, job.out)) {
        job.out = job.source;
        job.direct = true;
        *slot.tensor = job.out;
      }
    }
    if (lock.owns_lock()) {
      shared_.insert_or_assign(key,
                               c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>(
                                   slot.tensor->getIntrusivePtr()));
    }
    jobs.push_back(std::move(job));
  }
  // A pipeline of two: while this thread converts tensor k (a dtype, a
  // view's strides), another reads tensor k + 1 (the pages of its mapping in
  // from the file). Reading is what loading costs; the rest hides behind it.
  std::vector<uint64_t> buffers[2];
  auto read = [&](size_t k) {
    Job& job = jobs[k];
    if (job.mapped) {
      job.mapped->Populate();
      return;
    }
    ReadRaw(*job.stored, buffers[k % 2]);  // stored misaligned: read, not mapped
  };
  std::future<void> next;
  if (!jobs.empty()) next = std::async(std::launch::async, read, 0);
  for (size_t k = 0; k < jobs.size(); ++k) {
    next.get();
    if (k + 1 < jobs.size()) next = std::async(std::launch::async, read, k + 1);
    Job& job = jobs[k];
    if (job.direct) continue;  // the file's own bytes
    PopulateForWrite(job.out);
    if (job.mapped) {
      job.out.copy_(job.source);
      job.source = at::Tensor();  // unmapped once converted
      job.mapped.reset();
    } else {
      Convert(*job.stored, buffers[k % 2], job.out);
    }
  }
}

}  // namespace saturn::engine
