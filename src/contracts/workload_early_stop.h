// The workload's `early_stop:` (contracts/early_stop.h), read and checked
// against its tasks: every task evaluates (the rules decide at evaluations),
// and at every step the rule may decide at (grace_steps a multiple of each
// task's eval.every; ASHA's later rungs are multiples of it).
//
//   w.early_stop = ReadEarlyStop(top, w);   // after the tasks are read
#pragma once

#include "contracts/early_stop.h"
#include "contracts/workload.h"
#include "contracts/yaml_fields.h"

namespace saturn {

// Reads `early_stop:` and `select:` into `w` and each of its tasks (one
// early-stopping group: the workload's source). Under a rule whose `order`
// is shuffled (the default), `w.tasks` then stand in a random order fixed by
// their names, the order the planner breaks ties in and so the order in
// which tasks of equal work start. Both rules judge a task against those
// that reached a step before it (the first to reach an ASHA rung always
// goes on), so the order decides what they stop: a learning-rate grid
// written from its worst rate to its best, as grids are written, stops
// almost nothing, where the same grid in a random order stops what the
// planner's model of the rule expects (tune/early_stop.h assumes a random
// order). `order: written` keeps the order written (a user who writes the
// settings they expect to win first makes the rule stop more).
void ReadModelSelection(const YamlFields& top, Workload& w);

// The rules a workload may name, with the fields each takes.
const std::vector<std::string>& EarlyStopRuleNames();

// An empty spec when `top` has no early_stop:. InputError naming the field
// (or the task that cannot take part) otherwise.
EarlyStopSpec ReadEarlyStop(const YamlFields& top, const Workload& w);
// `select:`, defaulting to `early_stop`'s metric; InputError naming the
// field, or a task that does not evaluate.
SelectSpec ReadSelect(const YamlFields& top, const Workload& w, const EarlyStopSpec& early_stop);

}  // namespace saturn
