// The models of a table's groups in one file (docs/groups.md, "The models of
// every group"): at the end of a run with table tasks, groups.safetensors
// holds each group's trained model, its tensors named
// "<group>/<name in model.pt>" (float32), and groups.json indexes it: the
// model to rebuild (mlp: layers, width, inputs, outputs, loss, activation),
// the features in order, the label, regression or classification and the
// classes in order, and per group its task, its tensors' keys, its training
// rows, final training loss, held-out loss (and accuracy). A group whose
// sweep has several tasks keeps its best (the report's "best": final
// held-out loss, or the workload's select:), and the index names that task;
// a group without a model (its task failed, did not finish, or left no
// readable model.pt) is listed with a reason and no keys. Both files are
// written atomically, groups.safetensors first. Torch-free: model.pt is read
// with IndexWeights (engine/formats/weight_index.h), each tensor's bytes
// streamed into the output.
//
//   GroupModelsInput in;                       // by hand, or as WriteGroupModels fills it
//   GroupModelsSummary s = ExportGroupModels(in);
//   WriteGroupModels(run, report);             // a run's, at its end (run.cc)
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace saturn {

class RunContext;

// A table task of the run and how it ended (report.json's task entry).
struct GroupTaskResult {
  std::string task;    // its name, "<task>-<group>" (and a sweep's values)
  std::string group;   // its group's value (WorkloadTask::group)
  std::string sweep;   // "<task as written>@<group>"
  std::string status;  // "finished", "failed", ...
  std::string error;
  std::string table;     // its group file (data.path): a key of GroupModelsInput::tables
  nlohmann::json model;  // its model object (type mlp, layers, width, inputs, outputs, loss)
  long train_rows = 0;
  std::optional<double> final_loss;  // training loss at its last step
  std::optional<double> eval_loss;   // held-out, after its last step
  std::optional<double> eval_accuracy;
  std::string model_path;  // its tasks/<task>/model.pt
};

// A table's columns (table/grouped_table.h).
struct GroupTableColumns {
  std::vector<std::string> features;  // in the model's input order
  std::string label;
  bool classification = false;
  std::vector<std::string> classes;  // classification: output k is classes[k]
};

struct GroupModelsInput {
  std::string run_dir;                              // where groups.* go
  std::vector<GroupTaskResult> tasks;               // the run's table tasks, in the run's order
  std::map<std::string, std::string> best_of;       // sweep -> its best task (report.json's best)
  std::map<std::string, GroupTableColumns> tables;  // by group file
};

struct GroupModelsSummary {
  int groups = 0;      // 0: no table task, nothing written
  int with_model = 0;  // the rest are listed with a reason
  uint64_t bytes = 0;  // of groups.safetensors
};

// Writes groups.safetensors and groups.json into in.run_dir. Groups are
// keyed by their value, or by "<task>@<group>" where the run has several
// table tasks as written. SystemError where a file cannot be written.
GroupModelsSummary ExportGroupModels(const GroupModelsInput& in);

// The run's table tasks, from its workload and report.json's content (what
// WriteReport returned), exported; nothing for a run without table tasks.
// Never throws: a failure is a warning on stderr (the run's results stand).
// With progress on, one line on stderr says where the models are.
void WriteGroupModels(const RunContext& run, const nlohmann::json& report);

}  // namespace saturn
