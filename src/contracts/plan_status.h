// A plan's status (Contract 3: optimal, feasible, time_limit, infeasible) in
// the words a user reads on the terminal.
//
//   std::fprintf(stderr, "plan: %s\n", DescribePlanStatus(plan.status).c_str());
//   DescribeGapToBound(100.04, 100);   // "within 0.1% of the lower bound"
#pragma once

#include <cmath>
#include <cstdio>
#include <string>

namespace saturn {

inline std::string DescribePlanStatus(const std::string& status) {
  if (status == "optimal") return "proven optimal";
  if (status == "feasible") return "feasible (not proven optimal)";
  if (status == "time_limit") return "stopped at its time limit (not proven optimal)";
  if (status == "infeasible") return "infeasible (no configuration of some task fits)";
  return status;
}

// How far a makespan is from its lower bound, relative to the bound, in
// words that never read as a contradiction beside "not proven optimal": "at
// the lower bound" only when they are equal (which proves the plan
// optimal), "within 0.1% of the lower bound" for any gap under 0.1% (not
// "within 0.0%"), else the gap rounded up to a tenth ("within 7.3% of the
// lower bound"). The dashboard says it alike (gapToBound in
// src/service/dashboard/index.html).
inline std::string DescribeGapToBound(double makespan_s, double lower_bound_s) {
  const double gap = 100 * (makespan_s / lower_bound_s - 1);
  if (!(gap > 1e-7)) return "at the lower bound";
  if (gap < 0.1) return "within 0.1% of the lower bound";
  char text[64];
  std::snprintf(text, sizeof text, "%.1f", std::ceil(gap * 10 - 1e-9) / 10);
  return "within " + std::string(text) + "% of the lower bound";
}

}  // namespace saturn
