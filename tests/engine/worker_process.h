// Test support: saturn-worker as a separate process, the way the profiler
// and executor run it. Output goes to files in the test's directory, so a
// test can wait for a line, send a signal, and read the result afterwards.
//
//   TestDir dir("fsdp_resume");
//   std::string task = dir.Write("task.json", GptTask().dump());
//   WorkerRun r = RunWorker({"search", "--task", task, ...});
//   EXPECT_EQ(r.status, 0) << r.err;
//
//   WorkerProcess p({"execute", ...}, dir.Path("run"));
//   ASSERT_TRUE(p.WaitForOutput("step=3", 60));
//   p.Signal(SIGTERM);
//   EXPECT_EQ(p.Wait(60), 0);
#pragma once

#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace saturn::testing {

// A fresh, empty directory under the test temp dir.
class TestDir {
 public:
  explicit TestDir(const std::string& name);
  std::string Path(const std::string& name) const { return path_ + "/" + name; }
  // Writes a file in the directory and returns its path.
  std::string Write(const std::string& name, const std::string& contents) const;

 private:
  std::string path_;
};

struct WorkerRun {
  int status = -1;  // exit status; 128 + signal if killed; -1 on timeout
  std::string out;
  std::string err;
};

class WorkerProcess {
 public:
  // `log_prefix`: stdout and stderr go to log_prefix.out / .err.
  WorkerProcess(const std::vector<std::string>& args, const std::string& log_prefix);
  ~WorkerProcess();
  WorkerProcess(const WorkerProcess&) = delete;
  WorkerProcess& operator=(const WorkerProcess&) = delete;

  pid_t Pid() const { return pid_; }
  // True once stdout contains `text`; false if it exits or time runs out first.
  bool WaitForOutput(const std::string& text, double timeout_s);
  void Signal(int signal) const;
  // The exit status (128 + signal if killed), or -1 if still running after
  // `timeout_s` (it is then killed).
  int Wait(double timeout_s);
  std::string Stdout() const;
  std::string Stderr() const;

 private:
  bool Exited();

  pid_t pid_ = -1;
  int status_ = -1;
  std::string out_path_, err_path_;
};

// Runs the worker to completion (killed after `timeout_s`).
WorkerRun RunWorker(const std::vector<std::string>& args, const std::string& log_prefix,
                    double timeout_s = 600);

// `saturn-worker execute` of `task` under `technique` on `gpus` devices for
// steps [0, to_step): its result in dir/<name>.json, checkpoints in
// dir/<name>/.
std::vector<std::string> ExecuteArgs(const TestDir& dir, const std::string& task,
                                     const std::string& technique, int gpus,
                                     const std::string& name, int64_t to_step);

// The pids of a process's children (the launcher's ranks).
std::vector<pid_t> ChildPids(pid_t parent);

// Small task JSON (Contract 5 fields) for each model family, tiny enough for
// tests: {"model": ..., "data": {"type": "synthetic"}, "batch_size": 12, ...}.
nlohmann::json TinyTask(const std::string& family);

nlohmann::json ReadJson(const std::string& path);

}  // namespace saturn::testing
