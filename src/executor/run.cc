#include "executor/run.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "common/signals.h"
#include "executor/group_models.h"
#include "executor/progress.h"
#include "executor/replanner.h"
#include "executor/run_impl.h"
#include "executor/run_loop.h"
#include "executor/run_setup.h"

namespace saturn {

Run::Run(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Run::~Run() = default;

std::unique_ptr<Run> Run::OpenWorkload(const RunOptions& options, const Clock& clock) {
  auto impl = std::make_unique<Impl>(options, clock);
  SetUpRun(impl->run);
  impl->StartParts();
  return std::unique_ptr<Run>(new Run(std::move(impl)));
}

std::unique_ptr<Run> Run::OpenService(const ServiceSource& source, const RunOptions& options,
                                      const Clock& clock) {
  auto impl = std::make_unique<Impl>(options, clock);
  impl->service = true;
  std::vector<WorkloadTask> again = SetUpService(impl->run, source);
  impl->StartParts();
  impl->arrivals->Add(std::move(again));
  return std::unique_ptr<Run>(new Run(std::move(impl)));
}

RunSummary Run::Drive(const RunHooks& hooks) {
  RunContext& run = impl_->run;
  Arrivals& arrivals = *impl_->arrivals;
  Replanner replanner(run, *impl_->dispatcher);
  RunLoop loop(run, *impl_->dispatcher, replanner);
  bool service = impl_->service;
  bool print = run.options().progress && !service;
  double last_print = -1e9;
  LoopHooks h;
  h.before = hooks.each_turn;
  h.after_poll = [&] { impl_->AfterArrivals(); };
  h.stop = [&] { return (!service && run.AllDone()) || (hooks.stop && hooks.stop()); };
  h.may_replan = [&] { return !arrivals.Busy(); };
  h.after = [&] {
    if (print && run.Now() - last_print >= 10.0) {
      PrintProgress(run);
      last_print = run.Now();
    }
    if (hooks.after_turn) hooks.after_turn();
  };
  loop.Run(h);
  replanner.Wait();
  arrivals.Wait();
  bool interrupted = service || !run.AllDone();
  if (interrupted) {
    // Stopped: every worker checkpoints; the run is resumable.
    if (print) std::fprintf(stderr, "interrupted: stopping workers (they checkpoint)...\n");
    loop.Drain();
  }
  loop.Finish();
  RunSummary s = Summarize(run, interrupted);
  if (interrupted) return s;
  run.Emit(events::RunFinished(run.Now(), s.finished, s.failed, s.makespan_s));
  nlohmann::json report = WriteReport(run, s);
  WriteGroupModels(run, report);  // a table's groups: groups.safetensors, groups.json
  if (report.contains("best")) s.best = report["best"].get<std::vector<nlohmann::json>>();
  s.current_practice = report.value("current_practice", nlohmann::json());
  return s;
}

void Run::WriteReportNow() {
  RunContext& run = impl_->run;
  // Nothing planned yet: nothing to report.
  if (FirstPlanIndex(run) < 0) return;
  RunSummary s = Summarize(run, /*interrupted=*/true);
  // Up to now while tasks train; else to the last end (time the service sat
  // idle afterwards is no part of the run).
  bool training = false;
  for (int j = 0; j < run.NumTasks(); ++j)
    training = training || run.Running(j);
  if (training) s.makespan_s = std::max(s.makespan_s, run.Now());
  nlohmann::json report = WriteReport(run, s);
  // A table's groups (groups.safetensors, groups.json) once every task
  // ended: rewriting 10,000 groups' models (1.4 s) at each report would not do.
  if (run.AllDone()) WriteGroupModels(run, report);
}

const Plan& Run::CurrentPlan() const {
  return impl_->run.plan();
}

double Run::Now() const {
  return impl_->run.Now();
}

std::vector<Event> Run::PastEvents() {
  return impl_->run.site.state->Events();
}

void Run::Subscribe(std::function<void(const Event&)> listener) {
  impl_->run.SetEventListener(std::move(listener));
}

std::vector<std::pair<long, double>> Run::Losses(const std::string& task) {
  return impl_->run.site.state->Losses(task);
}

RunSummary RunWorkload(const RunOptions& options) {
  SteadyClock clock;
  std::unique_ptr<Run> run = Run::OpenWorkload(options, clock);
  CatchStopSignals();
  RunHooks hooks;
  hooks.stop = [] { return StopRequested().load(); };
  return run->Drive(hooks);
}

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

}  // namespace saturn
