#include "bench/planner/plan_progress.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>

namespace saturn::bench {

std::vector<TaskProgress> ProgressAt(const Problem& problem, const Plan& plan, double now,
                                     double noise, uint64_t seed) {
  std::map<std::string, int> task_index, node_index;
  for (int j = 0; j < problem.NumTasks(); ++j)
    task_index[problem.tasks[j].name] = j;
  for (int n = 0; n < problem.NumNodes(); ++n)
    node_index[problem.nodes[n].name] = n;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> off(1 - noise, 1 + noise);
  std::vector<TaskProgress> progress(problem.NumTasks());
  std::set<std::string> hosted;  // packs whose devices a member holds
  for (const PlanTask& t : plan.tasks) {
    int j = task_index.at(t.task);
    TaskProgress& q = progress[j];
    q.pack = t.pack;
    double slowdown = off(rng);
    if (t.end_s <= now) {
      q.finished = true;
      q.done = 1.0;
    } else if (t.start_s <= now) {
      q.done = std::min(0.99, (now - t.start_s) / ((t.end_s - t.start_s) * slowdown));
      q.has_checkpoint = true;
      if (!t.pack.empty() && !hosted.insert(t.pack).second) continue;
      int option = -1;
      const Task& task = problem.tasks[j];
      for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
        if (task.options[o].technique == t.technique && task.options[o].gpus == t.gpus) option = o;
      }
      q.running = RunningOn{option, node_index.at(t.node), t.gpu_ids};
      if (t.pack.empty()) q.slowdown = slowdown;
    }
  }
  return progress;
}

}  // namespace saturn::bench
