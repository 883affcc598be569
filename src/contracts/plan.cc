#include "contracts/plan.h"

#include <cmath>

#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "common/json_text.h"
#include "common/limits.h"

namespace saturn {
namespace {

using nlohmann::json;

const json& Field(const json& obj, const char* key, std::string_view source,
                  const std::string& path) {
  auto it = obj.find(key);
  if (it == obj.end()) throw InputError(source, 0, path + key, "missing required field");
  return *it;
}

std::string GetString(const json& obj, const char* key, std::string_view source,
                      const std::string& path) {
  const json& v = Field(obj, key, source, path);
  if (!v.is_string()) throw InputError(source, 0, path + key, "expected a string");
  return v.get<std::string>();
}

double GetNumber(const json& obj, const char* key, std::string_view source,
                 const std::string& path) {
  const json& v = Field(obj, key, source, path);
  if (!v.is_number() || !std::isfinite(v.get<double>())) {
    throw InputError(source, 0, path + key, "expected a finite number");
  }
  double x = v.get<double>();
  if (std::fabs(x) > limits::kMaxNumber) {
    throw InputError(source, 0, path + key,
                     "expected a number of seconds from -" + FormatNumber(limits::kMaxNumber) +
                         " to " + FormatNumber(limits::kMaxNumber) + ", got " + FormatNumber(x));
  }
  return x;
}

// An integer in [min, max].
int GetInt(const json& v, std::string_view source, const std::string& field, long min, long max) {
  std::optional<long> n = JsonInt(v, min, max);
  if (!n) {
    throw InputError(source, 0, field,
                     "expected an integer from " + std::to_string(min) + " to " +
                         std::to_string(max) + ", got " + Quote(v.dump()));
  }
  return static_cast<int>(*n);
}

}  // namespace

json PlanToJson(const Plan& plan) {
  json out = json::object();
  out["solver"] = plan.solver;
  out["status"] = plan.status;
  out["makespan_s"] = plan.makespan_s;
  out["lower_bound_s"] = plan.lower_bound_s;
  out["solve_time_s"] = plan.solve_time_s;
  json tasks = json::array();
  for (const PlanTask& t : plan.tasks) {
    tasks.push_back({{"task", t.task},
                     {"technique", t.technique},
                     {"gpus", t.gpus},
                     {"node", t.node},
                     {"gpu_ids", t.gpu_ids},
                     {"start_s", t.start_s},
                     {"end_s", t.end_s}});
    if (!t.gpu_type.empty()) tasks.back()["gpu_type"] = t.gpu_type;
    if (!t.pack.empty()) tasks.back()["pack"] = t.pack;
  }
  out["tasks"] = std::move(tasks);
  for (const auto& [key, value] : plan.extra.items()) {
    if (!out.contains(key)) out[key] = value;
  }
  return out;
}

Plan PlanFromJson(const json& in, std::string_view source) {
  if (!in.is_object()) throw InputError(source, 0, "", "expected a JSON object");
  Plan plan;
  plan.solver = GetString(in, "solver", source, "");
  plan.status = GetString(in, "status", source, "");
  if (plan.status != "optimal" && plan.status != "feasible" && plan.status != "time_limit" &&
      plan.status != "infeasible") {
    throw InputError(
        source, 0, "status",
        "expected optimal, feasible, time_limit or infeasible, got " + Quote(plan.status));
  }
  plan.makespan_s = GetNumber(in, "makespan_s", source, "");
  plan.lower_bound_s = GetNumber(in, "lower_bound_s", source, "");
  plan.solve_time_s = GetNumber(in, "solve_time_s", source, "");
  const json& tasks = Field(in, "tasks", source, "");
  if (!tasks.is_array()) throw InputError(source, 0, "tasks", "expected a list");
  for (size_t i = 0; i < tasks.size(); ++i) {
    std::string path = "tasks[" + std::to_string(i) + "].";
    const json& t = tasks[i];
    if (!t.is_object())
      throw InputError(source, 0, path.substr(0, path.size() - 1), "expected an object");
    PlanTask task;
    task.task = GetString(t, "task", source, path);
    task.technique = GetString(t, "technique", source, path);
    task.gpus =
        GetInt(Field(t, "gpus", source, path), source, path + "gpus", 1, limits::kMaxGpusPerNode);
    task.node = GetString(t, "node", source, path);
    const json& ids = Field(t, "gpu_ids", source, path);
    if (!ids.is_array()) throw InputError(source, 0, path + "gpu_ids", "expected a list");
    for (size_t k = 0; k < ids.size(); ++k) {
      task.gpu_ids.push_back(GetInt(ids[k], source, path + "gpu_ids[" + std::to_string(k) + "]", 0,
                                    limits::kMaxGpusPerNode - 1));
    }
    task.start_s = GetNumber(t, "start_s", source, path);
    task.end_s = GetNumber(t, "end_s", source, path);
    if (t.contains("gpu_type")) task.gpu_type = GetString(t, "gpu_type", source, path);
    if (t.contains("pack")) task.pack = GetString(t, "pack", source, path);
    plan.tasks.push_back(std::move(task));
  }
  for (const auto& [key, value] : in.items()) {
    static const char* kKnown[] = {"solver",        "status",       "makespan_s",
                                   "lower_bound_s", "solve_time_s", "tasks"};
    bool known = false;
    for (const char* k : kKnown)
      known = known || key == k;
    if (!known) plan.extra[key] = value;
  }
  return plan;
}

Plan ParsePlanJson(std::string_view text, std::string_view source) {
  json parsed;
  std::string why;
  if (!ParseJsonText(text, &parsed, &why)) throw InputError(source, 0, "", "invalid JSON: " + why);
  return PlanFromJson(parsed, source);
}

Plan LoadPlanFile(const std::string& path) {
  return ParsePlanJson(ReadFile(path), path);
}

std::optional<double> BaselineMakespan(const Plan& plan, std::string_view solver) {
  auto baselines = plan.extra.find("baselines");
  if (baselines == plan.extra.end() || !baselines->is_object()) return std::nullopt;
  auto b = baselines->find(std::string(solver));
  if (b == baselines->end() || !b->is_object()) return std::nullopt;
  auto m = b->find("makespan_s");
  if (m == b->end() || !m->is_number()) return std::nullopt;
  return m->get<double>();
}

bool PlanHasPacks(const Plan& plan) {
  for (const PlanTask& t : plan.tasks)
    if (!t.pack.empty()) return true;
  return false;
}

}  // namespace saturn
