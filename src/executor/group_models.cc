#include "executor/group_models.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <set>

#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "engine/formats/bytes.h"
#include "engine/formats/safetensors_write.h"
#include "engine/formats/weight_index.h"
#include "executor/run_context.h"
#include "table/group_file.h"

namespace saturn {
namespace {

using json = nlohmann::json;
using ordered = nlohmann::ordered_json;

constexpr const char* kFormat = "saturn-groups/1";
constexpr size_t kChunkBytes = size_t{8} << 20;  // read from a model.pt at a time
constexpr size_t kReasonsNamed = 3;              // tasks named in a group's reason, at most

// One group's tasks and what it ends with.
struct Group {
  std::string key;  // in groups.json and before each tensor's name
  std::vector<const GroupTaskResult*> tasks;
  const GroupTaskResult* chosen = nullptr;
  std::string reason;  // why it has no model ("" when it has one)
  engine::WeightIndex weights;
};

// `model` with every field the mlp family defaults (engine/models/mlp.cc).
ordered ModelSpec(const json& model) {
  const long layers = model.value("layers", 1L);
  const long width = model.value("width", 1L);
  return {{"type", model.value("type", std::string("mlp"))},
          {"layers", layers},
          {"width", width},
          {"inputs", model.value("inputs", width)},
          {"outputs", model.value("outputs", 10L)},
          {"loss", model.value("loss", std::string("cross_entropy"))},
          {"activation", "relu"}};
}

// The tensors an mlp of `spec` holds: name -> shape (nn.Linear's [out, in]).
std::map<std::string, std::vector<int64_t>> MlpTensors(const ordered& spec) {
  const int64_t layers = spec["layers"], width = spec["width"];
  const int64_t inputs = spec["inputs"], outputs = spec["outputs"];
  std::map<std::string, std::vector<int64_t>> out;
  for (int64_t k = 0; k < layers; ++k) {
    const std::string layer = "layers." + std::to_string(k);
    out[layer + ".weight"] = {width, k == 0 ? inputs : width};
    out[layer + ".bias"] = {width};
  }
  out["out.weight"] = {outputs, layers == 0 ? inputs : width};
  out["out.bias"] = {outputs};
  return out;
}

std::string Shape(const std::vector<int64_t>& shape) {
  std::string out;
  for (int64_t d : shape)
    out += (out.empty() ? "" : ", ") + std::to_string(d);
  return "[" + out + "]";
}

// Why `weights` cannot stand for a model of `spec` ("" when it can).
std::string Mismatch(const engine::WeightIndex& weights, const ordered& spec) {
  for (const std::string& name : weights.names) {
    const engine::StoredTensor& t = weights.tensors.at(name);
    if (t.dtype != engine::StoredDtype::kF32 || !t.Contiguous()) {
      return "tensor " + name + " is " + t.Describe() + ", not contiguous float32";
    }
  }
  if (spec["type"] != "mlp") return "";
  for (const auto& [name, shape] : MlpTensors(spec)) {
    const engine::StoredTensor* t = weights.Find(name);
    if (t == nullptr) return "it has no tensor " + name;
    if (t->shape != shape) {
      return "tensor " + name + " is " + Shape(t->shape) + ", the model's is " + Shape(shape);
    }
  }
  if (weights.names.size() != MlpTensors(spec).size()) {
    return "it holds " + std::to_string(weights.names.size()) + " tensors, the model " +
           std::to_string(MlpTensors(spec).size());
  }
  return "";
}

bool Finite(const std::optional<double>& v) {
  return v && std::isfinite(*v);
}

// What became of a task that left no model.
std::string Fate(const GroupTaskResult& t) {
  if (t.status == "failed") return t.task + " failed" + (t.error.empty() ? "" : ": " + t.error);
  if (t.status == "cancelled") return t.task + " was cancelled";
  if (t.status == "finished") return t.task + " finished";
  return t.task + " did not finish (" + t.status + ")";
}

// The group's model: the report's best of its tasks, else its finished
// tasks, the lowest held-out loss first (the first one without one last).
void Choose(Group& g, const std::map<std::string, std::string>& best_of) {
  const std::string& sweep = g.tasks.front()->sweep;
  if (auto it = best_of.find(sweep); it != best_of.end()) {
    for (const GroupTaskResult* t : g.tasks)
      if (t->task == it->second && t->status == "finished") g.chosen = t;
  }
  if (g.chosen == nullptr) {
    std::vector<const GroupTaskResult*> done;
    for (const GroupTaskResult* t : g.tasks)
      if (t->status == "finished") done.push_back(t);
    std::stable_sort(done.begin(), done.end(), [](const auto* a, const auto* b) {
      return Finite(a->eval_loss) && (!Finite(b->eval_loss) || *a->eval_loss < *b->eval_loss);
    });
    if (!done.empty()) g.chosen = done.front();
  }
  if (g.chosen == nullptr) {
    std::string why;
    for (size_t i = 0; i < g.tasks.size() && i < kReasonsNamed; ++i)
      why += (i ? "; " : "") + Fate(*g.tasks[i]);
    if (g.tasks.size() > kReasonsNamed) {
      why += "; and " + Plural(static_cast<long>(g.tasks.size() - kReasonsNamed), "more task");
    }
    g.reason = (g.tasks.size() == 1
                    ? ""
                    : "none of its " + std::to_string(g.tasks.size()) + " tasks finished: ") +
               why;
    return;
  }
  try {
    g.weights = engine::IndexWeights(g.chosen->model_path);
  } catch (const std::exception& e) {
    g.reason = g.chosen->task + " finished, but its model.pt cannot be read: " + e.what();
    return;
  }
  if (std::string why = Mismatch(g.weights, ModelSpec(g.chosen->model)); !why.empty()) {
    g.reason = g.chosen->task + "'s model.pt does not hold its model: " + why;
  }
}

// The task as written that made `t` (its sweep less "@<group>").
std::string Written(const GroupTaskResult& t) {
  return t.sweep.substr(0, t.sweep.size() - std::min(t.sweep.size(), t.group.size() + 1));
}

// The groups in the order their first tasks come, keyed by their value, or
// by their sweep ("<task>@<group>") where several tasks as written have
// groups.
std::vector<Group> GroupsOf(const GroupModelsInput& in) {
  std::set<std::string> written;
  for (const GroupTaskResult& t : in.tasks)
    written.insert(Written(t));
  std::vector<Group> groups;
  std::map<std::string, size_t> at;
  for (const GroupTaskResult& t : in.tasks) {
    auto [it, added] = at.emplace(t.sweep, groups.size());
    if (added) groups.push_back({written.size() > 1 ? t.sweep : t.group, {}, nullptr, "", {}});
    groups[it->second].tasks.push_back(&t);
  }
  return groups;
}

ordered Columns(const GroupModelsInput& in, const GroupTaskResult& t) {
  auto it = in.tables.find(t.table);
  if (it == in.tables.end()) return {{"features", ordered::array()}, {"label", nullptr}};
  const GroupTableColumns& c = it->second;
  ordered out = {{"features", c.features},
                 {"label", c.label},
                 {"kind", c.classification ? "classification" : "regression"}};
  if (c.classification) out["classes"] = c.classes;
  return out;
}

ordered Number(const std::optional<double>& v) {
  return Finite(v) ? ordered(*v) : ordered();
}

// One group's entry of groups.json; `top` holds what every entry shares
// (the model and the table's columns), written into an entry only where it
// differs.
ordered Entry(const GroupModelsInput& in, const Group& g, const ordered& top) {
  const GroupTaskResult& t = g.chosen ? *g.chosen : *g.tasks.front();
  ordered e = ordered::object();
  if (g.key != t.group) e["group"] = t.group;
  e["task"] = g.reason.empty() ? ordered(t.task) : ordered();
  if (!g.reason.empty()) e["reason"] = g.reason;
  ordered keys = ordered::array();
  if (g.reason.empty())
    for (const std::string& name : g.weights.names)
      keys.push_back(g.key + "/" + name);
  e["keys"] = std::move(keys);
  ordered tasks = ordered::array();
  for (const GroupTaskResult* member : g.tasks)
    tasks.push_back(member->task);
  e["tasks"] = std::move(tasks);
  e["train_rows"] = t.train_rows;
  const bool model = g.reason.empty();
  e["final_loss"] = model ? Number(t.final_loss) : ordered();
  e["eval_loss"] = model ? Number(t.eval_loss) : ordered();
  ordered columns = Columns(in, t);
  if (columns.value("kind", "") == "classification")
    e["eval_accuracy"] = model ? Number(t.eval_accuracy) : ordered();
  if (ordered spec = ModelSpec(t.model); spec != top["model"]) e["model"] = spec;
  for (const auto& [field, value] : columns.items())
    if (!top.contains(field) || top[field] != value) e[field] = value;
  return e;
}

// groups.json's fields before "groups": from the first group with a model
// (else the first group).
ordered Top(const GroupModelsInput& in, const std::vector<Group>& groups) {
  const Group* first = &groups.front();
  for (const Group& g : groups)
    if (g.reason.empty()) {
      first = &g;
      break;
    }
  const GroupTaskResult& t = first->chosen ? *first->chosen : *first->tasks.front();
  std::set<std::string> written;
  for (const Group& g : groups)
    written.insert(Written(*g.tasks.front()));
  ordered top = {{"format", kFormat}, {"safetensors", "groups.safetensors"}};
  // The table task as written (null where several made groups).
  top["task"] = written.size() == 1 ? ordered(Written(t)) : ordered();
  top["model"] = ModelSpec(t.model);
  const ordered columns = Columns(in, t);
  for (const auto& [field, value] : columns.items())
    top[field] = value;
  return top;
}

// groups.safetensors: every group's tensors, in the groups' order.
uint64_t WriteTensors(const std::string& path, const std::vector<Group>& groups) {
  std::vector<engine::SafetensorsEntry> entries;
  for (const Group& g : groups) {
    if (!g.reason.empty()) continue;
    for (const std::string& name : g.weights.names) {
      const engine::StoredTensor& t = g.weights.tensors.at(name);
      entries.push_back({g.key + "/" + name, t.dtype, t.shape});
    }
  }
  AtomicFileWriter out(path);
  engine::SafetensorsWriter writer([&](const void* p, size_t n) { out.Write(p, n); },
                                   std::move(entries), {{"format", "pt"}, {"saturn", kFormat}});
  std::vector<char> buffer;
  for (const Group& g : groups) {
    if (!g.reason.empty()) continue;
    std::unique_ptr<engine::FileBytes> file;
    for (const std::string& name : g.weights.names) {
      const engine::StoredTensor& t = g.weights.tensors.at(name);
      if (!file || file->Name() != t.file) file = std::make_unique<engine::FileBytes>(t.file);
      for (uint64_t done = 0, bytes = t.SpanBytes(); done < bytes;) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(bytes - done, kChunkBytes));
        buffer.resize(std::max(buffer.size(), n));
        file->ReadInto(t.offset + done, n, buffer.data());
        writer.Write(buffer.data(), n);
        done += n;
      }
    }
  }
  writer.Finish();
  out.Commit();
  return writer.Written();
}

}  // namespace

