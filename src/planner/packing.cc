#include "planner/packing.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>

#include "common/error.h"
#include "common/format.h"

namespace saturn {

int MatchingOption(const Task& task, const Option& key) {
  for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
    const Option& x = task.options[o];
    if (x.technique == key.technique && x.gpus == key.gpus && x.type == key.type && x.node < 0 &&
        !x.starts_now)
      return o;
  }
  return -1;
}

int OptionOf(const Problem& problem, const Task& task, const PlanTask& t) {
  for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
    const Option& x = task.options[o];
    if (x.technique == t.technique && x.gpus == t.gpus && x.node < 0 && !x.starts_now &&
        (t.gpu_type.empty() || problem.TypeName(x.type) == t.gpu_type))
      return o;
  }
  return -1;
}

namespace {

// The option of `task` a profile row describes, or -1.
int OptionOfRow(const Problem& problem, const Task& task, const ProfileRow& row) {
  for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
    const Option& x = task.options[o];
    if (x.technique == row.technique && x.gpus == row.gpus &&
        (row.gpu_type.empty() || problem.TypeName(x.type) == row.gpu_type))
      return o;
  }
  return -1;
}

double Number(const std::string& text, bool* ok) {
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  *ok = !text.empty() && end == text.c_str() + text.size() && errno == 0 && std::isfinite(v);
  return v;
}

// "ROWS:SECONDS ..." ascending, rows > 0, seconds > 0 (>= 0 where
// `zero_seconds`), in `column`.
std::vector<std::pair<double, double>> ParseCurve(const std::string& text, std::string_view source,
                                                  int line, std::string_view column,
                                                  bool zero_seconds) {
  std::vector<std::pair<double, double>> points;
  std::istringstream in(text);
  std::string item;
  while (in >> item) {
    size_t colon = item.find(':');
    bool ok_rows = false, ok_s = false;
    double rows = colon == std::string::npos ? 0 : Number(item.substr(0, colon), &ok_rows);
    double s = colon == std::string::npos ? 0 : Number(item.substr(colon + 1), &ok_s);
    if (!ok_rows || !ok_s || rows <= 0 || s < 0 || (s == 0 && !zero_seconds) ||
        (!points.empty() && rows <= points.back().first)) {
      throw InputError(source, line, column,
                       std::string("expected ROWS:SECONDS pairs with ascending ROWS > 0 and ") +
                           (zero_seconds ? "SECONDS >= 0" : "SECONDS > 0") +
                           " (\"4:0.31 8:0.42\"), got '" + item + "'");
    }
    points.emplace_back(rows, s);
  }
  return points;
}

// One "ROWS:KNOBS" item of `pack_knobs`, or InputError.
std::pair<double, std::string> KnobsItem(const std::string& item, std::string_view source,
                                         int line) {
  size_t colon = item.find(':');
  bool ok = false;
  double rows = colon == std::string::npos ? 0 : Number(item.substr(0, colon), &ok);
  nlohmann::json knobs = colon == std::string::npos
                             ? nlohmann::json()
                             : nlohmann::json::parse(item.substr(colon + 1), nullptr, false);
  if (!ok || rows <= 0 || !knobs.is_object()) {
    throw InputError(source, line, "pack_knobs",
                     "expected ROWS:KNOBS pairs with ascending ROWS > 0 and KNOBS a JSON object "
                     "without spaces (\"8:{\"recompute\":false}\"), got '" +
                         item + "'");
  }
  return {rows, knobs.dump()};
}

double PositiveExtra(const ProfileTable& profile, const ProfileRow& row, std::string_view column,
                     std::string_view source, double fallback) {
  std::string text = profile.Extra(row, column);
  if (text.empty()) return fallback;
  bool ok = false;
  double v = Number(text, &ok);
  if (!ok || v <= 0) {
    throw InputError(source, row.line, column,
                     "expected a number > 0 for a task with a pack_class, got '" + text + "'");
  }
  return v;
}

}  // namespace

