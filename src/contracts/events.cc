#include "contracts/events.h"

#include <map>
#include <stdexcept>

#include "common/error.h"
#include "common/format.h"
#include "common/json_text.h"
#include "common/limits.h"

namespace saturn {
namespace {

// A GPU count or id: an integer from 0 to limits::kMaxGpusPerNode.
int GpuNumber(const nlohmann::json& v, std::string_view source, int line,
              const std::string& field) {
  std::optional<long> n = JsonInt(v, 0, limits::kMaxGpusPerNode);
  if (!n) {
    throw InputError(source, line, field,
                     "expected an integer from 0 to " + std::to_string(limits::kMaxGpusPerNode) +
                         ", got " + Quote(v.dump()));
  }
  return static_cast<int>(*n);
}

struct KindEntry {
  EventKind kind;
  const char* name;
  EventFields fields;
};

const std::vector<KindEntry>& Kinds() {
  // task: the task's name only; place: where it runs (once placed).
  static const std::vector<KindEntry> kinds = {
      {EventKind::kPlan,
       "plan",
       {false, false, {"makespan_s", "solver", "status"}, {"planning_s", "profiling_s"}}},
      {EventKind::kPlanSwitched,
       "plan_switched",
       {false, false, {"why", "old_end_s", "new_end_s", "preempted", "arrived"}, {}}},
      {EventKind::kTaskArrived, "task_arrived", {true, false, {"configurations"}, {}}},
      {EventKind::kTaskStarted, "task_started", {true, true, {"done"}, {"step"}}},
      {EventKind::kTaskEvaluated,
       "task_evaluated",
       {true,
        true,
        {},
        {"step", "eval_loss", "eval_s", "eval_accuracy", "eval_loss_se", "eval_accuracy_se"}}},
      {EventKind::kTaskStopped, "task_stopped", {true, true, {"reason", "done"}, {"step"}}},
      {EventKind::kTaskFinished, "task_finished", {true, true, {}, {"steps", "loss"}}},
      {EventKind::kTaskFailed,
       "task_failed",
       {true, true, {"error", "attempt", "gave_up"}, {"step"}}},
      {EventKind::kTaskCancelled, "task_cancelled", {true, true, {}, {"step"}}},
      {EventKind::kTaskEarlyStopped,
       "task_early_stopped",
       {true, true, {"rule", "metric", "value", "eval_step"}, {"step"}}},
      {EventKind::kCheckpointSkipped,
       "checkpoint_skipped",
       {true, false, {}, {"step", "problem", "from_step"}}},
      {EventKind::kResumed, "resumed", {}},
      {EventKind::kRunInterrupted, "run_interrupted", {}},
      {EventKind::kRunFinished,
       "run_finished",
       {false, false, {"finished", "failed", "makespan_s"}, {}}},
      {EventKind::kProgress, "progress", {true, false, {}, {"step", "steps", "loss"}}},
  };
  return kinds;
}

const KindEntry& EntryOf(EventKind kind) {
  for (const KindEntry& k : Kinds()) {
    if (k.kind == kind) return k;
  }
  throw std::logic_error("EventKind without an entry");
}

}  // namespace

std::string_view ToString(EventKind kind) {
  return kind == EventKind::kUnknown ? std::string_view("unknown") : EntryOf(kind).name;
}

std::optional<EventKind> EventKindFromString(std::string_view name) {
  for (const KindEntry& k : Kinds()) {
    if (name == k.name) return k.kind;
  }
  return std::nullopt;
}

std::vector<EventKind> AllEventKinds() {
  std::vector<EventKind> all;
  for (const KindEntry& k : Kinds())
    all.push_back(k.kind);
  return all;
}

const EventFields& FieldsOf(EventKind kind) {
  static const EventFields none;
  return kind == EventKind::kUnknown ? none : EntryOf(kind).fields;
}

std::string EventToJsonLine(const Event& e) {
  nlohmann::json j = {{"t", e.t}, {"event", e.KindName()}};
  if (!e.task.empty()) j["task"] = e.task;
  if (!e.technique.empty()) j["technique"] = e.technique;
  if (e.gpus > 0) j["gpus"] = e.gpus;
  if (!e.node.empty()) j["node"] = e.node;
  if (!e.gpu_ids.empty()) j["gpu_ids"] = e.gpu_ids;
  for (const auto& [k, v] : e.extra.items())
    j[k] = v;
  return j.dump() + "\n";
}

std::vector<Event> ParseEventLines(std::string_view text, std::string_view source) {
  std::vector<Event> events;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    nlohmann::json j;
    std::string why;
    if (!ParseJsonText(line, &j, &why)) {
      // A crash can leave the last line half-written; ignore only that one.
      if (pos >= text.size()) break;
      throw InputError(source, line_no, "", "invalid JSON event line: " + why);
    }
    if (!j.is_object() || !j.contains("t") || !j["t"].is_number() || !j.contains("event") ||
        !j["event"].is_string()) {
      throw InputError(source, line_no, "", "expected an object with numeric t and string event");
    }
    Event e;
    for (const auto& [k, v] : j.items()) {
      if (k == "t") {
        e.t = v.get<double>();
        if (!(e.t >= 0 && e.t <= limits::kMaxNumber)) {
          throw InputError(source, line_no, "t",
                           "expected seconds from 0 to " + FormatNumber(limits::kMaxNumber) +
                               ", got " + FormatNumber(e.t));
        }
      } else if (k == "event") {
        std::string name = v.get<std::string>();
        std::optional<EventKind> kind = EventKindFromString(name);
        e.kind = kind.value_or(EventKind::kUnknown);
        if (!kind) e.unknown_kind = std::move(name);
      } else if (k == "task" && v.is_string()) {
        e.task = v.get<std::string>();
      } else if (k == "technique" && v.is_string()) {
        e.technique = v.get<std::string>();
      } else if (k == "gpus" && v.is_number_integer()) {
        e.gpus = GpuNumber(v, source, line_no, "gpus");
      } else if (k == "node" && v.is_string()) {
        e.node = v.get<std::string>();
      } else if (k == "gpu_ids" && v.is_array()) {
        for (size_t i = 0; i < v.size(); ++i)
          e.gpu_ids.push_back(
              GpuNumber(v[i], source, line_no, "gpu_ids[" + std::to_string(i) + "]"));
      } else {
        e.extra[k] = v;
      }
    }
    events.push_back(std::move(e));
  }
  return events;
}

std::vector<BusyInterval> BusyIntervals(const std::vector<Event>& events, double end_of_trace) {
  std::vector<BusyInterval> out;
  std::map<std::string, BusyInterval> open;
  for (const Event& e : events) {
    if (e.kind == EventKind::kTaskStarted) {
      open[e.task] = {e.task, e.technique, e.node, e.gpu_ids, e.t, e.t, "running"};
    } else if (e.kind == EventKind::kTaskFinished || e.kind == EventKind::kTaskStopped ||
               e.kind == EventKind::kTaskFailed || e.kind == EventKind::kTaskCancelled ||
               e.kind == EventKind::kTaskEarlyStopped) {
      auto it = open.find(e.task);
      if (it == open.end()) continue;
      it->second.end = e.t;
      it->second.how_it_ended = ToString(e.kind);
      out.push_back(std::move(it->second));
      open.erase(it);
    }
  }
  for (auto& [task, interval] : open) {
    interval.end = end_of_trace;
    out.push_back(std::move(interval));
  }
  return out;
}

}  // namespace saturn
