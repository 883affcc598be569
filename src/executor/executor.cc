#include "executor/executor.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "common/signals.h"
#include "executor/dispatcher.h"
#include "executor/progress.h"
#include "executor/replanner.h"
#include "executor/run_context.h"
#include "executor/run_setup.h"

namespace saturn {
namespace {

void Pause() {
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

// The loop of `saturn run`: watch workers, re-plan, start what may start,
// save the run clock, print progress, until every task is done or the run is
// interrupted.
class Executor {
 public:
  Executor(const RunOptions& options, const Clock& clock) : run_(options, clock) {}

  RunSummary Run() {
    SetUpRun(run_);
    Dispatcher dispatcher(run_);
    Replanner replanner(run_, dispatcher);
    Loop(dispatcher, replanner);
    return Finish();
  }

 private:
  void Loop(Dispatcher& dispatcher, Replanner& replanner) {
    double last_save = -1e9, last_print = -1e9;
    CatchStopSignals();
    while (true) {
      dispatcher.Poll();
      if (run_.AllDone()) break;
      if (StopRequested()) {
        Interrupt(dispatcher);
        break;
      }
      replanner.Poll();
      dispatcher.Dispatch();
      double now = run_.Now();
      if (now - last_save >= 1.0) {
        run_.state->Set(meta::kClockS, now);
        last_save = now;
      }
      if (run_.options.progress && now - last_print >= 10.0) {
        PrintProgress(run_);
        last_print = now;
      }
      Pause();
    }
    replanner.Wait();
    run_.state->Set(meta::kClockS, run_.Now());
  }

  // Stops every worker the way a plan switch does (they checkpoint), records
  // where each task is, and leaves the run resumable.
  void Interrupt(Dispatcher& dispatcher) {
    interrupted_ = true;
    if (run_.options.progress) {
      std::fprintf(stderr, "interrupted: stopping workers (they checkpoint)...\n");
    }
    for (int j = 0; j < run_.NumTasks(); ++j)
      dispatcher.Preempt(j);
    while (true) {
      dispatcher.Poll();
      if (!dispatcher.AnyRunning()) break;
      Pause();
    }
    run_.Emit(events::RunInterrupted(run_.Now()));
  }

  RunSummary Finish() {
    RunSummary s = Summarize(run_, interrupted_);
    if (s.interrupted) return s;
    run_.Emit(events::RunFinished(run_.Now(), s.finished, s.failed, s.makespan_s));
    nlohmann::json report = WriteReport(run_, s);
    if (report.contains("best")) s.best = report["best"].get<std::vector<nlohmann::json>>();
    return s;
  }

  RunContext run_;
  bool interrupted_ = false;
};

}  // namespace

std::string DefaultRunDir(const std::string& workload_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // The path as the user named it (a linked folder keeps its name here), with
  // "." and ".." resolved.
  fs::path file = fs::absolute(workload_path, ec).lexically_normal();
  fs::path cwd = fs::current_path(ec);
  fs::path shown = file.lexically_relative(cwd);
  if (shown.empty() || *shown.begin() == "..") shown = file.relative_path();
  shown.replace_extension();
  // One folder name per file: "examples/quickstart/workload.yaml" runs in
  // saturn-runs/examples-quickstart-workload.
  std::string name;
  for (const fs::path& part : shown) {
    if (part == "." || part.empty()) continue;
    name += (name.empty() ? "" : "-") + part.string();
  }
  return "saturn-runs/" + (name.empty() ? std::string("workload") : name);
}

RunSummary RunWorkload(const RunOptions& options, const Clock& clock) {
  return Executor(options, clock).Run();
}

RunSummary RunWorkload(const RunOptions& options) {
  SteadyClock clock;
  return RunWorkload(options, clock);
}

}  // namespace saturn