bool PackTerms::Any() const {
  std::map<std::string, int> count;
  for (const Member& m : tasks) {
    if (!m.cls.empty() && ++count[m.cls] >= 2) return true;
  }
  return false;
}

bool PackTerms::Compatible(int a, int b) const {
  return !tasks[a].cls.empty() && tasks[a].cls == tasks[b].cls;
}

PackTerms PackTermsFromProfile(const ProfileTable& profile, const Problem& problem,
                               std::string_view source) {
  PackTerms terms;
  terms.tasks.resize(problem.NumTasks());
  terms.curves.resize(problem.NumTasks());
  for (int j = 0; j < problem.NumTasks(); ++j)
    terms.curves[j].resize(problem.tasks[j].options.size());
  if (profile.ExtraColumn("pack_class") < 0) return terms;
  std::map<std::string, int> index;
  for (int j = 0; j < problem.NumTasks(); ++j)
    index[problem.tasks[j].name] = j;
  std::vector<bool> seen(problem.NumTasks(), false);
  for (const ProfileRow& row : profile.rows) {
    auto it = index.find(row.task);
    if (it == index.end()) continue;
    const int j = it->second;
    PackTerms::Member& m = terms.tasks[j];
    std::string cls = profile.Extra(row, "pack_class");
    if (seen[j] && cls != m.cls) {
      throw InputError(source, row.line, "pack_class",
                       "task '" + row.task + "' has pack_class '" + m.cls +
                           "' on an earlier row and '" + cls + "' here; a task has one class");
    }
    seen[j] = true;
    m.cls = cls;
    if (cls.empty() || !row.feasible) continue;
    m.rows = PositiveExtra(profile, row, "pack_rows", source, 1.0);
    m.steps = PositiveExtra(profile, row, "steps", source, 0.0);
    int o = OptionOfRow(problem, problem.tasks[j], row);
    if (o < 0) continue;
    PackTerms::Curve& c = terms.curves[j][o];
    c.step_s = PositiveExtra(profile, row, "step_s", source, 0.0);
    c.points =
        ParseCurve(profile.Extra(row, "pack_step_s"), source, row.line, "pack_step_s", false);
    c.start =
        ParseCurve(profile.Extra(row, "pack_start_s"), source, row.line, "pack_start_s", true);
    PackKnobsAt(profile.Extra(row, "pack_knobs"), 0.0, source, row.line);  // checked here
  }
  // A task without steps or step times cannot be modelled in a pack.
  for (int j = 0; j < problem.NumTasks(); ++j) {
    bool known = terms.tasks[j].steps > 0;
    for (const PackTerms::Curve& c : terms.curves[j])
      known = known && c.step_s > 0;
    if (!known) terms.tasks[j].cls.clear();
  }
  return terms;
}

void StepsAtStopsMean(PackTerms& terms) {
  for (PackTerms::Member& m : terms.tasks) {
    if (m.stops.empty()) continue;
    m.steps = 0.0;
    for (const auto& [steps, p] : m.stops)
      m.steps += steps * p;
  }
}

std::string PackKnobsAt(const std::string& text, double rows, std::string_view source, int line) {
  std::istringstream in(text);
  std::string item, last, chosen;
  double previous = 0.0;
  while (in >> item) {
    auto [at, knobs] = KnobsItem(item, source, line);
    if (at <= previous) {
      throw InputError(
          source, line, "pack_knobs",
          "expected ascending ROWS, got '" + item + "' after " + FormatNumber(previous));
    }
    previous = at;
    last = knobs;
    if (chosen.empty() && at >= rows) chosen = knobs;
  }
  return chosen.empty() ? last : chosen;
}

double PackStepAt(const PackTerms::Curve& curve, double rows) {
  return CurveAt(curve.points, rows);
}

double CurveAt(const std::vector<std::pair<double, double>>& p, double rows) {
  if (p.empty() || rows > p.back().first * (1 + 1e-9)) return -1.0;
  if (rows <= p.front().first) return p.front().second;
  for (size_t i = 1; i < p.size(); ++i) {
    if (rows <= p[i].first) {
      double f = (rows - p[i - 1].first) / (p[i].first - p[i - 1].first);
      return p[i - 1].second + f * (p[i].second - p[i - 1].second);
    }
  }
  return p.back().second;
}

