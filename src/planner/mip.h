// A small MILP builder over CBC, so the formulations read as algebra and the
// CBC specifics (elapsed-time limits, MIP starts, thread and node limits,
// serialised calls into CBC's global state) live in one place.
//
//   MipModel m;
//   int x = m.AddVar(0, 1, /*objective=*/1.0, /*integer=*/true, "x");
//   m.AddRow({{x, 1.0}}, 1.0, kMipInf);       // x >= 1
//   m.SetStart({1.0});
//   MipResult r = m.Solve({.time_limit_s = 5});
#pragma once

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/defaults.h"

namespace saturn {

constexpr double kMipInf = std::numeric_limits<double>::infinity();

struct MipOptions {
  double time_limit_s = defaults::kSolverTimeLimitS;  // wall-clock (CBC's elapsed-time mode)
  int threads = 1;
  long max_nodes = -1;      // -1: no limit; deterministic effort cap for tests
  double cutoff = kMipInf;  // only look for solutions with objective below this
  bool log = false;
};

struct MipResult {
  bool has_solution = false;
  std::vector<double> values;
  double objective = kMipInf;
  double bound = -kMipInf;  // best proven lower bound (minimisation)
  bool proven_optimal = false;
  bool proven_infeasible = false;
  bool hit_limit = false;  // stopped by time or node limit
  long nodes = 0;
};

class MipModel {
 public:
  int AddVar(double lower, double upper, double objective, bool integer, std::string name);
  // lower <= sum(coef * var) <= upper
  void AddRow(const std::vector<std::pair<int, double>>& terms, double lower, double upper);
  // A full assignment to try first (CBC checks it and keeps it if feasible).
  void SetStart(std::vector<double> values) { start_ = std::move(values); }
  int NumVars() const { return static_cast<int>(lower_.size()); }
  int NumRows() const { return static_cast<int>(row_lower_.size()); }
  // Minimises the objective.
  MipResult Solve(const MipOptions& options) const;

 private:
  std::vector<double> lower_, upper_, objective_;
  std::vector<bool> integer_;
  std::vector<std::string> names_;
  std::vector<std::vector<std::pair<int, double>>> rows_;
  std::vector<double> row_lower_, row_upper_;
  std::vector<double> start_;
};

}  // namespace saturn
