#include "launch/slurm_backend.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "common/error.h"
#include "common/fs.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;

// srun input variables that an sbatch/salloc leaves in the orchestrator's
// environment and that would reshape every step: GPU and task layout (e.g.
// sbatch --gpus-per-node=4 makes each step take 4 GPUs whatever --gpus says),
// the whole node's memory (steps would wait for each other), and stdio modes
// that would take the progress lines away from the pipe. The devices of the
// orchestrator's own step must not leak into steps either.
const char* const kStepShapingVariables[] = {"SLURM_GPUS",
                                             "SLURM_GPUS_PER_NODE",
                                             "SLURM_GPUS_PER_SOCKET",
                                             "SLURM_GPUS_PER_TASK",
                                             "SLURM_GRES",
                                             "SLURM_STEP_GRES",
                                             "SLURM_NTASKS_PER_CORE",
                                             "SLURM_NTASKS_PER_GPU",
                                             "SLURM_NTASKS_PER_NODE",
                                             "SLURM_NTASKS_PER_SOCKET",
                                             "SLURM_MEM_PER_NODE",
                                             "SLURM_OVERLAP",
                                             "SLURM_LABELIO",
                                             "SLURM_STDINMODE",
                                             "SLURM_STDOUTMODE",
                                             "SLURM_STDERRMODE",
                                             "CUDA_VISIBLE_DEVICES"};

double SteadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

std::vector<std::string> SplitWords(std::string_view text) {
  std::vector<std::string> words;
  std::istringstream in{std::string(text)};
  for (std::string w; in >> w;)
    words.push_back(w);
  return words;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

// The value of the whitespace-separated token `key`=VALUE in a line, if any.
std::optional<std::string> Field(const std::string& line, std::string_view key) {
  for (const std::string& token : SplitWords(line)) {
    if (token.size() > key.size() && token.compare(0, key.size(), key) == 0 &&
        token[key.size()] == '=') {
      return token.substr(key.size() + 1);
    }
  }
  return std::nullopt;
}

void Append(std::vector<std::string>& argv, std::initializer_list<std::string> items) {
  argv.insert(argv.end(), items);
}

std::string ShortHost(std::string_view host) {
  return std::string(host.substr(0, host.find('.')));
}

std::string Join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const std::string& s : items)
    out += (out.empty() ? "" : sep) + s;
  return out;
}

std::string Trimmed(const std::string& text) {
  size_t b = text.find_first_not_of(" \t\r\n");
  size_t e = text.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : text.substr(b, e - b + 1);
}

bool AllDigits(std::string_view text) {
  return !text.empty() &&
         std::all_of(text.begin(), text.end(), [](unsigned char c) { return std::isdigit(c); });
}

// "WHAT ended with exit 1: what it said", for error messages.
std::string Describe(const std::string& what, const CommandOutput& r) {
  std::string err = Trimmed(r.err.empty() ? r.out : r.err);
  return what + " ended with " + DescribeExit(r.status) + (err.empty() ? "" : ": " + err);
}

// Every srun of the backend starts so: in the allocation, without the
// variables that would reshape its steps, never reading our stdin.
std::vector<std::string> SrunPrefix(const std::string& job_id) {
  std::vector<std::string> argv = {"env"};
  for (const char* name : kStepShapingVariables) {
    argv.push_back("-u");
    argv.push_back(name);
  }
  Append(argv, {"srun", "--jobid=" + job_id, "--input=none", "--export=ALL"});
  return argv;
}

}  // namespace

