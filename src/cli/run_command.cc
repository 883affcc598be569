// saturn run: profile, plan, train and re-plan a workload end to end
// (executor/run.h).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/executor_options.h"
#include "common/format.h"
#include "common/fs.h"
#include "executor/run.h"
#include "planner/registry.h"
#include "report/best.h"
#include "report/phrases.h"

namespace saturn {
namespace {

// The report's warning that tasks trained markedly slower than profiled,
// or "" (none, or no report to read).
std::string SlowdownWarning(const std::string& run_dir) {
  const std::string path = run_dir + "/report.json";
  if (!std::filesystem::exists(path)) return "";
  const nlohmann::json report = nlohmann::json::parse(ReadFile(path), nullptr, false);
  if (!report.is_object() || !report.contains("slowdown_vs_profile")) return "";
  const nlohmann::json& slowdown = report["slowdown_vs_profile"];
  if (!slowdown.is_object() || !slowdown.value("warning", nlohmann::json()).is_string()) return "";
  return slowdown["warning"].get<std::string>();
}

int RunRun(const RunOptions& o) {
  BuiltinSolvers().Get(o.solve.solver);
  RunSummary s = RunWorkload(o);
  if (s.interrupted) {
    std::fprintf(
        stderr,
        "run interrupted; every task checkpointed. Continue with: saturn run %s --resume%s\n",
        o.workload_path.c_str(), o.run_dir.empty() ? "" : (" --run-dir " + o.run_dir).c_str());
    return 130;
  }
  std::fprintf(stderr,
               "run %s: %d finished, %d failed%s; makespan %s (first plan %s, ratio %.2f), %d plan "
               "switches; report: %s/report.html\n",
               s.failed ? "ended with failures" : "complete", s.finished, s.failed,
               s.stopped ? (", " + std::to_string(s.stopped) + " stopped early").c_str() : "",
               FormatDuration(s.makespan_s).c_str(), FormatDuration(s.planned_makespan_s).c_str(),
               s.planned_makespan_s > 0 ? s.makespan_s / s.planned_makespan_s : 0.0,
               s.plan_switches, s.run_dir.c_str());
  if (const nlohmann::json& cp = s.current_practice;
      cp.is_object() && cp["speedup_measured"].is_number() && s.makespan_s > 0) {
    SpeedupFigures f;
    f.current_practice_s = cp["estimated_makespan_s"].get<double>();
    f.run_s = s.makespan_s;
    f.setup_s = s.profiling_s + s.planning_s;
    f.planned_speedup = cp["speedup_planned"].get<double>();
    std::fprintf(stderr,
                 "current practice (each task on a whole node, one after another) would take "
                 "~%s, estimated from the profile: %s\n",
                 FormatDuration(f.current_practice_s).c_str(), SpeedupVerdict(f, false).c_str());
  }
  // Tasks that trained markedly slower than profiled (report.json's
  // "slowdown_vs_profile"): said after the comparison it qualifies.
  if (const std::string warning = SlowdownWarning(s.run_dir); !warning.empty()) {
    std::fprintf(stderr, "warning: %s\n", warning.c_str());
  }
  constexpr size_t kBestLines = 8;  // more (a table's groups): in the report
  for (size_t i = 0; i < s.best.size(); ++i) {
    const nlohmann::json& b = s.best[i];
    if (i == kBestLines) {
      std::fprintf(stderr, "best of %zu more sweeps: in %s/report.html and report.json\n",
                   s.best.size() - kBestLines, s.run_dir.c_str());
      break;
    }
    std::string value =
        b.value("metric", "eval_loss") == "eval_loss"
            ? "evaluation loss " + FormatLoss(b["final_eval_loss"].get<double>())
            : b["metric"].get<std::string>() + " " + FormatLoss(b["value"].get<double>());
    std::fprintf(stderr, "best of %s: %s, %s; model: %s/tasks/%s/model.pt%s\n",
                 b["sweep"].get<std::string>().c_str(), b["task"].get<std::string>().c_str(),
                 value.c_str(), s.run_dir.c_str(), b["task"].get<std::string>().c_str(),
                 EarlierBestPhrase(b, s.run_dir + "/").c_str());
    if (std::string margin = MarginPhrase(b); !margin.empty()) {
      std::fprintf(stderr, "  %s\n", margin.c_str());
    }
  }
  return s.failed ? 1 : 0;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* status) {
  auto o = std::make_shared<RunOptions>();
  auto no_introspection = std::make_shared<bool>(false);
  CLI::App* cmd =
      app.add_subcommand("run", "Profile, plan and train a workload, re-planning as it runs");
  cmd->add_option("workload", o->workload_path, "Workload file (YAML, Contract 5)")->required();
  cmd->add_option("--run-dir", o->run_dir,
                  "Run directory (default: saturn-runs/<workload path without extension, / as ->)");
  cmd->add_flag("--resume", o->resume, "Continue the run found in the run directory");
  cmd->add_flag("--fresh", o->fresh,
                "Start afresh where a run already lives: the earlier run is moved aside to "
                "RUN_DIR.old-N (never deleted)")
      ->excludes("--resume");
  AddExecutorOptions(cmd, o.get(), no_introspection.get());
  cmd->add_option("--profile", o->profile_path, "Use this profile table instead of profiling");
  cmd->add_option("--plugin", o->plugins, "Technique plug-in (shared library); repeatable");
  auto no_pack = std::make_shared<bool>(false);
  cmd->add_flag("--no-pack", *no_pack,
                "Never train tasks in packs (several LoRA tasks on one base in one worker): "
                "profiling does not measure packs and every task trains alone");
  cmd->callback([o, no_introspection, no_pack, status] {
    o->introspection = !*no_introspection;
    o->pack = !*no_pack;
    *status = RunRun(*o);
  });
}

}  // namespace saturn
