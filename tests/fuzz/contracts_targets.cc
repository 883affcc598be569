// Fuzz targets of the spec readers (targets.h): cluster, workload, profile,
// plan and event lines. What a reader accepts must also survive its writer:
// written and read again, it is the same.
#include <filesystem>
#include <set>

#include "common/error.h"
#include "common/fs.h"
#include "common/limits.h"
#include "contracts/cluster.h"
#include "contracts/events.h"
#include "contracts/plan.h"
#include "contracts/profile.h"
#include "contracts/workload.h"
#include "contracts/yaml_fields.h"
#include "fuzz/targets.h"

namespace saturn::fuzz {
namespace {

namespace fs = std::filesystem;

void Require(bool ok, const std::string& what) {
  if (!ok) throw Finding(what);
}

// What a writer produced must read back: an InputError here is a finding.
template <typename F>
auto ReadBack(const char* what, F read) {
  try {
    return read();
  } catch (const InputError& e) {
    throw Finding(std::string(what) + " output was refused when read back: " + e.what());
  }
}

// Text that ends up in JSON (plans, events, reports) must be writable there.
void RequireJsonText(const std::string& text, const std::string& what) {
  try {
    nlohmann::json(text).dump();
  } catch (const nlohmann::json::exception& e) {
    throw Finding(what + " cannot be written as JSON: " + e.what());
  }
}

bool SameCluster(const Cluster& a, const Cluster& b) {
  if (a.nodes.size() != b.nodes.size()) return false;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const ClusterNode &x = a.nodes[i], &y = b.nodes[i];
    if (x.name != y.name || x.gpus != y.gpus || x.gpu_memory_gib != y.gpu_memory_gib ||
        x.device != y.device || x.threads_per_gpu != y.threads_per_gpu ||
        x.gpu_type != y.gpu_type || x.tflops != y.tflops || x.tflops_fp32 != y.tflops_fp32 ||
        x.link_gb_s != y.link_gb_s) {
      return false;
    }
  }
  return true;
}

// The files a workload may name, in a folder of its own (made once).
const std::string& WorkloadDir() {
  static const std::string dir = [] {
    std::string d = (fs::temp_directory_path() / "saturn-fuzz-workload").string();
    WriteFileAtomic(d + "/cluster.yaml", "nodes:\n  - {name: n0, gpus: 4}\n");
    WriteFileAtomic(d + "/data/corpus.txt", std::string(1601, 'a'));
    WriteFileAtomic(d + "/data/train.bin", std::string(4000, '\1'));
    WriteFileAtomic(d + "/data/data.pt", "tensors");
    WriteFileAtomic(d + "/model.pt", "module");
    WriteFileAtomic(d + "/plugin.so", "plugin");
    return d;
  }();
  return dir;
}

}  // namespace

bool FuzzCluster(std::string_view input) {
  Cluster c;
  try {
    c = ParseCluster(ParseYamlText(std::string(input), "c.yaml"), "c.yaml");
  } catch (const InputError&) {
    return false;
  }
  Require(c.TotalGpus() > 0 && c.MaxGpusPerNode() <= limits::kMaxGpusPerNode, "GPU counts");
  for (const ClusterNode& n : c.nodes)
    RequireJsonText(n.name, "node name");
  Cluster back = ReadBack("ClusterToYaml", [&] {
    return ParseCluster(ParseYamlText(ClusterToYaml(c), "again.yaml"), "again.yaml");
  });
  Require(SameCluster(c, back), "cluster changed through ClusterToYaml");
  return true;
}

bool FuzzWorkload(std::string_view input) {
  Workload w;
  try {
    // A small cap on tasks (as --max-tasks gives): the cap is checked the
    // same at any size, and each input stays quick to read.
    w = ParseWorkload(std::string(input), "w.yaml", WorkloadDir(), {}, 64);
    if (w.from_allocation) UseAllocation(w, {{"a", 2}, {"b", 0}, {"c", 8}});
  } catch (const InputError&) {
    return false;
  }
  Require(!w.tasks.empty() && static_cast<long>(w.tasks.size()) <= w.max_tasks, "task count");
  std::set<std::string> names;
  for (const WorkloadTask& t : w.tasks) {
    Require(names.insert(t.name).second, "duplicate task name " + t.name);
    Require(t.steps >= 1 && t.steps <= limits::kMaxSteps, "steps of " + t.name);
    Require(t.gpu_min >= 1 && t.gpu_min <= t.gpu_max, "gpu_range of " + t.name);
    try {
      Require(nlohmann::json::parse(t.trial_key).is_object() && !t.spec.dump().empty(),
              "task " + t.name + "'s JSON");
    } catch (const nlohmann::json::exception& e) {
      throw Finding("task " + t.name + "'s JSON: " + e.what());
    }
  }
  return true;
}

bool FuzzProfile(std::string_view input) {
  static const Cluster cluster =
      ParseCluster(ParseYamlText("nodes: [{name: a, gpus: 8}, {name: b, gpus: 4}]", "c"), "c");
  ProfileTable p;
  try {
    p = ParseProfileCsv(input, "p.csv", cluster);
  } catch (const InputError&) {
    return false;
  }
  Require(static_cast<long>(p.rows.size()) <= limits::kMaxProfileRows, "row count");
  for (const ProfileRow& r : p.rows) {
    RequireJsonText(r.task, "task name");
    RequireJsonText(r.technique, "technique name");
  }
  ProfileTable back = ReadBack(
      "ProfileToCsv", [&] { return ParseProfileCsv(ProfileToCsv(p), "again.csv", cluster); });
  Require(back.rows.size() == p.rows.size() && back.extra_columns == p.extra_columns,
          "profile shape changed through ProfileToCsv");
  for (size_t i = 0; i < p.rows.size(); ++i) {
    const ProfileRow &a = p.rows[i], &b = back.rows[i];
    Require(a.task == b.task && a.technique == b.technique && a.gpus == b.gpus &&
                a.feasible == b.feasible && (!a.feasible || a.runtime_s == b.runtime_s) &&
                a.extra == b.extra,
            "row " + std::to_string(i) + " changed through ProfileToCsv");
  }
  return true;
}

bool FuzzPlan(std::string_view input) {
  Plan plan;
  try {
    plan = ParsePlanJson(input, "plan.json");
  } catch (const InputError&) {
    return false;
  }
  std::string written = PlanToJson(plan).dump(2);
  Plan back = ReadBack("PlanToJson", [&] { return ParsePlanJson(written, "again.json"); });
  Require(PlanToJson(back).dump(2) == written, "plan changed through PlanToJson");
  return true;
}

bool FuzzEvents(std::string_view input) {
  std::vector<Event> events;
  try {
    events = ParseEventLines(input, "events.jsonl");
  } catch (const InputError&) {
    return false;
  }
  std::string written;
  for (const Event& e : events) {
    Require(e.t >= 0 && e.t <= limits::kMaxNumber && e.gpus >= 0, "event time or gpus");
    written += EventToJsonLine(e);
  }
  std::vector<Event> back =
      ReadBack("EventToJsonLine", [&] { return ParseEventLines(written, "again.jsonl"); });
  Require(back.size() == events.size(), "event count changed through EventToJsonLine");
  std::string again;
  for (const Event& e : back)
    again += EventToJsonLine(e);
  Require(again == written, "events changed through EventToJsonLine");
  for (const BusyInterval& b : BusyIntervals(events, limits::kMaxNumber))
    Require(b.end >= 0, "busy interval of " + b.task);
  return true;
}

}  // namespace saturn::fuzz
