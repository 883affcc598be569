#include "launch/worker.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <stdexcept>

#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "common/process.h"
#include "contracts/workload.h"

namespace saturn {

using nlohmann::json;

std::vector<std::string> WorkerCandidates(const std::string& exe_dir) {
  namespace fs = std::filesystem;
  const fs::path here(exe_dir);
  std::vector<std::string> out;
  for (const fs::path& p :
       {here / "saturn-worker",
        // an installed tree: <prefix>/bin/saturn, <prefix>/libexec/saturn/
        here / ".." / "libexec" / "saturn" / "saturn-worker",
        // the build tree, seen from src/cli/, bench/<name>/, tests/<name>/
        here / ".." / "worker" / "saturn-worker", here / ".." / "src" / "worker" / "saturn-worker",
        here / ".." / ".." / "src" / "worker" / "saturn-worker"})
    out.push_back(p.lexically_normal().string());
  return out;
}

std::string FindWorkerBinaryFrom(const std::string& exe_dir, const char* env) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (env && *env) {
    if (fs::is_regular_file(env, ec)) return env;
    throw std::runtime_error(std::string("SATURN_WORKER is set to ") + env +
                             ", which is not a file; point it at saturn-worker or unset it");
  }
  std::string list;
  for (const std::string& p : WorkerCandidates(exe_dir)) {
    if (fs::is_regular_file(p, ec)) return fs::weakly_canonical(p).string();
    list += "\n  " + p;
  }
  throw std::runtime_error(
      "cannot find saturn-worker, the training program saturn starts for every trial and "
      "task (a torch-free build, -DSATURN_WITH_TORCH=OFF, has none); looked for it in:" +
      list +
      "\nset SATURN_WORKER to its path, or keep it where `cmake --install` puts it "
      "(<prefix>/libexec/saturn/ beside <prefix>/bin/saturn)");
}

std::string FindWorkerBinary() {
  return FindWorkerBinaryFrom(ExecutableDir(), std::getenv("SATURN_WORKER"));
}

std::map<std::string, std::string> WorkerEnv() {
  std::map<std::string, std::string> env;
  if (!std::getenv("OPENBLAS_NUM_THREADS")) env["OPENBLAS_NUM_THREADS"] = "1";
  if (!std::getenv("OMP_WAIT_POLICY")) env["OMP_WAIT_POLICY"] = "PASSIVE";
  return env;
}

namespace {

// `saturn-worker techniques [--plugin P]...`, parsed. A plug-in the worker
// refuses is an InputError on the workload's `plugins`.
std::vector<WorkerTechnique> AskWorker(const Workload& workload, const std::string& worker) {
  std::vector<std::string> argv = {worker, "techniques"};
  for (const std::string& p : workload.plugins)
    argv.insert(argv.end(), {"--plugin", p});
  static std::atomic<int> asked{0};  // a prefetch and another ask may overlap
  std::string err = (std::filesystem::temp_directory_path() /
                     ("saturn-techniques-" + std::to_string(::getpid()) + "-" +
                      std::to_string(++asked) + ".err"))
                        .string();
  ProcessSpec spec;
  spec.argv = argv;
  spec.env = WorkerEnv();
  spec.stderr_path = err;
  spec.pipe_stdout = true;
  Process child = Process::Spawn(spec);
  std::string text;
  while (auto line = child.ReadLine(120.0))
    text += *line + "\n";
  if (child.running() && !child.WaitFor(10.0)) child.KillGroup();
  int status = child.Wait();
  std::string message = LastLines(err, 5);
  std::filesystem::remove(err);
  while (!message.empty() && message.back() == '\n')
    message.pop_back();
  if (ExitCode(status) == kWorkerBadInput) {
    // "saturn-worker: error: <plugin>: <why>"
    const std::string prefix = "saturn-worker: error: ";
    if (message.rfind(prefix, 0) == 0) message.erase(0, prefix.size());
    throw InputError(workload.source, 0, "plugins", message);
  }
  json j = json::parse(text, nullptr, false);
  std::vector<WorkerTechnique> out;
  try {
    if (!ExitedCleanly(status) || j.is_discarded()) throw std::runtime_error("no technique list");
    out = TechniquesFromJson(j);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(worker + " techniques failed (" + DescribeExit(status) +
                             "): " + (message.empty() ? e.what() : message));
  }
  return out;
}

// Every task's `techniques` are known, and a task allowed only techniques
// that split batches leaves each of its GPUs at least one sample.
void CheckTasks(const Workload& workload, const std::vector<WorkerTechnique>& available) {
  for (const WorkloadTask& task : workload.tasks) {
    if (task.is_command) continue;
    bool only_splitting = !task.techniques.empty();
    for (size_t i = 0; i < task.techniques.size(); ++i) {
      const std::string& name = task.techniques[i];
      auto it = std::find_if(available.begin(), available.end(),
                             [&](const WorkerTechnique& t) { return t.name == name; });
      if (it == available.end()) {
        std::string list;
        std::vector<std::string> names;
        for (const WorkerTechnique& t : available) {
          list += (list.empty() ? "" : ", ") + t.name;
          names.push_back(t.name);
        }
        std::string hint = DidYouMean(name, names);
        int line = i < task.technique_lines.size() ? task.technique_lines[i] : task.line;
        std::string prefix = task.field.empty() ? "tasks." + task.name : task.field;
        throw InputError(workload.source, line, prefix + ".techniques[" + std::to_string(i) + "]",
                         "unknown technique " + Quote(name) + "; available: " + list +
                             (hint.empty() ? "" : "; " + hint));
      }
      only_splitting = only_splitting && it->splits_batch;
    }
    long batch = task.spec.value("batch_size", 0L);
    if (only_splitting && batch < task.gpu_min) {
      throw InputError(workload.source, task.batch_size_line,
                       (task.field.empty() ? "tasks." + task.name : task.field) + ".batch_size",
                       "batch_size " + std::to_string(batch) + " cannot be split across the " +
                           std::to_string(task.gpu_min) +
                           "+ GPUs gpu_range asks for with batch-splitting techniques only");
    }
  }
}

// One worker start per (worker, plug-ins) and process: the profiler and
// the executor both ask, and PrefetchTechniques may have asked already.
struct TechniqueCache {
  std::mutex mutex;
  std::map<std::vector<std::string>, std::vector<WorkerTechnique>> known;
  std::map<std::vector<std::string>, std::shared_future<std::vector<WorkerTechnique>>> asking;
};

TechniqueCache& Techniques() {
  static TechniqueCache cache;
  return cache;
}

std::vector<std::string> KeyOf(const std::string& worker, const std::vector<std::string>& plugins) {
  std::vector<std::string> key = plugins;
  key.insert(key.begin(), worker);
  return key;
}

}  // namespace

