#include "planner/flow_milp.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "planner/list_scheduler.h"

namespace saturn {
namespace {

struct Choice {
  int option;
  int node;
  int var;
};

using Terms = std::vector<std::pair<int, double>>;

// The model and the indices of its variables.
struct FlowModel {
  FlowModel(const Problem& p, double ub) : problem(p), T(p.NumTasks()), N(p.NumNodes()), UB(ub) {}

  const Problem& problem;
  const int T;
  const int N;
  const double UB;
  MipModel m;
  int C = -1;
  std::vector<std::vector<Choice>> choices;  // per task: its (option, node) variables
  std::vector<int> max_gpus;                 // per task: most GPUs over its choices
  std::vector<int> S;
  std::vector<std::vector<int>> z;
  // f[n][i][j] with i == T meaning the node's pool.
  std::vector<std::vector<std::vector<int>>> f;

  Terms RuntimeTerms(int j, double scale) const {
    Terms terms;
    for (const Choice& c : choices[j]) {
      terms.push_back({c.var, scale * problem.tasks[j].options[c.option].runtime_s});
    }
    return terms;
  }
  Terms GpusOn(int j, int n, double scale) const {
    Terms terms;
    for (const Choice& c : choices[j]) {
      if (c.node == n) terms.push_back({c.var, scale * problem.tasks[j].options[c.option].gpus});
    }
    return terms;
  }
};

FlowMilpOutcome IncumbentMeetsBound(const Schedule& incumbent, double makespan) {
  FlowMilpOutcome done;
  done.has_solution = true;
  done.schedule = incumbent;
  done.bound = makespan;
  done.optimal = true;
  return done;
}

// x[j,o,n] and C. The incumbent's options must be in the model even if dominated.
void AddChoiceVariables(FlowModel& fm, const Schedule& incumbent, double lower_bound) {
  const Problem& problem = fm.problem;
  fm.choices.assign(fm.T, {});
  fm.max_gpus.assign(fm.T, 0);
  fm.C = fm.m.AddVar(std::min(lower_bound, fm.UB), fm.UB, 1.0, false, "C");
  for (int j = 0; j < fm.T; ++j) {
    std::vector<int> opts = UsefulOptions(problem.tasks[j]);
    if (std::find(opts.begin(), opts.end(), incumbent[j].option) == opts.end()) {
      opts.push_back(incumbent[j].option);
    }
    for (int o : opts) {
      const Option& opt = problem.tasks[j].options[o];
      if (opt.runtime_s > fm.UB) continue;  // cannot be in a better plan
      for (int n = 0; n < fm.N; ++n) {
        if (!problem.Fits(opt, n)) continue;
        fm.choices[j].push_back({o, n,
                                 fm.m.AddVar(0, 1, 0, true,
                                             "x_" + std::to_string(j) + "_" + std::to_string(o) +
                                                 "_" + std::to_string(n))});
        fm.max_gpus[j] = std::max(fm.max_gpus[j], opt.gpus);
      }
    }
  }
}

// S_j, z[i,j] and f[n,i,j].
void AddTimingAndFlowVariables(FlowModel& fm) {
  const int T = fm.T;
  fm.S.assign(T, -1);
  for (int j = 0; j < T; ++j)
    fm.S[j] = fm.m.AddVar(0, fm.UB, 0, false, "S_" + std::to_string(j));
  fm.z.assign(T, std::vector<int>(T, -1));
  fm.f.assign(fm.N, std::vector<std::vector<int>>(T + 1, std::vector<int>(T, -1)));
  for (int i = 0; i < T; ++i) {
    for (int j = 0; j < T; ++j) {
      if (i != j)
        fm.z[i][j] = fm.m.AddVar(0, 1, 0, true, "z_" + std::to_string(i) + "_" + std::to_string(j));
    }
  }
  for (int n = 0; n < fm.N; ++n) {
    for (int i = 0; i <= T; ++i) {
      for (int j = 0; j < T; ++j) {
        if (i == j) continue;
        double cap = fm.problem.nodes[n].gpus;
        if (i < T)
          cap = std::min<double>(
              {cap, static_cast<double>(fm.max_gpus[i]), static_cast<double>(fm.max_gpus[j])});
        fm.f[n][i][j] = fm.m.AddVar(
            0, cap, 0, false,
            "f_" + std::to_string(n) + "_" + std::to_string(i) + "_" + std::to_string(j));
      }
    }
  }
}

// One choice per task, C >= S_j + p_j, and starts_now options start at 0.
void AddTaskRows(FlowModel& fm) {
  for (int j = 0; j < fm.T; ++j) {
    Terms one;
    for (const Choice& c : fm.choices[j])
      one.push_back({c.var, 1.0});
    fm.m.AddRow(one, 1, 1);
    // C >= S_j + p_j
    Terms row = fm.RuntimeTerms(j, -1.0);
    row.push_back({fm.C, 1.0});
    row.push_back({fm.S[j], -1.0});
    fm.m.AddRow(row, 0, kMipInf);
    // starts_now options force S_j = 0.
    for (const Choice& c : fm.choices[j]) {
      if (fm.problem.tasks[j].options[c.option].starts_now)
        fm.m.AddRow({{fm.S[j], 1.0}, {c.var, fm.UB}}, -kMipInf, fm.UB);
    }
  }
}

// z[i,j] = 1 means i ends before j starts; at most one of z[i,j], z[j,i].
void AddPrecedenceRows(FlowModel& fm) {
  for (int i = 0; i < fm.T; ++i) {
    for (int j = 0; j < fm.T; ++j) {
      if (i == j) continue;
      // S_j >= S_i + p_i - UB (1 - z_ij)
      Terms row = fm.RuntimeTerms(i, -1.0);
      row.push_back({fm.S[j], 1.0});
      row.push_back({fm.S[i], -1.0});
      row.push_back({fm.z[i][j], -fm.UB});
      fm.m.AddRow(row, -fm.UB, kMipInf);
      if (i < j) fm.m.AddRow({{fm.z[i][j], 1.0}, {fm.z[j][i], 1.0}}, -kMipInf, 1);
    }
  }
}

// Node n's pool holds its GPUs; each task receives exactly its GPUs on n,
// passes on at most that many, and only to tasks that start after it ends.
void AddFlowRows(FlowModel& fm, int n) {
  const int T = fm.T;
  const auto& f = fm.f[n];
  const double G = fm.problem.nodes[n].gpus;
  Terms pool;
  for (int j = 0; j < T; ++j)
    pool.push_back({f[T][j], 1.0});
  fm.m.AddRow(pool, -kMipInf, G);
  for (int j = 0; j < T; ++j) {
    // inflow == GPUs of j on n
    Terms in = fm.GpusOn(j, n, -1.0);
    in.push_back({f[T][j], 1.0});
    for (int i = 0; i < T; ++i) {
      if (i != j) in.push_back({f[i][j], 1.0});
    }
    fm.m.AddRow(in, 0, 0);
    // outflow <= GPUs of j on n
    Terms out = fm.GpusOn(j, n, -1.0);
    for (int k = 0; k < T; ++k) {
      if (k != j) out.push_back({f[j][k], 1.0});
    }
    fm.m.AddRow(out, -kMipInf, 0);
    for (int k = 0; k < T; ++k) {
      if (k == j) continue;
      fm.m.AddRow({{f[j][k], 1.0}, {fm.z[j][k], -std::min<double>(G, fm.max_gpus[j])}}, -kMipInf,
                  0);
    }
  }
}

// Valid inequalities on node n: GPU-seconds <= G * C, and two tasks that each
// hold more than half of the node are ordered.
void AddNodeCuts(FlowModel& fm, int n) {
  const int T = fm.T;
  const double G = fm.problem.nodes[n].gpus;
  Terms area = {{fm.C, -G}};
  for (int j = 0; j < T; ++j) {
    for (const Choice& c : fm.choices[j]) {
      const Option& o = fm.problem.tasks[j].options[c.option];
      if (c.node == n) area.push_back({c.var, o.gpus * o.runtime_s});
    }
  }
  fm.m.AddRow(area, -kMipInf, 0);
  std::vector<Terms> big(T);
  for (int j = 0; j < T; ++j) {
    for (const Choice& c : fm.choices[j]) {
      if (c.node == n && 2 * fm.problem.tasks[j].options[c.option].gpus > G) {
        big[j].push_back({c.var, -1.0});
      }
    }
  }
  for (int i = 0; i < T; ++i) {
    for (int j = i + 1; j < T; ++j) {
      if (big[i].empty() || big[j].empty()) continue;
      Terms row = big[i];
      row.insert(row.end(), big[j].begin(), big[j].end());
      row.push_back({fm.z[i][j], 1.0});
      row.push_back({fm.z[j][i], 1.0});
      fm.m.AddRow(row, -1, kMipInf);
    }
  }
}

bool HasPinnedOptions(const Problem& problem) {
  bool pinned = false;
  for (const Task& t : problem.tasks) {
    for (const Option& o : t.options)
      pinned = pinned || o.node >= 0 || o.starts_now;
  }
  return pinned;
}

// Symmetry: among identical nodes (same size and type, no pinned options), node n+1
// may hold task j only if node n holds some task i <= j... applied to
// consecutive nodes of equal size.
void AddSymmetryRows(FlowModel& fm) {
  for (int n = 0; n + 1 < fm.N; ++n) {
    if (fm.problem.nodes[n].gpus != fm.problem.nodes[n + 1].gpus ||
        fm.problem.nodes[n].type != fm.problem.nodes[n + 1].type) {
      continue;
    }
    for (int j = 0; j < fm.T; ++j) {
      Terms row;
      for (const Choice& c : fm.choices[j]) {
        if (c.node == n + 1) row.push_back({c.var, 1.0});
      }
      for (int i = 0; i <= j; ++i) {
        for (const Choice& c : fm.choices[i]) {
          if (c.node == n) row.push_back({c.var, -1.0});
        }
      }
      fm.m.AddRow(row, -kMipInf, 0);
    }
  }
}

// Symmetry breaking may reject the incumbent's node labels, so relabel
// identical nodes in order of their lowest task first.
Schedule RelabelIdenticalNodes(const Problem& problem, const Schedule& incumbent) {
  const int T = problem.NumTasks();
  const int N = problem.NumNodes();
  Schedule start = incumbent;
  // (size, type) -> nodes, in index order
  std::map<std::pair<int, int>, std::vector<int>> by_size;
  for (int n = 0; n < N; ++n)
    by_size[{problem.nodes[n].gpus, problem.nodes[n].type}].push_back(n);
  for (auto& [size, nodes] : by_size) {
    std::vector<int> first(N, T);
    for (int j = T - 1; j >= 0; --j)
      first[incumbent[j].node] = j;
    std::vector<int> sorted = nodes;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [&](int a, int b) { return first[a] < first[b]; });
    std::map<int, int> relabel;
    for (size_t k = 0; k < nodes.size(); ++k)
      relabel[sorted[k]] = nodes[k];
    for (Placement& p : start) {
      if (relabel.count(p.node)) p.node = relabel[p.node];
    }
  }
  return start;
}

// The warm start's values: choices, starts, order, and flows that follow
// each GPU's sequence of tasks.
std::vector<double> StartValues(const FlowModel& fm, const Schedule& start) {
  const Problem& problem = fm.problem;
  const int T = fm.T;
  std::vector<std::vector<int>> ids = AssignGpuIds(problem, start);
  std::vector<double> values(fm.m.NumVars(), 0.0);
  values[fm.C] = Makespan(problem, start);
  for (int j = 0; j < T; ++j) {
    values[fm.S[j]] = start[j].start;
    for (const Choice& c : fm.choices[j]) {
      if (c.option == start[j].option && c.node == start[j].node) values[c.var] = 1.0;
    }
  }
  for (int i = 0; i < T; ++i) {
    for (int j = 0; j < T; ++j) {
      if (i != j && start[i].node == start[j].node && EndOf(problem, start, i) <= start[j].start) {
        values[fm.z[i][j]] = 1.0;
      }
    }
  }
  for (int n = 0; n < fm.N; ++n) {
    for (int g = 0; g < problem.nodes[n].gpus; ++g) {
      std::vector<int> users;
      for (int j = 0; j < T; ++j) {
        if (start[j].node == n && std::count(ids[j].begin(), ids[j].end(), g)) users.push_back(j);
      }
      std::sort(users.begin(), users.end(),
                [&](int a, int b) { return start[a].start < start[b].start; });
      for (size_t k = 0; k < users.size(); ++k) {
        int from = k == 0 ? T : users[k - 1];
        values[fm.f[n][from][users[k]]] += 1.0;
      }
    }
  }
  return values;
}

// The solver's answer, compacted, or the incumbent where that is no better.
FlowMilpOutcome DecodeOutcome(const FlowModel& fm, const MipResult& r, const Schedule& incumbent,
                              double lower_bound) {
  const Problem& problem = fm.problem;
  FlowMilpOutcome out;
  out.nodes = r.nodes;
  out.variables = fm.m.NumVars();
  out.constraints = fm.m.NumRows();
  out.bound = std::max(lower_bound, r.bound);
  out.optimal = r.proven_optimal;
  out.hit_limit = r.hit_limit;
  Schedule best = incumbent;
  if (r.has_solution) {
    Schedule raw(fm.T);
    for (int j = 0; j < fm.T; ++j) {
      for (const Choice& c : fm.choices[j]) {
        if (r.values[c.var] > 0.5) raw[j] = {c.option, c.node, std::max(0.0, r.values[fm.S[j]])};
      }
    }
    SerialDecoder decoder(problem);
    Schedule compact = decoder.Compact(raw);
    if (Makespan(problem, compact) < Makespan(problem, best)) best = compact;
  }
  out.has_solution = true;
  out.schedule = std::move(best);
  if (out.optimal)
    out.bound = std::max(out.bound, std::min(r.objective, Makespan(problem, out.schedule)));
  out.bound = std::min(out.bound, Makespan(problem, out.schedule));
  return out;
}

}  // namespace

