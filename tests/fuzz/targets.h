// The fuzz targets: one per reader of outside input (cluster YAML, workload
// YAML with sweeps, profile CSV, plan JSON, event lines, the worker
// protocol's messages and progress lines, command tasks' templates and
// output). Each takes any bytes and either accepts them or rejects them with
// the reader's own error (InputError; ProtocolError for the worker's
// messages). Anything else is a finding: another exception (a `Finding` when
// what was accepted does not survive its own writer), a crash, a hang, an
// allocation without bound.
//
// The same functions run under libFuzzer (libfuzzer_main.cc, a clang build
// with -DSATURN_FUZZ=ON; scripts/fuzz.sh) and in the normal test suite
// (replay_test.cc replays every kept input under tests/fuzz/).
//
//   const Target* t = FindTarget("workload");
//   bool accepted = t->run(text);   // throws only on a finding
#pragma once

#include <stdexcept>
#include <string_view>
#include <vector>

namespace saturn::fuzz {

// What was accepted broke a property its reader promises (a round trip
// through the writer, a value in range).
class Finding : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

struct Target {
  const char* name;
  // True if the input was accepted, false if rejected with the reader's
  // own error; throws anything else.
  bool (*run)(std::string_view input);
};

const std::vector<Target>& Targets();
const Target* FindTarget(std::string_view name);

// The targets themselves: true if the input was accepted, false if it was
// rejected with the reader's own error; anything else is thrown.
bool FuzzCluster(std::string_view input);
bool FuzzWorkload(std::string_view input);
bool FuzzProfile(std::string_view input);
bool FuzzPlan(std::string_view input);
bool FuzzEvents(std::string_view input);
bool FuzzProtocol(std::string_view input);   // rejection: ProtocolError
bool FuzzStepLines(std::string_view input);  // progress and eval lines: never rejected
bool FuzzCommandTask(std::string_view input);
bool FuzzWeights(std::string_view input);  // safetensors, torch.save files, pickles

}  // namespace saturn::fuzz
