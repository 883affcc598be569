#include "planner/explain.h"

#include "common/format.h"

namespace saturn {
namespace {

std::string Name(const Problem& problem, const Option& o) {
  std::string type = problem.Mixed() ? " on " + GpuTypeLabel(problem.TypeName(o.type)) : "";
  return o.technique + " x" + std::to_string(o.gpus) + type;
}

}  // namespace

std::string WhyThisOption(const Problem& problem, int task, int option) {
  const Task& t = problem.tasks[static_cast<size_t>(task)];
  const Option& chosen = t.options[static_cast<size_t>(option)];
  if (chosen.starts_now) return "kept running where it was";
  const Option* fastest = nullptr;
  int usable = 0;
  for (const Option& o : t.options) {
    if (o.starts_now || !problem.FitsSomewhere(o)) continue;
    ++usable;
    if (!fastest || o.runtime_s < fastest->runtime_s) fastest = &o;
  }
  if (usable <= 1) return "the only configuration that runs on these devices";
  if (!fastest || fastest->runtime_s >= chosen.runtime_s * (1 - 1e-9)) {
    return "its fastest configuration";
  }
  std::string faster = Name(problem, *fastest) + " would be " +
                       FormatFixed(chosen.runtime_s / fastest->runtime_s, 2) + "x faster";
  if (fastest->gpus > chosen.gpus) {
    return "fewer GPUs: " + faster + " on " + FormatFixed(1.0 * fastest->gpus / chosen.gpus, 1) +
           "x the GPUs; the plan runs tasks side by side";
  }
  if (problem.Mixed() && fastest->type != chosen.type) {
    return "another GPU type: " + faster + "; those GPUs are taken by other tasks";
  }
  return "fits the plan best: " + faster;
}

}  // namespace saturn
