#include "replan/packed.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "planner/pack_search.h"

namespace saturn {
namespace {

// A pack's members as a problem of their own with the terms for it: each
// member's options (pinned ones left out) with runtimes and steps scaled to
// what it has left, as BuildRemainingProblem scales a task's runtimes, but
// with no restart charged (the caller adds it where one is paid).
struct Members {
  Problem problem;
  PackTerms terms;
  std::vector<int> all;   // 0..n-1
  bool restarts = false;  // some member resumes from where it stands
};

Members LeftOf(const Problem& base, const PackTerms& terms,
               const std::vector<TaskProgress>& progress, const std::vector<int>& tasks) {
  Members m;
  m.problem.nodes = base.nodes;
  m.problem.types = base.types;
  for (int j : tasks) {
    const TaskProgress& p = progress[static_cast<size_t>(j)];
    const double left = std::max(0.0, std::min(1.0, p.expected) - p.done) * p.slowdown;
    m.restarts = m.restarts || p.has_checkpoint || p.done > 0;
    const Task& task = base.tasks[static_cast<size_t>(j)];
    Task& t = m.problem.tasks.emplace_back(Task{task.name, {}});
    PackTerms::Member member = terms.tasks[static_cast<size_t>(j)];
    member.steps *= left;
    // Where its rule may end it (MemberSteps) holds for a member no rule
    // has judged yet; one that trained goes on for its expected
    // work left, on average (a re-plan comes at every stop).
    if (p.done > 0 || p.has_checkpoint) {
      member.stops.clear();
    } else {
      for (auto& stop : member.stops)
        stop.first *= p.slowdown;
    }
    m.terms.tasks.push_back(member);
    std::vector<PackTerms::Curve>& curves = m.terms.curves.emplace_back();
    for (size_t o = 0; o < task.options.size(); ++o) {
      if (task.options[o].starts_now || task.options[o].node >= 0) continue;
      Option& opt = t.options.emplace_back(task.options[o]);
      opt.runtime_s = std::max(1e-3, left * opt.runtime_s);
      curves.push_back(terms.curves[static_cast<size_t>(j)][o]);
    }
    m.all.push_back(static_cast<int>(m.all.size()));
  }
  return m;
}

// Pack `name` of base tasks `tasks` as one task: every option all its
// members have and it fits, or, while it runs, the one it runs with,
// pinned where it runs and with no restart. Fills `ends` per option; false
// when a pack not started has no option (its members are then planned
// alone).
bool PackTask(const Problem& base, const PackTerms& terms,
              const std::vector<TaskProgress>& progress, const std::vector<int>& tasks,
              const ReplanPolicy& policy, Task& pack, int& keep,
              std::vector<std::vector<double>>& ends) {
  const Members m = LeftOf(base, terms, progress, tasks);
  int host = -1;  // the member that holds a running pack's devices
  for (int j : tasks)
    if (progress[static_cast<size_t>(j)].running) host = j;
  if (host < 0) {
    for (const Option& key : m.problem.tasks[0].options) {
      std::vector<double> e = PackMemberEnds(m.problem, m.terms, m.all, key);
      if (e.empty()) continue;
      for (double& end : e)
        end += m.restarts ? policy.switch_cost_s : 0.0;
      Option& o = pack.options.emplace_back(key);
      o.runtime_s = *std::max_element(e.begin(), e.end());
      ends.push_back(std::move(e));
    }
    return !pack.options.empty();
  }
  const RunningOn& on = *progress[static_cast<size_t>(host)].running;
  Option key = base.tasks[static_cast<size_t>(host)].options[static_cast<size_t>(on.option)];
  std::vector<double> e = PackMemberEnds(m.problem, m.terms, m.all, key);
  if (e.empty()) {
    // The model no longer covers it (a profile changed): each member's own
    // time left, side by side.
    for (const Task& t : m.problem.tasks) {
      double alone = 0.0;
      for (const Option& x : t.options)
        if (x.technique == key.technique && x.gpus == key.gpus && x.type == key.type)
          alone = x.runtime_s;
      e.push_back(std::max(1e-3, alone));
    }
  }
  Option& o = pack.options.emplace_back(key);
  o.runtime_s = *std::max_element(e.begin(), e.end());
  o.node = on.node;
  o.starts_now = true;
  o.gpu_ids = on.gpu_ids;
  ends.push_back(std::move(e));
  keep = 0;
  return true;
}

// Fresh pack names "pack-N", N after the highest among `progress`'s and
// `current`'s packs and `numbered_to`, never a pack's or task's name.
class PackNamer {
 public:
  PackNamer(const Problem& base, const Plan& current, const std::vector<TaskProgress>& progress,
            int numbered_to)
      : last_(std::max(0, numbered_to)) {
    for (const PlanTask& t : current.tasks) {
      last_ = std::max(last_, PackNumber(t.pack));
      taken_.insert(t.pack);
    }
    for (const TaskProgress& p : progress) {
      last_ = std::max(last_, PackNumber(p.pack));
      taken_.insert(p.pack);
    }
    for (const Task& t : base.tasks)
      taken_.insert(t.name);
  }
  std::string Next() {
    std::string name = "pack-" + std::to_string(++last_);
    while (taken_.count(name))
      name = "pack-" + std::to_string(++last_);
    taken_.insert(name);
    return name;
  }

