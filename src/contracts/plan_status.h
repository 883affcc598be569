// A plan's status (Contract 3: optimal, feasible, time_limit, infeasible) in
// the words a user reads on the terminal.
//
//   std::fprintf(stderr, "plan: %s\n", DescribePlanStatus(plan.status).c_str());
#pragma once

#include <string>

namespace saturn {

inline std::string DescribePlanStatus(const std::string& status) {
  if (status == "optimal") return "proven optimal";
  if (status == "feasible") return "feasible (not proven optimal)";
  if (status == "time_limit") return "stopped at its time limit (not proven optimal)";
  if (status == "infeasible") return "infeasible (no configuration of some task fits)";
  return status;
}

}  // namespace saturn