CommandOutput RunCommand(const std::vector<std::string>& argv, double timeout_s) {
  std::string err_path = (fs::temp_directory_path() / "saturn-cmd-XXXXXX").string();
  int fd = ::mkstemp(err_path.data());
  if (fd < 0) throw SystemError("cannot create a temporary file in " + err_path);
  ::close(fd);
  ProcessSpec spec;
  spec.argv = argv;
  spec.pipe_stdout = true;
  spec.stderr_path = err_path;
  spec.die_with_parent = true;
  CommandOutput r;
  try {
    Process p = Process::Spawn(spec);
    double deadline = SteadySeconds() + timeout_s;
    while (true) {
      if (auto line = p.ReadLine(0.2)) {
        r.out += *line + "\n";
        continue;
      }
      if (p.Poll()) {
        while (auto line = p.ReadLine(0.0))
          r.out += *line + "\n";
        break;
      }
      if (SteadySeconds() > deadline) {
        p.KillGroup();
        p.Wait();
        break;
      }
    }
    r.status = *p.status();
  } catch (...) {
    fs::remove(err_path);
    throw;
  }
  std::ifstream in(err_path);
  r.err.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  fs::remove(err_path);
  return r;
}

int GresGpus(std::string_view gres) {
  int total = 0;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= gres.size(); ++i) {
    if (i < gres.size() && gres[i] == '(') ++depth;
    if (i < gres.size() && gres[i] == ')') --depth;
    if (i < gres.size() && (gres[i] != ',' || depth > 0)) continue;
    // One item: gpu[:type]:count[(IDX:...)]
    std::string_view item = gres.substr(start, i - start);
    start = i + 1;
    item = item.substr(0, item.find('('));
    if (item.substr(0, 4) != "gpu:") continue;
    std::string_view count = item.substr(item.rfind(':') + 1);
    if (AllDigits(count)) total += std::stoi(std::string(count));
  }
  return total;
}

SlurmAllocation ReadAllocation(const std::string& job_id, const CommandRunner& run) {
  std::vector<std::string> show = {"scontrol", "--details", "show", "job", job_id};
  CommandOutput job = run(show);
  // A job Slurm does not know (a stale SLURM_JOB_ID) is the user's to fix.
  if (job.status != 0) {
    throw InputError("", 0, "SLURM_JOB_ID",
                     "cannot read the allocation: " + Describe(Join(show, " "), job));
  }
  auto expand = [&](const std::string& hostlist) {
    std::vector<std::string> argv = {"scontrol", "show", "hostnames", hostlist};
    CommandOutput r = run(argv);
    if (r.status != 0) throw SystemError(Describe(Join(argv, " "), r));
    return SplitWords(r.out);
  };
  SlurmAllocation a;
  a.job_id = job_id;
  for (const std::string& line : Lines(job.out)) {
    // The job's node list ("NodeList=n[1-2]"), then one detail line per
    // group of nodes with the same resources ("Nodes=n1 CPU_IDs=0-7 Mem=0
    // GRES=gpu:4(IDX:0-3)").
    if (auto list = Field(line, "NodeList"); list && a.nodes.empty() && *list != "(null)") {
      a.nodes = expand(*list);
    }
    if (auto group = Field(line, "Nodes")) {
      int gpus = GresGpus(Field(line, "GRES").value_or(""));
      for (const std::string& node : expand(*group))
        a.gpus[node] = gpus;
    }
  }
  for (const std::string& node : a.nodes)
    a.gpus.emplace(node, 0);
  if (a.nodes.empty()) {
    throw InputError("", 0, "SLURM_JOB_ID",
                     "Slurm job " + job_id + " has no nodes (is it still pending?)");
  }
  return a;
}

SlurmBackend::SlurmBackend(SlurmOptions options) : o_(std::move(options)) {
  if (!o_.run) o_.run = [](const std::vector<std::string>& argv) { return RunCommand(argv); };
}

const SlurmAllocation& SlurmBackend::Allocation() {
  if (!allocation_) allocation_ = ReadAllocation(o_.job_id, o_.run);
  return *allocation_;
}

