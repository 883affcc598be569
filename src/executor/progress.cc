#include "executor/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <map>
#include <numeric>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/format.h"
#include "common/fs.h"
#include "planner/explain.h"
#include "protocol/best_model.h"
#include "report/phrases.h"
#include "report/run_costs.h"
#include "report/run_report.h"

namespace saturn {
namespace {

double Median(std::deque<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// "  name 40% (technique xN, ETA 1m 5s)" for a running task.
std::string RunningLine(const RunContext& run, int j) {
  const LiveTask& l = run.tasks[j];
  double pct = 100.0 * l.reported.step / std::max(1L, run.Steps(j));
  std::string eta =
      l.reported.recent_step_s.empty()
          ? "?"
          : FormatDuration(Median(l.reported.recent_step_s) * (run.Steps(j) - l.reported.step));
  std::optional<Assignment> on = run.tasks.placements().On(j);
  if (!on) return "";
  const Option& o = run.tasks.problem().tasks[j].options[on->option];
  // A pack's worker: its name and members ("pack-1 (a, b, c)").
  std::string name = l.record.name;
  if (l.pack_host == j) {
    std::string members;
    int running = 0;
    for (int m = 0; m < run.NumTasks(); ++m) {
      if (run.tasks[m].pack_host != j || run.tasks[m].record.status != TaskStatus::kRunning)
        continue;
      if (++running <= 4) members += (members.empty() ? "" : ", ") + run.tasks[m].record.name;
    }
    if (running > 4) members += " and " + std::to_string(running - 4) + " more";
    name = l.pack + " (" + members + ")";
  }
  return "  " + name + " " + FormatFixed(pct, 0) + "% (" + o.technique + " x" +
         std::to_string(o.gpus) + ", ETA " + eta + ")";
}

std::string PlanFile(const RunContext& run, int n) {
  return run.site.run_dir + "/plan-" + std::to_string(n) + ".json";
}

}  // namespace

int FirstPlanIndex(const RunContext& run) {
  // A run's first plan is plan-0; a service's, its first arrivals' (plan-1).
  for (int n = 0; n <= run.switches(); ++n) {
    if (std::filesystem::exists(PlanFile(run, n))) return n;
  }
  return -1;
}

std::vector<TaskProgress> Snapshot(const RunContext& run) {
  std::vector<TaskProgress> progress(run.NumTasks());
  // A planned pack that will start as one (Dispatcher::StartPack): none of
  // its members trained yet, the very members its folder last trained (it
  // resumes from its own checkpoint), or members that stand at one step
  // with their own checkpoints there (MembersStandTogether). Otherwise its
  // members go on alone.
  std::unordered_map<std::string_view, const std::string*> planned_pack;
  struct Members {
    nlohmann::json names = nlohmann::json::array();
    std::vector<int> tasks;
    bool apart = false;  // some member trained: it resumes only as those members
  };
  std::unordered_map<std::string_view, Members> packs;
  for (const PlanTask& t : run.plan().tasks) {
    int j = t.pack.empty() ? -1 : run.tasks.IndexOf(t.task);
    if (j < 0 || run.Done(j) || run.tasks[j].unpacked) continue;
    planned_pack[t.task] = &t.pack;
    Members& m = packs[t.pack];
    m.names.push_back(t.task);
    m.tasks.push_back(j);
    m.apart = m.apart || run.tasks[j].record.checkpoint_step > 0;
  }
  for (auto& [pack, m] : packs) {
    if (!m.apart || MembersStandTogether(run, m.tasks)) {
      m.apart = false;
      continue;
    }
    std::error_code ec;
    std::string last = run.site.run_dir + "/packs/" + std::string(pack) + "/members.json";
    m.apart = !std::filesystem::exists(last, ec) ||
              nlohmann::json::parse(ReadFile(last), nullptr, false) != m.names;
  }
  for (int j = 0; j < run.NumTasks(); ++j) {
    const LiveTask& l = run.tasks[j];
    TaskProgress& p = progress[j];
    p.finished = run.Done(j);
    p.done = std::min(1.0, static_cast<double>(l.reported.step) / std::max(1L, run.Steps(j)));
    // Expected work as a fraction of the runtime (a launch's fixed costs do
    // not shrink with the steps), by the task's first configuration.
    double steps = run.stopper.ExpectedFraction(run.WorkloadTaskOf(j), run.tasks.workload());
    const Problem& problem = run.tasks.problem();
    const Option& first = problem.tasks[static_cast<size_t>(j)].options.front();
    if (steps < 1.0 && first.runtime_s > 0) {
      p.expected = std::max(
          p.done, ScaledRuntime(run.tasks.profile(), problem, j, first, steps) / first.runtime_s);
    }
    p.has_checkpoint = l.record.checkpoint_step > 0;
    // The pack it trains in, or the plan's for it unless it goes on alone.
    const bool in_pack = run.Running(j) && l.pack_host >= 0;
    if (in_pack) {
      p.pack = l.pack;
      // A LoRA pack's member, stopped, resumes from its own checkpoint
      // (an array's restarts from 0).
      p.resumes_alone = run.WorkloadTaskOf(j).group.empty();
    } else if (auto it = planned_pack.find(l.record.name);
               it != planned_pack.end() && !l.unpacked && !run.Running(j)) {
      if (!packs[*it->second].apart) p.pack = *it->second;
    } else if (p.finished) {
      p.pack = l.pack;  // new packs are named after the run's last (PackArrivals)
    }
    std::optional<Assignment> on = run.tasks.placements().On(j);
    if (run.Running(j) && on) {
      p.running = RunningOn{on->option, on->node, on->gpu_ids};
      // A pack's steps are its members' together: not this task's speed.
      if (!in_pack && l.reported.recent_step_s.size() >= 3) {
        double profiled = run.tasks.problem().tasks[j].options[on->option].runtime_s / run.Steps(j);
        p.slowdown = Median(l.reported.recent_step_s) / profiled;
      }
    }
    p.slowdown = std::isfinite(p.slowdown) && p.slowdown > 0 ? p.slowdown : 1.0;
  }
  return progress;
}

bool MembersStandTogether(const RunContext& run, const std::vector<int>& members) {
  if (members.size() < 2) return false;
  const long step = run.tasks[members[0]].record.checkpoint_step;
  for (int m : members) {
    std::error_code ec;
    if (run.tasks[m].record.checkpoint_step != step || step <= 0 ||
        !std::filesystem::exists(
            run.TaskDirOf(m) + "/checkpoints/checkpoint-" + std::to_string(step) + "/meta.json",
            ec))
      return false;
  }
  return true;
}

void PrintProgress(const RunContext& run) {
  int finished = 0, failed = 0;
  std::string running;
  for (int j = 0; j < run.NumTasks(); ++j) {
    TaskStatus status = run.tasks[j].record.status;
    finished += status == TaskStatus::kFinished || status == TaskStatus::kStopped;
    failed += status == TaskStatus::kFailed;
    if (status == TaskStatus::kRunning) running += RunningLine(run, j);
  }
  double end = run.estimated_end_s() > 0 ? run.estimated_end_s() : run.planned_makespan_s();
  std::fprintf(stderr, "[%s] %d/%d done%s, %s%s\n", FormatDuration(run.Now()).c_str(), finished,
               run.NumTasks(), failed ? (", " + std::to_string(failed) + " failed").c_str() : "",
               PlanEndsClause(run.Now(), end, run.planned_makespan_s()).c_str(),
               running.empty() ? "" : ("\n" + running).c_str());
}

RunSummary Summarize(const RunContext& run, bool interrupted) {
  RunSummary s;
  s.run_dir = run.site.run_dir;
  s.interrupted = interrupted;
  for (const LiveTask& l : run.tasks) {
    s.finished += l.record.status == TaskStatus::kFinished;
    s.failed += l.record.status == TaskStatus::kFailed;
    s.stopped += l.record.status == TaskStatus::kStopped;
    s.makespan_s = std::max(s.makespan_s, l.record.end_s);
  }
  s.planned_makespan_s = run.planned_makespan_s();
  s.plan_switches = run.switches();
  s.profiling_s = run.profiling_s();
  s.planning_s = run.planning_s();
  return s;
}

namespace {

// "in pack-1 with 2 other tasks (the plan with packs 5m00s, every task alone
// 8m00s); ": why a member trained where its pack did.
std::string WhyInPack(const Plan& plan, const std::string& pack) {
  long others = -1;
  for (const PlanTask& t : plan.tasks)
    others += t.pack == pack;
  std::string why = "in " + pack;
  if (others > 0) why += " with " + Plural(others, "other task");
  if (plan.extra.contains("unpacked_makespan_s")) {
    why += " (the plan with packs " + FormatDuration(plan.makespan_s) + ", every task alone " +
           FormatDuration(plan.extra["unpacked_makespan_s"].get<double>()) + ")";
  }
  return why + "; ";
}

}  // namespace

nlohmann::json WriteReport(RunContext& run, const RunSummary& summary) {
  RunReportInput report;
  // A service has no one workload: its state folder, as it stands now.
  report.workload = run.options().workload_path.empty()
                        ? "saturn serve --state-dir " + run.site.run_dir + " (so far)"
                        : run.options().workload_path;
  report.run_dir = run.site.run_dir;
  report.cluster = run.tasks.workload().cluster;
  const int first = FirstPlanIndex(run);
  report.first_plan = LoadPlanFile(PlanFile(run, first));
  report.makespan_s = summary.makespan_s;
  report.profiling_s = run.profiling_s();
  report.planning_s = run.planning_s();
  // The plans as solved, in order: the first and each switched to.
  std::vector<Plan> solved_plans = {report.first_plan};
  for (int n = first + 1; std::filesystem::exists(PlanFile(run, n)); ++n)
    solved_plans.push_back(LoadPlanFile(PlanFile(run, n)));
  std::vector<RunReportTask> tasks = ReportTasks(run);
  for (int j = 0; j < run.NumTasks(); ++j) {
    const TaskRecord& r = run.tasks[j].record;
    bool finished = r.status == TaskStatus::kFinished;
    // On resume, where it ran before is in the record only: no reason then.
    // A pack's member ran where its host's worker did.
    int holder = run.tasks.HolderOf(j);
    std::optional<Assignment> ran = run.tasks.placements().Last(holder);
    RunReportTask t = std::move(tasks[static_cast<size_t>(j)]);
    t.steps_done = finished ? run.Steps(j) : r.checkpoint_step;
    t.losses = run.site.state->Losses(r.name);
    // Its profiled paces, on every node each configuration fits: the
    // profile's runtime less a launch's fixed costs (ScaledRuntime at no
    // steps) over its steps, and those costs, paid by every launch (a run
    // stopped early pays them over few steps).
    const Problem& problem = run.tasks.problem();
    for (const Option& o : problem.tasks[j].options) {
      if (o.starts_now || o.runtime_s <= 0) continue;
      double fixed = std::min(o.runtime_s, ScaledRuntime(run.tasks.profile(), problem, j, o, 0.0));
      for (int n = 0; n < problem.NumNodes(); ++n) {
        if (!problem.Fits(o, n)) continue;
        t.profiled.push_back({o.technique, o.gpus, problem.nodes[static_cast<size_t>(n)].name,
                              (o.runtime_s - fixed) / std::max(1L, run.Steps(j)), fixed});
      }
    }
    t.pack = run.tasks[j].pack;
    // In a pack its pace is the pack's, not the one profiled alone.
    if (!t.pack.empty()) t.profiled.clear();
    t.disk_bytes = FolderBytes(run.TaskDirOf(j));
    if (ran) {
      // The plan that chose its configuration: the first of the plans as
      // solved (plan-<n>.json) that runs it so, else the one followed last.
      // Not the plan followed at the end: that one is re-timed to how the
      // run went, and no solver made it, so a configuration that would end
      // sooner there says nothing of what the solver found.
      const Problem& problem = run.tasks.problem();
      // The holder's option, and the member's own of that configuration.
      const Option& o = problem.tasks[holder].options[ran->option];
      int own = ran->option;
      if (holder != j) {
        own = -1;
        const std::vector<Option>& mine = problem.tasks[j].options;
        for (size_t k = 0; k < mine.size(); ++k) {
          if (mine[k].technique == o.technique && mine[k].gpus == o.gpus && mine[k].type == o.type)
            own = static_cast<int>(k);
        }
      }
      auto runs_it = [&](const Plan& plan) {
        return std::any_of(plan.tasks.begin(), plan.tasks.end(), [&](const PlanTask& e) {
          return e.task == r.name && e.technique == o.technique && e.gpus == o.gpus;
        });
      };
      const Plan* plan = nullptr;
      for (const Plan& solved : solved_plans) {
        if (runs_it(solved)) {
          plan = &solved;
          break;
        }
      }
      if (plan == nullptr && runs_it(run.plan())) plan = &run.plan();
      if (own >= 0) t.why = WhyThisOption(problem, j, own, plan);
      if (!t.pack.empty()) t.why = WhyInPack(run.plan(), t.pack) + t.why;
    }
    report.tasks.push_back(std::move(t));
  }
  std::vector<HyperParameters> hyperparameters = HyperParametersOf(run);
  for (size_t j = 0; j < report.tasks.size(); ++j)
    report.tasks[j].hyperparameters = std::move(hyperparameters[j]);
  report.tasks = InWrittenOrder(run, std::move(report.tasks));
  report.events = run.site.state->Events();
  return WriteRunReport(report);
}

std::vector<HyperParameters> HyperParametersOf(const RunContext& run) {
  std::vector<SweptTask> swept;
  for (int j = 0; j < run.NumTasks(); ++j) {
    const WorkloadTask& w = run.WorkloadTaskOf(j);
    swept.push_back({w.name, w.sweep, w.varied});
  }
  return SweptValues(swept);
}

std::vector<size_t> WrittenOrder(const RunContext& run) {
  std::map<std::string, std::vector<size_t>> places;
  const size_t n = static_cast<size_t>(run.NumTasks());
  for (size_t j = 0; j < n; ++j) {
    const std::string& group = run.WorkloadTaskOf(static_cast<int>(j)).stop_group;
    if (!group.empty()) places[group].push_back(j);
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  for (const auto& [group, at] : places) {
    std::vector<size_t> sorted = at;
    std::stable_sort(sorted.begin(), sorted.end(), [&](size_t a, size_t b) {
      return run.WorkloadTaskOf(static_cast<int>(a)).written <
             run.WorkloadTaskOf(static_cast<int>(b)).written;
    });
    for (size_t k = 0; k < at.size(); ++k)
      order[at[k]] = sorted[k];
  }
  return order;
}

std::vector<RunReportTask> ReportTasks(const RunContext& run, bool best_models) {
  std::vector<RunReportTask> tasks;
  for (int j = 0; j < run.NumTasks(); ++j) {
    RunReportTask t;
    static_cast<TaskState&>(t) = run.tasks[j].record;
    t.steps = run.Steps(j);
    t.sweep = run.WorkloadTaskOf(j).sweep;
    t.settings = run.WorkloadTaskOf(j).spec;
    t.select = run.WorkloadTaskOf(j).select;
    // A table task's group and its training rows (contracts' ExpandGroups).
    t.group = run.WorkloadTaskOf(j).group;
    if (!t.group.empty()) t.train_rows = t.settings["data"].value("train_rows", 0L);
    std::optional<BestEval> kept;
    if (best_models) kept = ReadBestEval(run.TaskDirOf(j) + "/best");
    if (kept) {
      t.best_model = BestEvalToJson(*kept);
      t.best_model["path"] = "tasks/" + t.name + "/best/model.pt";
    }
    tasks.push_back(std::move(t));
  }
  return tasks;
}

}  // namespace saturn
