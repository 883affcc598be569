#include "common/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "common/error.h"

extern char** environ;

namespace saturn {

Process Process::Spawn(const ProcessSpec& spec) {
  if (spec.argv.empty()) throw std::runtime_error("Process::Spawn: empty argv");
  int out_pipe[2] = {-1, -1};
  if (spec.pipe_stdout && ::pipe2(out_pipe, O_CLOEXEC) != 0) {
    throw SystemError(std::string("pipe: ") + std::strerror(errno));
  }
  // A close-on-exec pipe reports exec failures back to the parent.
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    throw SystemError(std::string("pipe: ") + std::strerror(errno));
  }
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    std::string entry(*e);
    std::string key = entry.substr(0, entry.find('='));
    if (!spec.env.count(key)) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : spec.env)
    env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, argv;
  for (std::string& s : env_strings)
    envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = spec.argv;
  for (std::string& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw SystemError(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    ::setpgid(0, 0);
    if (spec.die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent) ::_exit(143);  // the parent died before prctl
    }
    auto fail = [&](const char* what) {
      std::string msg = std::string(what) + ": " + std::strerror(errno);
      ssize_t ignored = ::write(err_pipe[1], msg.data(), msg.size());
      (void)ignored;
      ::_exit(127);
    };
    auto redirect = [&](const std::string& path, int fd) {
      int f = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      if (f < 0 || ::dup2(f, fd) < 0) fail(path.c_str());
      ::close(f);
    };
    if (spec.pipe_stdout) {
      ::dup2(out_pipe[1], STDOUT_FILENO);
    } else if (!spec.stdout_path.empty()) {
      redirect(spec.stdout_path, STDOUT_FILENO);
    }
    if (!spec.stderr_path.empty()) redirect(spec.stderr_path, STDERR_FILENO);
    // After the redirections, so relative output paths mean the parent's folder.
    if (!spec.cwd.empty() && ::chdir(spec.cwd.c_str()) != 0) fail("chdir");
    ::execvpe(argv[0], argv.data(), envp.data());
    fail(argv[0]);
  }
  ::setpgid(pid, pid);  // also from the parent: no race with signals sent right away
  ::close(err_pipe[1]);
  char buf[512];
  ssize_t n = ::read(err_pipe[0], buf, sizeof buf);
  ::close(err_pipe[0]);
  if (spec.pipe_stdout) ::close(out_pipe[1]);
  if (n > 0) {
    ::waitpid(pid, nullptr, 0);
    if (spec.pipe_stdout) ::close(out_pipe[0]);
    throw SystemError("cannot start " + spec.argv[0] + ": " + std::string(buf, n));
  }
  Process p;
  p.pid_ = pid;
  p.stdout_fd_ = spec.pipe_stdout ? out_pipe[0] : -1;
  return p;
}

Process::Process(Process&& o) noexcept
    : pid_(o.pid_),
      stdout_fd_(o.stdout_fd_),
      buffer_(std::move(o.buffer_)),
      eof_(o.eof_),
      status_(o.status_) {
  o.pid_ = -1;
  o.stdout_fd_ = -1;
}

Process& Process::operator=(Process&& o) noexcept {
  if (this != &o) {
    if (stdout_fd_ >= 0) ::close(stdout_fd_);
    pid_ = o.pid_;
    stdout_fd_ = o.stdout_fd_;
    buffer_ = std::move(o.buffer_);
    eof_ = o.eof_;
    status_ = o.status_;
    o.pid_ = -1;
    o.stdout_fd_ = -1;
  }
  return *this;
}

Process::~Process() {
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  if (pid_ > 0 && !status_) {
    // Never leave an orphan behind: the owner forgot to wait.
    KillGroup();
    Wait();
  }
}

std::optional<int> Process::Poll() {
  if (status_ || pid_ <= 0) return status_;
  int status = 0;
  pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) status_ = status;
  return status_;
}

int Process::Wait() {
  while (!status_) {
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, 0);
    if (r == pid_) {
      status_ = status;
    } else if (r < 0 && errno != EINTR) {
      throw SystemError(std::string("waitpid: ") + std::strerror(errno));
    }
  }
  return *status_;
}

std::optional<int> Process::WaitFor(double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  auto pause = std::chrono::milliseconds(2);
  while (!Poll()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(50));
  }
  return status_;
}

void Process::SignalGroup(int signal) {
  if (pid_ > 0 && !Poll()) ::kill(-pid_, signal);
}

void Process::KillGroup() {
  SignalGroup(SIGKILL);
}

std::optional<std::string> Process::ReadLine(double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (true) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    if (eof_ || stdout_fd_ < 0) {
      if (buffer_.empty()) return std::nullopt;
      std::string line = std::move(buffer_);
      buffer_.clear();
      return line;
    }
    double left =
        std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
    pollfd pfd{stdout_fd_, POLLIN, 0};
    int r = ::poll(&pfd, 1, left > 0 ? static_cast<int>(left * 1000) + 1 : 0);
    if (r <= 0) {
      if (left <= 0) return std::nullopt;
      continue;
    }
    char buf[4096];
    ssize_t n = ::read(stdout_fd_, buf, sizeof buf);
    if (n > 0) {
      buffer_.append(buf, n);
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      eof_ = true;
    }
  }
}

std::string DescribeExit(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    return "killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "ended with status " + std::to_string(status);
}

bool ExitedCleanly(int status) {
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int ExitCode(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string LastLines(const std::string& path, int n) {
  std::ifstream in(path);
  if (!in) return "";
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (static_cast<int>(lines.size()) > n) lines.erase(lines.begin());
  }
  std::string out;
  for (const std::string& l : lines)
    out += (out.empty() ? "" : "\n") + l;
  return out;
}

std::string ExecutableDir() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : p.parent_path().string();
}

}  // namespace saturn
