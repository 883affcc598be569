// A run's durable state, in its run directory: `state.sqlite` (tasks, their
// checkpoints and attempts, loss curves, the run clock, the current plan) and
// `events.jsonl` (append-only event log, flushed to disk per event). Every
// change is committed before the executor acts on it, so after a crash
// (orchestrator killed, machine rebooted) `saturn run --resume` continues
// from the last checkpoints without redoing finished work.
//
// Meta values are read and written through typed keys (`meta::kClockS` is a
// double), so the key names and their text form live here only.
//
//   RunState state = RunState::Open(run_dir, /*create=*/true);
//   state.SaveTask(row);
//   state.Set(meta::kClockS, 12.5);
//   double clock = state.Get(meta::kClockS).value_or(0.0);
//   state.Append(events::TaskStarted(...));   // contracts/event_kinds.h
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "contracts/events.h"
#include "contracts/task_view.h"

struct sqlite3;

namespace saturn {

// A task's durable record: where it stands (contracts/task_view.h; its
// status stored as its word, "queued" written as "waiting" by runs before
// 2026-12 and read as queued), and what a resume needs beside it.
// Cancelled (by `saturn cancel`) keeps the task's last checkpoint.
struct TaskRecord : TaskState {
  long checkpoint_step = 0;  // resumable from this step
  int worker_pgid = 0;       // process group of a running worker
};

// A workload submitted to `saturn serve`, as it was sent: its text, the
// file it came from and the folder its relative paths resolve against.
struct Submission {
  long seq = 0;  // order of arrival, from 1
  std::string source;
  std::string base_dir;
  std::string text;
};

// A key of the state's meta table and the type of its value.
template <typename T>
struct MetaKey {
  const char* name;
};

namespace meta {
inline constexpr MetaKey<std::string> kWorkload{"workload"};  // the workload file's text
inline constexpr MetaKey<std::string> kCluster{"cluster"};    // the nodes run on, as YAML
inline constexpr MetaKey<std::string> kPlan{"plan"};          // the plan followed, as JSON
// The profile planned with, as CSV: what a resume reads (profile.csv is its
// copy for people; runs older than this key resume from that file).
inline constexpr MetaKey<std::string> kProfile{"profile"};
inline constexpr MetaKey<double> kPlannedMakespanS{"planned_makespan_s"};  // the first plan's
inline constexpr MetaKey<double> kProfilingS{"profiling_s"};
inline constexpr MetaKey<double> kPlanningS{"planning_s"};
inline constexpr MetaKey<double> kClockS{"clock_s"};  // the run clock when last saved
inline constexpr MetaKey<int> kPlanSwitches{"plan_switches"};
// saturn serve: the names of tasks a cancellation was asked for (a JSON
// array), so that a restart does not resume them.
inline constexpr MetaKey<std::string> kCancelRequests{"cancel_requests"};
}  // namespace meta

class RunState {
 public:
  // InputError if `create` is false and there is no run, or the file is not
  // a Saturn run state.
  static RunState Open(const std::string& run_dir, bool create);
  RunState(RunState&&) noexcept;
  RunState& operator=(RunState&&) noexcept;
  ~RunState();

  std::optional<std::string> Get(MetaKey<std::string> key);
  std::optional<double> Get(MetaKey<double> key);
  std::optional<int> Get(MetaKey<int> key);
  void Set(MetaKey<std::string> key, const std::string& value);
  void Set(MetaKey<double> key, double value);
  void Set(MetaKey<int> key, int value);

  std::vector<TaskRecord> Tasks();
  void SaveTask(const TaskRecord& task);

  void AddLoss(const std::string& task, long step, double loss);
  // Many points of one task's curve in one transaction (a pack's member's
  // curve when it settles); non-finite losses are left out, as AddLoss does.
  void AddLosses(const std::string& task, const std::vector<std::pair<long, double>>& points);
  std::vector<std::pair<long, double>> Losses(const std::string& task);

  void Append(const Event& event);
  std::vector<Event> Events();

  // Many writes as one (an array's hundreds of members starting or
  // settling): one transaction, and the event log flushed to disk once when
  // the outermost batch ends instead of after each event. Batches nest; one
  // ended by an exception keeps what was written (as each write alone
  // would have: the events and files that went with them stay too).
  //
  //   { RunState::Batch batch(state); for (...) { state.SaveTask(r); state.Append(e); } }
  class Batch {
   public:
    explicit Batch(RunState& state);
    ~Batch();
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

   private:
    RunState& state_;
  };
  // Where a resumed run's clock continues: the clock when last saved (once
  // a second) or the last event's time, whichever is later, so events never
  // go back in time after a kill.
  double ResumeClock();

  // saturn serve's submissions, stored before they are acknowledged.
  long AddSubmission(const Submission& submission);
  std::vector<Submission> Submissions();

  const std::string& dir() const { return dir_; }

 private:
  RunState(sqlite3* db, std::string dir, int events_fd)
      : db_(db), dir_(std::move(dir)), events_fd_(events_fd) {}
  std::optional<std::string> GetText(const std::string& key);
  void SetText(const std::string& key, const std::string& value);
  void CreateSubmissions();

  sqlite3* db_ = nullptr;
  std::string dir_;
  int events_fd_ = -1;
  int batch_depth_ = 0;
};

}  // namespace saturn
