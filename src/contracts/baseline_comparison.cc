#include "contracts/baseline_comparison.h"

#include <cmath>

namespace saturn {

std::optional<BaselineComparison> CompareWithBaseline(const Plan& plan, std::string_view solver) {
  std::optional<double> end = BaselineMakespan(plan, solver);
  if (!end) return std::nullopt;
  BaselineComparison c;
  // BaselineMakespan found the baseline: an object in the object "baselines".
  const nlohmann::json& baseline = plan.extra.at("baselines").at(std::string(solver));
  if (auto from = baseline.find("from_s"); from != baseline.end() && from->is_number()) {
    c.from_s = from->get<double>();
  }
  c.plan_s = plan.makespan_s - c.from_s;
  c.baseline_s = *end - c.from_s;
  if (!std::isfinite(c.from_s) || !(c.plan_s > 0) || !(c.baseline_s > 0)) return std::nullopt;
  return c;
}

}  // namespace saturn
