#include "replan/dispatch.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace saturn {

void PlanQueues::Adopt(const Problem& base, const Plan& plan,
                       const std::function<bool(int)>& is_running) {
  std::map<std::string, int> task_index, node_index;
  for (int j = 0; j < base.NumTasks(); ++j) task_index[base.tasks[j].name] = j;
  for (int n = 0; n < base.NumNodes(); ++n) node_index[base.nodes[n].name] = n;
  assignment_.assign(base.NumTasks(), Assignment{});
  order_.clear();
  for (const PlanTask& t : plan.tasks) {
    auto ti = task_index.find(t.task);
    auto ni = node_index.find(t.node);
    if (ti == task_index.end() || ni == node_index.end()) {
      throw std::logic_error("plan names an unknown task or node: " + t.task + " on " + t.node);
    }
    int j = ti->second;
    Assignment& a = assignment_[j];
    a.node = ni->second;
    a.gpu_ids = t.gpu_ids;
    a.planned_start = t.start_s;
    for (int o = 0; o < static_cast<int>(base.tasks[j].options.size()); ++o) {
      const Option& c = base.tasks[j].options[o];
      if (c.technique == t.technique && c.gpus == t.gpus && !c.starts_now) {
        a.option = o;
        break;
      }
    }
    if (a.option < 0) {
      throw std::logic_error("plan uses a configuration " + t.task + " does not have: " +
                             t.technique + " x" + std::to_string(t.gpus));
    }
    order_.push_back(j);
  }
  std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
    bool ra = is_running(a), rb = is_running(b);
    if (ra != rb) return ra;
    return assignment_[a].planned_start < assignment_[b].planned_start;
  });
  queue_.assign(base.NumNodes(), {});
  head_.assign(base.NumNodes(), {});
  for (int n = 0; n < base.NumNodes(); ++n) {
    queue_[n].assign(base.nodes[n].gpus, {});
    head_[n].assign(base.nodes[n].gpus, 0);
  }
  for (int j : order_) {
    for (int g : assignment_[j].gpu_ids) queue_[assignment_[j].node][g].push_back(j);
  }
}

const Assignment* PlanQueues::Get(int task) const {
  if (task < 0 || task >= static_cast<int>(assignment_.size())) return nullptr;
  return assignment_[task].option >= 0 ? &assignment_[task] : nullptr;
}

int PlanQueues::Next(int node, int gpu, const std::function<bool(int)>& is_finished) {
  std::vector<int>& q = queue_[node][gpu];
  size_t& h = head_[node][gpu];
  while (h < q.size() && is_finished(q[h])) ++h;
  return h < q.size() ? q[h] : -1;
}

bool PlanQueues::CanStart(int task, const std::function<bool(int, int)>& gpu_free,
                          const std::function<bool(int)>& is_finished) {
  const Assignment* a = Get(task);
  if (!a) return false;
  for (int g : a->gpu_ids) {
    if (!gpu_free(a->node, g) || Next(a->node, g, is_finished) != task) return false;
  }
  return true;
}

}  // namespace saturn
