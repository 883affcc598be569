#include "executor/replanner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "executor/progress.h"
#include "planner/baselines.h"
#include "replan/packed.h"

namespace saturn {

void BackgroundReplanner::Poll(const std::function<Solve()>& prepare,
                               const std::function<void(const ReplanDecision&)>& apply) {
  if (pending_.valid()) {
    if (pending_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
    apply(pending_.get());
    next_check_ = clock_.Now() + interval_s_;
    return;
  }
  if (clock_.Now() < next_check_) return;
  pending_ = std::async(std::launch::async, prepare());
}

void BackgroundReplanner::Wait() {
  if (pending_.valid()) pending_.wait();
}

std::optional<PackTerms> RunPackTerms(const RunContext& run) {
  // Packs to keep (a plan that has them, also under --no-pack), or packs
  // allowed to form.
  if (!run.options().pack && !PlanHasPacks(run.plan())) return std::nullopt;
  try {
    PackTerms terms =
        PackTermsFromProfile(run.tasks.profile(), run.tasks.problem(), run.ProfileSource());
    ExpectStops(run, terms);
    if (terms.Any()) return terms;
  } catch (const InputError& e) {
    // The first plan read the same columns: only a batch joined since can
    // bring a bad one. Its tasks are planned alone.
    std::fprintf(stderr, "re-planning without packs: %s\n", e.what());
  }
  return std::nullopt;
}

namespace {

// The highest N of the run's packs named pack-N: its packs' folders (a pack
// split, or resumed, leaves one no task names any longer) and its tasks'.
int HighestPackNumber(const RunContext& run) {
  int highest = 0;
  for (const LiveTask& l : run.tasks)
    highest = std::max(highest, PackNumber(l.pack));
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(run.site.run_dir + "/packs", ec))
    highest = std::max(highest, PackNumber(e.path().filename().string()));
  return highest;
}

}  // namespace

void ExpectStops(const RunContext& run, PackTerms& terms) {
  for (int j = 0; j < run.NumTasks(); ++j) {
    const WorkloadTask& task = run.WorkloadTaskOf(j);
    PackTerms::Member& m = terms.tasks[static_cast<size_t>(j)];
    if (!task.early_stop.enabled() || task.steps <= 0 || m.steps <= 0) continue;
    const double scale = m.steps / static_cast<double>(task.steps);
    for (const auto& [steps, p] : run.stopper.StopDistribution(task, run.tasks.workload()))
      m.stops.emplace_back(static_cast<double>(steps) * scale, p);
    m.group = EarlyStopper::GroupOf(task, run.tasks.workload()).first;
    m.stop_group = task.stop_group;
  }
}

ReplanPolicy RunReplanPolicy(RunContext& run, double time_limit_s) {
  ReplanPolicy policy = run.NextReplanPolicy(time_limit_s);
  policy.pack_arrivals = run.options().pack;
  policy.packs_numbered_to = HighestPackNumber(run);
  return policy;
}

std::shared_ptr<const PackTerms> Replanner::Terms() {
  if (terms_for_ != run_.tasks.version() || has_packs_ != PlanHasPacks(run_.plan())) {
    std::optional<PackTerms> terms = RunPackTerms(run_);
    terms_ = terms ? std::make_shared<const PackTerms>(std::move(*terms)) : nullptr;
    terms_for_ = run_.tasks.version();
    has_packs_ = PlanHasPacks(run_.plan());
  }
  return terms_;
}

void Replanner::Poll() {
  if (!run_.options().introspection) return;
  if (run_.replan_soon && !background_.Busy()) {
    background_.CheckNow();
    run_.replan_soon = false;
  }
  auto prepare = [&] {
    double time_limit_s =
        std::min(run_.options().solve.time_limit_s, std::max(1.0, run_.interval_s() / 4));
    ReplanPolicy policy = RunReplanPolicy(run_, time_limit_s);
    double now = run_.Now();
    solving_for_ = run_.tasks.version();
    return BackgroundReplanner::Solve(
        [problem = run_.tasks.problem(), progress = Snapshot(run_), plan = run_.plan(), now, policy,
         terms = Terms()] { return Replan(problem, progress, plan, now, policy, terms.get()); });
  };
  background_.Poll(prepare, [&](const ReplanDecision& d) { Apply(d); });
}

void Replanner::Apply(const ReplanDecision& d) {
  // Tasks arrived while it was solved: its task numbers are stale.
  if (solving_for_ != run_.tasks.version()) return;
  run_.SetEstimatedEnd(d.switch_plan ? d.new_end_s : d.current_end_s);
  if (!d.switch_plan) {
    // Keep: follow the re-timed plan, the one whose end was estimated (and
    // the one the simulator follows): running tasks stay as they are, and
    // each task not started goes wherever on its node it starts earliest
    // in the plan's order. Not when a task started meanwhile where this
    // plan does not put it: the next check re-times from there.
    if (d.preempted.empty() && StartedElsewhere(run_, d.plan).empty()) {
      run_.FollowRetimed(d.plan);
      run_.Requeue();
    }
    return;
  }
  // A running pack the plan does not split (d.split) is never stopped nor
  // regrouped (an array keeps no checkpoint): one that started while this
  // was solved, placed elsewhere by it, or with members taken out of it; nor
  // a split pack that no longer runs with the members it had (it ended
  // meanwhile and started again with fewer, under its name). The next check
  // plans from where it runs.
  auto split = [&](int j) {
    auto it = d.split.find(run_.tasks[j].pack);
    if (it == d.split.end()) return false;
    std::set<std::string> now;
    for (const LiveTask& l : run_.tasks)
      if (l.pack_host == run_.tasks[j].pack_host && l.record.status == TaskStatus::kRunning)
        now.insert(l.record.name);
    return now == it->second;
  };
  for (const std::string& name : StartedElsewhere(run_, d.plan)) {
    int j = run_.tasks.IndexOf(name);
    if (run_.tasks[j].pack_host >= 0 && !split(j)) {
      run_.replan_soon = true;
      return;
    }
  }
  for (const PlanTask& t : d.plan.tasks) {
    int j = run_.tasks.IndexOf(t.task);
    if (j >= 0 && run_.Running(j) && run_.tasks[j].pack_host >= 0 && t.pack != run_.tasks[j].pack &&
        !split(j)) {
      run_.replan_soon = true;
      return;
    }
  }
  std::vector<std::string> moved = SwitchTo(run_, dispatcher_, d);
  run_.Emit(events::PlanSwitched(run_.Now(), events::SwitchWhy::kIntrospection, d.current_end_s,
                                 d.new_end_s, moved));
  if (run_.options().progress) {
    std::fprintf(stderr, "[%s] %s\n", FormatDuration(run_.Now()).c_str(), d.summary.c_str());
  }
}

nlohmann::json LiveBaselines(const RunContext& run) {
  ReplanPolicy policy(run.options().solve);
  policy.switch_cost_s = run.options().switch_cost_s;
  RemainingProblem rest = BuildRemainingProblem(run.tasks.problem(), Snapshot(run), policy);
  nlohmann::json baselines = BaselineMakespans(rest.problem);
  double now = run.Now();
  for (auto& [name, baseline] : baselines.items()) {
    baseline["makespan_s"] = now + baseline["makespan_s"].get<double>();
    baseline["from_s"] = now;
    baseline.erase("plan");  // its times are from now; the first plan's is drawn
  }
  return baselines;
}

void AdoptReplan(RunContext& run, Plan plan) {
  plan.extra["baselines"] = LiveBaselines(run);
  run.AdoptPlan(plan);
}

std::vector<std::string> StartedElsewhere(const RunContext& run, const Plan& plan) {
  std::map<std::string, int> index;
  for (int j = 0; j < run.NumTasks(); ++j)
    index[run.tasks.problem().tasks[j].name] = j;
  std::vector<std::string> elsewhere;
  for (const PlanTask& t : plan.tasks) {
    auto it = index.find(t.task);
    if (it == index.end()) continue;
    int j = it->second;
    std::optional<Assignment> on = run.tasks.placements().On(j);
    if (!run.Running(j) || !on) continue;
    const Option& o = run.tasks.problem().tasks[j].options[on->option];
    if (o.technique != t.technique || o.gpus != t.gpus ||
        run.tasks.problem().nodes[on->node].name != t.node || on->gpu_ids != t.gpu_ids) {
      elsewhere.push_back(t.task);
    }
  }
  return elsewhere;
}

std::vector<std::string> SwitchTo(RunContext& run, Dispatcher& dispatcher,
                                  const ReplanDecision& d) {
  AdoptReplan(run, d.plan);
  // Tasks the new plan moves: the ones it pre-empts, and any that started
  // while it was being solved somewhere other than where it puts them.
  std::map<std::string, int> index;
  for (int j = 0; j < run.NumTasks(); ++j)
    index[run.tasks.problem().tasks[j].name] = j;
  std::vector<std::string> moved = d.preempted;
  for (const std::string& name : StartedElsewhere(run, run.plan())) {
    if (std::find(moved.begin(), moved.end(), name) == moved.end()) moved.push_back(name);
  }
  for (const std::string& name : moved)
    dispatcher.Preempt(index.at(name));
  run.Requeue();
  return moved;
}

void ReplanForOtherNodes(RunContext& run, const std::string& cluster_now) {
  // Packs stay packs on the new nodes (planned afresh, as units); no task
  // is new to the run, so none is packed as an arrival.
  std::optional<PackTerms> terms = RunPackTerms(run);
  ReplanPolicy policy = RunReplanPolicy(run, run.options().solve.time_limit_s);
  policy.pack_arrivals = false;
  ReplanDecision d = Replan(run.tasks.problem(), Snapshot(run), Plan{}, run.Now(), policy,
                            terms ? &*terms : nullptr);
  run.SetEstimatedEnd(d.new_end_s);
  AdoptReplan(run, d.plan);
  run.site.state->Set(meta::kCluster, cluster_now);
  WriteFileAtomic(run.site.run_dir + "/cluster.yaml", cluster_now);
  run.Emit(events::PlanSwitched(run.Now(), events::SwitchWhy::kOtherNodes, d.current_end_s,
                                d.new_end_s, {}));
  if (run.options().progress) {
    std::fprintf(stderr, "[%s] resumed on other nodes; planned the rest for them: ends ~%s\n",
                 FormatDuration(run.Now()).c_str(), FormatDuration(d.new_end_s).c_str());
  }
}

}  // namespace saturn
