// gavel: Gavel's heterogeneity-aware makespan policy (Narayanan et al.,
// OSDI'20, section 4 "Minimize makespan"), reproduced for a batch that runs
// without time-slicing. Gavel gives each job a fixed scale (GPU count) and
// chooses, by a linear program, what fraction of its work each GPU type
// does, so that the last job finishes first:
//
//   minimise M  subject to, for every job j and type t (X_jt >= 0),
//     sum_t X_jt = 1                              (all of j's work is done)
//     sum_t X_jt r_jt <= M                        (j runs on one type at a time)
//     sum_j X_jt r_jt g_j <= M * gpus(t)          (type t's GPU-seconds)
//
// where r_jt is j's runtime on type t at its scale g_j (its fastest
// technique there). Gavel realises the fractions by time-slicing jobs over
// types in rounds; Saturn's workers run to the end where they start, so the
// fractions are rounded: each job goes to the type where it does the largest
// share, and the jobs are list-scheduled longest first on that type's nodes.
// A job's scale is the GPU count where its work costs the fewest GPU-seconds
// summed over the types it runs on (Gavel takes the user's request; a batch
// handed to Saturn has none). With one GPU type this is the paper's baseline
// of fixed-size jobs packed longest first.
#include <algorithm>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

#include "planner/list_scheduler.h"
#include "planner/mip.h"
#include "planner/solver.h"

