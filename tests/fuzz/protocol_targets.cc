// Fuzz targets of what workers and users' programs say (targets.h): the
// worker protocol's messages, progress and evaluation lines, and command
// tasks (a template filled in, the program's output read). What is read
// must come back the same through its writer, in range.
#include <cmath>
#include <sstream>

#include "common/limits.h"
#include "fuzz/targets.h"
#include "launch/command_task.h"
#include "protocol/worker_protocol.h"

namespace saturn::fuzz {
namespace {

using nlohmann::json;

void Require(bool ok, const std::string& what) {
  if (!ok) throw Finding(what);
}

// One message kind: read, written, read again; the second writing must
// equal the first (the writer's output is read as written).
template <typename Read>
bool RoundTrips(const json& message, Read read, const char* what) {
  json first;
  try {
    first = ToJson(read(message));
  } catch (const ProtocolError&) {
    return false;
  }
  try {
    Require(ToJson(read(first)) == first, std::string(what) + " changed through ToJson");
  } catch (const ProtocolError& e) {
    throw Finding(std::string(what) + " written by ToJson was refused: " + e.what());
  }
  return true;
}

bool InRange(double v, double max) {
  return v >= 0 && v <= max;
}

}  // namespace

bool FuzzProtocol(std::string_view input) {
  json message;
  try {
    message = ParseWorkerMessage(input, "result.json");
  } catch (const ProtocolError&) {
    return false;
  }
  bool search = RoundTrips(message, SearchResultFromJson, "search result");
  bool execute = RoundTrips(message, ExecuteResultFromJson, "execute result");
  bool techniques = RoundTrips(message, TechniquesFromJson, "technique list");
  return search || execute || techniques;
}

bool FuzzStepLines(std::string_view input) {
  std::istringstream lines{std::string(input)};
  std::string line;
  bool any = false;
  while (std::getline(lines, line)) {
    StepReport s;
    if (ParseStepLine(line, &s)) {
      any = true;
      Require(InRange(static_cast<double>(s.step), static_cast<double>(limits::kMaxSteps)) &&
                  InRange(s.step_s, limits::kMaxNumber) &&
                  (s.peak_mem_gib == -1.0 || InRange(s.peak_mem_gib, limits::kMaxNumber)),
              "step line fields out of range: " + line);
      StepReport back;
      std::string written = FormatStepLine(s);
      Require(ParseStepLine(written, &back) && FormatStepLine(back) == written,
              "step line changed through FormatStepLine: " + written);
    }
    EvalReport e;
    if (ParseEvalLine(line, &e)) {
      any = true;
      Require(InRange(static_cast<double>(e.steps_done), static_cast<double>(limits::kMaxSteps)) &&
                  InRange(e.seconds, limits::kMaxNumber) &&
                  (e.accuracy == -1.0 || InRange(e.accuracy, 1.0)),
              "eval line fields out of range: " + line);
      EvalReport back;
      std::string written = FormatEvalLine(e);
      Require(ParseEvalLine(written, &back) && FormatEvalLine(back) == written,
              "eval line changed through FormatEvalLine: " + written);
    }
  }
  return any;
}

// The input is a template, a NUL byte, then the program's output; true if
// the output had timed steps.
bool FuzzCommandTask(std::string_view input) {
  size_t nul = input.find('\0');
  std::string templ(input.substr(0, nul));
  std::string output(nul == std::string_view::npos ? "" : input.substr(nul + 1));
  CommandCall call{.technique = "ddp",
                   .gpus = 2,
                   .gpu_ids = {0, 3},
                   .node = "n0",
                   .start_step = 5,
                   .steps = 100,
                   .checkpoint_dir = "/ckpt"};
  json spec = {{"name", "c"},
               {"type", "command"},
               {"commands", {{"ddp", templ}}},
               {"working_dir", "/w"},
               {"seed", 7}};
  WorkerJob job = CommandJob(spec, call);
  Require(job.argv.size() == 3 && job.argv[2] == kShellPreamble + ExpandCommand(templ, call),
          "CommandJob's command is not the template filled in");
  if (templ.find('{') == std::string::npos) {
    Require(ExpandCommand(templ, call) == templ, "a template without placeholders changed");
  }
  bool timed = false;
  for (int exit_status : {0, 1 << 8}) {
    std::istringstream out(output);
    WorkerSearchResult r = CommandSearchResult(out, exit_status, 10.0, 4, 1);
    Require(
        std::isfinite(r.step_s) && r.step_s >= 0 && std::isfinite(r.launch_s) && r.launch_s >= 0,
        "a program's measured times are not finite");
    for (double bytes : r.peak_memory_bytes)
      Require(std::isfinite(bytes) && bytes >= 0, "a program's peak memory is not finite");
    Require(!r.feasible || exit_status == 0, "a failed program was feasible");
    timed = timed || !r.step_samples_s.empty();
  }
  return timed;
}

}  // namespace saturn::fuzz