std::vector<std::string> SlurmBackend::SrunArgv(const WorkerJob& job) {
  // One step task per rank only when the worker takes its rank from Slurm;
  // otherwise the worker's own launcher starts the ranks inside one task.
  bool ranks_from_env =
      std::find(job.argv.begin(), job.argv.end(), "--rank-from-env") != job.argv.end();
  int tasks = ranks_from_env ? std::max(1, job.ranks) : 1;
  int gpus = job.gpu_ids.empty() ? job.ranks : static_cast<int>(job.gpu_ids.size());
  if (job.device_kind != "cuda") {
    // CPU devices on nodes without allocated GPUs are just slots: Slurm has
    // nothing to account for. Where the allocation has GPUs, each slot is one.
    const SlurmAllocation& a = Allocation();
    bool any = false;
    for (const auto& [node, count] : a.gpus) {
      if (job.node.empty() || node == job.node) any = any || count > 0;
    }
    if (!any) gpus = 0;
  }
  std::vector<std::string> argv = SrunPrefix(o_.job_id);
  Append(argv, {"--exact", "--nodes=1", "--ntasks=" + std::to_string(tasks), "--job-name=saturn",
                "--kill-on-bad-exit=1"});
  if (!job.node.empty()) argv.push_back("--nodelist=" + job.node);
  if (gpus > 0) argv.push_back("--gpus=" + std::to_string(gpus));
  if (!job.cwd.empty()) argv.push_back("--chdir=" + job.cwd);
  argv.insert(argv.end(), o_.srun_args.begin(), o_.srun_args.end());
  argv.push_back("--");
  argv.insert(argv.end(), job.argv.begin(), job.argv.end());
  return argv;
}

Process SlurmBackend::Start(const WorkerJob& job) {
  // An orchestrator that dies takes its steps with it (die_with_parent):
  // srun, on SIGTERM, kills its tasks.
  ProcessSpec spec = ProcessOf(job);
  spec.argv = SrunArgv(job);
  Process p = Process::Spawn(spec);
  kill_started_.erase(p.pid());
  return p;
}

std::optional<SlurmBackend::Step> SlurmBackend::FindStep(pid_t pid) {
  CommandOutput r = o_.run({"scontrol", "--oneliner", "show", "step", o_.job_id});
  if (r.status != 0) return std::nullopt;
  for (const std::string& line : Lines(r.out)) {
    std::string srun = Field(line, "SrunHost:Pid").value_or("");
    size_t colon = srun.rfind(':');
    if (colon == std::string::npos || srun.substr(colon + 1) != std::to_string(pid)) continue;
    if (ShortHost(srun.substr(0, colon)) != ShortHost(o_.host)) continue;
    std::string id = Field(line, "StepId").value_or("");
    // A step srun still waits for is listed as JOB.TDB.
    bool created = AllDigits(std::string_view(id).substr(id.find('.') + 1));
    return Step{created ? id : ""};
  }
  return std::nullopt;
}

void SlurmBackend::Stop(Process& process) {
  if (process.Poll()) return;
  std::optional<Step> step = FindStep(process.pid());
  if (step && !step->id.empty()) {
    // Not checked: 22.05 reports "Invalid job id" and fails although the
    // tasks got the signal.
    o_.run({"scancel", "--signal=TERM", step->id});
  } else {
    // No step yet (srun waits for busy GPUs): srun withdraws the request.
    process.SignalGroup(SIGTERM);
  }
}

void SlurmBackend::Kill(Process& process) {
  if (process.Poll()) return;
  double now = SteadySeconds();
  auto [it, first] = kill_started_.try_emplace(process.pid(), now);
  if (first) {
    // Through the controller and through srun, so that the step ends even if
    // one of them is not listening.
    std::optional<Step> step = FindStep(process.pid());
    if (step && !step->id.empty()) o_.run({"scancel", step->id});
    process.SignalGroup(SIGTERM);
  } else if (now - it->second > o_.kill_escalation_s) {
    process.KillGroup();
  }
}

std::optional<std::vector<std::pair<std::string, int>>> SlurmBackend::AllocatedNodes() {
  const SlurmAllocation& a = Allocation();
  std::vector<std::pair<std::string, int>> nodes;
  for (const std::string& node : a.nodes)
    nodes.emplace_back(node, a.gpus.at(node));
  return nodes;
}

