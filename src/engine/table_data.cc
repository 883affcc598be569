// Table data (engine/data.h): one group's rows of a group file
// (table/group_file.h), training rows in a seeded order each epoch.
#include <algorithm>
#include <cstring>
#include <utility>
#include <vector>

#include "common/error.h"
#include "common/mix.h"
#include "engine/data.h"
#include "engine/device.h"
#include "table/group_file.h"

namespace saturn::engine {
namespace {

// The rows' samples as a Dataset.
class TableDataset final : public Dataset {
 public:
  explicit TableDataset(std::unique_ptr<TableRows> rows) : rows_(std::move(rows)) {}

  Batch Samples(int64_t first, int64_t count) const override {
    at::Tensor index = at::empty({count}, at::kLong);
    int64_t* r = index.data_ptr<int64_t>();
    for (int64_t i = 0; i < count; ++i)
      r[i] = rows_->RowOf(first + i);
    return {rows_->Inputs().index_select(0, index), rows_->Targets().index_select(0, index)};
  }

 private:
  std::unique_ptr<TableRows> rows_;
};

}  // namespace

TableRows::TableRows(at::Tensor inputs, at::Tensor targets, uint64_t seed, std::string group,
                     bool shuffle)
    : inputs_(std::move(inputs)),
      targets_(std::move(targets)),
      seed_(seed),
      group_(std::move(group)),
      shuffle_(shuffle) {}

int64_t TableRows::RowOf(int64_t sample) const {
  const int64_t n = inputs_.size(0);
  if (!shuffle_) return sample % n;
  const int64_t epoch = sample / n;
  if (epoch != epoch_) {
    order_ = table::GroupShuffle(n, SplitMix64(seed_ ^ static_cast<uint64_t>(epoch)), group_);
    epoch_ = epoch;
  }
  return order_[static_cast<size_t>(sample % n)];
}

std::unique_ptr<TableRows> TableRows::Load(const TaskSpec& task, const Model& model, bool eval) {
  InputShape input = model.Input();
  if (task.model_type != "mlp") {
    throw InputError(task.source, 0, "data.type",
                     "table data feeds mlp models (layers: 0 for linear or logistic "
                     "regression), not " +
                         task.model_type);
  }
  table::GroupedTable t = table::ReadGroupRows(
      task.data.path, table::CachedGroupFileHeader(task.data.path), task.data.group);
  const table::TableGroup& g = t.groups[0];
  if (input.width != t.Features() || input.classes != t.Outputs() ||
      (model.Loss() == LossKind::kMse) == t.classification) {
    throw InputError(task.source, 0, "model",
                     "the table has " + std::to_string(t.Features()) + " features and " +
                         (t.classification ? std::to_string(t.Outputs()) + " classes"
                                           : std::string("a regression target")) +
                         "; the model takes " + std::to_string(input.width) + " inputs to " +
                         std::to_string(input.classes) + " outputs with loss " +
                         (model.Loss() == LossKind::kMse ? "mse" : "cross_entropy"));
  }
  const int64_t first = eval ? g.train_rows : 0, rows = eval ? g.EvalRows() : g.train_rows;
  HostMemoryScope host;
  at::Tensor inputs = at::empty({rows, t.Features()}, at::kFloat);
  std::memcpy(inputs.data_ptr<float>(), t.Row(first),
              static_cast<size_t>(rows * t.Features()) * sizeof(float));
  at::Tensor labels = at::empty({rows}, at::kFloat);
  std::memcpy(labels.data_ptr<float>(), t.labels.data() + first,
              static_cast<size_t>(rows) * sizeof(float));
  at::Tensor targets = t.classification ? labels.to(at::kLong) : labels.unsqueeze(1);
  return std::unique_ptr<TableRows>(
      new TableRows(std::move(inputs), std::move(targets), task.seed, task.data.group, !eval));
}

std::unique_ptr<Dataset> MakeTableDataset(const TaskSpec& task, const Model& model, bool eval) {
  return std::make_unique<TableDataset>(TableRows::Load(task, model, eval));
}

}  // namespace saturn::engine