GroupModelsSummary ExportGroupModels(const GroupModelsInput& in) {
  GroupModelsSummary summary;
  if (in.tasks.empty()) return summary;
  std::vector<Group> groups = GroupsOf(in);
  for (Group& g : groups)
    Choose(g, in.best_of);
  summary.bytes = WriteTensors(in.run_dir + "/groups.safetensors", groups);
  ordered index = Top(in, groups);
  ordered entries = ordered::object();
  for (const Group& g : groups) {
    entries[g.key] = Entry(in, g, index);
    summary.with_model += g.reason.empty();
  }
  summary.groups = static_cast<int>(groups.size());
  index["counts"] = {{"groups", summary.groups},
                     {"with_model", summary.with_model},
                     {"without_model", summary.groups - summary.with_model}};
  index["groups"] = std::move(entries);
  WriteFileAtomic(in.run_dir + "/groups.json",
                  index.dump(1, ' ', false, ordered::error_handler_t::replace) + "\n");
  return summary;
}

namespace {

std::optional<double> NumberOf(const json& task, const char* field) {
  if (!task.contains(field) || !task[field].is_number()) return std::nullopt;
  return task[field].get<double>();
}

GroupModelsInput InputOf(const RunContext& run, const json& report) {
  GroupModelsInput in;
  in.run_dir = run.site.run_dir;
  std::map<std::string, const json*> reported;
  if (report.contains("tasks"))
    for (const json& t : report["tasks"])
      reported[t.value("task", std::string())] = &t;
  if (report.contains("best"))
    for (const json& b : report["best"])
      in.best_of[b.value("sweep", std::string())] = b.value("task", std::string());
  for (int j = 0; j < run.NumTasks(); ++j) {
    const WorkloadTask& w = run.WorkloadTaskOf(j);
    if (w.group.empty() || !w.spec.contains("data")) continue;
    GroupTaskResult t;
    t.task = w.name;
    t.group = w.group;
    t.sweep = w.sweep;
    t.table = w.spec["data"].value("path", std::string());
    t.model = w.spec.value("model", json::object());
    t.train_rows = w.spec["data"].value("train_rows", 0L);
    t.model_path = run.TaskDirOf(j) + "/model.pt";
    t.status = "unknown";
    if (auto it = reported.find(w.name); it != reported.end()) {
      const json& r = *it->second;
      t.status = r.value("status", t.status);
      t.error = r.value("error", std::string());
      t.final_loss = NumberOf(r, "final_loss");
      t.eval_loss = NumberOf(r, "final_eval_loss");
      t.eval_accuracy = NumberOf(r, "final_eval_accuracy");
    }
    if (!in.tables.count(t.table)) {
      const table::GroupedTable& head = table::CachedGroupFileHeader(t.table).table;
      in.tables[t.table] = {head.feature_names, head.label, head.classification, head.classes};
    }
    in.tasks.push_back(std::move(t));
  }
  return in;
}

}  // namespace

void WriteGroupModels(const RunContext& run, const json& report) {
  try {
    GroupModelsInput in = InputOf(run, report);
    if (in.tasks.empty()) return;
    GroupModelsSummary s = ExportGroupModels(in);
    if (!run.options().progress) return;
    std::string without =
        s.with_model == s.groups
            ? ""
            : "; " + Plural(s.groups - s.with_model, "group") + " without one (see groups.json)";
    std::fprintf(stderr, "models of %s: %s/groups.safetensors, indexed by groups.json%s\n",
                 Plural(s.with_model, "group").c_str(), in.run_dir.c_str(), without.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "warning: the groups' models were not written (groups.safetensors): %s\n",
                 e.what());
  }
}

}  // namespace saturn
