// The worker protocol (docs/worker.md) in one place: its version, exit
// statuses, the messages saturn-worker writes (search and execute results,
// its technique catalogue, progress lines) and their JSON, used by both
// sides — the worker (src/worker) writes them, the orchestrators
// (src/launch, profiler, executor) read them. Torch-free.
//
//   WorkerSearchResult r;                 // worker: fill from the engine's result
//   WriteFileAtomic(out, ToJson(r).dump());
//   WorkerSearchResult back = ReadSearchResult(out);   // orchestrator
//   StepReport s;
//   if (ParseStepLine("saturn: step=3 loss=2.5 step_s=0.1", &s)) ...;
#pragma once

#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace saturn {

constexpr int kWorkerProtocol = 1;

enum WorkerExit {
  kWorkerOk = 0,
  kWorkerInternal = 1,
  kWorkerBadInput = 2,
  kWorkerOom = 3,
  kWorkerPeerFailure = 4
};

// `saturn-worker search --out F`: the best knob setting of one technique on
// one GPU count, or why none fits.
struct WorkerSearchResult {
  bool feasible = false;
  std::string reason;  // why not, when infeasible
  std::string technique;
  int gpus = 0;
  double step_s = 0.0;  // median of the measured steps
  std::vector<double> step_samples_s;
  std::vector<double> warmup_step_s;  // warm-up steps: what a fresh start costs extra
  // A launch's fixed costs, besides the steps: from asking for the process
  // to its first step (process start, rendezvous, model and data, building
  // the trainer), and writing one checkpoint.
  double ready_unix_s = 0.0;  // when the worker was ready to build its trainer
  double setup_s = 0.0;       // building the chosen setting's trainer
  double done_unix_s = 0.0;   // when it had written its result (then shut down)
  double launch_s = 0.0;      // set by the orchestrator (SetLaunchCost), not the worker
  double checkpoint_s = 0.0;
  // One evaluation on held-out data (tasks with eval): writing the
  // checkpoint it reads plus evaluating; 0 for tasks without.
  double eval_s = 0.0;
  std::vector<double> peak_memory_bytes;  // per device
  std::vector<double> resident_bytes;     // per device, between steps
  double capacity_bytes = 0.0;
  double model_flops_per_step = 0.0;
  nlohmann::json knobs = nlohmann::json::object();
  nlohmann::json stats = nlohmann::json::object();      // technique measurements, "phases"
  nlohmann::json candidates = nlohmann::json::array();  // every setting tried
  // Estimated analytically, not measured: what the estimate assumed and why
  // it was made ("analytic: 989 TFLOP/s x 0.40, links 450 GB/s; cannot run
  // here: ..."); "" when measured. Absent from the JSON when "".
  std::string estimated;
  // Search with --pack-sizes: after the task's own result, each array of K
  // copies of the task, measured in the same process, ascending: its own
  // result (step times, setup_s of that array, peak memory) with `members`
  // K (0: not an array). A size that did not fit (or failed) ends the list
  // there: larger ones are not tried.
  int members = 0;
  std::vector<WorkerSearchResult> pack_sizes;
};

// `saturn-worker execute --out F`: what a run of steps [from, to) did.
struct WorkerExecuteResult {
  long completed_steps = 0;
  double final_loss = 0.0;
  bool preempted = false;
  std::string checkpoint;
  std::vector<double> peak_memory_bytes;
  std::vector<double> resident_bytes;
  std::vector<double> losses;  // one per step run
  nlohmann::json knobs = nlohmann::json::object();
  nlohmann::json stats = nlohmann::json::object();
  // A pack's members (engine/pack.h), in order: {"name", "losses"} with
  // each member's own mean loss per step; empty for a task alone.
  nlohmann::json members = nlohmann::json::array();
};