namespace {

// Task j's own adapters with option o (another rank or targets than the
// member its curve measured): what its own step alone takes beyond its
// curve's first point, where that point is at its rows (else rows and
// adapters cannot be told apart: nothing), added to every step it is in.
double OwnAdapters(const PackTerms& terms, int j, int o) {
  const PackTerms::Curve& c = terms.curves[j][o];
  if (c.points.empty() || terms.tasks[j].rows != c.points.front().first) return 0.0;
  return c.step_s - c.points.front().second;
}

}  // namespace

double PackStepOfAll(const Problem& problem, const PackTerms& terms,
                     const std::vector<int>& members, const Option& key) {
  double rows = 0.0, extra = 0.0, slowest = 0.0;
  const PackTerms::Curve* curve = nullptr;
  for (int j : members) {
    const int o = MatchingOption(problem.tasks[j], key);
    if (o < 0) return -1.0;
    const PackTerms::Curve& c = terms.curves[j][o];
    if (!curve) curve = &c;
    rows += terms.tasks[j].rows;
    extra += OwnAdapters(terms, j, o);
    slowest = std::max(slowest, c.step_s);
  }
  if (!curve) return -1.0;
  const double step = PackStepAt(*curve, rows);
  return step < 0 ? -1.0 : std::max(step + extra, slowest);
}

std::vector<double> PackMemberEnds(const Problem& problem, const PackTerms& terms,
                                   const std::vector<int>& members, const Option& key) {
  return PackMemberEndsAt(problem, terms, members, key, {}, nullptr);
}

std::vector<double> PackMemberEndsAt(const Problem& problem, const PackTerms& terms,
                                     const std::vector<int>& members, const Option& key,
                                     const std::vector<double>& given, double* launch_s) {
  const int k = static_cast<int>(members.size());
  std::vector<int> option(k);
  std::vector<double> fixed(k);
  double rows = 0.0;
  for (int i = 0; i < k; ++i) {
    const int j = members[i];
    option[i] = MatchingOption(problem.tasks[j], key);
    if (option[i] < 0) return {};
    if (k == 1) return {problem.tasks[j].options[option[i]].runtime_s};
    if (i > 0 && !terms.Compatible(members[0], j)) return {};
    const PackTerms::Curve& c = terms.curves[j][option[i]];
    fixed[i] = problem.tasks[j].options[option[i]].runtime_s - terms.tasks[j].steps * c.step_s;
    rows += terms.tasks[j].rows;
  }
  const PackTerms::Curve& curve = terms.curves[members[0]][option[0]];
  std::vector<double> extra(k, 0.0);
  double extra_in = 0.0;
  for (int i = 0; i < k; ++i) {
    extra[i] = OwnAdapters(terms, members[i], option[i]);
    extra_in += extra[i];
  }
  const std::vector<double> steps = given.empty() ? MemberSteps(terms, members) : given;
  std::vector<int> by_steps(k);
  std::iota(by_steps.begin(), by_steps.end(), 0);
  std::stable_sort(by_steps.begin(), by_steps.end(),
                   [&](int a, int b) { return steps[a] < steps[b]; });
  // No faster than its slowest member alone (it does that one's work): of
  // the members still in from the n-th to leave on, the slowest alone.
  std::vector<double> slowest(k + 1, 0.0);
  for (int n = k - 1; n >= 0; --n) {
    const int i = by_steps[static_cast<size_t>(n)];
    slowest[n] = std::max(slowest[n + 1], terms.curves[members[i]][option[i]].step_s);
  }
  // The launch: the members' largest fixed costs, plus what starting a
  // pack of their rows costs beyond starting a member alone (loading every
  // member's data, building its trainer), where measured. Paid once:
  // members that end or are stopped leave, and the rest go on in the same
  // worker (worker/pack_job.h).
  double t = *std::max_element(fixed.begin(), fixed.end());
  if (!curve.start.empty()) {
    double start =
        rows > curve.start.back().first ? curve.start.back().second : CurveAt(curve.start, rows);
    t += std::max(0.0, start - curve.start.front().second);
  }
  if (launch_s) *launch_s = t;
  std::vector<double> ends(k);
  double done = 0.0;
  for (int n = 0; n < k; ++n) {
    const int i = by_steps[static_cast<size_t>(n)];
    const PackTerms::Member& m = terms.tasks[members[i]];
    double step = PackStepAt(curve, rows);
    if (step < 0) return {};
    step = std::max(step + extra_in, slowest[n]);
    t += (steps[i] - done) * step;
    done = steps[i];
    ends[i] = t;
    rows -= m.rows;
    extra_in -= extra[i];
  }
  return ends;
}

