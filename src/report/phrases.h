// Sentences the terminal and the report share, as pure functions so that
// their wording is tested where it is made.
//
//   std::string s = PlanEndsClause(10.1, 6.5, 6.5);
//   // "plan ends ~now (estimate 6.5s, running 3.6s late; first plan 6.5s)"
#pragma once

#include <string>

namespace saturn {

// The progress line's end of the plan, at `now_s` on the run clock: "plan
// ends ~6.5s (first plan 6.5s)" while the estimate is ahead; once it is
// past (tasks run longer than planned and no re-plan moved it yet), "plan
// ends ~now (estimate 6.5s, running 3.6s late; first plan 6.5s)" rather
// than a time already gone.
std::string PlanEndsClause(double now_s, double estimate_s, double first_plan_s);

}  // namespace saturn