 private:
  int last_ = 0;
  std::unordered_set<std::string> taken_;
};

bool Started(const TaskProgress& p) {
  return p.running || p.done > 0 || p.has_checkpoint;
}

// The packs some member of which runs, trained or ended.
std::set<std::string> PacksStarted(const std::vector<TaskProgress>& progress) {
  std::set<std::string> started;
  for (const TaskProgress& p : progress)
    if (!p.pack.empty() && (Started(p) || p.finished)) started.insert(p.pack);
  return started;
}

}  // namespace

int PackNumber(const std::string& name) {
  if (name.rfind("pack-", 0) != 0 || name.size() == 5) return 0;
  int n = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || n > 100000000) return 0;
    n = n * 10 + (name[i] - '0');
  }
  return n;
}

bool AnyPackLeft(const std::vector<TaskProgress>& progress) {
  std::map<std::string, int> count;
  for (const TaskProgress& p : progress) {
    if (p.arrived && !p.finished && !p.pack.empty() && ++count[p.pack] == 2) return true;
  }
  return false;
}

std::set<std::vector<int>> PacksNotStarted(const std::vector<TaskProgress>& progress) {
  const std::set<std::string> started = PacksStarted(progress);
  std::map<std::string, std::vector<int>> members;
  for (int j = 0; j < static_cast<int>(progress.size()); ++j) {
    const TaskProgress& p = progress[static_cast<size_t>(j)];
    if (!p.pack.empty() && p.arrived && !started.count(p.pack)) members[p.pack].push_back(j);
  }
  std::set<std::vector<int>> out;
  for (auto& [pack, tasks] : members)
    out.insert(tasks);
  return out;
}