namespace saturn {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

int NumTypes(const Problem& problem) {
  int types = 1;
  for (const NodeSlots& n : problem.nodes)
    types = std::max(types, n.type + 1);
  return types;
}

// Per task: its scale, and per type the option it runs there (-1: none).
struct Choice {
  int gpus = 0;
  std::vector<int> option;  // per type
};

// The fastest option of `task` with `gpus` GPUs that runs on type `type`.
int FastestOnType(const Problem& problem, const Task& task, int gpus, int type) {
  int best = -1;
  for (int o = 0; o < static_cast<int>(task.options.size()); ++o) {
    const Option& c = task.options[o];
    if (c.gpus != gpus || c.starts_now) continue;
    bool fits = false;
    for (int n = 0; n < problem.NumNodes() && !fits; ++n)
      fits = problem.nodes[n].type == type && problem.Fits(c, n);
    if (fits && (best < 0 || c.runtime_s < task.options[best].runtime_s)) best = o;
  }
  return best;
}

Choice Choose(const Problem& problem, const Task& task, int types) {
  std::map<int, double> area;  // gpus -> GPU-seconds summed over the types it runs on
  std::map<int, int> covered;  // gpus -> types it runs on
  for (const Option& o : task.options)
    area[o.gpus] = 0.0;
  for (auto& [gpus, total] : area) {
    for (int t = 0; t < types; ++t) {
      int o = FastestOnType(problem, task, gpus, t);
      if (o < 0) continue;
      total += gpus * task.options[o].runtime_s;
      ++covered[gpus];
    }
  }
  Choice best;
  double best_area = kInf;
  int best_covered = 0;
  for (const auto& [gpus, total] : area) {
    // Most types first (a scale that runs everywhere), then least area.
    int c = covered[gpus];
    if (c == 0) continue;
    if (c > best_covered || (c == best_covered && total / c < best_area)) {
      best_covered = c;
      best_area = total / c;
      best.gpus = gpus;
    }
  }
  if (best_covered == 0) throw std::logic_error("task fits no node: " + task.name);
  for (int t = 0; t < types; ++t)
    best.option.push_back(FastestOnType(problem, task, best.gpus, t));
  return best;
}

// The LP's fractions X[j][t] (0 where j cannot run on t).
std::vector<std::vector<double>> SolveFractions(const Problem& problem,
                                                const std::vector<Choice>& choice, int types,
                                                const SolveContext& ctx) {
  std::vector<double> capacity(static_cast<size_t>(types), 0.0);
  for (const NodeSlots& n : problem.nodes)
    capacity[static_cast<size_t>(n.type)] += n.gpus;
  MipModel m;
  int M = m.AddVar(0, kMipInf, 1.0, false, "M");
  std::vector<std::vector<int>> x(choice.size(), std::vector<int>(static_cast<size_t>(types), -1));
  std::vector<std::vector<std::pair<int, double>>> type_rows(static_cast<size_t>(types));
  for (size_t j = 0; j < choice.size(); ++j) {
    std::vector<std::pair<int, double>> all, time;
    for (int t = 0; t < types; ++t) {
      int o = choice[j].option[static_cast<size_t>(t)];
      if (o < 0) continue;
      double r = problem.tasks[j].options[o].runtime_s;
      int v = m.AddVar(0, 1, 0, false, "x_" + std::to_string(j) + "_" + std::to_string(t));
      x[j][static_cast<size_t>(t)] = v;
      all.push_back({v, 1.0});
      time.push_back({v, r});
      type_rows[static_cast<size_t>(t)].push_back({v, r * choice[j].gpus});
    }
    if (all.empty()) continue;  // pinned
    m.AddRow(all, 1, 1);
    time.push_back({M, -1.0});
    m.AddRow(time, -kMipInf, 0);
  }
  for (int t = 0; t < types; ++t) {
    auto& row = type_rows[static_cast<size_t>(t)];
    if (row.empty()) continue;
    row.push_back({M, -capacity[static_cast<size_t>(t)]});
    m.AddRow(row, -kMipInf, 0);
  }
  MipOptions options;
  options.time_limit_s = ctx.time_limit_s;
  options.threads = ctx.threads;
  MipResult r = m.Solve(options);
  if (!r.has_solution) throw std::logic_error("gavel: the allocation LP found no solution");
  std::vector<std::vector<double>> fractions(choice.size(),
                                             std::vector<double>(static_cast<size_t>(types), 0.0));
  for (size_t j = 0; j < choice.size(); ++j) {
    for (int t = 0; t < types; ++t) {
      int v = x[j][static_cast<size_t>(t)];
      if (v >= 0) fractions[j][static_cast<size_t>(t)] = r.values[static_cast<size_t>(v)];
    }
  }
  return fractions;
}

class GavelSolver final : public Solver {
 public:
  std::string_view Name() const override { return "gavel"; }
  std::string_view Description() const override {
    return "Gavel's heterogeneity-aware makespan LP (fixed scale per job), rounded to one type "
           "each, longest first";
  }
  SolveResult Solve(const Problem& problem, const SolveContext& ctx) const override {
    const int types = NumTypes(problem);
    // Running tasks that keep their devices (re-planning) stay out of the LP.
    std::vector<Choice> choice;
    for (const Task& task : problem.tasks) {
      choice.push_back(PinnedOption(task) >= 0
                           ? Choice{0, std::vector<int>(static_cast<size_t>(types), -1)}
                           : Choose(problem, task, types));
    }
    std::vector<std::vector<double>> fractions = SolveFractions(problem, choice, types, ctx);
    std::vector<int> option(problem.tasks.size(), -1);
    for (size_t j = 0; j < problem.tasks.size(); ++j) {
      int pinned = PinnedOption(problem.tasks[j]);
      if (pinned >= 0) {
        option[j] = pinned;
        continue;
      }
      int best_type = -1;
      for (int t = 0; t < types; ++t) {
        if (choice[j].option[static_cast<size_t>(t)] < 0) continue;
        if (best_type < 0 ||
            fractions[j][static_cast<size_t>(t)] > fractions[j][static_cast<size_t>(best_type)]) {
          best_type = t;
        }
      }
      option[j] = choice[j].option[static_cast<size_t>(best_type)];
    }
    Schedule schedule;
    SerialDecoder(problem).Decode(LongestFirst(problem, option), option, &schedule);
    return {SolveStatus::kFeasible, schedule, 0.0, "", {}, 0.0};
  }
};

}  // namespace

std::unique_ptr<Solver> MakeGavelSolver() {
  return std::make_unique<GavelSolver>();
}

}  // namespace saturn
