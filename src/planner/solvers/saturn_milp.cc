// saturn-milp: the paper's MILP, reproduced faithfully to compare against.
//
// Variables as in the paper: C (makespan), B[t,s] (configuration choice),
// O[t,n] (node choice), P[t,n,g] (which GPUs), I[n,g,t] (start time of task t
// on GPU g of node n) and A[t1,t2] (before-or-after). Constraints as in the
// prototype: one configuration and one node per task; C >= I + runtime for the
// chosen configuration; the task holds exactly its configuration's GPU count
// on its node and none elsewhere; its start is the same on all its GPUs; and
// for every GPU and pair of tasks on it, one runs entirely before the other
// (big-M disjunctions). Deliberate departures, all fixing the prototype's
// defects: the real GPU count of every node (not 8); only feasible
// configurations (no 1e6/1e8 placeholder runtimes); continuous start times;
// big-M = twice a valid horizon instead of 1e8 (which breaks CBC's integrality
// tolerance); the time limit is the one asked for (elapsed seconds). A warm
// start is used only when the caller has one (as the paper does when
// re-planning). If CBC finds no solution in time, the plan falls back to
// current practice and says so.
#include <algorithm>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "planner/list_scheduler.h"
#include "planner/mip.h"
#include "planner/solver.h"

namespace saturn {
namespace {

using Terms = std::vector<std::pair<int, double>>;

// The paper's model and the indices of its variables.
struct PaperModel {
  explicit PaperModel(const Problem& p) : problem(p), T(p.NumTasks()), N(p.NumNodes()) {}

  double Runtime(int t, int s) const { return problem.tasks[t].options[s].runtime_s; }
  int Gpus(int t, int s) const { return problem.tasks[t].options[s].gpus; }

