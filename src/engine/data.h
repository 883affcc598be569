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
//   table      one group's rows of a group file (table/group_file.h, for
//              mlp models): training sample i is training row
//              order(e)[i mod N], e = i / N, a seeded shuffle per epoch;
//              held-out sample i is held-out row i mod N. The group file
//              holds each group's split (docs/groups.md), so a table task
//              trains on its training rows whether it evaluates or not
//
// Held-out data (task.eval, evaluated by engine/eval.h). Without
// data.eval_path, a task that evaluates holds out part of its data, and
// trains on the rest only:
//   text, tokens  the last tenth of the file (at least seq_len + 2 elements):
//                 training windows lie wholly before it, held-out windows
//                 (at positions seeded apart from training's) wholly in it
//   tensors       the last max(1, N / 10) rows of the N; training uses the
//                 rows before them
//   synthetic     the stream's samples from index 2^40 on (training's
//                 sample indices never get there)
// With data.eval_path (tokens, tensors), training keeps the whole of
// data.path and the held-out samples come from the other file (windows at
// seeded positions, or rows in order). Held-out sample i is the same in
// every evaluation, so evaluation batch j is always samples [j*B, (j+1)*B).
// A task that does not evaluate trains on all of its data, as before.
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
#include <vector>

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
// The task's held-out samples (see above), checked like MakeDataset's.
std::unique_ptr<Dataset> MakeEvalDataset(const TaskSpec& task, const Model& model);
// Table data's split (engine/table_data.cc); MakeDataset and MakeEvalDataset
// call it for data.type table.
std::unique_ptr<Dataset> MakeTableDataset(const TaskSpec& task, const Model& model, bool eval);

// One table group's training or held-out rows on the host, and which row
// each sample is (above): what a table Dataset draws from, and what a fused
// array (engine/array.h) gathers every member's step from at once.
class TableRows {
 public:
  // InputError when the model does not fit the table, or the group file is
  // unreadable.
  static std::unique_ptr<TableRows> Load(const TaskSpec& task, const Model& model, bool eval);
  const at::Tensor& Inputs() const { return inputs_; }    // [rows, features] float
  const at::Tensor& Targets() const { return targets_; }  // [rows] int64, or [rows, 1] float
  int64_t Size() const { return inputs_.size(0); }
  int64_t RowOf(int64_t sample) const;

 private:
  TableRows(at::Tensor inputs, at::Tensor targets, uint64_t seed, std::string group, bool shuffle);
  at::Tensor inputs_, targets_;
  uint64_t seed_;
  std::string group_;
  bool shuffle_;
  mutable int64_t epoch_ = -1;
  mutable std::vector<int64_t> order_;
};

}  // namespace saturn::engine
