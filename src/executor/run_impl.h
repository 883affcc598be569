// What a Run (run.h) holds, shared by its two files: run.cc (opening and
// driving a run) and run_tasks.cc (submissions, cancellations, views).
// Internal to the executor.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>

#include "executor/arrivals.h"
#include "executor/dispatcher.h"
#include "executor/run.h"
#include "executor/run_context.h"

namespace saturn {

struct Run::Impl {
  Impl(const RunOptions& options, const Clock& clock) : run(options, clock) {}

  // After set-up: the parts that start, watch and add tasks.
  void StartParts() {
    dispatcher = std::make_unique<Dispatcher>(run);
    arrivals = std::make_unique<Arrivals>(run, *dispatcher);
  }
  // Each turn: joins profiled arrivals; those refused fail with the reason,
  // those cancelled while profiled end cancelled once joined.
  void AfterArrivals();
  // Ends a task that has not joined the run as cancelled, durably; `joins`:
  // it is being profiled and will be cancelled through the dispatcher.
  void CancelUnjoined(const std::string& task, bool joins);
  // A cancellation asked for `task`, kept in the state so that a restart
  // does not resume it (and forgotten when the name is submitted again).
  void RememberCancel(const std::string& task);

  RunContext run;
  bool service = false;  // saturn serve: runs until stopped, takes submissions
  std::unique_ptr<Dispatcher> dispatcher;
  std::unique_ptr<Arrivals> arrivals;

  // What the run knows of a submitted task beside its record: when it was
  // submitted and, before it joins the run (while the arrivals hold it), how
  // its life ended if it ended there.
  struct Submitted {
    double at_s = 0.0;
    std::optional<TaskStatus> ended;  // failed (profiling refused it) or cancelled
    std::string error;
    bool cancel_on_join = false;  // cancelled while being profiled
  };
  std::map<std::string, Submitted> submitted;
};

}  // namespace saturn
