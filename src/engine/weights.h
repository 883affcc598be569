// Pretrained weights a model starts from (`model: {..., init: PATH}`): a
// Hugging Face checkpoint (model.safetensors or pytorch_model.bin, a folder
// holding one, sharded ones with their .index.json), or Saturn's own
// model.pt of a finished task (engine/formats/weight_index.h reads them all).
//
// Opening checks the file against the whole model before anything trains:
// every parameter the model reads (Model::InitKeyOf) is there with its
// shape, and every tensor of the file is read by the model or one it may
// leave out (Model::IgnorableInitKey); otherwise one InputError names the
// file, the tensor and both shapes, or the tensors missing or left over.
// Only the file's index is read then. Building a block (Model::BuildBlock)
// reads that block's tensors, so a rank or a shard reads only the blocks it
// builds and nothing holds a second copy of the model: a float32 tensor
// stored whole is the file's own bytes, mapped copy-on-write (its pages are
// the page cache's until training writes them; processes on one node that
// load the same file share them), and any other stored float dtype is read
// and converted into the parameter, one tensor at most in flight beside the
// block. Stored as the model holds them (nothing transposed).
//
//   auto init = std::make_shared<PretrainedWeights>("gpt2/", *model);  // InputError if unfit
//   model->SetInit(init);
//   std::unique_ptr<Block> block = model->BuildBlock(3, true);          // block 3 from the file
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/formats/bytes.h"
#include "engine/formats/weight_index.h"
#include "engine/model.h"

namespace saturn::engine {

class PretrainedWeights {
 public:
  PretrainedWeights(const std::string& path, const Model& model);
  ~PretrainedWeights();

  // Fills block `index`'s parameters that the file holds.
  void Load(int index, Block& block) const;

  // What was opened, as a LoRA task's checkpoints name the frozen base they
  // leave out (checkpoint.h, FrozenBaseOf): the path named (`init:`) and
  // every file whose bytes the tensors lie in, with its size and
  // modification time (nanoseconds since the epoch) when it was opened.
  struct FileStamp {
    std::string file;
    uint64_t bytes = 0;
    int64_t mtime_ns = 0;
  };
  const std::string& Path() const { return index_.path; }
  const std::vector<FileStamp>& Stamps() const { return stamps_; }

 private:
  const FileBytes& File(const std::string& path) const;
  // A stored tensor's bytes into `buffer`, and from there into `out`.
  void ReadRaw(const StoredTensor& stored, std::vector<uint64_t>& buffer) const;
  void Convert(const StoredTensor& stored, const std::vector<uint64_t>& raw, at::Tensor& out) const;

  WeightIndex index_;
  // Keys read by more than one parameter (tied copies): the last tensor
  // read for each, while it is alive, so that a later copy shares it rather
  // than reading the file again.
  mutable std::mutex shared_mutex_;
  mutable std::map<std::string, c10::weak_intrusive_ptr<c10::TensorImpl, c10::UndefinedTensorImpl>>
      shared_;
  std::set<std::string> repeated_;
  // (block, parameter name) -> its key in the file; absent: initial values.
  std::map<std::pair<int, std::string>, std::string> sources_;
  std::map<std::string, std::unique_ptr<FileBytes>> files_;  // opened once, mapped or read by pread
  std::vector<FileStamp> stamps_;                            // files_' at opening, in its order
};

}  // namespace saturn::engine
