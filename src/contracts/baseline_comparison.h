// Saturn's plan beside a baseline's over the same span of time, as every
// place that shows the gain compares them (the terminal, the report, the
// dashboard's plan card, whose baselineLine does the same arithmetic).
//
//   if (auto c = CompareWithBaseline(plan, "current-practice"))
//     std::printf("%.2fx\n", c->Ratio());  // > 1: Saturn's plan is shorter
#pragma once

#include <optional>
#include <string_view>

#include "contracts/plan.h"

namespace saturn {

// Both spans start when the plan and its baselines were made for the work
// then left: the baselines' "from_s" on the run clock (a submission's or a
// re-plan's time in `saturn serve`; 0, or left out, for a run's first
// plan), and end at each one's end. Time before it (a service idle between
// submissions, work done before a re-plan) counts on neither side, so a gap
// between submissions never changes the ratio.
struct BaselineComparison {
  double from_s = 0.0;
  double plan_s = 0.0;      // Saturn's plan: from from_s to its end
  double baseline_s = 0.0;  // the baseline: from from_s to its end
  double Ratio() const { return baseline_s / plan_s; }
};

// The plan against its baseline `solver` (plan.extra["baselines"],
// planner/baselines.h); nullopt without that baseline or when either span is
// not positive.
std::optional<BaselineComparison> CompareWithBaseline(const Plan& plan, std::string_view solver);

}  // namespace saturn
