// The members of a pack in the simulator (sim/sim_packs.h): each leaves at
// its own end, or where its early_stop: rule stops it, and the pack goes
// on with the rest, faster, until its last member leaves.
#include <algorithm>
#include <cmath>

#include "sim/simulation.h"

namespace saturn::sim_detail {

void Simulation::PushMemberEvents(int j) {
  const SimPackRun& pack = *PackOf(j);
  const SimTask& s = s_[j];
  const double done = DoneAt(j, std::max(now_, s.from));
  for (size_t i = 0; i < pack.Size(); ++i) {
    if (!pack.In(i)) continue;
    // Its end, where others train on (the last's is the pack's end).
    const double end = pack.FractionAt(s.option, pack.Steps(i));
    if (end < 1.0 - 1e-12)
      completions_.push(
          {TimeAt(j, std::max(end, done)), j, s.version, false, 0.0, 0, static_cast<int>(i)});
    const long step = stoppers_.Any() ? stoppers_.NextDecisionStep(pack.Member(i)) : -1;
    if (step < 0) continue;
    const double at = static_cast<double>(step) * pack.Scale(i);
    if (at >= pack.Steps(i)) continue;  // it ends there: no decision
    completions_.push({TimeAt(j, std::max(pack.FractionAt(s.option, at), done)), j, s.version, true,
                       at, ties_(), static_cast<int>(i)});
  }
}

bool Simulation::MemberEvent(const Completion& c) {
  const int j = c.task;
  SimPackRun& pack = *PackOf(j);
  const size_t i = static_cast<size_t>(c.member);
  if (!pack.In(i)) return false;
  if (!c.decision) {
    MemberLeaves(j, i, TaskStatus::kFinished);
    Emit(events::TaskFinished(now_, Where(j, &base_.tasks[pack.Member(i)].name)));
    return false;
  }
  const int m = pack.Member(i);
  const std::string& name = base_.tasks[static_cast<size_t>(m)].name;
  const SimEarlyStop& e = opt_.early_stop[static_cast<size_t>(m)];
  const long step = std::lround(c.at / pack.Scale(i));
  double value = 0.0;
  const bool stop = stoppers_.DecideAtStep(m, step, name, &value);
  const bool accuracy = e.spec.maximize();
  Emit(events::TaskEvaluated(now_, Where(j, &name),
                             {step, accuracy ? 0.0 : value, accuracy ? value : -1.0}, 0.0));
  SimTask& s = s_[j];
  if (!stop) {
    const long next = stoppers_.NextDecisionStep(m);
    const double at = static_cast<double>(next) * pack.Scale(i);
    if (next >= 0 && at < pack.Steps(i))
      completions_.push({TimeAt(j, std::max(pack.FractionAt(s.option, at), DoneAt(j, now_))), j,
                         s.version, true, at, ties_(), c.member});
    return false;
  }
  // It leaves where the pack stands: the pack's runtime shrinks to its
  // members' new ends, and where it stands is a larger fraction of it.
  const double here = pack.StepAt(s.option, DoneAt(j, now_));
  const std::vector<double> ratio = pack.EndAt(i, std::max(c.at, here));
  for (size_t o = 0; o < ratio.size(); ++o) {
    truth_[j][o] *= ratio[o];
    p_.tasks[j].options[o].runtime_s *= ratio[o];
  }
  s.done = pack.FractionAt(s.option, here);
  s.from = now_;
  ++s.version;
  MemberLeaves(j, i, TaskStatus::kStopped);
  Emit(events::TaskEarlyStopped(now_, Where(j, &name), e.spec.rule, e.spec.metric, value, step,
                                step));
  const bool in = pack.AnyIn();
  if (!in) {
    // Its last member: the pack ends here, its devices free before the
    // re-plan (as a task alone's, Decide).
    const int node = s.node;
    StartNextOn(node, EndUnit(j, TaskStatus::kStopped));
  } else {
    completions_.push({TimeAt(j, 1.0), j, s.version});
    PushMemberEvents(j);
  }
  // The work it left is planned at once.
  if (opt_.introspection) Check(/*tick=*/true);
  return !in;
}

void Simulation::MemberLeaves(int j, size_t i, TaskStatus how) {
  SimPackRun& pack = *PackOf(j);
  pack.Leave(i);
  const SimTask& s = s_[j];
  SimTaskResult& r = members_[static_cast<size_t>(pack.Member(i))];
  static_cast<TaskState&>(r) = result_.tasks[j];
  r.name = base_.tasks[static_cast<size_t>(pack.Member(i))].name;
  r.status = how;
  r.end_s = now_;
  r.busy_s = result_.tasks[j].busy_s + (s.running ? now_ - s.segment_start : 0.0);
  r.dead_s = result_.tasks[j].dead_s +
             (s.running ? std::max(0.0, std::min(now_, s.dead_until) - s.segment_start) : 0.0);
  r.work_done = how == TaskStatus::kFinished ? 1.0 : pack.Steps(i) / pack.Natural(i);
  r.arrival_s = units_.base_arrival[static_cast<size_t>(pack.Member(i))];
  r.pack = p_.tasks[j].name;
}

std::vector<double> Simulation::ExpectedMemberSteps(int j) const {
  const SimPackRun& pack = *PackOf(j);
  std::vector<double> expected(pack.Size());
  for (size_t i = 0; i < pack.Size(); ++i) {
    const int m = pack.Member(i);
    // Priced as the planner priced the pack, then as the rule's outlook
    // given the decisions it passed; its steps without a rule.
    if (!stoppers_.Any()) {
      expected[i] = pack.Steps(i);
    } else {
      expected[i] =
          stoppers_.Passed(m) == 0 ? pack.Planned()[i] : stoppers_.ExpectedSteps(m) * pack.Scale(i);
    }
  }
  return expected;
}

double Simulation::PackExpected(int j) const {
  const SimPackRun& pack = *PackOf(j);
  const SimTask& s = s_[j];
  const int o = s.option >= 0 ? s.option : 0;
  return pack.ExpectedFraction(o, ExpectedMemberSteps(j), pack.StepAt(o, DoneAt(j, now_)));
}

Plan Simulation::MembersPlan(Plan plan) const {
  std::vector<PlanTask> tasks;
  for (const PlanTask& t : plan.tasks) {
    auto unit = task_index_.find(t.task);
    const SimPackRun* pack = unit == task_index_.end() ? nullptr : PackOf(unit->second);
    const int o = pack ? OptionOf(p_, p_.tasks[static_cast<size_t>(unit->second)], t) : -1;
    if (o < 0) {
      tasks.push_back(t);
      continue;
    }
    // Each member's end where the pack model puts it, on the plan's time.
    const std::vector<double> ends = pack->MemberEnds(o, ExpectedMemberSteps(unit->second));
    const double last = *std::max_element(ends.begin(), ends.end());
    for (size_t i = 0; i < pack->Size(); ++i) {
      PlanTask member = t;
      member.task = base_.tasks[static_cast<size_t>(pack->Member(i))].name;
      member.pack = t.task;
      member.end_s = t.start_s + (t.end_s - t.start_s) * (last > 0 ? ends[i] / last : 1.0);
      tasks.push_back(std::move(member));
    }
  }
  plan.tasks = std::move(tasks);
  return plan;
}

void Simulation::EmitForMembers(
    int j, const std::function<Event(const events::TaskPlace&, double)>& make) {
  const SimPackRun& pack = *PackOf(j);
  const SimTask& s = s_[j];
  // Each member's own progress: the pack's step over its steps.
  const double step = s.option >= 0 ? pack.StepAt(s.option, DoneAt(j, now_)) : 0.0;
  for (size_t i = 0; i < pack.Size(); ++i) {
    if (!pack.In(i)) continue;
    Emit(make(Where(j, &base_.tasks[static_cast<size_t>(pack.Member(i))].name),
              std::min(1.0, step / pack.Natural(i))));
  }
}

void Simulation::FinishMembers(int j) {
  SimPackRun& pack = *PackOf(j);
  for (size_t i = 0; i < pack.Size(); ++i) {
    if (!pack.In(i)) continue;
    MemberLeaves(j, i, TaskStatus::kFinished);
    Emit(events::TaskFinished(now_, Where(j, &base_.tasks[pack.Member(i)].name)));
  }
}

std::vector<SimTaskResult> Simulation::BaseResults() const {
  std::vector<SimTaskResult> out(static_cast<size_t>(base_.NumTasks()));
  for (int u = 0; u < p_.NumTasks(); ++u) {
    for (int m : units_.members[static_cast<size_t>(u)]) {
      SimTaskResult& r = out[static_cast<size_t>(m)];
      r = PackOf(u) ? members_[static_cast<size_t>(m)] : result_.tasks[u];
    }
  }
  return out;
}

}  // namespace saturn::sim_detail