// `saturn-worker techniques`: one technique it can train with, and the
// traits the orchestrators plan with (technique knowledge lives in the
// engine only).
struct WorkerTechnique {
  std::string name;
  std::string description;
  bool one_process = false;   // runs in one process, on exactly one device
  int min_gpus = 1;           // device counts it can run on: [min_gpus, max_gpus]
  int max_gpus = 0;           // 0: no upper bound
  bool splits_batch = false;  // each device takes a slice of every batch
  std::string plugin;         // the plug-in that provides it; "" if built in
  bool takes_packs = false;   // trains a pack of LoRA tasks (engine Technique::TakesPacks)
};

// A progress line "saturn: step=N loss=X step_s=Y [peak_mem_gib=Z]", as the
// worker (and a user's program, docs/byo.md) prints one per step.
struct StepReport {
  long step = -1;
  double loss = 0.0;
  double step_s = 0.0;
  double peak_mem_gib = -1.0;  // < 0: not reported
};

// A progress line "saturn: eval_step=N eval_loss=X [eval_loss_se=E] [eval_accuracy=A]
// [eval_accuracy_se=E] eval_s=S [eval_member=K]": an evaluation on held-out data after N
// steps (tasks with eval; in a pack, of its member K, counted from 0 in the pack's task
// file). It has no "step" field, so ParseStepLine skips it.
struct EvalReport {
  long steps_done = 0;
  double loss = 0.0;
  double accuracy = -1.0;  // < 0: not a classifier
  double seconds = 0.0;
  double loss_se = -1.0;      // the loss's standard error over its batches; < 0: one batch
  double accuracy_se = -1.0;  // the accuracy's, likewise
  long member = -1;           // a pack's member it evaluates; < 0: the task's own
};

// A progress line "saturn: left_member=K left_step=S": a pack's member K
// (counted from 0 in the pack's task file) trained its last step, S, and
// left the pack, which goes on without it; its own checkpoint, model and
// result entry are written (worker/pack_job.h). No "step" field either.
struct MemberLeftReport {
  long member = -1;
  long steps_done = 0;
};

// The worker broke the protocol: a foreign version, a malformed message, a
// field of the wrong type or out of range (an internal failure, not bad
// input: exit 1).
class ProtocolError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Each message with its "protocol" version; FromJson throws ProtocolError
// on a foreign version or a malformed message.
nlohmann::json ToJson(const WorkerSearchResult& r);
nlohmann::json ToJson(const WorkerExecuteResult& r);
nlohmann::json ToJson(const std::vector<WorkerTechnique>& techniques);
WorkerSearchResult SearchResultFromJson(const nlohmann::json& j);
WorkerExecuteResult ExecuteResultFromJson(const nlohmann::json& j);
std::vector<WorkerTechnique> TechniquesFromJson(const nlohmann::json& j);

// A message's text as JSON (`what` names it in errors): ProtocolError if it
// is not JSON within bounds (common/json_text.h) or not this protocol's.
nlohmann::json ParseWorkerMessage(std::string_view text, const std::string& what);
// Reads a result file; ProtocolError naming it if missing or broken.
WorkerSearchResult ReadSearchResult(const std::string& path);
WorkerExecuteResult ReadExecuteResult(const std::string& path);

std::string FormatStepLine(const StepReport& report);
// False if `line` is not a progress line: no "saturn:" prefix, no step, a
// step that is not an integer from 0 to limits::kMaxSteps, or a step_s or
// peak_mem_gib that is not a finite number >= 0 (the loss may be anything,
// nan included: a diverged run reports it as it is).
bool ParseStepLine(const std::string& line, StepReport* report);
std::string FormatEvalLine(const EvalReport& report);
// False if `line` is not an evaluation line (the same rules: eval_step an
// integer in range, eval_s finite >= 0, eval_accuracy in [0, 1]).
bool ParseEvalLine(const std::string& line, EvalReport* report);
std::string FormatMemberLeftLine(const MemberLeftReport& report);
// False if `line` is not such a line (both fields integers in range).
bool ParseMemberLeftLine(const std::string& line, MemberLeftReport* report);

}  // namespace saturn
