#include "protocol/worker_protocol.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "common/fs.h"

namespace saturn {
namespace {

using json = nlohmann::json;

void CheckVersion(const json& j, const std::string& what) {
  if (!j.is_object() || j.value("protocol", 0) != kWorkerProtocol) {
    throw std::runtime_error(what + " is not protocol " + std::to_string(kWorkerProtocol));
  }
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
    throw std::runtime_error(std::string("worker wrote no result: ") + e.what());
  }
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) throw std::runtime_error("worker result " + path + " is not JSON");
  CheckVersion(j, "worker result " + path);
  return j;
}

}  // namespace

json ToJson(const WorkerSearchResult& r) {
  return {{"protocol", kWorkerProtocol},
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
}

WorkerSearchResult SearchResultFromJson(const json& j) {
  CheckVersion(j, "search result");
  WorkerSearchResult r;
  r.feasible = j.value("feasible", false);
  r.reason = j.value("reason", "");
  r.technique = j.value("technique", "");
  r.gpus = j.value("gpus", 0);
  r.step_s = j.contains("step_s") && j["step_s"].is_number() ? j["step_s"].get<double>() : 0.0;
  r.step_samples_s = Numbers(j, "step_samples_s");
  r.warmup_step_s = Numbers(j, "warmup_step_s");
  r.ready_unix_s = j.value("ready_unix_s", 0.0);
  r.setup_s = j.value("setup_s", 0.0);
  r.done_unix_s = j.value("done_unix_s", 0.0);
  r.launch_s = j.value("launch_s", 0.0);
  r.checkpoint_s = j.value("checkpoint_s", 0.0);
  r.eval_s = j.value("eval_s", 0.0);
  r.peak_memory_bytes = Numbers(j, "peak_memory_bytes");
  r.resident_bytes = Numbers(j, "resident_bytes");
  r.capacity_bytes = j.contains("capacity_bytes") && j["capacity_bytes"].is_number()
                         ? j["capacity_bytes"].get<double>()
                         : 0.0;
  r.model_flops_per_step = j.value("model_flops_per_step", 0.0);
  r.knobs = Field(j, "knobs", json::object());
  r.stats = Field(j, "stats", json::object());
  r.candidates = Field(j, "candidates", json::array());
  if (r.feasible && !(r.step_s > 0)) {
    throw std::runtime_error("worker reported a feasible configuration without a step time");
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
          {"stats", r.stats}};
}

WorkerExecuteResult ExecuteResultFromJson(const json& j) {
  CheckVersion(j, "execute result");
  WorkerExecuteResult r;
  r.completed_steps = j.value("completed_steps", 0L);
  r.final_loss = j.value("final_loss", 0.0);
  r.preempted = j.value("preempted", false);
  r.checkpoint = j.value("checkpoint", "");
  r.peak_memory_bytes = Numbers(j, "peak_memory_bytes");
  r.resident_bytes = Numbers(j, "resident_bytes");
  r.losses = Numbers(j, "losses");
  r.knobs = Field(j, "knobs", json::object());
  r.stats = Field(j, "stats", json::object());
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
                    {"plugin", t.plugin.empty() ? json(nullptr) : json(t.plugin)}});
  }
  return {{"protocol", kWorkerProtocol}, {"techniques", list}};
}

std::vector<WorkerTechnique> TechniquesFromJson(const json& j) {
  CheckVersion(j, "technique list");
  if (!j.contains("techniques") || !j["techniques"].is_array()) {
    throw std::runtime_error("technique list without \"techniques\"");
  }
  std::vector<WorkerTechnique> out;
  for (const json& t : j["techniques"]) {
    WorkerTechnique w;
    w.name = t.value("name", "");
    if (w.name.empty()) throw std::runtime_error("technique list: a technique without a name");
    w.description = t.value("description", "");
    w.one_process = t.value("layout", "") == "one-process";
    w.min_gpus = t.value("min_gpus", 1);
    w.max_gpus = t.contains("max_gpus") && t["max_gpus"].is_number_integer()
                     ? t["max_gpus"].get<int>()
                     : (w.one_process ? 1 : 0);
    w.splits_batch = t.value("splits_batch", false);
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

}  // namespace

bool ParseStepLine(const std::string& line, StepReport* report) {
  std::optional<std::map<std::string, double>> f = SaturnFields(line);
  if (!f || !f->count("step")) return false;
  StepReport r;
  r.step = static_cast<long>(f->at("step"));
  if (f->count("loss")) r.loss = f->at("loss");
  if (f->count("step_s")) r.step_s = f->at("step_s");
  if (f->count("peak_mem_gib")) r.peak_mem_gib = f->at("peak_mem_gib");
  *report = r;
  return true;
}

std::string FormatEvalLine(const EvalReport& r) {
  char line[200];
  std::snprintf(line, sizeof line, "saturn: eval_step=%ld eval_loss=%.9g", r.steps_done, r.loss);
  std::string out = line;
  if (r.accuracy >= 0) {
    std::snprintf(line, sizeof line, " eval_accuracy=%.6g", r.accuracy);
    out += line;
  }
  std::snprintf(line, sizeof line, " eval_s=%.6f", r.seconds);
  return out + line;
}

bool ParseEvalLine(const std::string& line, EvalReport* report) {
  std::optional<std::map<std::string, double>> f = SaturnFields(line);
  if (!f || !f->count("eval_step") || !f->count("eval_loss")) return false;
  EvalReport r;
  r.steps_done = static_cast<long>(f->at("eval_step"));
  r.loss = f->at("eval_loss");
  if (f->count("eval_accuracy")) r.accuracy = f->at("eval_accuracy");
  if (f->count("eval_s")) r.seconds = f->at("eval_s");
  *report = r;
  return true;
}

}  // namespace saturn
