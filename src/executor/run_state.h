// A run's durable state, in its run directory: `state.sqlite` (tasks, their
// checkpoints and attempts, loss curves, the run clock, the current plan) and
// `events.jsonl` (append-only event log, flushed to disk per event). Every
// change is committed before the executor acts on it, so after a crash
// (orchestrator killed, machine rebooted) `saturn run --resume` continues
// from the last checkpoints without redoing finished work.
//
//   RunState state = RunState::Open(run_dir, /*create=*/true);
//   state.SaveTask(row);
//   state.Append(event);
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spec/events.h"

struct sqlite3;

namespace saturn {

struct TaskRecord {
  std::string name;
  std::string status = "waiting";  // waiting | running | finished | failed
  long checkpoint_step = 0;        // resumable from this step
  long steps_done = 0;             // last step reported
  int attempts = 0;                // failed attempts so far
  std::string error;
  double final_loss = 0.0;
  double first_start_s = -1.0;
  double end_s = -1.0;
  std::string technique;  // last configuration run
  int gpus = 0;
  std::string node;
  std::vector<int> gpu_ids;
  int worker_pgid = 0;  // process group of a running worker
};

class RunState {
 public:
  // InputError if `create` is false and there is no run, or the file is not
  // a Saturn run state.
  static RunState Open(const std::string& run_dir, bool create);
  RunState(RunState&&) noexcept;
  RunState& operator=(RunState&&) noexcept;
  ~RunState();

  std::optional<std::string> Get(const std::string& key);
  void Set(const std::string& key, const std::string& value);

  std::vector<TaskRecord> Tasks();
  void SaveTask(const TaskRecord& task);

  void AddLoss(const std::string& task, long step, double loss);
  std::vector<std::pair<long, double>> Losses(const std::string& task);

  void Append(const Event& event);
  std::vector<Event> Events();

  const std::string& dir() const { return dir_; }

 private:
  RunState(sqlite3* db, std::string dir, int events_fd)
      : db_(db), dir_(std::move(dir)), events_fd_(events_fd) {}
  sqlite3* db_ = nullptr;
  std::string dir_;
  int events_fd_ = -1;
};

}  // namespace saturn
