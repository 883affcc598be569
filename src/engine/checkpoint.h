// Checkpoints that any technique on any device count can resume.
//
// A checkpoint is a directory `checkpoint-<step>/` holding
//   meta.json        step, data cursor, task fingerprint, last loss, writer
//                    and, for a model with frozen parameters (LoRA), the
//                    frozen base the blocks leave out ("base", below)
//   state.pt         the CPU generator state
//   block-00007.pt   one file per model block: its parameters ("param/<name>")
//                    and optimizer state ("<slot>/<name>", e.g.
//                    "exp_avg/attn.qkv.weight"), unsharded, on the CPU
// Tensor files are torch pickles (torch.load reads them in Python). Whatever
// a technique holds (shards, stages, host copies), it writes and reads whole
// blocks, so the format does not depend on how the model was laid out.
//
// Frozen parameters (a LoRA task's base weights) never change, so blocks
// hold only what training changes: the trainable parameters (adapters) and
// their optimizer state. meta.json's "base" names what the frozen ones are
// (FrozenBaseOf: `init:` with the size and modification time of each of its
// files, and the seed of values the file does not hold); loading rebuilds
// them from it as a fresh start does (every trainer builds its blocks with
// Model::BuildBlock, then loads the checkpoint over them), after
// CheckFrozenBase refuses a base that changed or is missing. Readers of
// whole blocks outside a trainer (evaluation, ExportModel) use
// ReadWholeBlock. Checkpoints of models without frozen parameters hold
// every parameter and no "base", as before; a LoRA checkpoint written with
// its frozen weights (older Saturn) still loads.
//
//   manifest.json    every other file's size and CRC-32C
//                    (protocol/checkpoint_files.h)
// Writing is collective and atomic: ranks write their blocks into
// `checkpoint-<step>.partial/` (each file flushed), then rank 0 adds
// meta.json, checks every file against its writer's digest, writes the
// manifest and renames the directory; a reader never sees half a
// checkpoint. A writer that fails (a full disk) removes the partial folder.
// Reading checks every file against the manifest (InputError naming the
// file if damaged); a checkpoint without one (older Saturn) loads with a
// warning on stderr.
//
//   CheckpointWriter out(dir, step, comm);
//   out.WriteBlock(i, tensors);                    // by the rank owning block i
//   std::string path = out.Commit(meta);           // every rank
//   CheckpointReader in(dir + "/checkpoint-400");  // InputError if missing or bad
//   NamedTensors block = in.ReadBlock(i);
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/comm.h"
#include "engine/model.h"
#include "protocol/checkpoint_files.h"

namespace saturn::engine {

using NamedTensors = std::vector<std::pair<std::string, at::Tensor>>;

struct CheckpointMeta {
  int64_t step = 0;
  int64_t data_cursor = 0;  // index of the next sample
  int64_t batch_size = 0;
  uint64_t seed = 0;
  nlohmann::json model;
  nlohmann::json finetune = nlohmann::json::object();  // the task's finetune (LoRA)
  std::string optimizer;
  int blocks = 0;
  double loss = 0.0;
  std::string technique;  // informational: who wrote it
  int gpus = 0;
  // Null: the blocks hold every parameter. Otherwise they leave the frozen
  // ones out, and this names the base they come from (FrozenBaseOf).
  nlohmann::json base;
};

std::string CheckpointPath(const std::string& dir, int64_t step);

class CheckpointWriter {
 public:
  // Collective.
  CheckpointWriter(std::string dir, int64_t step, Communicator& comm);
  ~CheckpointWriter();
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;
  void WriteBlock(int index, const NamedTensors& tensors);
  // Collective; returns the published directory.
  std::string Commit(const CheckpointMeta& meta);

 private:
  std::string final_, partial_;
  int64_t step_ = 0;
  bool committed_ = false;
  Communicator& comm_;
};

class CheckpointReader {
 public:
  explicit CheckpointReader(std::string path);
  const std::string& Path() const { return path_; }
  const CheckpointMeta& Meta() const { return meta_; }
  NamedTensors ReadBlock(int index) const;
  // Restores the generator state saved with the checkpoint.
  void RestoreRng() const;

 private:
  NamedTensors Load(const std::string& name) const;

  std::string path_;
  CheckpointMeta meta_;
  std::optional<Manifest> manifest_;  // none: written before checksums
};

// The frozen base of `model` (its parameters that do not train) as a
// checkpoint names it: {"init": the path named, or null for none, "seed":
// the seed of the values the file does not hold, "files": [{"file", "bytes",
// "mtime_ns"}, ...] as the model opened them}. Null when the model has no
// frozen parameter (its checkpoints hold every parameter).
nlohmann::json FrozenBaseOf(const Model& model, uint64_t seed);
// For a checkpoint that leaves its frozen base out: InputError naming the
// base when `model` (with `seed`) does not start from that base now: a file
// changed since (its size or modification time) or is gone, or another
// init or seed. Nothing to check for a checkpoint holding every parameter.
void CheckFrozenBase(const CheckpointReader& in, const Model& model, uint64_t seed);
// Block `index` with every parameter: ReadBlock's tensors, and, where the
// checkpoint leaves the frozen ones out, those rebuilt from the base
// (Model::BuildBlock), the parameters in the block's order.
NamedTensors ReadWholeBlock(const CheckpointReader& in, const Model& model, int index);

// Finds `name` in `tensors`; InputError naming the checkpoint if absent.
const at::Tensor& Lookup(const NamedTensors& tensors, const std::string& name,
                         const std::string& where);
// Whether `tensors` has `name`.
bool Holds(const NamedTensors& tensors, const std::string& name);

// What a finished task leaves for users (docs/contracts.md, "A run's folder").
struct ExportPaths {
  // The parameters of every block as one torch pickle (a dict name ->
  // tensor, named by Model::ExportName: what python/saturn_models.py's
  // modules, or a torchscript task's own module, load with
  // load_state_dict). A LoRA task's adapters are merged into the weights
  // they adapt (W + alpha / rank * B A), so it loads as a plain model.
  std::string model;
  // When the model has one (torchscript: the user's module with the trained
  // weights), its trained form; "" for none.
  std::string trained;
  // A LoRA task's adapters alone (lora_A, lora_B of each adapted map, named
  // by ExportName); "" for none.
  std::string adapters;
};

// Writes ExportPaths' files from a checkpoint (a LoRA checkpoint's frozen
// base read again from the model's base: CheckFrozenBase, ReadWholeBlock);
// returns whether it wrote the trained form.
bool ExportModel(const std::string& checkpoint, const Model& model, const LoraSpec& lora,
                 const ExportPaths& paths);

// `tensors` as a torch.save file at `path`, atomically (a fused array's
// member's model.pt, engine/array.h); not `flushed`: on disk only after a
// later SyncFileSystem (common/fs.h), as many members' models at once.
void WriteTensorFile(const std::string& path, const NamedTensors& tensors, bool flushed = true);

}  // namespace saturn::engine