  const Problem& problem;
  const int T;
  const int N;
  std::vector<std::vector<int>> configs;  // per task: options that fit some node
  double horizon = 0.0;
  double M = 0.0;
  MipModel m;
  int C = -1;
  std::vector<std::vector<int>> B, O;
  std::vector<std::vector<std::vector<int>>> P, I;
  std::vector<std::vector<int>> A;
};

// Feasible configurations per task (every option that fits some node), and a
// horizon: the sum of each task's slowest one.
void ChooseConfigs(PaperModel& pm) {
  pm.configs.assign(pm.T, {});
  for (int t = 0; t < pm.T; ++t) {
    double slowest = 0.0;
    for (int s = 0; s < static_cast<int>(pm.problem.tasks[t].options.size()); ++s) {
      const Option& o = pm.problem.tasks[t].options[s];
      if (!pm.problem.FitsSomewhere(o)) continue;
      pm.configs[t].push_back(s);
      slowest = std::max(slowest, o.runtime_s);
    }
    pm.horizon += slowest;
  }
  pm.M = 2.0 * pm.horizon;
}

// C, B, O, P, I and A, in the order StartValues lays them out.
void AddVariables(PaperModel& pm) {
  const int T = pm.T, N = pm.N;
  const Problem& problem = pm.problem;
  MipModel& m = pm.m;
  pm.C = m.AddVar(0, pm.horizon, 1.0, false, "C");
  pm.B.assign(T, {});
  pm.O.assign(T, std::vector<int>(N));
  pm.P.assign(T, std::vector<std::vector<int>>(N));
  pm.I.assign(N, {});
  pm.A.assign(T, std::vector<int>(T, -1));
  for (int t = 0; t < T; ++t) {
    for (int s : pm.configs[t]) {
      pm.B[t].push_back(
          m.AddVar(0, 1, 0, true, "B_" + std::to_string(t) + "_" + std::to_string(s)));
    }
    for (int n = 0; n < N; ++n) {
      pm.O[t][n] = m.AddVar(0, 1, 0, true, "O_" + std::to_string(t) + "_" + std::to_string(n));
      for (int g = 0; g < problem.nodes[n].gpus; ++g) {
        pm.P[t][n].push_back(
            m.AddVar(0, 1, 0, true,
                     "P_" + std::to_string(t) + "_" + std::to_string(n) + "_" + std::to_string(g)));
      }
    }
  }
  for (int n = 0; n < N; ++n) {
    pm.I[n].resize(problem.nodes[n].gpus);
    for (int g = 0; g < problem.nodes[n].gpus; ++g) {
      for (int t = 0; t < T; ++t) {
        pm.I[n][g].push_back(
            m.AddVar(0, pm.horizon, 0, false,
                     "I_" + std::to_string(n) + "_" + std::to_string(g) + "_" + std::to_string(t)));
      }
    }
  }
  for (int t1 = 0; t1 < T; ++t1) {
    for (int t2 = 0; t2 < T; ++t2) {
      if (t1 != t2) {
        pm.A[t1][t2] =
            m.AddVar(0, 1, 0, true, "A_" + std::to_string(t1) + "_" + std::to_string(t2));
      }
    }
  }
}

// One configuration and one node per task.
void AddChoiceRows(PaperModel& pm) {
  for (int t = 0; t < pm.T; ++t) {
    Terms one_config, one_node;
    for (int v : pm.B[t])
      one_config.push_back({v, 1.0});
    for (int v : pm.O[t])
      one_node.push_back({v, 1.0});
    pm.m.AddRow(one_config, 1, 1);
    pm.m.AddRow(one_node, 1, 1);
  }
}

// C >= I[n,g,t] + runtime(t,s) - M (1 - B[t,s]).
void AddMakespanRows(PaperModel& pm) {
  for (int n = 0; n < pm.N; ++n) {
    for (int g = 0; g < pm.problem.nodes[n].gpus; ++g) {
      for (int t = 0; t < pm.T; ++t) {
        for (size_t k = 0; k < pm.configs[t].size(); ++k) {
          pm.m.AddRow({{pm.C, 1.0}, {pm.I[n][g][t], -1.0}, {pm.B[t][k], -pm.M}},
                      pm.Runtime(t, pm.configs[t][k]) - pm.M, kMipInf);
        }
      }
    }
  }
}

// GPU count: sum_g P[t,n,g] = gpus(s) when B[t,s] and O[t,n]; 0 off the node.
void AddGpuCountRows(PaperModel& pm) {
  for (int t = 0; t < pm.T; ++t) {
    for (int n = 0; n < pm.N; ++n) {
      const double Mg = pm.problem.nodes[n].gpus + pm.problem.MaxNodeGpus();
      Terms held;
      for (int v : pm.P[t][n])
        held.push_back({v, 1.0});
      for (size_t k = 0; k < pm.configs[t].size(); ++k) {
        double need = pm.Gpus(t, pm.configs[t][k]);
        // A configuration of another GPU type (or pinned elsewhere) is
        // never on this node: B[t,s] + O[t,n] <= 1.
        if (!pm.problem.Fits(pm.problem.tasks[t].options[pm.configs[t][k]], n)) {
          pm.m.AddRow({{pm.B[t][k], 1.0}, {pm.O[t][n], 1.0}}, -kMipInf, 1);
        }
        Terms row = held;
        row.push_back({pm.B[t][k], -Mg});
        row.push_back({pm.O[t][n], -Mg});
        pm.m.AddRow(row, need - 2 * Mg, kMipInf);  // >= need - Mg(1-B) - Mg(1-O)
        row = held;
        row.push_back({pm.B[t][k], Mg});
        row.push_back({pm.O[t][n], Mg});
        pm.m.AddRow(row, -kMipInf, need + 2 * Mg);  // <= need + Mg(1-B) + Mg(1-O)
      }
      Terms off = held;
      off.push_back({pm.O[t][n], -Mg});
      pm.m.AddRow(off, -kMipInf, 0);  // sum_g P <= Mg * O
    }
  }
}

// Same start on every GPU the task holds: sum_g I[n,g,t] / gpus(s) = I[n,g,t]
// whenever P[t,n,g], B[t,s] and O[t,n]. The average can reach (GPUs per
// node) x horizon for an unchosen configuration, hence a larger M here.
void AddSameStartRows(PaperModel& pm) {
  const double Ms = (pm.problem.MaxNodeGpus() + 1) * pm.horizon;
  for (int t = 0; t < pm.T; ++t) {
    for (int n = 0; n < pm.N; ++n) {
      const int node_gpus = pm.problem.nodes[n].gpus;
      for (size_t k = 0; k < pm.configs[t].size(); ++k) {
        double inv = 1.0 / pm.Gpus(t, pm.configs[t][k]);
        for (int g = 0; g < node_gpus; ++g) {
          Terms row;
          for (int g2 = 0; g2 < node_gpus; ++g2) {
            row.push_back({pm.I[n][g2][t], g2 == g ? inv - 1.0 : inv});
          }
          Terms le = row;
          le.push_back({pm.P[t][n][g], Ms});
          le.push_back({pm.B[t][k], Ms});
          le.push_back({pm.O[t][n], Ms});
          pm.m.AddRow(le, -kMipInf, 3 * Ms);
          Terms ge = row;
          ge.push_back({pm.P[t][n][g], -Ms});
          ge.push_back({pm.B[t][k], -Ms});
          ge.push_back({pm.O[t][n], -Ms});
          pm.m.AddRow(ge, -3 * Ms, kMipInf);
        }
      }
    }
  }
}

// Exclusion on GPU g of node n for the ordered pair (t, t2), as the prototype:
// A[t2,t] = 0: t before t2;  A[t2,t] = 1: t after t2.
void AddExclusionRows(PaperModel& pm, int n, int g, int t, int t2) {
  const double M = pm.M;
  const auto& I = pm.I[n][g];
  for (size_t k = 0; k < pm.configs[t].size(); ++k) {
    // I_t <= I_t2 - p(t,s) + M(2 - P_t2 - P_t) + M A + M (1 - B)
    pm.m.AddRow({{I[t], 1.0},
                 {I[t2], -1.0},
                 {pm.P[t2][n][g], M},
                 {pm.P[t][n][g], M},
                 {pm.A[t2][t], -M},
                 {pm.B[t][k], M}},
                -kMipInf, -pm.Runtime(t, pm.configs[t][k]) + 3 * M);
  }
  for (size_t k = 0; k < pm.configs[t2].size(); ++k) {
    // I_t >= I_t2 + p(t2,s) - M(2 - P_t - P_t2) - M(1 - A) - M(1 - B_t2)
    pm.m.AddRow({{I[t], 1.0},
                 {I[t2], -1.0},
                 {pm.P[t][n][g], -M},
                 {pm.P[t2][n][g], -M},
                 {pm.A[t2][t], -M},
                 {pm.B[t2][k], -M}},
                pm.Runtime(t2, pm.configs[t2][k]) - 4 * M, kMipInf);
  }
}

// On every GPU, for every ordered pair of tasks.
void AddAllExclusionRows(PaperModel& pm) {
  for (int n = 0; n < pm.N; ++n) {
    for (int g = 0; g < pm.problem.nodes[n].gpus; ++g) {
      for (int t = 0; t < pm.T; ++t) {
        for (int t2 = 0; t2 < pm.T; ++t2) {
          if (t != t2) AddExclusionRows(pm, n, g, t, t2);
        }
      }
    }
  }
}

// Variable values for a known schedule, laid out as AddVariables does.
std::vector<double> StartValues(const PaperModel& pm, const Schedule& schedule) {
  const Problem& problem = pm.problem;
  const int T = pm.T, N = pm.N;
  std::vector<std::vector<int>> ids = AssignGpuIds(problem, schedule);
  auto holds = [&](int t, int n, int g) {
    return schedule[t].node == n && std::find(ids[t].begin(), ids[t].end(), g) != ids[t].end();
  };
  std::vector<double> v;
  v.reserve(pm.m.NumVars());
  v.push_back(Makespan(problem, schedule));
  for (int t = 0; t < T; ++t) {
    for (int s : pm.configs[t])
      v.push_back(schedule[t].option == s ? 1 : 0);
    for (int n = 0; n < N; ++n) {
      v.push_back(schedule[t].node == n ? 1 : 0);
      for (int g = 0; g < problem.nodes[n].gpus; ++g)
        v.push_back(holds(t, n, g) ? 1 : 0);
    }
  }
  for (int n = 0; n < N; ++n) {
    for (int g = 0; g < problem.nodes[n].gpus; ++g) {
      for (int t = 0; t < T; ++t)
        v.push_back(holds(t, n, g) ? schedule[t].start : 0.0);
    }
  }
  for (int t1 = 0; t1 < T; ++t1) {
    for (int t2 = 0; t2 < T; ++t2) {
      // A[t1,t2] = 1 iff t2 runs after t1.
      if (t1 != t2) v.push_back(schedule[t2].start >= schedule[t1].start ? 1 : 0);
    }
  }
  return v;
}

// CBC found nothing in time: the plan is current practice, and says so.
SolveResult CurrentPracticeFallback(const Problem& problem, const SolveContext& ctx,
                                    double lower_bound) {
  std::vector<int> order(problem.NumTasks());
  std::iota(order.begin(), order.end(), 0);
  SolveResult result;
  result.lower_bound = lower_bound;
  result.status = SolveStatus::kTimeLimit;
  result.schedule = WholeNodeSchedule(problem, order);
  result.note = "CBC found no solution in " + std::to_string(ctx.time_limit_s) +
                " s; plan is current practice";
  return result;
}

// The chosen configuration, node and start (on the first GPU held) per task.
Schedule DecodeRaw(const PaperModel& pm, const MipResult& r) {
  Schedule raw(pm.T);
  for (int t = 0; t < pm.T; ++t) {
    for (size_t k = 0; k < pm.configs[t].size(); ++k) {
      if (r.values[pm.B[t][k]] > 0.5) raw[t].option = pm.configs[t][k];
    }
    for (int n = 0; n < pm.N; ++n) {
      if (r.values[pm.O[t][n]] <= 0.5) continue;
      raw[t].node = n;
      for (int g = 0; g < pm.problem.nodes[n].gpus; ++g) {
        if (r.values[pm.P[t][n][g]] > 0.5) {
          raw[t].start = std::max(0.0, r.values[pm.I[n][g][t]]);
          break;
        }
      }
    }
  }
  return raw;
}

class SaturnMilpSolver final : public Solver {
 public:
  std::string_view Name() const override { return "saturn-milp"; }
  std::string_view Description() const override {
    return "the paper's MILP (per-GPU big-M disjunctions) on CBC";
  }

