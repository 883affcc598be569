#include "planner/construct.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <set>

#include "planner/list_scheduler.h"

namespace saturn {

std::vector<int> AllotmentForTarget(const Problem& problem, double target) {
  std::vector<int> option(problem.tasks.size(), -1);
  for (size_t j = 0; j < option.size(); ++j) {
    const Task& task = problem.tasks[j];
    int best = -1, fastest = -1;
    for (int o : UsefulOptions(task)) {
      const Option& c = task.options[o];
      if (!problem.FitsSomewhere(c)) continue;
      if (fastest < 0 || c.runtime_s < task.options[fastest].runtime_s) fastest = o;
      if (c.runtime_s > target) continue;
      if (best < 0) {
        best = o;
        continue;
      }
      const Option& b = task.options[best];
      double area = c.gpus * c.runtime_s, best_area = b.gpus * b.runtime_s;
      if (area < best_area || (area == best_area && c.runtime_s < b.runtime_s)) best = o;
    }
    option[j] = best >= 0 ? best : fastest;
  }
  return option;
}

std::vector<Candidate> ConstructiveCandidates(const Problem& problem, double lower_bound) {
  std::vector<Candidate> out;
  if (problem.tasks.empty()) return out;
  SerialDecoder decoder(problem);
  std::set<std::vector<int>> seen_allotments;
  auto add = [&](std::vector<int> option) {
    if (!seen_allotments.insert(option).second) return;
    // Longest first, and biggest area first: two classic list orders.
    std::vector<int> by_area(problem.tasks.size());
    std::iota(by_area.begin(), by_area.end(), 0);
    auto area = [&](int j) {
      const Option& o = problem.tasks[j].options[option[j]];
      return o.gpus * o.runtime_s;
    };
    std::stable_sort(by_area.begin(), by_area.end(),
                     [&](int a, int b) { return area(a) > area(b); });
    for (std::vector<int> order : {LongestFirst(problem, option), by_area}) {
      Candidate c{std::move(order), option, 0.0};
      c.makespan = decoder.Decode(c.order, c.option, nullptr);
      out.push_back(std::move(c));
    }
  };
  // Targets: a geometric grid from the smallest runtime every task can reach
  // up to three times the lower bound. Small targets force wide, fast options
  // (less fragmentation); large ones lean options (less area).
  double longest_fastest = 0.0;
  for (const Task& task : problem.tasks) {
    double fastest = std::numeric_limits<double>::infinity();
    for (const Option& o : task.options) {
      if (problem.FitsSomewhere(o)) fastest = std::min(fastest, o.runtime_s);
    }
    longest_fastest = std::max(longest_fastest, fastest);
  }
  double top = 3.0 * std::max(lower_bound, longest_fastest);
  for (double target = longest_fastest; target <= top; target *= 1.08) {
    add(AllotmentForTarget(problem, target));
  }
  add(AllotmentForTarget(problem, std::numeric_limits<double>::infinity()));  // least area
  add(AllotmentForTarget(problem, 0.0));                                      // fastest
  std::stable_sort(out.begin(), out.end(),
                   [](const Candidate& a, const Candidate& b) { return a.makespan < b.makespan; });
  return out;
}

Candidate CandidateFromSchedule(const Problem& problem, const Schedule& schedule) {
  Candidate c;
  c.order.resize(schedule.size());
  std::iota(c.order.begin(), c.order.end(), 0);
  std::stable_sort(c.order.begin(), c.order.end(),
                   [&](int a, int b) { return schedule[a].start < schedule[b].start; });
  for (const Placement& p : schedule)
    c.option.push_back(p.option);
  c.makespan = Makespan(problem, schedule);
  return c;
}

}  // namespace saturn
