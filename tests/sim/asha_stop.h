// One task's early stopping in simulator tests: ASHA over group "w" (400
// steps, an evaluation every 50, grace 50, reduction factor 2), reporting
// `curve` ((step, loss), ascending; the last holds after).
#pragma once

#include <utility>
#include <vector>

#include "sim/sim_early_stop.h"

namespace saturn::test {

inline SimEarlyStop AshaStop(std::vector<std::pair<long, double>> curve) {
  SimEarlyStop e;
  e.spec.rule = "asha";
  e.spec.grace_steps = 50;
  e.spec.reduction_factor = 2;
  e.group = "w";
  e.steps = 400;
  e.eval_every = 50;
  e.curve = std::move(curve);
  return e;
}

}  // namespace saturn::test