int PackArrivals(const Problem& base, const PackTerms& terms, const Plan& current,
                 std::vector<TaskProgress>& progress, bool regroup, int numbered_to) {
  // Regrouped: the members of packs not started (not tasks the plan has
  // alone, e.g. one the dispatcher sent to train alone).
  std::vector<bool> regrouped(progress.size(), false);
  if (regroup) {
    const std::set<std::string> started = PacksStarted(progress);
    for (size_t j = 0; j < progress.size(); ++j) {
      TaskProgress& p = progress[j];
      if (p.pack.empty() || !p.arrived || p.finished || started.count(p.pack)) continue;
      p.pack.clear();
      regrouped[j] = true;
    }
  }
  std::unordered_set<std::string> planned;
  for (const PlanTask& t : current.tasks)
    planned.insert(t.task);
  PackNamer names(base, current, progress, numbered_to);
  std::map<std::string, std::vector<int>> by_class;
  for (int j = 0; j < base.NumTasks(); ++j) {
    const TaskProgress& p = progress[static_cast<size_t>(j)];
    // Under early stopping only with where its rule may end it (stops):
    // priced at its mean a pack would look as short as its average member.
    const bool cut = p.expected < 1.0 && terms.tasks[static_cast<size_t>(j)].stops.empty();
    if (!p.arrived || p.finished || Started(p) || cut || !p.pack.empty() ||
        terms.tasks[static_cast<size_t>(j)].cls.empty() ||
        (!regrouped[static_cast<size_t>(j)] &&
         planned.count(base.tasks[static_cast<size_t>(j)].name)))
      continue;
    by_class[terms.tasks[static_cast<size_t>(j)].cls].push_back(j);
  }
  int formed = 0;
  for (const auto& [cls, tasks] : by_class) {
    if (tasks.size() < 2) continue;
    Problem sub;
    sub.nodes = base.nodes;
    sub.types = base.types;
    PackTerms sub_terms;
    for (int j : tasks) {
      // Its expected work (all of it without early stopping), as LeftOf
      // counts it.
      const double f = std::min(1.0, progress[static_cast<size_t>(j)].expected);
      Task& t = sub.tasks.emplace_back(base.tasks[static_cast<size_t>(j)]);
      for (Option& o : t.options)
        o.runtime_s *= f;
      sub_terms.tasks.push_back(terms.tasks[static_cast<size_t>(j)]);
      sub_terms.tasks.back().steps *= f;
      sub_terms.curves.push_back(terms.curves[static_cast<size_t>(j)]);
    }
    Packing packing = ChoosePacking(sub, sub_terms);
    if (!(ScorePacking(sub, sub_terms, packing) <
          ScorePacking(sub, sub_terms, Unpacked(sub.NumTasks()))))
      continue;
    for (const std::vector<int>& group : packing) {
      if (group.size() < 2) continue;
      const std::string name = names.Next();
      for (int i : group)
        progress[static_cast<size_t>(tasks[static_cast<size_t>(i)])].pack = name;
      ++formed;
    }
  }
  return formed;
}

std::vector<std::string> SplittablePacks(const std::vector<TaskProgress>& progress) {
  std::map<std::string, int> left;
  std::set<std::string> running, not_resuming;
  for (const TaskProgress& p : progress) {
    if (p.pack.empty() || !p.arrived || p.finished) continue;
    ++left[p.pack];
    if (p.running) running.insert(p.pack);
    if (!p.resumes_alone) not_resuming.insert(p.pack);
  }
  std::vector<std::string> out;
  for (const auto& [pack, n] : left)
    if (n >= 2 && running.count(pack) && !not_resuming.count(pack)) out.push_back(pack);
  return out;
}

std::vector<TaskProgress> SplitPack(const Problem& base, const PackTerms& terms,
                                    const Plan& current, std::vector<TaskProgress> progress,
                                    const std::string& pack, bool repack, int numbered_to) {
  PackNamer names(base, current, progress, numbered_to);
  std::vector<int> members;
  for (int j = 0; j < static_cast<int>(progress.size()); ++j) {
    TaskProgress& p = progress[static_cast<size_t>(j)];
    if (p.pack != pack || p.finished) continue;
    p.pack.clear();
    p.running.reset();
    p.has_checkpoint = true;
    members.push_back(j);
  }
  if (!repack) return progress;
  // Packed among themselves (they stand at one step) by what each has left.
  const Members m = LeftOf(base, terms, progress, members);
  const Packing packing = ChoosePacking(m.problem, m.terms);
  if (packing.size() < 2 || !(ScorePacking(m.problem, m.terms, packing) <
                              ScorePacking(m.problem, m.terms, Unpacked(m.problem.NumTasks()))))
    return progress;
  for (const std::vector<int>& group : packing) {
    if (group.size() < 2) continue;
    const std::string name = names.Next();
    for (int i : group)
      progress[static_cast<size_t>(members[static_cast<size_t>(i)])].pack = name;
  }
  return progress;
}