long FlowMilpSize(const Problem& problem) {
  long T = problem.NumTasks(), N = problem.NumNodes();
  long options = 0;
  for (const Task& t : problem.tasks)
    options += static_cast<long>(UsefulOptions(t).size());
  return options * N + T * T * (N + 1) + T * N;
}

FlowMilpOutcome SolveFlowMilp(const Problem& problem, const Schedule& incumbent, double lower_bound,
                              const MipOptions& options) {
  const double UB = Makespan(problem, incumbent);
  // The incumbent meets the bound: nothing to improve or prove.
  if (UB <= lower_bound * (1 + 1e-9)) return IncumbentMeetsBound(incumbent, UB);

  FlowModel fm(problem, UB);
  AddChoiceVariables(fm, incumbent, lower_bound);
  AddTimingAndFlowVariables(fm);
  AddTaskRows(fm);
  AddPrecedenceRows(fm);
  for (int n = 0; n < fm.N; ++n) {
    AddFlowRows(fm, n);
    AddNodeCuts(fm, n);
  }
  const bool pinned = HasPinnedOptions(problem);
  if (!pinned) AddSymmetryRows(fm);

  const Schedule start = pinned ? incumbent : RelabelIdenticalNodes(problem, incumbent);
  fm.m.SetStart(StartValues(fm, start));
  MipResult r = fm.m.Solve(options);
  return DecodeOutcome(fm, r, incumbent, lower_bound);
}

}  // namespace saturn
