#include "sim/simulator.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <queue>
#include <random>
#include <stdexcept>
#include <unordered_map>

#include "common/clock.h"
#include "common/error.h"
#include "contracts/event_kinds.h"
#include "planner/planner.h"
#include "sim/simulation.h"

namespace saturn {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The packs' terms, with where each member's rule may stop it (the
// planner's pricing of a pack under early stopping).
PackTerms PackTermsOf(const Problem& base, const SimOptions& options) {
  if (!options.packs) return {};
  PackTerms terms = options.packs->terms;
  ExpectPackStops(options.early_stop, StopConcurrency(base), terms);
  return terms;
}

}  // namespace

namespace sim_detail {

Simulation::Simulation(const Problem& base, const std::vector<std::vector<double>>& truth,
                       const std::vector<double>& arrival, const SimOptions& options)
    : base_(base),
      pack_terms_(PackTermsOf(base, options)),
      units_(MakeSimUnits(base, truth, arrival, pack_terms_,
                          options.packs ? options.packs->packing : Packing{})),
      opt_(options),
      s_(units_.problem.NumTasks()),
      stoppers_(options.early_stop, StopConcurrency(base)) {
  if (!options.early_stop.empty() &&
      static_cast<int>(options.early_stop.size()) != base.NumTasks()) {
    throw std::logic_error("Simulate: early_stop has the wrong number of tasks");
  }
  for (int j = 0; j < p_.NumTasks(); ++j) {
    SimPackRun* pack = PackOf(j);
    for (size_t i = 0; pack && i < pack->Size() && !opt_.early_stop.empty(); ++i) {
      const SimEarlyStop& e = opt_.early_stop[static_cast<size_t>(pack->Member(i))];
      if (e.steps > 0) pack->SetScale(i, pack->Steps(i) / static_cast<double>(e.steps));
    }
  }
  std::vector<Placements::NodeDevices> nodes;
  for (const NodeSlots& n : p_.nodes)
    nodes.push_back({n.name, n.gpus, ""});
  placements_.Reset(nodes, p_.NumTasks());
  result_.tasks.resize(p_.NumTasks());
  members_.resize(base.NumTasks());
  for (int j = 0; j < p_.NumTasks(); ++j) {
    result_.tasks[j].name = p_.tasks[j].name;
    result_.tasks[j].arrival_s = arrival_[j];
    result_.tasks[j].status = TaskStatus::kSubmitted;
    task_index_[p_.tasks[j].name] = j;
  }
}

SimResult Simulation::Run() {
  std::vector<int> by_arrival(p_.NumTasks());
  std::iota(by_arrival.begin(), by_arrival.end(), 0);
  std::stable_sort(by_arrival.begin(), by_arrival.end(),
                   [&](int a, int b) { return arrival_[a] < arrival_[b]; });
  size_t next_arrival = 0;
  double next_tick = opt_.introspection ? opt_.interval_s : kInf;
  int left = p_.NumTasks();
  bool have_plan = false;
  while (left > 0) {
    double t_arrival = next_arrival < by_arrival.size() ? arrival_[by_arrival[next_arrival]] : kInf;
    while (!completions_.empty() &&
           completions_.top().version != s_[completions_.top().task].version) {
      completions_.pop();
    }
    double t_done = completions_.empty() ? kInf : completions_.top().time;
    if (!have_plan) t_arrival = std::max(t_arrival, 0.0);
    double t = std::min({t_arrival, t_done, next_tick});
    if (t == kInf) throw std::logic_error("simulation stalled with tasks left");
    now_ = std::max(now_, t);
    if (t == t_done) {
      Completion c = completions_.top();
      completions_.pop();
      if (c.member >= 0) {
        if (!MemberEvent(c)) continue;  // the pack goes on
      } else if (c.decision) {
        if (!Decide(c)) continue;
      } else {
        Finish(c.task);
      }
      --left;
      ReportProgress();
      continue;
    }
    if (t == t_arrival) {
      while (next_arrival < by_arrival.size() && arrival_[by_arrival[next_arrival]] <= now_) {
        int j = by_arrival[next_arrival++];
        s_[j].arrived = true;
        result_.tasks[j].status = TaskStatus::kQueued;
        ++arrived_;
        arrived_since_check_.push_back(p_.tasks[j].name);
        for (int m : units_.members[static_cast<size_t>(j)]) {  // a pack's: its members'
          Emit(events::TaskArrived(
              now_, base_.tasks[static_cast<size_t>(m)].name,
              static_cast<int>(base_.tasks[static_cast<size_t>(m)].options.size())));
        }
      }
      if (!have_plan) {
        ReportProgress();  // the first plan may take a while at scale
        InitialPlan();
        have_plan = true;
      } else {
        Check(/*tick=*/false);
      }
      continue;
    }
    // Introspection tick.
    next_tick += opt_.interval_s;
    if (arrived_ > finished_count_) Check(/*tick=*/true);
  }
  Finalise();
  return std::move(result_);
}

double Simulation::DoneAt(int j, double t) const {
  const SimTask& s = s_[j];
  if (!s.running) return s.done;
  double productive = std::max(0.0, t - s.from);
  return std::min(1.0, s.done + productive / truth_[j][s.option]);
}

double Simulation::TimeAt(int j, double fraction) const {
  const SimTask& s = s_[j];
  return s.from + (fraction - s.done) * truth_[j][s.option];
}

void Simulation::ReportProgress() const {
  if (!opt_.on_progress) return;
  opt_.on_progress({now_, finished_count_, p_.NumTasks(), result_.replans, result_.plan_switches});
}

events::TaskPlace Simulation::Where(int j, const std::string* name) const {
  const SimTask& s = s_[j];
  events::TaskPlace at{name ? *name : p_.tasks[j].name, "", 0, "", {}};
  if (s.option >= 0) {
    at.technique = p_.tasks[j].options[s.option].technique;
    at.gpus = p_.tasks[j].options[s.option].gpus;
    at.node = p_.nodes[s.node].name;
    at.gpu_ids = s.gpu_ids;
  }
  return at;
}

void Simulation::RecordBusy(int delta) {
  busy_gpus_ += delta;
  busy_steps_.push_back({now_, busy_gpus_});
}

void Simulation::Start(int j, const Assignment& a) {
  SimTask& s = s_[j];
  s.running = true;
  // A pack's done is a fraction of its option's timeline: under another
  // option the same step is another fraction.
  if (PackOf(j) && s.option >= 0 && s.option != a.option && s.done > 0)
    s.done = PackOf(j)->FractionAt(a.option, PackOf(j)->StepAt(s.option, s.done));
  s.option = a.option;
  s.node = a.node;
  s.gpu_ids = a.gpu_ids;
  s.segment_start = now_;
  s.dead_until = now_ + (s.done > 0 ? opt_.policy.switch_cost_s : 0.0);
  s.from = s.dead_until;
  ++s.version;
  if (!placements_.Place(j, a)) throw std::logic_error("simulator: a task started on held devices");
  RecordBusy(static_cast<int>(s.gpu_ids.size()));
  SimTaskResult& r = result_.tasks[j];
  if (r.start_s < 0) r.start_s = now_;
  ++r.attempts;
  r.technique = p_.tasks[j].options[s.option].technique;
  r.gpus = p_.tasks[j].options[s.option].gpus;
  r.node = p_.nodes[a.node].name;
  r.gpu_ids = a.gpu_ids;
  r.status = TaskStatus::kRunning;
  completions_.push({TimeAt(j, 1.0), j, s.version});
  if (PackOf(j)) {
    PushMemberEvents(j);
    EmitForMembers(j, [&](const events::TaskPlace& at, double done) {
      return events::TaskStarted(now_, at, {done});
    });
    return;
  }
  PushDecision(j, s.dead_until, s.done);
  Emit(events::TaskStarted(now_, Where(j), {s.done}));
}

// Task j's next early-stopping decision, when it runs on from fraction
// `from` at time `t`.
void Simulation::PushDecision(int j, double t, double from) {
  if (!stoppers_.Any()) return;
  double at = stoppers_.NextDecision(Base(j), from);
  if (at >= 1.0) return;
  const SimTask& s = s_[j];
  completions_.push({t + (at - from) * truth_[j][s.option], j, s.version, true, at, ties_()});
}

// Task j reached a decision: whether its rule stopped it (it has ended).
bool Simulation::Decide(const Completion& c) {
  int j = c.task;
  double value = 0.0;
  const SimEarlyStop& e = opt_.early_stop[static_cast<size_t>(Base(j))];
  long step = stoppers_.StepAt(Base(j), c.at);
  bool stop = stoppers_.Decide(Base(j), c.at, p_.tasks[j].name, &value);
  // The evaluation the rule decided on, as a run logs it.
  bool accuracy = e.spec.maximize();
  Emit(events::TaskEvaluated(now_, Where(j),
                             {step, accuracy ? 0.0 : value, accuracy ? value : -1.0}, 0.0));
  if (!stop) {
    PushDecision(j, c.time, c.at);
    return false;
  }
  int node = s_[j].node;
  std::vector<int> freed = EndUnit(j, TaskStatus::kStopped);
  Emit(events::TaskEarlyStopped(now_, Where(j), e.spec.rule, e.spec.metric, value, step, step));
  StartNextOn(node, freed);
  // Its devices and the work it left are planned at once.
  if (opt_.introspection) Check(/*tick=*/true);
  ReportProgress();
  return true;
}

// Ends the current segment of a running task; returns the GPUs it held.
std::vector<int> Simulation::EndSegment(int j) {
  SimTask& s = s_[j];
  SimTaskResult& r = result_.tasks[j];
  r.busy_s += now_ - s.segment_start;
  r.dead_s += std::min(now_, s.dead_until) - s.segment_start;
  s.done = DoneAt(j, now_);
  s.running = false;
  ++s.version;
  placements_.Free(j);
  r.status = TaskStatus::kQueued;
  RecordBusy(-static_cast<int>(s.gpu_ids.size()));
  return s.gpu_ids;
}

void Simulation::StartNextOn(int node, const std::vector<int>& freed) {
  for (int g : freed) {
    int next = queues_.Next(node, g, finished_);
    if (next >= 0) TryStart(next);
  }
}

std::vector<int> Simulation::EndUnit(int j, TaskStatus how) {
  std::vector<int> freed = EndSegment(j);
  SimTask& s = s_[j];
  if (how == TaskStatus::kFinished) s.done = 1.0;
  s.finished = true;
  ++finished_count_;
  SimTaskResult& r = result_.tasks[j];
  r.end_s = now_;
  r.work_done = s.done;
  r.status = how;
  return freed;
}

void Simulation::Finish(int j) {
  if (PackOf(j)) FinishMembers(j);
  int node = s_[j].node;
  std::vector<int> freed = EndUnit(j, TaskStatus::kFinished);
  if (!PackOf(j)) Emit(events::TaskFinished(now_, Where(j)));
  StartNextOn(node, freed);
}

void Simulation::Preempt(int j) {
  EndSegment(j);
  ++result_.preemptions;
  if (!PackOf(j)) {
    Emit(events::TaskPreempted(now_, Where(j), {s_[j].done}));
    return;
  }
  EmitForMembers(j, [&](const events::TaskPlace& at, double done) {
    return events::TaskPreempted(now_, at, {done});
  });
}

void Simulation::TryStart(int j) {
  const SimTask& s = s_[j];
  if (!s.arrived || s.finished || s.running) return;
  if (!queues_.CanStart(j, gpu_free_, finished_)) return;
  Start(j, *queues_.Get(j));
}

void Simulation::Adopt(const Plan& plan) {
  queues_.Adopt(p_, plan, [&](int j) { return s_[j].running; });
  current_ = plan;
  for (int j : queues_.Order())
    TryStart(j);
}

std::vector<TaskProgress> Simulation::Progress() {
  std::vector<TaskProgress> progress(p_.NumTasks());
  for (int j = 0; j < p_.NumTasks(); ++j) {
    SimTask& s = s_[j];
    TaskProgress& q = progress[j];
    q.arrived = s.arrived;
    q.finished = s.finished;
    q.done = DoneAt(j, now_);
    q.has_checkpoint = q.done > 0;
    if (stoppers_.Any()) {
      q.expected =
          std::max(q.done, PackOf(j) ? PackExpected(j) : stoppers_.ExpectedFraction(Base(j)));
    }
    if (s.running) {
      q.running = RunningOn{s.option, s.node, s.gpu_ids};
      if (now_ - s.segment_start >= opt_.observe_after_s) {
        s.slowdown = truth_[j][s.option] / p_.tasks[j].options[s.option].runtime_s;
      }
    }
    q.slowdown = s.slowdown;
  }
  return progress;
}

void Simulation::InitialPlan() {
  SteadyClock clock;
  double t0 = clock.Now();
  ReplanPolicy policy = opt_.policy;
  RemainingProblem remaining = BuildRemainingProblem(p_, Progress(), policy);
  PlanRequest request(policy);
  PlanResult r = RunPlanner(remaining.problem, request);
  result_.planning_wall_s += clock.Now() - t0;
  for (PlanTask& t : r.plan.tasks) {
    t.start_s += now_;
    t.end_s += now_;
  }
  r.plan.makespan_s += now_;
  result_.initial_plan = MembersPlan(r.plan);
  Emit(events::FirstPlan(now_, result_.initial_plan));
  arrived_since_check_.clear();
  Adopt(r.plan);
}

void Simulation::Check(bool tick) {
  SteadyClock clock;
  double t0 = clock.Now();
  ReplanPolicy policy = opt_.policy;
  policy.allow_preemption = policy.allow_preemption && opt_.introspection;
  policy.seed = opt_.policy.seed + static_cast<uint64_t>(result_.replans) + 1;
  ReplanDecision d = Replan(p_, Progress(), current_, now_, policy);
  result_.planning_wall_s += clock.Now() - t0;
  ++result_.replans;
  if (d.switch_plan) {
    ++result_.plan_switches;
    for (const std::string& name : d.preempted)
      Preempt(task_index_.at(name));
    Emit(events::PlanSwitched(
        now_, tick ? events::SwitchWhy::kIntrospection : events::SwitchWhy::kArrivals,
        d.current_end_s, d.new_end_s, d.preempted,
        tick ? std::vector<std::string>{} : arrived_since_check_));
  }
  if (!tick) arrived_since_check_.clear();
  Adopt(d.plan);
  ReportProgress();
}

void Simulation::Finalise() {
  result_.tasks = BaseResults();
  std::vector<double> jct;
  for (const SimTaskResult& r : result_.tasks) {
    result_.makespan_s = std::max(result_.makespan_s, r.end_s);
    jct.push_back(r.end_s - r.arrival_s);
  }
  Emit(events::RunFinished(result_.makespan_s, static_cast<int>(result_.tasks.size()), 0,
                           result_.makespan_s));
  if (!jct.empty()) {
    result_.mean_jct_s = std::accumulate(jct.begin(), jct.end(), 0.0) / jct.size();
    std::sort(jct.begin(), jct.end());
    size_t rank = static_cast<size_t>(std::ceil(0.99 * jct.size()));
    result_.p99_jct_s = jct[std::max<size_t>(rank, 1) - 1];
  }
  // Utilisation: busy GPU-seconds per bucket over total GPU-seconds.
  int points = std::max(1, opt_.utilization_points);
  double span = result_.makespan_s > 0 ? result_.makespan_s : 1.0;
  double width = span / points;
  std::vector<double> busy(points, 0.0);
  for (size_t i = 0; i < busy_steps_.size(); ++i) {
    double a = busy_steps_[i].first;
    double b = i + 1 < busy_steps_.size() ? busy_steps_[i + 1].first : span;
    int level = busy_steps_[i].second;
    result_.gpu_s += level * std::max(0.0, b - a);
    for (int k = std::max(0, static_cast<int>(a / width)); k < points && k * width < b; ++k) {
      double lo = std::max(a, k * width), hi = std::min(b, (k + 1) * width);
      if (hi > lo) busy[k] += level * (hi - lo);
    }
  }
  double gpus = p_.TotalGpus();
  for (int k = 0; k < points; ++k) {
    result_.utilization.push_back({(k + 0.5) * width, busy[k] / (gpus * width)});
  }
}

}  // namespace sim_detail

SimResult Simulate(const Problem& believed, const std::vector<std::vector<double>>& true_runtime,
                   const std::vector<double>& arrival_s, const SimOptions& options) {
  if (static_cast<int>(true_runtime.size()) != believed.NumTasks()) {
    throw std::logic_error("Simulate: truth has the wrong number of tasks");
  }
  return sim_detail::Simulation(believed, true_runtime, arrival_s, options).Run();
}

std::vector<std::vector<double>> TruthEqualsBelief(const Problem& believed) {
  std::vector<std::vector<double>> truth;
  for (const Task& t : believed.tasks) {
    std::vector<double> row;
    for (const Option& o : t.options)
      row.push_back(o.runtime_s);
    truth.push_back(std::move(row));
  }
  return truth;
}

std::vector<std::vector<double>> TruthWithNoise(const Problem& believed, double sigma,
                                                double config_sigma, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> task_factor(1.0 - sigma, 1.0 + sigma);
  std::uniform_real_distribution<double> config_factor(1.0 - config_sigma, 1.0 + config_sigma);
  std::vector<std::vector<double>> truth = TruthEqualsBelief(believed);
  for (auto& row : truth) {
    double f = task_factor(rng);
    for (double& r : row)
      r *= f * config_factor(rng);
  }
  return truth;
}

std::vector<std::vector<double>> TruthFromProfile(const Problem& believed,
                                                  const ProfileTable& truth,
                                                  const std::string& source) {
  std::vector<std::vector<double>> out;
  for (const Task& t : believed.tasks) {
    std::vector<double> row;
    for (const Option& o : t.options) {
      const std::string& type = believed.TypeName(o.type);
      const ProfileRow* r = truth.Find(t.name, o.technique, o.gpus, type);
      if (!r) {
        throw InputError(source, 0, "",
                         "no row for task '" + t.name + "', technique '" + o.technique + "', " +
                             std::to_string(o.gpus) + " GPUs" +
                             (type.empty() ? "" : " of type " + type) + ", which the profile has");
      }
      row.push_back(r->runtime_s);
    }
    out.push_back(std::move(row));
  }
  return out;
}

}  // namespace saturn
