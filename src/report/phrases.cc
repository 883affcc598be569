#include "report/phrases.h"

#include "common/format.h"

namespace saturn {

std::string PlanEndsClause(double now_s, double estimate_s, double first_plan_s) {
  const std::string first = "first plan " + FormatDuration(first_plan_s);
  // FormatDuration's resolution: an estimate within a tenth of a second of
  // now is not late yet.
  if (estimate_s > 0 && now_s > estimate_s + 0.05) {
    return "plan ends ~now (estimate " + FormatDuration(estimate_s) + ", running " +
           FormatDuration(now_s - estimate_s) + " late; " + first + ")";
  }
  return "plan ends ~" + FormatDuration(estimate_s) + " (" + first + ")";
}

}  // namespace saturn