void PrefetchTechniques(std::string worker, const std::vector<std::string>& plugins) {
  if (worker.empty()) {
    try {
      worker = FindWorkerBinary();
    } catch (const std::exception&) {
      return;  // no engine here: whoever needs one says so
    }
  }
  TechniqueCache& cache = Techniques();
  std::vector<std::string> key = KeyOf(worker, plugins);
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (cache.known.count(key) || cache.asking.count(key)) return;
  Workload w;
  w.plugins = plugins;
  cache.asking[key] =
      std::async(std::launch::async, [w, worker] { return AskWorker(w, worker); }).share();
}

std::vector<WorkerTechnique> AvailableTechniques(const Workload& workload,
                                                 const std::string& worker) {
  TechniqueCache& cache = Techniques();
  std::vector<std::string> key = KeyOf(worker, workload.plugins);
  std::vector<WorkerTechnique> out;
  std::shared_future<std::vector<WorkerTechnique>> asking;
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    auto it = cache.known.find(key);
    if (it != cache.known.end()) out = it->second;
    auto a = cache.asking.find(key);
    if (a != cache.asking.end()) asking = a->second;
  }
  if (out.empty() && asking.valid()) {
    try {
      out = asking.get();
    } catch (const std::exception&) {
      out.clear();  // asked again below, for the error naming this workload
    }
  }
  if (out.empty()) out = AskWorker(workload, worker);
  {
    std::lock_guard<std::mutex> lock(cache.mutex);
    cache.known[key] = out;
    cache.asking.erase(key);
  }
  CheckTasks(workload, out);
  return out;
}

std::vector<int> GpuCounts(const WorkerTechnique& technique, int lo, int hi) {
  std::vector<int> counts;
  for (int g = std::max({1, lo, technique.min_gpus}); g <= hi; ++g) {
    if (technique.max_gpus > 0 && g > technique.max_gpus) break;
    counts.push_back(g);
  }
  return counts;
}

std::vector<std::string> TechniqueNames(const std::vector<WorkerTechnique>& techniques) {
  std::vector<std::string> names;
  for (const WorkerTechnique& t : techniques)
    names.push_back(t.name);
  return names;
}

void SetLaunchCost(WorkerSearchResult& r, double spawned_unix_s, double ended_unix_s) {
  if (r.ready_unix_s <= 0) return;
  r.launch_s = std::max(0.0, r.ready_unix_s - spawned_unix_s) + r.setup_s;
  if (r.done_unix_s > 0) r.launch_s += std::max(0.0, ended_unix_s - r.done_unix_s);
}

long CheckpointInterval(long steps, long every) {
  return every > 0 ? every : std::max(1L, steps / 10);
}

long CheckpointWrites(long steps, long every) {
  return std::max(0L, steps - 1) / CheckpointInterval(steps, every) + 2;
}

}  // namespace saturn
