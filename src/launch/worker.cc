#include "launch/worker.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "common/error.h"
#include "common/fs.h"
#include "common/process.h"
#include "spec/workload.h"

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
        fs::path(here) / ".." / "src" / "worker" / "saturn-worker",
        // build/bench/<name>/ and build/tests/<name>/ binaries
        fs::path(here) / ".." / ".." / "src" / "worker" / "saturn-worker"}) {
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

std::map<std::string, std::string> WorkerEnv() {
  std::map<std::string, std::string> env;
  if (!std::getenv("OPENBLAS_NUM_THREADS")) env["OPENBLAS_NUM_THREADS"] = "1";
  return env;
}

std::vector<WorkerTechnique> AvailableTechniques(const Workload& workload,
                                                 const std::string& worker) {
  std::vector<WorkerTechnique> out;
  if (workload.plugins.empty()) {
    for (const std::string& name : BuiltinTechniqueNames())
      out.push_back({name, name == "single" || name == "spill", ""});
  } else {
    std::vector<std::string> argv = {worker, "techniques"};
    for (const std::string& p : workload.plugins)
      argv.insert(argv.end(), {"--plugin", p});
    std::string err = (std::filesystem::temp_directory_path() /
                       ("saturn-techniques-" + std::to_string(::getpid()) + ".err"))
                          .string();
    ProcessSpec spec;
    spec.argv = argv;
    spec.env = WorkerEnv();
    spec.stderr_path = err;
    spec.pipe_stdout = true;
    Process child = Process::Spawn(spec);
    std::string text;
    while (auto line = child.ReadLine(120.0))
      text += *line + "\n";
    if (child.running() && !child.WaitFor(10.0)) child.KillGroup();
    int status = child.Wait();
    std::string message = LastLines(err, 5);
    std::filesystem::remove(err);
    while (!message.empty() && message.back() == '\n')
      message.pop_back();
    if (ExitCode(status) == kWorkerBadInput) {
      // "saturn-worker: error: <plugin>: <why>"
      const std::string prefix = "saturn-worker: error: ";
      if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
      throw InputError(workload.source, 0, "plugins", message);
    }
    json j = json::parse(text, nullptr, false);
    if (!ExitedCleanly(status) || j.is_discarded() || !j.contains("techniques")) {
      throw std::runtime_error(worker + " techniques failed (" + DescribeExit(status) +
                               "): " + message);
    }
    for (const json& t : j["techniques"]) {
      out.push_back({t.value("name", ""), t.value("layout", "") == "one-process",
                     t["plugin"].is_string() ? t["plugin"].get<std::string>() : ""});
    }
  }
  for (const WorkloadTask& task : workload.tasks) {
    if (task.is_command) continue;
    for (size_t i = 0; i < task.techniques.size(); ++i) {
      const std::string& name = task.techniques[i];
      bool known = std::any_of(out.begin(), out.end(),
                               [&](const WorkerTechnique& t) { return t.name == name; });
      if (!known) {
        std::string list;
        for (const WorkerTechnique& t : out)
          list += (list.empty() ? "" : ", ") + t.name;
        throw InputError(workload.source, task.line,
                         "tasks." + task.name + ".techniques[" + std::to_string(i) + "]",
                         "unknown technique " + Quote(name) + "; available: " + list);
      }
    }
  }
  return out;
}

std::vector<std::string> TechniqueNames(const std::vector<WorkerTechnique>& techniques) {
  std::vector<std::string> names;
  for (const WorkerTechnique& t : techniques)
    names.push_back(t.name);
  return names;
}

SearchResult SearchResultFromJson(const json& j) {
  SearchResult r;
  r.feasible = j.value("feasible", false);
  r.reason = j.value("reason", "");
  // Infeasible results carry "step_s": null.
  r.step_s = j.contains("step_s") && j["step_s"].is_number() ? j["step_s"].get<double>() : 0.0;
  r.step_samples_s = Numbers(j, "step_samples_s");
  r.warmup_step_s = Numbers(j, "warmup_step_s");
  r.ready_unix_s = j.value("ready_unix_s", 0.0);
  r.setup_s = j.value("setup_s", 0.0);
  r.done_unix_s = j.value("done_unix_s", 0.0);
  r.launch_s = j.value("launch_s", 0.0);
  r.checkpoint_s = j.value("checkpoint_s", 0.0);
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
          {"warmup_step_s", r.warmup_step_s},
          {"ready_unix_s", r.ready_unix_s},
          {"setup_s", r.setup_s},
          {"done_unix_s", r.done_unix_s},
          {"launch_s", r.launch_s},
          {"checkpoint_s", r.checkpoint_s},
          {"peak_memory_bytes", r.peak_memory_bytes},
          {"knobs", r.knobs}};
}

void SetLaunchCost(SearchResult& r, double spawned_unix_s, double ended_unix_s) {
  if (r.ready_unix_s <= 0) return;
  r.launch_s = std::max(0.0, r.ready_unix_s - spawned_unix_s) + r.setup_s;
  if (r.done_unix_s > 0) r.launch_s += std::max(0.0, ended_unix_s - r.done_unix_s);
}

long CheckpointInterval(long steps, long every) {
  return every > 0 ? every : std::max(1L, steps / 10);
}

long CheckpointWrites(long steps, long every) {
  return std::max(0L, steps - 1) / CheckpointInterval(steps, every) + 2;
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
