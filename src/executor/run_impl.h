// What a Run (run.h) holds, shared by its two files: run.cc (opening and
// driving a run) and run_tasks.cc (submissions, cancellations, views).
// Internal to the executor.
#pragma once

#include <map>
#include <memory>
#include <set>
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

  // Tasks that have not joined the run (arrivals' own queue aside).
  std::map<std::string, std::string> rejected;  // failed while profiled: why
  std::set<std::string> cancel_on_join;         // cancelled while being profiled
  std::set<std::string> cancelled_unjoined;     // cancelled before profiling
  std::map<std::string, double> submitted_at;
};

}  // namespace saturn
