#include "replan/dispatch.h"

#include <algorithm>
#include <stdexcept>

namespace saturn {

namespace {

// `name`'s index in `items` through `index`, rebuilding the index when it
// does not know the name or points at another one; -1 if absent.
template <typename Items>
int IndexOf(const Items& items, const std::string& name,
            std::unordered_map<std::string, int>& index) {
  auto found = [&] {
    auto it = index.find(name);
    return it != index.end() && it->second < static_cast<int>(items.size()) &&
                   items[it->second].name == name
               ? it->second
               : -1;
  };
  int i = found();
  if (i >= 0) return i;
  index.clear();
  for (int k = 0; k < static_cast<int>(items.size()); ++k)
    index[items[k].name] = k;
  return found();
}

}  // namespace

int PlanQueues::TaskIndex(const Problem& base, const std::string& name) {
  return IndexOf(base.tasks, name, task_index_);
}

int PlanQueues::NodeIndex(const Problem& base, const std::string& name) {
  return IndexOf(base.nodes, name, node_index_);
}

void PlanQueues::Adopt(const Problem& base, const Plan& plan,
                       const std::function<bool(int)>& is_running) {
  assignment_.assign(base.NumTasks(), Assignment{});
  order_.clear();
  for (const PlanTask& t : plan.tasks) {
    const int j = TaskIndex(base, t.task);
    const int node = NodeIndex(base, t.node);
    if (j < 0 || node < 0) {
      throw std::logic_error("plan names an unknown task or node: " + t.task + " on " + t.node);
    }
    Assignment& a = assignment_[j];
    a.node = node;
    a.gpu_ids = t.gpu_ids;
    a.planned_start = t.start_s;
    for (int o = 0; o < static_cast<int>(base.tasks[j].options.size()); ++o) {
      const Option& c = base.tasks[j].options[o];
      if (c.technique == t.technique && c.gpus == t.gpus && !c.starts_now && base.Fits(c, node)) {
        a.option = o;
        break;
      }
    }
    if (a.option < 0) {
      throw std::logic_error("plan uses a configuration " + t.task +
                             " does not have: " + t.technique + " x" + std::to_string(t.gpus));
    }
    order_.push_back(j);
  }
  // Running tasks first, then by planned start (plans list tasks in any order).
  std::vector<bool> running(base.NumTasks(), false);
  for (int j : order_)
    running[j] = is_running(j);
  std::stable_sort(order_.begin(), order_.end(), [&](int a, int b) {
    if (running[a] != running[b]) return static_cast<bool>(running[a]);
    return assignment_[a].planned_start < assignment_[b].planned_start;
  });
  queue_.resize(base.NumNodes());
  head_.resize(base.NumNodes());
  for (int n = 0; n < base.NumNodes(); ++n) {
    queue_[n].resize(base.nodes[n].gpus);
    for (std::vector<int>& q : queue_[n])
      q.clear();
    head_[n].assign(base.nodes[n].gpus, 0);
  }
  for (int j : order_) {
    for (int g : assignment_[j].gpu_ids)
      queue_[assignment_[j].node][g].push_back(j);
  }
}

const Assignment* PlanQueues::Get(int task) const {
  if (task < 0 || task >= static_cast<int>(assignment_.size())) return nullptr;
  return assignment_[task].option >= 0 ? &assignment_[task] : nullptr;
}

int PlanQueues::Next(int node, int gpu, const std::function<bool(int)>& is_finished) {
  std::vector<int>& q = queue_[node][gpu];
  size_t& h = head_[node][gpu];
  while (h < q.size() && is_finished(q[h]))
    ++h;
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
