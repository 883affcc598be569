#include "planner/flow_milp.h"

#include <algorithm>
#include <map>

#include "planner/list_scheduler.h"

namespace saturn {
namespace {

struct Choice {
  int option;
  int node;
  int var;
};

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
  const int T = problem.NumTasks();
  const int N = problem.NumNodes();
  const double UB = Makespan(problem, incumbent);
  if (UB <= lower_bound * (1 + 1e-9)) {
    // The incumbent meets the bound: nothing to improve or prove.
    FlowMilpOutcome done;
    done.has_solution = true;
    done.schedule = incumbent;
    done.bound = UB;
    done.optimal = true;
    return done;
  }

  // The incumbent's options must be in the model even if dominated.
  std::vector<std::vector<Choice>> choices(T);
  std::vector<int> max_gpus(T, 0);
  MipModel m;
  int C = m.AddVar(std::min(lower_bound, UB), UB, 1.0, false, "C");
  for (int j = 0; j < T; ++j) {
    std::vector<int> opts = UsefulOptions(problem.tasks[j]);
    if (std::find(opts.begin(), opts.end(), incumbent[j].option) == opts.end()) {
      opts.push_back(incumbent[j].option);
    }
    for (int o : opts) {
      const Option& opt = problem.tasks[j].options[o];
      if (opt.runtime_s > UB) continue;  // cannot be in a better plan
      for (int n = 0; n < N; ++n) {
        if (!problem.Fits(opt, n)) continue;
        choices[j].push_back({o, n,
                              m.AddVar(0, 1, 0, true,
                                       "x_" + std::to_string(j) + "_" + std::to_string(o) + "_" +
                                           std::to_string(n))});
        max_gpus[j] = std::max(max_gpus[j], opt.gpus);
      }
    }
  }
  std::vector<int> S(T);
  for (int j = 0; j < T; ++j)
    S[j] = m.AddVar(0, UB, 0, false, "S_" + std::to_string(j));
  std::vector<std::vector<int>> z(T, std::vector<int>(T, -1));
  // f[n][i][j] with i == T meaning the node's pool.
  std::vector<std::vector<std::vector<int>>> f(
      N, std::vector<std::vector<int>>(T + 1, std::vector<int>(T, -1)));
  for (int i = 0; i < T; ++i) {
    for (int j = 0; j < T; ++j) {
      if (i != j)
        z[i][j] = m.AddVar(0, 1, 0, true, "z_" + std::to_string(i) + "_" + std::to_string(j));
    }
  }
  for (int n = 0; n < N; ++n) {
    for (int i = 0; i <= T; ++i) {
      for (int j = 0; j < T; ++j) {
        if (i == j) continue;
        double cap = problem.nodes[n].gpus;
        if (i < T)
          cap = std::min<double>(
              {cap, static_cast<double>(max_gpus[i]), static_cast<double>(max_gpus[j])});
        f[n][i][j] =
            m.AddVar(0, cap, 0, false,
                     "f_" + std::to_string(n) + "_" + std::to_string(i) + "_" + std::to_string(j));
      }
    }
  }

  auto runtime_terms = [&](int j, double scale) {
    std::vector<std::pair<int, double>> terms;
    for (const Choice& c : choices[j]) {
      terms.push_back({c.var, scale * problem.tasks[j].options[c.option].runtime_s});
    }
    return terms;
  };
  auto gpus_on = [&](int j, int n, double scale) {
    std::vector<std::pair<int, double>> terms;
    for (const Choice& c : choices[j]) {
      if (c.node == n) terms.push_back({c.var, scale * problem.tasks[j].options[c.option].gpus});
    }
    return terms;
  };

