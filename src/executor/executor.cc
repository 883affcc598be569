#include "executor/executor.h"

#include <cstdio>
#include <filesystem>

#include "common/signals.h"
#include "executor/dispatcher.h"
#include "executor/progress.h"
#include "executor/replanner.h"
#include "executor/run_context.h"
#include "executor/run_loop.h"
#include "executor/run_setup.h"

namespace saturn {
namespace {

// `saturn run`: the run loop (run_loop.h) until every task is done or the
// run is interrupted, then the report.
class Executor {
 public:
  Executor(const RunOptions& options, const Clock& clock) : run_(options, clock) {}

  RunSummary Run() {
    SetUpRun(run_);
    Dispatcher dispatcher(run_);
    Replanner replanner(run_, dispatcher);
    RunLoop loop(run_, dispatcher, replanner);
    CatchStopSignals();
    double last_print = -1e9;
    LoopHooks hooks;
    hooks.stop = [&] { return run_.AllDone() || StopRequested(); };
    hooks.after = [&] {
      if (run_.options().progress && run_.Now() - last_print >= 10.0) {
        PrintProgress(run_);
        last_print = run_.Now();
      }
    };
    loop.Run(hooks);
    if (!run_.AllDone()) {
      // Stopped by a signal: every worker checkpoints; the run is resumable.
      interrupted_ = true;
      if (run_.options().progress) {
        std::fprintf(stderr, "interrupted: stopping workers (they checkpoint)...\n");
      }
      loop.Drain();
    }
    loop.Finish();
    return Finish();
  }

 private:
  RunSummary Finish() {
    RunSummary s = Summarize(run_, interrupted_);
    if (s.interrupted) return s;
    run_.Emit(events::RunFinished(run_.Now(), s.finished, s.failed, s.makespan_s));
    nlohmann::json report = WriteReport(run_, s);
    if (report.contains("best")) s.best = report["best"].get<std::vector<nlohmann::json>>();
    s.current_practice = report.value("current_practice", nlohmann::json());
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
