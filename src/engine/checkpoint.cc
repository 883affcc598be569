#include "engine/checkpoint.h"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>

#include "common/error.h"
#include "common/fs.h"
#include "engine/device.h"
#include "engine/formats/torch_save.h"
#include "engine/weights.h"
#include "protocol/checkpoint_files.h"

namespace saturn::engine {
namespace fs = std::filesystem;
namespace {

std::string BlockName(int index) {
  char name[32];
  std::snprintf(name, sizeof name, "block-%05d.pt", index);
  return name;
}

StoredDtype StoredOf(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return StoredDtype::kF32;
    case at::kHalf:
      return StoredDtype::kF16;
    case at::kBFloat16:
      return StoredDtype::kBF16;
    case at::kDouble:
      return StoredDtype::kF64;
    case at::kLong:
      return StoredDtype::kI64;
    case at::kInt:
      return StoredDtype::kI32;
    case at::kShort:
      return StoredDtype::kI16;
    case at::kChar:
      return StoredDtype::kI8;
    case at::kByte:
      return StoredDtype::kU8;
    case at::kBool:
      return StoredDtype::kBool;
    default:
      throw std::logic_error(std::string("no stored dtype for ") + c10::toString(type));
  }
}

// Adds tensors to a torch.save file, each made contiguous on the CPU first.
void AddTensors(TorchSaveWriter& out, const NamedTensors& tensors) {
  for (const auto& [name, tensor] : tensors) {
    at::Tensor t;
    {
      HostMemoryScope host;
      t = tensor.detach().cpu().contiguous();
    }
    out.Add(name, StoredOf(t.scalar_type()), t.sizes().vec(), t.data_ptr(),
            static_cast<uint64_t>(t.nbytes()));
  }
}

// A torch.save file of `tensors` (torch.load reads it, weights_only too).
std::string TensorBytes(const NamedTensors& tensors) {
  std::string bytes;
  TorchSaveWriter out(
      [&](const void* p, size_t n) { bytes.append(static_cast<const char*>(p), n); });
  AddTensors(out, tensors);
  out.Finish();
  return bytes;
}

NamedTensors ParseTensors(const std::string& bytes, const std::string& path) {
  HostMemoryScope host;
  c10::IValue value;
  try {
    value = torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  } catch (const std::exception& e) {
    throw InputError(path, 0, "", "not a readable checkpoint file: " + ErrorText(e));
  }
  if (!value.isGenericDict()) throw InputError(path, 0, "", "expected a dict of tensors");
  NamedTensors tensors;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isTensor()) {
      throw InputError(path, 0, "", "expected a dict of tensors");
    }
    tensors.emplace_back(entry.key().toStringRef(), entry.value().toTensor());
  }
  return tensors;
}

// A checkpoint without a manifest predates checksums: loaded, once a
// process says so.
void WarnUnverified(const std::string& path) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (!warned.insert(path).second) return;
  std::fprintf(stderr,
               "saturn-worker: warning: %s has no manifest.json (written before checksums); "
               "loading it unverified\n",
               path.c_str());
}

nlohmann::json MetaJson(const CheckpointMeta& meta) {
  nlohmann::json json = {{"format", 1},
                         {"step", meta.step},
                         {"data_cursor", meta.data_cursor},
                         {"batch_size", meta.batch_size},
                         {"seed", meta.seed},
                         {"model", meta.model},
                         {"finetune", meta.finetune},
                         {"optimizer", meta.optimizer},
                         {"blocks", meta.blocks},
                         {"loss", meta.loss},
                         {"technique", meta.technique},
                         {"gpus", meta.gpus}};
  if (!meta.base.is_null()) json["base"] = meta.base;
  return json;
}

}  // namespace

std::string CheckpointPath(const std::string& dir, int64_t step) {
  return dir + "/checkpoint-" + std::to_string(step);
}

CheckpointWriter::CheckpointWriter(std::string dir, int64_t step, Communicator& comm)
    : final_(CheckpointPath(dir, step)), partial_(final_ + ".partial"), step_(step), comm_(comm) {
  if (comm_.Rank() == 0) {
    fs::remove_all(partial_);
    MakeDirectories(partial_);
  }
  comm_.Barrier();
}