void SlurmBackend::CheckCluster(const Cluster& cluster) {
  const SlurmAllocation& a = Allocation();
  for (size_t i = 0; i < cluster.nodes.size(); ++i) {
    const ClusterNode& n = cluster.nodes[i];
    std::string field = "cluster.nodes[" + std::to_string(i) + "] " + Quote(n.name);
    auto it = a.gpus.find(n.name);
    if (it == a.gpus.end()) {
      throw InputError("", 0, field,
                       "is not a node of Slurm allocation " + a.job_id + " (" +
                           Join(a.nodes, ", ") +
                           "); name the allocation's nodes in the workload's cluster");
    }
    // CPU devices need no GPUs; where the node has some, each slot is one.
    bool needs_gpus = n.device == "cuda" || it->second > 0;
    if (needs_gpus && it->second < n.gpus) {
      throw InputError("", 0, field,
                       "has " + std::to_string(it->second) + " GPUs in Slurm allocation " +
                           a.job_id + " but the workload's cluster gives it " +
                           std::to_string(n.gpus) +
                           "; allocate whole nodes (sbatch --exclusive) or enough GPUs per node");
    }
  }
}

void SlurmBackend::CheckSharedDir(const std::string& dir, const Cluster& cluster) {
  if (cluster.nodes.empty()) return;
  std::random_device random;
  std::string token = ShortHost(o_.host) + "-" + std::to_string(::getpid()) + "-" +
                      std::to_string(random()) + std::to_string(random());
  std::string marker = (fs::path(dir) / ".saturn-shared-check").string();
  WriteFileAtomic(marker, token + "\n");
  std::vector<std::string> nodes;
  for (const ClusterNode& n : cluster.nodes)
    nodes.push_back(n.name);
  std::string count = std::to_string(nodes.size());
  // One task per node prints its node name and what it reads in the marker.
  // --overlap: a check needs no GPUs and must not wait for any.
  std::vector<std::string> argv = SrunPrefix(o_.job_id);
  Append(argv, {"--overlap", "--job-name=saturn-check", "--nodes=" + count, "--ntasks=" + count,
                "--ntasks-per-node=1", "--nodelist=" + Join(nodes, ","), "--", "/bin/sh", "-c",
                "printf '%s %s\\n' \"$SLURMD_NODENAME\" \"$(cat \"$0\" 2>/dev/null)\"", marker});
  CommandOutput r = o_.run(argv);
  std::error_code ec;
  fs::remove(marker, ec);
  if (r.status != 0) {
    throw SystemError("cannot check that " + dir +
                      " is shared by the nodes: " + Describe("the check step (srun)", r));
  }
  std::map<std::string, std::string> seen;
  for (const std::string& line : Lines(r.out)) {
    std::vector<std::string> words = SplitWords(line);
    if (!words.empty()) seen[words[0]] = words.size() > 1 ? words[1] : "";
  }
  std::vector<std::string> blind;
  for (const std::string& node : nodes) {
    if (seen[node] != token) blind.push_back(node);
  }
  if (!blind.empty()) {
    throw InputError(dir, 0, "",
                     "not visible from Slurm node" + std::string(blind.size() > 1 ? "s " : " ") +
                         Join(blind, ", ") + " (a step there could not read the marker file " +
                         marker +
                         "); run state and checkpoints must be on a filesystem every node "
                         "shares: choose one with --run-dir");
  }
}

std::unique_ptr<LaunchBackend> MakeSlurmBackend() {
  SlurmOptions o;
  const char* job = std::getenv("SLURM_JOB_ID");
  if (!job || !*job) job = std::getenv("SLURM_JOBID");
  if (!job || !*job) {
    throw InputError("", 0, "--backend slurm",
                     "must run inside a Slurm allocation (SLURM_JOB_ID is not set): start "
                     "saturn from an sbatch script or under salloc (docs/slurm.md)");
  }
  o.job_id = job;
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  o.host = host;
  if (const char* extra = std::getenv("SATURN_SRUN_ARGS")) o.srun_args = SplitWords(extra);
  return std::make_unique<SlurmBackend>(std::move(o));
}

}  // namespace saturn
