// Training data: a deterministic stream of samples for a task.
//
// Sample i of the stream is a pure function of (data seed, i), and step s of
// a task with batch size B uses samples [s*B, (s+1)*B): any rank can make
// exactly its slice of any step, and the data cursor of a checkpoint is just
// the index of the next sample, so a resumed run sees the exact next batch.
//
//   text       any file, read as bytes: windows of seq_len+1 bytes at
//              seeded positions (inputs: bytes, targets: the next bytes)
//   synthetic  shaped to the model: byte sequences following seeded
//              arithmetic rules (gpt), images or vectors drawn around one
//              seeded prototype per class, with their class as label
//   tokens     a flat file of little-endian uint16 token ids (all < vocab):
//              windows of seq_len+1 ids at seeded positions, like text
//   tensors    a file written by torch.save([inputs, targets], path):
//              sample i is row i mod N of both (float tensors become
//              float32, integer ones int64)
//
// Models whose input shape is only known from the data (torchscript) take
// tokens or tensors; MakeDataset runs Model::CheckData on two samples so that
// a mismatch is an InputError before training starts.
//
//   std::unique_ptr<Dataset> data = MakeDataset(task, *model);
//   Batch b = data->Samples(step * task.batch_size, task.batch_size);
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <memory>
#include <string>

#include "engine/model.h"
#include "engine/task.h"

namespace saturn::engine {

struct Batch {
  at::Tensor inputs;
  at::Tensor targets;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  // Samples [first, first + count) on the CPU, in the current memory scope.
  virtual Batch Samples(int64_t first, int64_t count) const = 0;
};

// The task's data, shaped for its model; InputError when they do not match
// (text data for an image model, a tensors file with the wrong width) or the
// file is unusable (too short, a token id >= vocab, not a torch.save list).
std::unique_ptr<Dataset> MakeDataset(const TaskSpec& task, const Model& model);

}  // namespace saturn::engine