CheckpointWriter::~CheckpointWriter() {
  // Failed (a full disk, a peer gone): nothing half-written stays behind.
  if (!committed_ && comm_.Rank() == 0) {
    std::error_code ec;
    fs::remove_all(partial_, ec);
  }
}

void CheckpointWriter::WriteBlock(int index, const NamedTensors& tensors) {
  WriteCheckpointFile(partial_, BlockName(index), TensorBytes(tensors));
}

std::string CheckpointWriter::Commit(const CheckpointMeta& meta) {
  comm_.Barrier();
  if (comm_.Rank() == 0) {
    WriteCheckpointFile(
        partial_, "state.pt",
        TensorBytes({{"cpu_rng", at::detail::getDefaultCPUGenerator().get_state()}}));
    WriteCheckpointFile(partial_, "meta.json", MetaJson(meta).dump(2) + "\n");
    PublishCheckpoint(partial_, final_, step_);
  }
  committed_ = true;
  comm_.Barrier();
  return final_;
}

CheckpointReader::CheckpointReader(std::string path) : path_(std::move(path)) {
  std::string meta_path = path_ + "/meta.json";
  if (!fs::exists(meta_path)) {
    throw InputError(path_, 0, "", "no checkpoint here (meta.json is missing)");
  }
  std::string manifest_path = path_ + "/" + kCheckpointManifest;
  std::string meta_text = ReadFile(meta_path);
  if (fs::exists(manifest_path)) {
    manifest_ = ParseManifest(ReadFile(manifest_path), manifest_path);
    CheckCheckpointBytes(*manifest_, path_, "meta.json", meta_text);
  } else {
    WarnUnverified(path_);
  }
  nlohmann::json json = nlohmann::json::parse(meta_text, nullptr, false);
  if (json.is_discarded() || !json.is_object())
    throw InputError(meta_path, 0, "", "not valid JSON");
  try {
    meta_.step = json.at("step").get<int64_t>();
    meta_.data_cursor = json.at("data_cursor").get<int64_t>();
    meta_.batch_size = json.at("batch_size").get<int64_t>();
    meta_.seed = json.at("seed").get<uint64_t>();
    meta_.model = json.at("model");
    meta_.finetune = json.value("finetune", nlohmann::json::object());
    meta_.optimizer = json.at("optimizer").get<std::string>();
    meta_.blocks = json.at("blocks").get<int>();
    meta_.loss = json.at("loss").get<double>();
    meta_.technique = json.value("technique", "");
    meta_.gpus = json.value("gpus", 0);
    meta_.base = json.value("base", nlohmann::json());
    if (!meta_.base.is_null() && !meta_.base.is_object())
      throw InputError(meta_path, 0, "base", "expected an object");
  } catch (const nlohmann::json::exception& e) {
    throw InputError(meta_path, 0, "", std::string("malformed checkpoint metadata: ") + e.what());
  }
}

NamedTensors CheckpointReader::Load(const std::string& name) const {
  std::string path = path_ + "/" + name;
  std::string bytes = ReadFile(path);
  if (manifest_) CheckCheckpointBytes(*manifest_, path_, name, bytes);
  return ParseTensors(bytes, path);
}

NamedTensors CheckpointReader::ReadBlock(int index) const {
  return Load(BlockName(index));
}

void CheckpointReader::RestoreRng() const {
  NamedTensors state = Load("state.pt");
  at::Generator generator = at::detail::getDefaultCPUGenerator();
  generator.set_state(Lookup(state, "cpu_rng", path_ + "/state.pt"));
}

