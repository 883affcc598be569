#include "protocol/worker_protocol.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "common/fs.h"
#include "common/json_text.h"
#include "common/limits.h"

namespace saturn {
namespace {

using json = nlohmann::json;

void CheckVersion(const json& j, const std::string& what) {
  auto version = j.is_object() ? j.find("protocol") : j.end();
  if (!j.is_object() || version == j.end() || !version->is_number_integer() ||
      *version != kWorkerProtocol) {
    throw ProtocolError(what + " is not protocol " + std::to_string(kWorkerProtocol));
  }
}

// The message's field `key`, or `fallback` when absent or null; a value of
// another type than `fallback`'s is a ProtocolError.
template <typename T>
T Get(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  bool ok = std::is_same_v<T, bool>          ? it->is_boolean()
            : std::is_same_v<T, std::string> ? it->is_string()
                                             : it->is_number();
  if (!ok) throw ProtocolError(std::string("field ") + key + " has the wrong type: " + it->dump());
  return it->get<T>();
}

// An integer field in [min, max] (`fallback` when absent or null).
long Count(const json& j, const char* key, long fallback, long min, long max) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  std::optional<long> n = JsonInt(*it, min, max);
  if (!n) {
    throw ProtocolError(std::string("field ") + key + ": expected an integer from " +
                        std::to_string(min) + " to " + std::to_string(max) + ", got " + it->dump());
  }
  return *n;
}

std::vector<double> Numbers(const json& j, const char* key) {
  std::vector<double> out;
  if (j.contains(key) && j[key].is_array()) {
    for (const json& v : j[key]) {
      if (v.is_number()) out.push_back(v.get<double>());
    }
  }
  return out;
}

json Field(const json& j, const char* key, json fallback) {
  return j.contains(key) && j[key].type() == fallback.type() ? j[key] : fallback;
}

json ReadJson(const std::string& path) {
  std::string text;
  try {
    text = ReadFile(path);
  } catch (const std::exception& e) {
    throw ProtocolError(std::string("worker wrote no result: ") + e.what());
  }
  return ParseWorkerMessage(text, "worker result " + path);
}

}  // namespace

json ParseWorkerMessage(std::string_view text, const std::string& what) {
  json j;
  std::string why;
  if (!ParseJsonText(text, &j, &why)) throw ProtocolError(what + " is not JSON: " + why);
  CheckVersion(j, what);
  return j;
}

json ToJson(const WorkerSearchResult& r) {
  json j = {{"protocol", kWorkerProtocol},
            {"feasible", r.feasible},
            {"reason", r.reason},
            {"technique", r.technique},
            {"gpus", r.gpus},
            // Infeasible results carry "step_s": null.
            {"step_s", r.feasible ? json(r.step_s) : json(nullptr)},
            {"step_samples_s", r.step_samples_s},
            {"warmup_step_s", r.warmup_step_s},
            {"ready_unix_s", r.ready_unix_s},
            {"setup_s", r.setup_s},
            {"done_unix_s", r.done_unix_s},
            {"launch_s", r.launch_s},
            {"checkpoint_s", r.checkpoint_s},
            {"eval_s", r.eval_s},
            {"peak_memory_bytes", r.peak_memory_bytes},
            {"resident_bytes", r.resident_bytes},
            // null: a CPU device without a declared capacity (nothing is out of memory).
            {"capacity_bytes", r.capacity_bytes > 0 ? json(r.capacity_bytes) : json(nullptr)},
            {"model_flops_per_step", r.model_flops_per_step},
            {"knobs", r.knobs},
            {"stats", r.stats},
            {"candidates", r.candidates}};
  if (!r.estimated.empty()) j["estimated"] = r.estimated;
  if (r.members > 0) j["members"] = r.members;
  if (!r.pack_sizes.empty()) {
    json sizes = json::array();
    for (const WorkerSearchResult& size : r.pack_sizes)
      sizes.push_back(ToJson(size));
    j["pack_sizes"] = std::move(sizes);
  }
  return j;
}

