// Measurements on one GPU type that contradict the others (mixed clusters,
// docs/types.md): a configuration measured much slower on the type where
// its siblings run faster is more likely a trial that shared its machine
// with something else (contention) than a real property of the type. The
// profile summary flags each one with its reason; the planner still uses
// the row as measured (`saturn profile --refresh` measures every trial again).
//
//   for (const TypeContradiction& c : FindTypeContradictions(workload, run)) ...
#pragma once

#include <vector>

#include "contracts/workload.h"
#include "profiler/profiler.h"

namespace saturn {

// A configuration (technique x GPU count of a trial) measured on two types,
// `suspect` being the measurement that is slow where its siblings are fast.
// Siblings are the other configurations measured on both types of the tasks
// with the same model, batch size, precision and fine-tuning (learning-rate
// and seed variants share trials, so they count once). Flagged when at least
// three in four siblings (and at least two) run faster on the suspect's type,
// the configuration measured slower there, and its step-time ratio is at
// least kContradictionFactor times the siblings' median ratio. Only measured
// trials count (not estimated ones).
constexpr double kContradictionFactor = 2.0;

struct TypeContradiction {
  int task = 0;     // a workload task that uses the configuration (the first)
  int suspect = 0;  // the slow measurement (index into run.trials)
  int other = 0;    // the same configuration on the other type
  // Step time on the suspect's type over the other's (> 1), and the same
  // ratio's median over the siblings (< 1: they run faster there).
  double ratio = 1.0;
  double siblings_ratio = 1.0;
  int siblings = 0;
};

std::vector<TypeContradiction> FindTypeContradictions(const Workload& workload,
                                                      const ProfileRun& run);

}  // namespace saturn
