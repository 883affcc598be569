// The event trace: what happened to which task, when, on which devices.
// The executor and the simulator write the same format (JSON lines), built
// by the same functions (spec/event_kinds.h), so planned, simulated and real
// timelines are drawn and compared by the same code.
//
//   {"t": 12.5, "event": "task_started", "task": "a", "technique": "fsdp",
//    "gpus": 2, "node": "node0", "gpu_ids": [0, 1], "step": 0, "done": 0}
//
// The kinds are EventKind's; each kind's fields are listed by FieldsOf and
// written by one function of spec/event_kinds.h. Fields beyond t, event and
// the place (task, technique, gpus, node, gpu_ids) are kept in `extra`. A
// kind this build does not know (a newer log) is kept by name and written
// back as it was.
//
//   std::string line = EventToJsonLine(e);
//   std::vector<Event> all = ParseEventLines(text, "events.jsonl");
//   if (e.kind == EventKind::kTaskStarted) ...
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace saturn {

enum class EventKind {
  kPlan,               // the first plan
  kPlanSwitched,       // a re-plan switched plans ("why")
  kTaskArrived,        // joined a run already going
  kTaskStarted,        // a worker started on its devices
  kTaskEvaluated,      // evaluated on held-out data
  kTaskStopped,        // pre-empted with a checkpoint ("reason")
  kTaskFinished,       // trained all its steps
  kTaskFailed,         // a worker failed ("error"; retried unless gave_up)
  kTaskCancelled,      // saturn cancel
  kTaskEarlyStopped,   // ended by the workload's early_stop rule ("rule", "metric", "value")
  kCheckpointSkipped,  // a damaged checkpoint set aside
  kResumed,            // saturn run --resume, or a service restarted
  kRunInterrupted,     // stopped by a signal; resumable
  kRunFinished,        // every task ended
  kProgress,           // saturn serve's stream only: a task's latest step
  kUnknown,            // a kind this build does not know (kept by name)
};

std::string_view ToString(EventKind kind);
// std::nullopt for a name that is not a kind.
std::optional<EventKind> EventKindFromString(std::string_view name);
// Every kind but kUnknown, in the order above.
std::vector<EventKind> AllEventKinds();

// The fields a kind's events have beyond t and event: `place` (task,
// technique, gpus, node, gpu_ids, for a task placed on devices), `task`
// (the name alone), `fields` (always written) and `run_only` (written by
// saturn run and saturn serve, not by the simulator, whose tasks are
// fractions of work: no step numbers, no losses).
struct EventFields {
  bool task = false;
  bool place = false;
  std::vector<std::string> fields;
  std::vector<std::string> run_only;
};
const EventFields& FieldsOf(EventKind kind);

struct Event {
  double t = 0.0;
  EventKind kind = EventKind::kUnknown;
  std::string unknown_kind;  // the name, for kUnknown
  std::string task;
  std::string technique;
  int gpus = 0;
  std::string node;
  std::vector<int> gpu_ids;
  nlohmann::json extra = nlohmann::json::object();

  std::string KindName() const {
    return kind == EventKind::kUnknown ? unknown_kind : std::string(ToString(kind));
  }
};

std::string EventToJsonLine(const Event& event);
std::vector<Event> ParseEventLines(std::string_view text, std::string_view source);

// One busy interval of a task on its devices, paired from its start and the
// event that ended it (stopped, finished, failed or cancelled); a task still
// running at the end of the trace ends at `end_of_trace`.
struct BusyInterval {
  std::string task;
  std::string technique;
  std::string node;
  std::vector<int> gpu_ids;
  double start = 0.0;
  double end = 0.0;
  std::string how_it_ended;  // task_finished, task_stopped, task_failed, task_cancelled or running
};
std::vector<BusyInterval> BusyIntervals(const std::vector<Event>& events, double end_of_trace);

}  // namespace saturn