namespace {

// "2026-12-02 10:11:12.123456789 UTC"
std::string TimeText(int64_t ns) {
  std::time_t seconds = static_cast<std::time_t>(ns / 1000000000);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S", &utc);
  char fraction[16];
  std::snprintf(fraction, sizeof fraction, ".%09lld UTC", static_cast<long long>(ns % 1000000000));
  return std::string(text) + fraction;
}

// A path in a message, whole (Quote shortens long values).
std::string Named(const std::string& path) {
  return "'" + path + "'";
}

std::string StampText(const nlohmann::json& stamp) {
  return std::to_string(stamp.value("bytes", uint64_t{0})) + " bytes, modified " +
         TimeText(stamp.value("mtime_ns", int64_t{0}));
}

// The base's file as it is on disk now ({"file", "bytes", "mtime_ns"}), or
// null when it is gone.
nlohmann::json StampNow(const std::string& file) {
  struct stat info {};
  if (::stat(file.c_str(), &info) != 0) return nullptr;
  nlohmann::json stamp = nlohmann::json::object();
  stamp["file"] = file;
  stamp["bytes"] = static_cast<uint64_t>(info.st_size);
  stamp["mtime_ns"] = static_cast<int64_t>(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec;
  return stamp;
}

}  // namespace

nlohmann::json FrozenBaseOf(const Model& model, uint64_t seed) {
  if (model.BlockTrainableCounts() == model.BlockParamCounts()) return nullptr;
  const PretrainedWeights* init = model.Init();
  nlohmann::json files = nlohmann::json::array();
  if (init != nullptr) {
    for (const PretrainedWeights::FileStamp& stamp : init->Stamps()) {
      nlohmann::json file = nlohmann::json::object();
      file["file"] = stamp.file;
      file["bytes"] = stamp.bytes;
      file["mtime_ns"] = stamp.mtime_ns;
      files.push_back(file);
    }
  }
  nlohmann::json base = nlohmann::json::object();
  base["init"] = init != nullptr ? nlohmann::json(init->Path()) : nlohmann::json();
  base["seed"] = seed;
  base["files"] = files;
  return base;
}

void CheckFrozenBase(const CheckpointReader& in, const Model& model, uint64_t seed) {
  const nlohmann::json& saved = in.Meta().base;
  if (saved.is_null()) return;
  const nlohmann::json now = FrozenBaseOf(model, seed);
  const std::string named =
      saved.contains("init") && saved["init"].is_string() ? saved["init"].get<std::string>() : "";
  const std::string base = named.empty() ? "the model's seeded initial values" : Named(named);
  // "... trained on the frozen base 'gpt2', which changed since (...)".
  auto refuse = [&](const std::string& which) {
    throw InputError(in.Path() + "/meta.json", 0, "base",
                     "the checkpoint holds LoRA adapters only, trained on the frozen base " + base +
                         ", which " + which +
                         ": they do not apply to the task's base (restore that base, or start "
                         "the task afresh)");
  };
  if (now.is_null()) refuse("the task does not have (it has no frozen parameters)");
  if (saved.value("init", nlohmann::json()) != now["init"]) {
    refuse("is not the task's (" +
           (now["init"].is_string() ? Named(now["init"].get<std::string>())
                                    : std::string("the model's seeded initial values")) +
           ")");
  }
  if (saved.value("seed", uint64_t{0}) != seed) {
    refuse("was built with seed " + std::to_string(saved.value("seed", uint64_t{0})) +
           ", the task's seed is " + std::to_string(seed));
  }
  // Each file as it is on disk now and as this process opened it.
  auto same = [](const nlohmann::json& a, const nlohmann::json& b) {
    return a.value("bytes", nlohmann::json()) == b.value("bytes", nlohmann::json()) &&
           a.value("mtime_ns", nlohmann::json()) == b.value("mtime_ns", nlohmann::json());
  };
  const nlohmann::json files = saved.value("files", nlohmann::json::array());
  for (const nlohmann::json& then : files) {
    const std::string file = then.value("file", "");
    const std::string part = file == named ? "" : Named(file) + ": ";
    const nlohmann::json disk = StampNow(file);
    if (disk.is_null()) refuse("is missing (" + part + "no such file)");
    const nlohmann::json* opened = nullptr;
    for (const nlohmann::json& stamp : now["files"])
      if (stamp["file"] == file) opened = &stamp;
    if (opened == nullptr) refuse("is no longer read from " + Named(file));
    for (const nlohmann::json& stamp : {disk, *opened}) {
      if (!same(stamp, then)) {
        refuse("changed since (" + part + "then " + StampText(then) + "; now " + StampText(stamp) +
               ")");
      }
    }
  }
  if (now["files"].size() != files.size()) {
    refuse("was " + std::to_string(files.size()) + " file(s), the task's is " +
           std::to_string(now["files"].size()));
  }
}

NamedTensors ReadWholeBlock(const CheckpointReader& in, const Model& model, int index) {
  NamedTensors stored = in.ReadBlock(index);
  if (in.Meta().base.is_null()) return stored;
  std::unique_ptr<Block> base = model.BuildBlock(index, /*materialize=*/true);
  const std::string where = in.Path() + "/block " + std::to_string(index);
  NamedTensors whole;
  for (const ParamSlot& slot : base->Params()) {
    std::string key = "param/" + slot.name;
    whole.emplace_back(key, slot.trainable ? Lookup(stored, key, where) : *slot.tensor);
  }
  for (auto& [name, tensor] : stored) {
    if (name.rfind("param/", 0) != 0) whole.emplace_back(name, tensor);
  }
  return whole;
}

const at::Tensor& Lookup(const NamedTensors& tensors, const std::string& name,
                         const std::string& where) {
  for (const auto& [key, tensor] : tensors) {
    if (key == name) return tensor;
  }
  throw InputError(where, 0, "", "checkpoint lacks " + Quote(name));
}

bool Holds(const NamedTensors& tensors, const std::string& name) {
  return std::any_of(tensors.begin(), tensors.end(),
                     [&](const auto& entry) { return entry.first == name; });
}

bool ExportModel(const std::string& checkpoint, const Model& model, const LoraSpec& lora,
                 const ExportPaths& paths) {
  CheckpointReader reader(checkpoint);
  CheckFrozenBase(reader, model, reader.Meta().seed);
  // model.pt streams out block by block: one block in memory at a time.
  AtomicFileWriter model_file(paths.model);
  TorchSaveWriter model_out([&](const void* p, size_t n) { model_file.Write(p, n); });
  NamedTensors adapters;
  bool trained = !paths.trained.empty() && model.HasTrainedForm();
  NamedTensors all;  // for the trained form only (torchscript models are small)
  auto ends = [](const std::string& name, const std::string& tail) {
    return name.size() > tail.size() &&
           name.compare(name.size() - tail.size(), tail.size(), tail) == 0;
  };
  for (int i = 0; i < reader.Meta().blocks; ++i) {
    NamedTensors block;  // in the block's order of parameters
    std::map<std::string, size_t> position;
    for (auto& [name, tensor] : ReadWholeBlock(reader, model, i)) {
      if (name.rfind("param/", 0) != 0) continue;
      position[name.substr(6)] = block.size();
      block.emplace_back(name.substr(6), tensor);
    }
    // LoRA: <map>.weight += scale * B A ([out, in] weights, peft's layout)
    // or scale * A B ([in, out] weights: Conv1D's), whichever is its shape.
    for (const auto& [name, tensor] : block) {
      if (!ends(name, ".lora_A")) continue;
      std::string map = name.substr(0, name.size() - 7);
      auto b = position.find(map + ".lora_B"), w = position.find(map + ".weight");
      if (b == position.end() || w == position.end()) continue;
      HostMemoryScope host;
      at::Tensor& weight = block[w->second].second;
      const at::Tensor& lora_b = block[b->second].second;
      at::Tensor delta = weight.size(0) == lora_b.size(0) && weight.size(1) == tensor.size(1)
                             ? at::mm(lora_b, tensor)
                             : at::mm(tensor, lora_b);
      weight = weight + delta * lora.Scale();
    }
    NamedTensors params;
    for (const auto& [name, tensor] : block) {
      std::string exported = model.ExportName(i, name);
      if (exported.empty()) continue;  // a tied copy: exported once, by its first block
      bool adapter = ends(name, ".lora_A") || ends(name, ".lora_B");
      (adapter ? adapters : params).emplace_back(exported, tensor);
    }
    AddTensors(model_out, params);
    if (trained) all.insert(all.end(), params.begin(), params.end());
  }
  model_out.Finish();
  model_file.Commit();
  if (!paths.adapters.empty() && !adapters.empty()) {
    WriteFileAtomic(paths.adapters, TensorBytes(adapters));
  }
  return trained && model.SaveTrained(all, paths.trained);
}

void WriteTensorFile(const std::string& path, const NamedTensors& tensors, bool flushed) {
  if (flushed) {
    WriteFileAtomic(path, TensorBytes(tensors));
  } else {
    WriteFileAtomicUnflushed(path, TensorBytes(tensors));
  }
}

}  // namespace saturn::engine
