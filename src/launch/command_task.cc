#include "launch/command_task.h"

#include <algorithm>
#include <deque>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/process.h"

namespace saturn {

std::string ExpandCommand(const std::string& templ, const CommandCall& c) {
  std::string ids;
  for (int g : c.gpu_ids)
    ids += (ids.empty() ? "" : ",") + std::to_string(g);
  const std::vector<std::pair<std::string, std::string>> values = {
      {"{gpus}", std::to_string(c.gpus)},     {"{gpu_ids}", ids},
      {"{steps}", std::to_string(c.steps)},   {"{start_step}", std::to_string(c.start_step)},
      {"{checkpoint_dir}", c.checkpoint_dir}, {"{node}", c.node}};
  std::string out;
  for (size_t i = 0; i < templ.size();) {
    bool replaced = false;
    for (const auto& [key, value] : values) {
      if (templ.compare(i, key.size(), key) == 0) {
        out += value;
        i += key.size();
        replaced = true;
        break;
      }
    }
    if (!replaced) out += templ[i++];
  }
  return out;
}

bool IsCommandTask(const nlohmann::json& spec) {
  return spec.is_object() && spec.value("type", "") == "command";
}

WorkerJob TaskJob(const nlohmann::json& spec, const std::string& worker,
                  const WorkerRequest& request, const JobTarget& target) {
  WorkerJob job;
  if (IsCommandTask(spec)) {
    CommandCall c;
    c.technique = request.technique;
    c.gpus = request.gpus;
    c.gpu_ids = target.gpu_ids;
    c.node = target.node.empty() ? target.node_label : target.node;
    c.start_step = request.from_step;
    c.steps = request.to_step;
    c.checkpoint_dir = request.checkpoint_dir;
    c.device_kind = request.device_kind;
    job = CommandJob(spec, c);
  } else {
    job.argv = ToArgv(request);
    job.argv.insert(job.argv.begin(), worker);
    job.env = WorkerEnv();
  }
  job.node = target.node;
  job.gpu_ids = target.gpu_ids;
  job.device_kind = request.device_kind;
  job.ranks = target.ranks;
  return job;
}

WorkerJob CommandJob(const nlohmann::json& spec, const CommandCall& c) {
  WorkerJob job;
  const nlohmann::json& commands = spec.at("commands");
  if (!commands.contains(c.technique)) {
    // The planner chooses only among a task's commands: a caller's bug.
    std::string known;
    for (const auto& [name, command] : commands.items())
      known += (known.empty() ? "" : ", ") + name;
    throw std::logic_error("a command task has no command for technique \"" + c.technique +
                           "\" (it has: " + known + ")");
  }
  std::string templ = commands.at(c.technique).get<std::string>();
  // The shell outlives SIGTERM (sent to the whole group) until the program it
  // waits for has checkpointed and exited, then exits with its status; without
  // the trap, sh would die at once and the exit would look like a crash.
  job.argv = {"/bin/sh", "-c", std::string(kShellPreamble) + ExpandCommand(templ, c)};
  job.cwd = spec.value("working_dir", "");
  std::string ids;
  for (int g : c.gpu_ids)
    ids += (ids.empty() ? "" : ",") + std::to_string(g);
  job.env = {{"SATURN_GPUS", std::to_string(c.gpus)},
             {"SATURN_GPU_IDS", ids},
             {"SATURN_STEPS", std::to_string(c.steps)},
             {"SATURN_START_STEP", std::to_string(c.start_step)},
             {"SATURN_CHECKPOINT_DIR", c.checkpoint_dir},
             {"SATURN_NODE", c.node},
             {"SATURN_TECHNIQUE", c.technique},
             {"SATURN_SEED", std::to_string(spec.value("seed", 0L))}};
  if (spec.contains("env")) {
    for (const auto& [k, v] : spec["env"].items())
      job.env[k] = v.get<std::string>();
  }
  job.node = c.node;
  job.gpu_ids = c.gpu_ids;
  job.device_kind = c.device_kind;
  job.ranks = 1;
  return job;
}

namespace {

// The last `n` of `lines`, joined by newlines.
std::string Tail(const std::deque<std::string>& lines, size_t n) {
  std::string out;
  for (size_t i = lines.size() - std::min(n, lines.size()); i < lines.size(); ++i)
    out += (out.empty() ? "" : "\n") + lines[i];
  return out;
}

}  // namespace

WorkerSearchResult CommandSearchResult(const std::string& log, int exit_status, double wall_s,
                                       long steps, int warmup) {
  std::ifstream in(log);
  return CommandSearchResult(in, exit_status, wall_s, steps, warmup);
}

WorkerSearchResult CommandSearchResult(std::istream& output, int exit_status, double wall_s,
                                       long steps, int warmup) {
  WorkerSearchResult r;
  std::deque<std::string> last;  // the output's last lines, for the reason of a failure
  std::string line;
  std::vector<double> timed;
  double peak = -1, stepping_s = 0;
  bool any = false;
  while (std::getline(output, line)) {
    StepReport s;
    if (ParseStepLine(line, &s)) {
      any = true;
      if (s.step_s > 0) stepping_s += s.step_s;
      if (s.step >= warmup && s.step_s > 0) timed.push_back(s.step_s);
      peak = std::max(peak, s.peak_mem_gib);
    }
    last.push_back(std::move(line));
    if (last.size() > 5) last.pop_front();
  }
  if (!ExitedCleanly(exit_status)) {
    std::string tail = Tail(last, 5);
    r.reason = "the program failed (" + DescribeExit(exit_status) + ")" +
               (tail.empty() ? "" : ": " + tail);
    return r;
  }
  if (any && timed.empty()) {
    r.reason = "the program reported steps but no step_s after " + std::to_string(warmup) +
               " warm-up steps: " + Tail(last, 3);
    return r;
  }
  r.feasible = true;
  if (!timed.empty()) {
    r.step_samples_s = timed;
    std::sort(timed.begin(), timed.end());
    r.step_s = timed[timed.size() / 2];
    // What the run took besides its steps: start-up and shut-down.
    r.launch_s = std::max(0.0, wall_s - stepping_s);
  } else {
    // Nothing parseable: time the whole run from outside (start-up included).
    r.step_s = wall_s / std::max(1L, steps);
    r.knobs = {{"timed", "externally"}};
  }
  if (peak >= 0) r.peak_memory_bytes = {peak * (1 << 30)};
  return r;
}

}  // namespace saturn
