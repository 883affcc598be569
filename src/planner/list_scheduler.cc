#include "planner/list_scheduler.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace saturn {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

SerialDecoder::SerialDecoder(const Problem& problem) : problem_(problem) {
  for (const NodeSlots& n : problem.nodes)
    timelines_.emplace_back(n.gpus);
  node_order_.resize(problem.nodes.size());
  std::iota(node_order_.begin(), node_order_.end(), 0);
  std::stable_sort(node_order_.begin(), node_order_.end(),
                   [&](int a, int b) { return problem.nodes[a].gpus < problem.nodes[b].gpus; });
}

double SerialDecoder::Decode(const std::vector<int>& order, const std::vector<int>& option_of_task,
                             Schedule* out) {
  for (NodeTimeline& t : timelines_)
    t.Clear();
  if (out) out->assign(problem_.tasks.size(), Placement{});
  double makespan = 0.0;
  auto place = [&](int j) {
    const Option& o = problem_.tasks[j].options[option_of_task[j]];
    double best_start = kInf;
    int best_node = -1;
    for (int n : node_order_) {
      if (!problem_.Fits(o, n)) continue;
      double s = timelines_[n].EarliestStart(0.0, o.runtime_s, o.gpus);
      if (s < best_start) {
        best_start = s;
        best_node = n;
      }
    }
    if (best_node < 0) throw std::logic_error("option fits no node: " + problem_.tasks[j].name);
    if (o.starts_now && best_start > 0.0) return false;
    timelines_[best_node].Add(best_start, best_start + o.runtime_s, o.gpus);
    makespan = std::max(makespan, best_start + o.runtime_s);
    if (out) (*out)[j] = {option_of_task[j], best_node, best_start};
    return true;
  };
  for (int j : order) {
    if (problem_.tasks[j].options[option_of_task[j]].starts_now && !place(j)) return kInf;
  }
  for (int j : order) {
    if (!problem_.tasks[j].options[option_of_task[j]].starts_now) place(j);
  }
  return makespan;
}

Schedule SerialDecoder::Compact(const Schedule& schedule) {
  for (NodeTimeline& t : timelines_)
    t.Clear();
  std::vector<int> order(schedule.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return schedule[a].start < schedule[b].start; });
  Schedule out = schedule;
  for (int j : order) {
    const Option& o = problem_.tasks[j].options[schedule[j].option];
    NodeTimeline& t = timelines_[schedule[j].node];
    double s = o.starts_now ? 0.0 : t.EarliestStart(0.0, o.runtime_s, o.gpus);
    t.Add(s, s + o.runtime_s, o.gpus);
    out[j].start = s;
  }
  return out;
}

std::vector<int> LongestFirst(const Problem& problem, const std::vector<int>& option_of_task) {
  std::vector<int> order(problem.tasks.size());
  std::iota(order.begin(), order.end(), 0);
  auto runtime = [&](int j) { return problem.tasks[j].options[option_of_task[j]].runtime_s; };
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return runtime(a) > runtime(b); });
  return order;
}

Schedule WholeNodeSchedule(const Problem& problem, const std::vector<int>& order) {
  std::vector<double> free_at(problem.nodes.size(), 0.0);
  Schedule schedule(problem.tasks.size());
  for (int j : order) {
    const Task& task = problem.tasks[j];
    double best_end = kInf;
    for (int n = 0; n < problem.NumNodes(); ++n) {
      int o = FastestOptionAtMost(task, problem.nodes[n].gpus);
      if (o < 0 || !problem.Fits(task.options[o], n)) continue;
      double end = free_at[n] + task.options[o].runtime_s;
      if (end < best_end) {
        best_end = end;
        schedule[j] = {o, n, free_at[n]};
      }
    }
    if (schedule[j].node < 0) throw std::logic_error("task fits no node: " + task.name);
    free_at[schedule[j].node] = best_end;
  }
  return schedule;
}

}  // namespace saturn