Packing Unpacked(int tasks) {
  Packing p(tasks);
  for (int j = 0; j < tasks; ++j)
    p[j] = {j};
  return p;
}

PackedProblem BuildPackedProblem(const Problem& problem, const PackTerms& terms,
                                 const Packing& packing) {
  PackedProblem out;
  out.problem.nodes = problem.nodes;
  out.problem.types = problem.types;
  out.groups = packing;
  std::set<std::string> names;
  for (const Task& t : problem.tasks)
    names.insert(t.name);
  int packs = 0;
  for (const std::vector<int>& group : packing) {
    out.ends.emplace_back();
    if (group.size() == 1) {
      out.problem.tasks.push_back(problem.tasks[group[0]]);
      out.ends.back().resize(problem.tasks[group[0]].options.size());
      continue;
    }
    Task task{"pack-" + std::to_string(++packs), {}};
    while (names.count(task.name))
      task.name += "'";  // a task already has that name
    for (const Option& key : problem.tasks[group[0]].options) {
      if (key.node >= 0 || key.starts_now) continue;
      std::vector<double> ends = PackMemberEnds(problem, terms, group, key);
      if (ends.empty()) continue;
      Option o = key;
      o.runtime_s = *std::max_element(ends.begin(), ends.end());
      task.options.push_back(o);
      out.ends.back().push_back(std::move(ends));
    }
    out.problem.tasks.push_back(std::move(task));
  }
  return out;
}

Plan ExpandPackedPlan(const Problem& problem, const PackedProblem& packed, Plan plan) {
  std::map<std::string, int> group_of;
  for (int g = 0; g < packed.problem.NumTasks(); ++g)
    group_of[packed.problem.tasks[g].name] = g;
  std::vector<PlanTask> tasks;
  for (const PlanTask& t : plan.tasks) {
    auto it = group_of.find(t.task);
    if (it == group_of.end() || packed.groups[it->second].size() == 1) {
      tasks.push_back(t);
      continue;
    }
    const int g = it->second;
    const int o = OptionOf(packed.problem, packed.problem.tasks[g], t);
    if (o < 0)
      throw std::logic_error("pack plan names an option its pack does not have: " + t.task);
    for (size_t i = 0; i < packed.groups[g].size(); ++i) {
      PlanTask member = t;
      member.task = problem.tasks[packed.groups[g][i]].name;
      member.end_s = t.start_s + packed.ends[g][o][i];
      member.pack = t.task;
      tasks.push_back(std::move(member));
    }
  }
  plan.tasks = std::move(tasks);
  return plan;
}

Packing PackingOfPlan(const Problem& problem, const Plan& plan) {
  std::map<std::string, int> index;
  for (int j = 0; j < problem.NumTasks(); ++j)
    index[problem.tasks[j].name] = j;
  Packing packing;
  std::map<std::string, size_t> group_of_pack;
  for (const PlanTask& t : plan.tasks) {
    auto it = index.find(t.task);
    if (it == index.end()) continue;
    if (t.pack.empty()) {
      packing.push_back({it->second});
      continue;
    }
    auto [g, added] = group_of_pack.emplace(t.pack, packing.size());
    if (added) packing.emplace_back();
    packing[g->second].push_back(it->second);
  }
  return packing;
}

}  // namespace saturn
