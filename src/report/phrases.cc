#include "report/phrases.h"

#include <iterator>

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

std::string SpeedupVerdict(const SpeedupFigures& f, bool html) {
  const std::string times = html ? "&times;" : "x";
  auto bold = [&](const std::string& text) { return html ? "<b>" + text + "</b>" : text; };
  // "2.08x faster", or "1.25x slower" for a ratio below 1.
  auto faster = [&](double ratio) {
    return ratio >= 1 ? FormatFixed(ratio, 2) + times + " faster"
                      : FormatFixed(1 / ratio, 2) + times + " slower";
  };
  const double training = f.current_practice_s / f.run_s;
  const double in_all = f.current_practice_s / (f.run_s + f.setup_s);
  const std::string promised = "the plan promised " + faster(f.planned_speedup);
  if (training >= 1 && in_all >= 1) {
    return "this run was " + bold(faster(training)) + " (" + faster(in_all) +
           " counting profiling and planning; " + promised + ")";
  }
  if (training < 1) {
    return "this run was " + bold(faster(training)) + " than that estimate, " +
           bold(faster(in_all)) + " counting profiling and planning (" + promised + ")";
  }
  // Training saved less than profiling and planning cost. The saving grows
  // with the steps, profiling does not: it pays off from setup / saving
  // times this run's steps.
  const double saved = f.current_practice_s - f.run_s;
  std::string longer;
  if (saved > 0) {
    longer = ": from about " + FormatFixed(f.setup_s / saved, 1) + times + " this run's steps";
  }
  return "training was " + faster(training) + ", but counting profiling and planning (" +
         FormatDuration(f.setup_s) + ") this run took " +
         bold(FormatFixed(1 / in_all, 2) + times + " as long as current practice") + " (" +
         FormatDuration(f.run_s + f.setup_s) + " against " + FormatDuration(f.current_practice_s) +
         "): profiling cost more than the plan saved. It pays off when the profile cache holds "
         "the trials (a re-run of these tasks profiles almost nothing) and for longer training "
         "(profiling does not grow with steps" +
         longer + "); " + promised;
}

std::string ContentionWarning(double median, int tasks, bool compared) {
  std::string text = "tasks trained " + FormatFixed(median, 1) +
                     "x slower than profiled (median over " + Plural(tasks, "task") +
                     "): is the machine shared with other work?";
  if (compared) {
    text +=
        " Current practice's time is estimated from the same profile, so the comparison above "
        "favours it by about that factor.";
  }
  return text;
}

std::string FormatBytes(double bytes) {
  static const char* const kUnits[] = {"B", "kB", "MB", "GB", "TB"};
  size_t unit = 0;
  while (bytes >= 999.95 && unit + 1 < std::size(kUnits)) {
    bytes /= 1000;
    ++unit;
  }
  if (unit == 0) return FormatFixed(bytes, 0) + " B";
  return FormatFixed(bytes, bytes < 100 ? 1 : 0) + " " + kUnits[unit];
}

std::string WithCommas(long n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (n < 0 ? "-" : "") + out;
}

}  // namespace saturn