  for (int j = 0; j < T; ++j) {
    std::vector<std::pair<int, double>> one;
    for (const Choice& c : choices[j])
      one.push_back({c.var, 1.0});
    m.AddRow(one, 1, 1);
    // C >= S_j + p_j
    auto row = runtime_terms(j, -1.0);
    row.push_back({C, 1.0});
    row.push_back({S[j], -1.0});
    m.AddRow(row, 0, kMipInf);
    // starts_now options force S_j = 0.
    for (const Choice& c : choices[j]) {
      if (problem.tasks[j].options[c.option].starts_now)
        m.AddRow({{S[j], 1.0}, {c.var, UB}}, -kMipInf, UB);
    }
  }
  for (int i = 0; i < T; ++i) {
    for (int j = 0; j < T; ++j) {
      if (i == j) continue;
      // S_j >= S_i + p_i - UB (1 - z_ij)
      auto row = runtime_terms(i, -1.0);
      row.push_back({S[j], 1.0});
      row.push_back({S[i], -1.0});
      row.push_back({z[i][j], -UB});
      m.AddRow(row, -UB, kMipInf);
      if (i < j) m.AddRow({{z[i][j], 1.0}, {z[j][i], 1.0}}, -kMipInf, 1);
    }
  }
  for (int n = 0; n < N; ++n) {
    const double G = problem.nodes[n].gpus;
    std::vector<std::pair<int, double>> pool;
    for (int j = 0; j < T; ++j)
      pool.push_back({f[n][T][j], 1.0});
    m.AddRow(pool, -kMipInf, G);
    for (int j = 0; j < T; ++j) {
      // inflow == GPUs of j on n
      auto in = gpus_on(j, n, -1.0);
      in.push_back({f[n][T][j], 1.0});
      for (int i = 0; i < T; ++i) {
        if (i != j) in.push_back({f[n][i][j], 1.0});
      }
      m.AddRow(in, 0, 0);
      // outflow <= GPUs of j on n
      auto out = gpus_on(j, n, -1.0);
      for (int k = 0; k < T; ++k) {
        if (k != j) out.push_back({f[n][j][k], 1.0});
      }
      m.AddRow(out, -kMipInf, 0);
      for (int k = 0; k < T; ++k) {
        if (k == j) continue;
        m.AddRow({{f[n][j][k], 1.0}, {z[j][k], -std::min<double>(G, max_gpus[j])}}, -kMipInf, 0);
      }
    }
    // GPU-seconds on node n <= G * C
    std::vector<std::pair<int, double>> area = {{C, -G}};
    for (int j = 0; j < T; ++j) {
      for (const Choice& c : choices[j]) {
        const Option& o = problem.tasks[j].options[c.option];
        if (c.node == n) area.push_back({c.var, o.gpus * o.runtime_s});
      }
    }
    m.AddRow(area, -kMipInf, 0);
    // Two tasks that each hold more than half of node n are ordered.
    std::vector<std::vector<std::pair<int, double>>> big(T);
    for (int j = 0; j < T; ++j) {
      for (const Choice& c : choices[j]) {
        if (c.node == n && 2 * problem.tasks[j].options[c.option].gpus > G) {
          big[j].push_back({c.var, -1.0});
        }
      }
    }
    for (int i = 0; i < T; ++i) {
      for (int j = i + 1; j < T; ++j) {
        if (big[i].empty() || big[j].empty()) continue;
        auto row = big[i];
        row.insert(row.end(), big[j].begin(), big[j].end());
        row.push_back({z[i][j], 1.0});
        row.push_back({z[j][i], 1.0});
        m.AddRow(row, -1, kMipInf);
      }
    }
  }
  // Symmetry: among identical nodes (same size, no pinned options), node n+1
  // may hold task j only if node n holds some task i <= j... applied to
  // consecutive nodes of equal size.
  bool pinned = false;
  for (const Task& t : problem.tasks) {
    for (const Option& o : t.options)
      pinned = pinned || o.node >= 0 || o.starts_now;
  }
  if (!pinned) {
    for (int n = 0; n + 1 < N; ++n) {
      if (problem.nodes[n].gpus != problem.nodes[n + 1].gpus) continue;
      for (int j = 0; j < T; ++j) {
        std::vector<std::pair<int, double>> row;
        for (const Choice& c : choices[j]) {
          if (c.node == n + 1) row.push_back({c.var, 1.0});
        }
        for (int i = 0; i <= j; ++i) {
          for (const Choice& c : choices[i]) {
            if (c.node == n) row.push_back({c.var, -1.0});
          }
        }
        m.AddRow(row, -kMipInf, 0);
      }
    }
  }

  // Warm start. Symmetry breaking may reject the incumbent's node labels, so
  // relabel identical nodes in order of their lowest task first.
  Schedule start = incumbent;
  if (!pinned) {
    std::map<int, std::vector<int>> by_size;  // size -> nodes, in index order
    for (int n = 0; n < N; ++n)
      by_size[problem.nodes[n].gpus].push_back(n);
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
  }
  std::vector<std::vector<int>> ids = AssignGpuIds(problem, start);
  std::vector<double> values(m.NumVars(), 0.0);
  values[C] = Makespan(problem, start);
  for (int j = 0; j < T; ++j) {
    values[S[j]] = start[j].start;
    for (const Choice& c : choices[j]) {
      if (c.option == start[j].option && c.node == start[j].node) values[c.var] = 1.0;
    }
  }
  for (int i = 0; i < T; ++i) {
    for (int j = 0; j < T; ++j) {
      if (i != j && start[i].node == start[j].node && EndOf(problem, start, i) <= start[j].start) {
        values[z[i][j]] = 1.0;
      }
    }
  }
  // Flows: follow each GPU's sequence of tasks.
  for (int n = 0; n < N; ++n) {
    for (int g = 0; g < problem.nodes[n].gpus; ++g) {
      std::vector<int> users;
      for (int j = 0; j < T; ++j) {
        if (start[j].node == n && std::count(ids[j].begin(), ids[j].end(), g)) users.push_back(j);
      }
      std::sort(users.begin(), users.end(),
                [&](int a, int b) { return start[a].start < start[b].start; });
      for (size_t k = 0; k < users.size(); ++k) {
        int from = k == 0 ? T : users[k - 1];
        values[f[n][from][users[k]]] += 1.0;
      }
    }
  }
  m.SetStart(std::move(values));

  MipResult r = m.Solve(options);
  FlowMilpOutcome out;
  out.nodes = r.nodes;
  out.variables = m.NumVars();
  out.constraints = m.NumRows();
  out.bound = std::max(lower_bound, r.bound);
  out.optimal = r.proven_optimal;
  out.hit_limit = r.hit_limit;
  Schedule best = incumbent;
  if (r.has_solution) {
    Schedule raw(T);
    for (int j = 0; j < T; ++j) {
      for (const Choice& c : choices[j]) {
        if (r.values[c.var] > 0.5) raw[j] = {c.option, c.node, std::max(0.0, r.values[S[j]])};
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

}  // namespace saturn
