#include "planner/list_scheduler.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <stdexcept>

namespace saturn {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}

SerialDecoder::Mode SerialDecoder::PreferredMode(const Problem& problem) {
  // Beyond this many (task, node) pairs a backfilling decode takes >10 ms.
  constexpr double kAppendAbove = 100000;
  return static_cast<double>(problem.NumTasks()) * problem.NumNodes() > kAppendAbove
             ? Mode::kAppend
             : Mode::kBackfill;
}

SerialDecoder::SerialDecoder(const Problem& problem)
    : SerialDecoder(problem, PreferredMode(problem)) {}

SerialDecoder::SerialDecoder(const Problem& problem, Mode mode) : problem_(problem), mode_(mode) {
  for (const NodeSlots& n : problem.nodes) {
    timelines_.emplace_back(n.gpus);
    gpu_free_.emplace_back(n.gpus, 0.0);
  }
  node_order_.resize(problem.nodes.size());
  std::iota(node_order_.begin(), node_order_.end(), 0);
  std::stable_sort(node_order_.begin(), node_order_.end(),
                   [&](int a, int b) { return problem.nodes[a].gpus < problem.nodes[b].gpus; });
}

double SerialDecoder::AppendStart(int n, const Option& o) const {
  return gpu_free_[n][o.gpus - 1];
}

void SerialDecoder::AppendPlace(int n, const Option& o, double start) {
  std::vector<double>& free = gpu_free_[n];
  // The first o.gpus entries are the GPUs taken; keep the vector sorted.
  for (int k = 0; k < o.gpus; ++k)
    free[k] = start + o.runtime_s;
  std::sort(free.begin(), free.end());
}

double SerialDecoder::Decode(const std::vector<int>& order, const std::vector<int>& option_of_task,
                             Schedule* out) {
  const bool append = mode_ == Mode::kAppend;
  for (NodeTimeline& t : timelines_)
    t.Clear();
  for (std::vector<double>& free : gpu_free_)
    std::fill(free.begin(), free.end(), 0.0);
  if (out) out->assign(problem_.tasks.size(), Placement{});
  double makespan = 0.0;
  auto place = [&](int j) {
    const Option& o = problem_.tasks[j].options[option_of_task[j]];
    double best_start = kInf;
    int best_node = -1;
    for (int n : node_order_) {
      if (!problem_.Fits(o, n)) continue;
      // Only a node that starts it strictly sooner can win (ties: first node).
      double s = append ? AppendStart(n, o)
                        : timelines_[n].EarliestStartBefore(0.0, o.runtime_s, o.gpus, best_start);
      if (s < best_start) {
        best_start = s;
        best_node = n;
      }
    }
    if (best_node < 0) throw std::logic_error("option fits no node: " + problem_.tasks[j].name);
    if (o.starts_now && best_start > 0.0) return false;
    if (append) {
      AppendPlace(best_node, o, best_start);
    } else {
      timelines_[best_node].Add(best_start, best_start + o.runtime_s, o.gpus);
    }
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
  // Running tasks that keep their devices hold their node first.
  for (int j : order) {
    int pinned = PinnedOption(problem.tasks[j]);
    if (pinned < 0) continue;
    const Option& o = problem.tasks[j].options[pinned];
    schedule[j] = {pinned, o.node, 0.0};
    free_at[o.node] = std::max(free_at[o.node], o.runtime_s);
  }
  for (int j : order) {
    const Task& task = problem.tasks[j];
    if (PinnedOption(task) >= 0) continue;
    double best_end = kInf;
    for (int n = 0; n < problem.NumNodes(); ++n) {
      int o = FastestOptionOnNode(problem, task, n);
      if (o < 0) continue;
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
