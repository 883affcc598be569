// Child processes: the profiler's trials and the executor's workers.
//
// A child runs in its own process group (so a timeout or pre-emption reaches
// every rank it started), with optional extra environment, working folder and
// stdout/stderr redirected to files. Its stdout can instead come back through
// a pipe, read line by line (progress lines of the worker protocol).
//
//   ProcessSpec spec{.argv = {"saturn-worker", "search", ...}, .stderr_path = "trial.err"};
//   Process p = Process::Spawn(spec);
//   std::optional<int> status = p.WaitFor(300.0);   // nullopt: still running
//   if (!status) p.KillGroup();
//   DescribeExit(*status);                         // "exit 3", "killed by signal 9"
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace saturn {

struct ProcessSpec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;  // added to (or replacing in) the parent's
  std::string cwd;
  std::string stdout_path;  // empty: inherit (or pipe, see pipe_stdout)
  std::string stderr_path;  // empty: inherit
  bool pipe_stdout = false;
  // The child gets SIGTERM when this process dies (a crashed orchestrator
  // leaves no orphans; workers checkpoint on SIGTERM).
  bool die_with_parent = false;
};

class Process {
 public:
  // Throws std::runtime_error if the program cannot be started.
  static Process Spawn(const ProcessSpec& spec);
  Process(Process&& other) noexcept;
  Process& operator=(Process&& other) noexcept;
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;
  ~Process();

  pid_t pid() const { return pid_; }
  bool running() const { return !status_.has_value(); }
  // The raw wait status once the child has ended.
  std::optional<int> status() const { return status_; }
  // Non-blocking: the status if the child has ended.
  std::optional<int> Poll();
  int Wait();
  // Waits up to `seconds`; nullopt if still running then.
  std::optional<int> WaitFor(double seconds);
  // Signals the whole process group (no-op once ended).
  void SignalGroup(int signal);
  void KillGroup();

  // With pipe_stdout: the next complete line (without '\n') if one arrives
  // within `timeout_s`; nullopt on timeout or end of output.
  std::optional<std::string> ReadLine(double timeout_s);
  int stdout_fd() const { return stdout_fd_; }

 private:
  Process() = default;
  pid_t pid_ = -1;
  int stdout_fd_ = -1;
  std::string buffer_;
  bool eof_ = false;
  std::optional<int> status_;
};

// "exit 0", "exit 3", "killed by signal 9 (Killed)".
std::string DescribeExit(int status);
// True for a normal exit with code 0.
bool ExitedCleanly(int status);
// The exit code of a normal exit, or -1.
int ExitCode(int status);
// The last `n` lines of a text file ("" if unreadable).
std::string LastLines(const std::string& path, int n);
// Folder of the running executable (from /proc/self/exe).
std::string ExecutableDir();

}  // namespace saturn