  SolveResult Solve(const Problem& problem, const SolveContext& ctx) const override {
    PaperModel pm(problem);
    ChooseConfigs(pm);
    AddVariables(pm);
    AddChoiceRows(pm);
    AddMakespanRows(pm);
    AddGpuCountRows(pm);
    AddSameStartRows(pm);
    AddAllExclusionRows(pm);
    if (!ctx.warm_start.empty()) pm.m.SetStart(StartValues(pm, ctx.warm_start));

    MipOptions options;
    options.time_limit_s = ctx.time_limit_s;
    options.threads = ctx.threads;
    MipResult r = pm.m.Solve(options);

    const double lower_bound = std::max(0.0, r.bound);
    if (!r.has_solution) return CurrentPracticeFallback(problem, ctx, lower_bound);
    SolveResult result;
    result.lower_bound = lower_bound;
    SerialDecoder decoder(problem);
    result.schedule = decoder.Compact(DecodeRaw(pm, r));
    result.status = r.proven_optimal ? SolveStatus::kOptimal : SolveStatus::kTimeLimit;
    result.note = "CBC: " + std::to_string(pm.m.NumVars()) + " variables, " +
                  std::to_string(pm.m.NumRows()) + " constraints, " + std::to_string(r.nodes) +
                  " nodes";
    return result;
  }
};

}  // namespace

std::unique_ptr<Solver> MakeSaturnMilpSolver() {
  return std::make_unique<SaturnMilpSolver>();
}

}  // namespace saturn