PackedRemaining PackRemaining(const Problem& base, const PackTerms& terms,
                              const std::vector<TaskProgress>& progress,
                              const RemainingProblem& remaining, const ReplanPolicy& policy) {
  const Problem& per_task = remaining.problem;
  // Packs in the order of their first member; members in task order.
  std::vector<std::vector<int>> groups;  // remaining tasks
  std::vector<std::string> pack_name;
  std::map<std::string, size_t> group_of;
  for (int k = 0; k < per_task.NumTasks(); ++k) {
    const std::string& pack = progress[static_cast<size_t>(remaining.base_index[k])].pack;
    if (pack.empty()) {
      groups.push_back({k});
      pack_name.emplace_back();
      continue;
    }
    auto [it, added] = group_of.emplace(pack, groups.size());
    if (added) {
      groups.emplace_back();
      pack_name.push_back(pack);
    }
    groups[it->second].push_back(k);
  }
  PackedRemaining out;
  RemainingProblem& r = out.remaining;
  r.problem.nodes = per_task.nodes;
  r.problem.types = per_task.types;
  auto alone = [&](int k) {
    r.problem.tasks.push_back(per_task.tasks[static_cast<size_t>(k)]);
    r.base_index.push_back(remaining.base_index[static_cast<size_t>(k)]);
    r.keep_option.push_back(remaining.keep_option[static_cast<size_t>(k)]);
    out.members.push_back({per_task.tasks[static_cast<size_t>(k)].name});
    out.pack.emplace_back();
    out.ends.emplace_back(per_task.tasks[static_cast<size_t>(k)].options.size());
  };
  for (size_t g = 0; g < groups.size(); ++g) {
    if (groups[g].size() == 1) {
      alone(groups[g][0]);
      continue;
    }
    std::vector<int> tasks;  // base tasks
    std::vector<std::string> names;
    for (int k : groups[g]) {
      tasks.push_back(remaining.base_index[static_cast<size_t>(k)]);
      names.push_back(per_task.tasks[static_cast<size_t>(k)].name);
    }
    Task pack{"[pack] " + pack_name[g], {}};
    int keep = -1;
    std::vector<std::vector<double>> ends;
    if (!PackTask(base, terms, progress, tasks, policy, pack, keep, ends)) {
      for (int k : groups[g])
        alone(k);
      continue;
    }
    r.problem.tasks.push_back(std::move(pack));
    r.base_index.push_back(-1);
    r.keep_option.push_back(keep);
    out.members.push_back(std::move(names));
    out.ends.push_back(std::move(ends));
    out.pack.push_back(pack_name[g]);
  }
  return out;
}

Plan PackPlan(const Plan& plan, const PackedRemaining& packed) {
  std::unordered_map<std::string, int> pack_of;  // member name -> packed task
  for (int k = 0; k < packed.remaining.problem.NumTasks(); ++k) {
    if (!packed.IsPack(k)) continue;
    for (const std::string& name : packed.members[static_cast<size_t>(k)])
      pack_of[name] = k;
  }
  Plan out = plan;
  out.tasks.clear();
  std::map<int, size_t> entry_of;  // packed task -> its entry in out.tasks
  for (const PlanTask& t : plan.tasks) {
    auto it = pack_of.find(t.task);
    if (it == pack_of.end()) {
      out.tasks.push_back(t);
      continue;
    }
    auto [e, added] = entry_of.emplace(it->second, out.tasks.size());
    if (added) {
      PlanTask pack = t;
      pack.task = packed.remaining.problem.tasks[static_cast<size_t>(it->second)].name;
      pack.pack.clear();
      out.tasks.push_back(std::move(pack));
    }
    PlanTask& pack = out.tasks[e->second];
    pack.end_s = std::max(pack.end_s, t.end_s);
  }
  return out;
}

Plan UnpackPlan(const PackedRemaining& packed, const Schedule& chosen, Plan plan) {
  std::unordered_map<std::string, int> index;
  for (int k = 0; k < packed.remaining.problem.NumTasks(); ++k)
    index[packed.remaining.problem.tasks[static_cast<size_t>(k)].name] = k;
  std::vector<PlanTask> tasks;
  for (const PlanTask& t : plan.tasks) {
    auto it = index.find(t.task);
    if (it == index.end() || !packed.IsPack(it->second)) {
      tasks.push_back(t);
      continue;
    }
    const size_t k = static_cast<size_t>(it->second);
    const std::vector<double>& ends = packed.ends[k][static_cast<size_t>(chosen[k].option)];
    for (size_t i = 0; i < packed.members[k].size(); ++i) {
      PlanTask member = t;
      member.task = packed.members[k][i];
      member.end_s = t.start_s + ends[i];
      member.pack = packed.pack[k];
      tasks.push_back(std::move(member));
    }
  }
  plan.tasks = std::move(tasks);
  return plan;
}

}  // namespace saturn