WorkerSearchResult SearchResultFromJson(const json& j) {
  CheckVersion(j, "search result");
  WorkerSearchResult r;
  r.feasible = Get(j, "feasible", false);
  r.reason = Get(j, "reason", std::string());
  r.technique = Get(j, "technique", std::string());
  r.gpus = static_cast<int>(Count(j, "gpus", 0, 0, limits::kMaxGpusPerNode));
  r.step_s = j.contains("step_s") && j["step_s"].is_number() ? j["step_s"].get<double>() : 0.0;
  r.step_samples_s = Numbers(j, "step_samples_s");
  r.warmup_step_s = Numbers(j, "warmup_step_s");
  r.ready_unix_s = Get(j, "ready_unix_s", 0.0);
  r.setup_s = Get(j, "setup_s", 0.0);
  r.done_unix_s = Get(j, "done_unix_s", 0.0);
  r.launch_s = Get(j, "launch_s", 0.0);
  r.checkpoint_s = Get(j, "checkpoint_s", 0.0);
  r.eval_s = Get(j, "eval_s", 0.0);
  r.peak_memory_bytes = Numbers(j, "peak_memory_bytes");
  r.resident_bytes = Numbers(j, "resident_bytes");
  r.capacity_bytes = Get(j, "capacity_bytes", 0.0);
  r.model_flops_per_step = Get(j, "model_flops_per_step", 0.0);
  r.knobs = Field(j, "knobs", json::object());
  r.stats = Field(j, "stats", json::object());
  r.candidates = Field(j, "candidates", json::array());
  r.estimated = Get(j, "estimated", std::string());
  if (r.feasible && !(r.step_s > 0)) {
    throw ProtocolError("worker reported a feasible configuration without a step time");
  }
  r.members = static_cast<int>(Count(j, "members", 0, 0, std::numeric_limits<int>::max()));
  for (const json& size : Field(j, "pack_sizes", json::array())) {
    r.pack_sizes.push_back(SearchResultFromJson(size));
    if (r.pack_sizes.back().members < 1)
      throw ProtocolError("a measured pack size without its \"members\"");
  }
  return r;
}

json ToJson(const WorkerExecuteResult& r) {
  return {{"protocol", kWorkerProtocol},
          {"completed_steps", r.completed_steps},
          {"final_loss", r.final_loss},
          {"preempted", r.preempted},
          {"checkpoint", r.checkpoint},
          {"peak_memory_bytes", r.peak_memory_bytes},
          {"resident_bytes", r.resident_bytes},
          {"losses", r.losses},
          {"knobs", r.knobs},
          {"stats", r.stats},
          {"members", r.members}};
}

WorkerExecuteResult ExecuteResultFromJson(const json& j) {
  CheckVersion(j, "execute result");
  WorkerExecuteResult r;
  r.completed_steps = Count(j, "completed_steps", 0, 0, limits::kMaxSteps);
  r.final_loss = Get(j, "final_loss", 0.0);
  r.preempted = Get(j, "preempted", false);
  r.checkpoint = Get(j, "checkpoint", std::string());
  r.peak_memory_bytes = Numbers(j, "peak_memory_bytes");
  r.resident_bytes = Numbers(j, "resident_bytes");
  r.losses = Numbers(j, "losses");
  r.knobs = Field(j, "knobs", json::object());
  r.stats = Field(j, "stats", json::object());
  r.members = Field(j, "members", json::array());
  return r;
}

json ToJson(const std::vector<WorkerTechnique>& techniques) {
  json list = json::array();
  for (const WorkerTechnique& t : techniques) {
    list.push_back({{"name", t.name},
                    {"description", t.description},
                    {"layout", t.one_process ? "one-process" : "rank-per-device"},
                    {"min_gpus", t.min_gpus},
                    {"max_gpus", t.max_gpus > 0 ? json(t.max_gpus) : json(nullptr)},
                    {"splits_batch", t.splits_batch},
                    {"takes_packs", t.takes_packs},
                    {"plugin", t.plugin.empty() ? json(nullptr) : json(t.plugin)}});
  }
  return {{"protocol", kWorkerProtocol}, {"techniques", list}};
}

std::vector<WorkerTechnique> TechniquesFromJson(const json& j) {
  CheckVersion(j, "technique list");
  if (!j.contains("techniques") || !j["techniques"].is_array()) {
    throw ProtocolError("technique list without \"techniques\"");
  }
  std::vector<WorkerTechnique> out;
  for (const json& t : j["techniques"]) {
    if (!t.is_object()) throw ProtocolError("technique list: a technique that is not an object");
    WorkerTechnique w;
    w.name = Get(t, "name", std::string());
    if (w.name.empty()) throw ProtocolError("technique list: a technique without a name");
    w.description = Get(t, "description", std::string());
    w.one_process = Get(t, "layout", std::string()) == "one-process";
    w.min_gpus = static_cast<int>(Count(t, "min_gpus", 1, 1, limits::kMaxGpusPerNode));
    // 0 and null both mean no upper bound (ToJson writes null), except for
    // a one-process technique, which runs on exactly one device.
    w.max_gpus = static_cast<int>(Count(t, "max_gpus", 0, 0, limits::kMaxGpusPerNode));
    if (w.max_gpus == 0 && w.one_process) w.max_gpus = 1;
    if (w.max_gpus > 0 && w.min_gpus > w.max_gpus) {
      throw ProtocolError("technique list: " + w.name + "'s min_gpus is above its max_gpus");
    }
    w.splits_batch = Get(t, "splits_batch", false);
    w.takes_packs = Get(t, "takes_packs", false);
    w.plugin =
        t.contains("plugin") && t["plugin"].is_string() ? t["plugin"].get<std::string>() : "";
    out.push_back(std::move(w));
  }
  return out;
}

WorkerSearchResult ReadSearchResult(const std::string& path) {
  return SearchResultFromJson(ReadJson(path));
}

