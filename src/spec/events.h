// The event trace: what happened to which task, when, on which devices.
// The executor and the simulator write the same format (JSON lines), so
// planned, simulated and real timelines can be drawn and compared side by
// side.
//
//   {"t": 12.5, "event": "task_started", "task": "a", "technique": "fsdp",
//    "gpus": 2, "node": "node0", "gpu_ids": [0, 1]}
//
// Kinds: plan (the first plan), plan_switched, task_arrived, task_started,
// task_stopped (pre-empted; "reason"), task_finished, task_failed ("error").
// Extra fields (step, loss, makespan_s, ...) are kept in `extra`.
//
//   std::string line = EventToJsonLine(e);
//   std::vector<Event> all = ParseEventLines(text, "events.jsonl");
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace saturn {

struct Event {
  double t = 0.0;
  std::string kind;
  std::string task;
  std::string technique;
  int gpus = 0;
  std::string node;
  std::vector<int> gpu_ids;
  nlohmann::json extra = nlohmann::json::object();
};

std::string EventToJsonLine(const Event& event);
std::vector<Event> ParseEventLines(std::string_view text, std::string_view source);

// One busy interval of a task on its devices, paired from start and
// stop/finish/fail events (a task still running at the end of the trace ends
// at `end_of_trace`).
struct BusyInterval {
  std::string task;
  std::string technique;
  std::string node;
  std::vector<int> gpu_ids;
  double start = 0.0;
  double end = 0.0;
  std::string how_it_ended;  // task_finished, task_stopped, task_failed or running
};
std::vector<BusyInterval> BusyIntervals(const std::vector<Event>& events, double end_of_trace);

}  // namespace saturn
