#include "launch/worker.h"

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "common/fs.h"
#include "common/process.h"

namespace saturn {
namespace {

using nlohmann::json;

json ReadJson(const std::string& path) {
  std::string text;
  try {
    text = ReadFile(path);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("worker wrote no result: ") + e.what());
  }
  json j;
  try {
    j = json::parse(text);
  } catch (const json::parse_error& e) {
    throw std::runtime_error("worker result " + path + " is not JSON: " + e.what());
  }
  if (!j.is_object() || j.value("protocol", 0) != kWorkerProtocol) {
    throw std::runtime_error("worker result " + path + " is not protocol " +
                             std::to_string(kWorkerProtocol));
  }
  return j;
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

}  // namespace

std::string FindWorkerBinary() {
  namespace fs = std::filesystem;
  std::vector<std::string> tried;
  if (const char* env = std::getenv("SATURN_WORKER"); env && *env) return env;
  std::string here = ExecutableDir();
  for (const fs::path& p :
       {fs::path(here) / "saturn-worker", fs::path(here) / ".." / "worker" / "saturn-worker",
        fs::path(here) / ".." / "src" / "worker" / "saturn-worker"}) {
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p).string();
    tried.push_back(p.lexically_normal().string());
  }
  std::string list;
  for (const std::string& t : tried)
    list += "\n  " + t;
  throw std::runtime_error(
      "cannot find saturn-worker (the training engine; build with -DSATURN_WITH_TORCH=ON) in:" +
      list + "\nor set SATURN_WORKER to its path");
}

std::vector<std::string> WorkerArgv(const std::string& worker, const WorkerCall& c) {
  std::vector<std::string> a = {
      worker,          c.mode == WorkerCall::kSearch ? "search" : "execute",
      "--task",        c.task_path,
      "--technique",   c.technique,
      "--gpus",        std::to_string(c.gpus),
      "--out",         c.out_path,
      "--device-kind", c.device_kind,
      "--threads",     std::to_string(c.threads),
      "--timeout-s",   std::to_string(c.timeout_s)};
  if (!c.device_ids.empty()) {
    std::string ids;
    for (int id : c.device_ids)
      ids += (ids.empty() ? "" : ",") + std::to_string(id);
    a.insert(a.end(), {"--device-ids", ids});
  }
  if (c.memory_gib > 0) {
    std::ostringstream m;
    m << c.memory_gib;
    a.insert(a.end(), {"--memory-gib", m.str()});
  }
  for (const std::string& p : c.plugins)
    a.insert(a.end(), {"--plugin", p});
  if (c.rank_from_env) a.insert(a.end(), {"--rank-from-env", "--rendezvous", c.rendezvous});
  if (c.mode == WorkerCall::kSearch) {
    if (c.warmup >= 0) a.insert(a.end(), {"--warmup", std::to_string(c.warmup)});
    if (c.measure >= 0) a.insert(a.end(), {"--measure", std::to_string(c.measure)});
  } else {
    a.insert(a.end(), {"--from-step", std::to_string(c.from_step), "--to-step",
                       std::to_string(c.to_step), "--checkpoint-dir", c.checkpoint_dir});
    if (!c.knobs_json.empty()) a.insert(a.end(), {"--knobs", c.knobs_json});
    if (c.checkpoint_every > 0) {
      a.insert(a.end(), {"--checkpoint-every", std::to_string(c.checkpoint_every)});
    }
    if (!c.save_model.empty()) a.insert(a.end(), {"--save-model", c.save_model});
  }
  return a;
}

SearchResult SearchResultFromJson(const json& j) {
  SearchResult r;
  r.feasible = j.value("feasible", false);
  r.reason = j.value("reason", "");
  r.step_s = j.value("step_s", 0.0);
  r.step_samples_s = Numbers(j, "step_samples_s");
  r.peak_memory_bytes = Numbers(j, "peak_memory_bytes");
  if (j.contains("knobs") && j["knobs"].is_object()) r.knobs = j["knobs"];
  if (r.feasible && !(r.step_s > 0)) {
    throw std::runtime_error("worker reported a feasible configuration without a step time");
  }
  return r;
}

json SearchResultToJson(const SearchResult& r) {
  return {{"protocol", kWorkerProtocol},
          {"feasible", r.feasible},
          {"reason", r.reason},
          {"step_s", r.step_s},
          {"step_samples_s", r.step_samples_s},
          {"peak_memory_bytes", r.peak_memory_bytes},
          {"knobs", r.knobs}};
}

SearchResult ReadSearchResult(const std::string& path) {
  return SearchResultFromJson(ReadJson(path));
}

ExecuteResult ReadExecuteResult(const std::string& path) {
  json j = ReadJson(path);
  ExecuteResult r;
  r.completed_steps = j.value("completed_steps", 0L);
  r.final_loss = j.value("final_loss", 0.0);
  r.preempted = j.value("preempted", false);
  r.checkpoint = j.value("checkpoint", "");
  r.peak_memory_bytes = Numbers(j, "peak_memory_bytes");
  return r;
}

bool ParseStepLine(const std::string& line, StepReport* report) {
  const std::string prefix = "saturn:";
  if (line.rfind(prefix, 0) != 0) return false;
  std::istringstream in(line.substr(prefix.size()));
  std::string field;
  StepReport r;
  bool any = false;
  while (in >> field) {
    size_t eq = field.find('=');
    if (eq == std::string::npos) continue;
    std::string key = field.substr(0, eq), value = field.substr(eq + 1);
    char* end = nullptr;
    double v = std::strtod(value.c_str(), &end);
    if (end == value.c_str()) continue;
    if (key == "step") {
      r.step = static_cast<long>(v);
      any = true;
    } else if (key == "loss") {
      r.loss = v;
    } else if (key == "step_s") {
      r.step_s = v;
    } else if (key == "peak_mem_gib") {
      r.peak_mem_gib = v;
    }
  }
  if (!any) return false;
  *report = r;
  return true;
}

}  // namespace saturn