WorkerExecuteResult ReadExecuteResult(const std::string& path) {
  return ExecuteResultFromJson(ReadJson(path));
}

std::string FormatStepLine(const StepReport& r) {
  char line[160];
  std::snprintf(line, sizeof line, "saturn: step=%ld loss=%.9g step_s=%.6f", r.step, r.loss,
                r.step_s);
  std::string out = line;
  if (r.peak_mem_gib >= 0) {
    std::snprintf(line, sizeof line, " peak_mem_gib=%.6g", r.peak_mem_gib);
    out += line;
  }
  return out;
}

namespace {

// The numeric key=value fields of a "saturn: ..." line (others ignored);
// nullopt for a line without the prefix.
std::optional<std::map<std::string, double>> SaturnFields(const std::string& line) {
  const std::string prefix = "saturn:";
  if (line.rfind(prefix, 0) != 0) return std::nullopt;
  std::istringstream in(line.substr(prefix.size()));
  std::map<std::string, double> fields;
  std::string field;
  while (in >> field) {
    size_t eq = field.find('=');
    if (eq == std::string::npos) continue;
    std::string value = field.substr(eq + 1);
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (end != value.c_str()) fields[field.substr(0, eq)] = v;
  }
  return fields;
}

// A step count field: an integer from 0 to limits::kMaxSteps.
bool StepField(const std::map<std::string, double>& f, const char* key, long* out) {
  auto it = f.find(key);
  if (it == f.end()) return false;
  double v = it->second;
  if (!(v >= 0 && v <= static_cast<double>(limits::kMaxSteps)) || v != std::floor(v)) return false;
  *out = static_cast<long>(v);
  return true;
}

// An optional measurement field: absent, or a finite number in [0, max].
bool MeasureField(const std::map<std::string, double>& f, const char* key, double max,
                  double* out) {
  auto it = f.find(key);
  if (it == f.end()) return true;
  if (!(it->second >= 0 && it->second <= max)) return false;
  *out = it->second;
  return true;
}

}  // namespace

bool ParseStepLine(const std::string& line, StepReport* report) {
  std::optional<std::map<std::string, double>> f = SaturnFields(line);
  StepReport r;
  if (!f || !StepField(*f, "step", &r.step)) return false;
  if (f->count("loss")) r.loss = f->at("loss");
  if (!MeasureField(*f, "step_s", limits::kMaxNumber, &r.step_s) ||
      !MeasureField(*f, "peak_mem_gib", limits::kMaxNumber, &r.peak_mem_gib)) {
    return false;
  }
  *report = r;
  return true;
}

std::string FormatEvalLine(const EvalReport& r) {
  char line[200];
  std::snprintf(line, sizeof line, "saturn: eval_step=%ld eval_loss=%.9g", r.steps_done, r.loss);
  std::string out = line;
  if (r.loss_se >= 0) {
    std::snprintf(line, sizeof line, " eval_loss_se=%.6g", r.loss_se);
    out += line;
  }
  if (r.accuracy >= 0) {
    std::snprintf(line, sizeof line, " eval_accuracy=%.6g", r.accuracy);
    out += line;
  }
  if (r.accuracy_se >= 0) {
    std::snprintf(line, sizeof line, " eval_accuracy_se=%.6g", r.accuracy_se);
    out += line;
  }
  std::snprintf(line, sizeof line, " eval_s=%.6f", r.seconds);
  out += line;
  if (r.member >= 0) out += " eval_member=" + std::to_string(r.member);
  return out;
}

bool ParseEvalLine(const std::string& line, EvalReport* report) {
  std::optional<std::map<std::string, double>> f = SaturnFields(line);
  EvalReport r;
  if (!f || !StepField(*f, "eval_step", &r.steps_done) || !f->count("eval_loss")) return false;
  r.loss = f->at("eval_loss");
  if (!MeasureField(*f, "eval_accuracy", 1.0, &r.accuracy) ||
      !MeasureField(*f, "eval_loss_se", limits::kMaxNumber, &r.loss_se) ||
      !MeasureField(*f, "eval_accuracy_se", 1.0, &r.accuracy_se) ||
      !MeasureField(*f, "eval_s", limits::kMaxNumber, &r.seconds)) {
    return false;
  }
  if (f->count("eval_member") && !StepField(*f, "eval_member", &r.member)) return false;
  *report = r;
  return true;
}

std::string FormatMemberLeftLine(const MemberLeftReport& r) {
  return "saturn: left_member=" + std::to_string(r.member) +
         " left_step=" + std::to_string(r.steps_done);
}

bool ParseMemberLeftLine(const std::string& line, MemberLeftReport* report) {
  std::optional<std::map<std::string, double>> f = SaturnFields(line);
  MemberLeftReport r;
  if (!f || !StepField(*f, "left_member", &r.member) || !StepField(*f, "left_step", &r.steps_done))
    return false;
  *report = r;
  return true;
}

}  // namespace saturn
