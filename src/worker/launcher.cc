#include "worker/launcher.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "common/error.h"

namespace saturn::worker {
namespace {

std::atomic<int> g_forward_signal{0};

void OnSignal(int signal) {
  g_forward_signal.store(signal);
}

struct Rank {
  pid_t pid = -1;
  bool running = false;
  bool killed_by_us = false;
  int status = 0;  // exit status, or -signal
};

pid_t StartRank(const std::vector<std::string>& args, int rank, int world_size,
                const std::string& rendezvous) {
  std::vector<std::string> full = args;
  full.insert(full.end(), {"--rank", std::to_string(rank), "--world-size",
                           std::to_string(world_size), "--rendezvous", rendezvous});
  std::vector<char*> argv;
  std::string program = "/proc/self/exe";
  argv.push_back(program.data());
  for (std::string& arg : full)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_t parent = getpid();
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid < 0) throw SystemError(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(4);
    if (rank != 0) dup2(STDERR_FILENO, STDOUT_FILENO);
    sigset_t terminate;
    sigemptyset(&terminate);
    sigaddset(&terminate, SIGTERM);
    sigprocmask(SIG_BLOCK, &terminate, nullptr);
    execv(argv[0], argv.data());
    std::fprintf(stderr, "saturn-worker: cannot start rank %d: %s\n", rank, std::strerror(errno));
    _exit(1);
  }
  return pid;
}

// Lower is more likely the root cause. A rank killed by a signal (not
// ours) comes before peer failures: those are the others noticing it. A
// rank killed by SIGPIPE wrote to a connection a peer had closed: it too
// noticed another's failure (Gloo on LibTorch 2.6 raced a killed rank that
// way).
int Severity(int status) {
  if (status == -SIGPIPE) return 4;
  switch (status) {
    case 2:
      return 0;
    case 3:
      return 1;
    case 1:
      return 2;
    case 4:
      return 4;
    default:
      return status < 0 ? 3 : 5;
  }
}

std::string ReadNote(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

}  // namespace

std::string FailureNotePath(const std::string& rendezvous, int rank) {
  return rendezvous + "/failure-" + std::to_string(rank) + ".txt";
}

std::string MakeRendezvousDir() {
  std::error_code ec;
  std::string base = std::filesystem::temp_directory_path(ec).string();
  if (ec) base = "/tmp";
  std::string pattern = base + "/saturn-rdzv-XXXXXX";
  if (mkdtemp(pattern.data()) == nullptr) {
    throw SystemError("cannot create a rendezvous directory in " + base + ": " +
                      std::strerror(errno));
  }
  return pattern;
}

LaunchResult LaunchRanks(const std::vector<std::string>& args, int world_size,
                         const std::string& rendezvous) {
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);

  std::vector<Rank> ranks(world_size);
  for (int r = 0; r < world_size; ++r) {
    ranks[r].pid = StartRank(args, r, world_size, rendezvous);
    ranks[r].running = true;
  }
  int running = world_size;
  bool stopping = false;
  // When the others are killed. A rank that failed as a peer (4) or died of
  // a signal has usually noticed another's failure: a rank that hit bad
  // input closes its connections while unwinding, before it has written its
  // note and exited, so the others get a moment to exit with the root cause.
  using Clock = std::chrono::steady_clock;
  constexpr auto kPeerGrace = std::chrono::seconds(5);
  bool kill_pending = false;
  Clock::time_point kill_at{};
  while (running > 0) {
    int signal = g_forward_signal.exchange(0);
    if (signal != 0 && !stopping) {
      for (Rank& rank : ranks) {
        if (rank.running) kill(rank.pid, SIGTERM);
      }
    }
    if (kill_pending && Clock::now() >= kill_at) {
      kill_pending = false;
      for (Rank& other : ranks) {
        if (other.running) {
          other.killed_by_us = true;
          kill(other.pid, SIGKILL);
        }
      }
    }
    int raw = 0;
    pid_t pid = waitpid(-1, &raw, WNOHANG);
    if (pid <= 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    for (Rank& rank : ranks) {
      if (rank.pid != pid || !rank.running) continue;
      rank.running = false;
      --running;
      rank.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -WTERMSIG(raw);
      if (rank.status != 0 && !rank.killed_by_us && !stopping) {
        stopping = true;
        const bool peer = rank.status == 4 || rank.status < 0;
        kill_pending = true;
        kill_at = Clock::now() + (peer ? Clock::duration(kPeerGrace) : Clock::duration::zero());
      }
    }
  }
  LaunchResult result;
  for (int r = 0; r < world_size; ++r) {
    const Rank& rank = ranks[r];
    if (rank.status == 0 || rank.killed_by_us) continue;
    if (result.failed_rank < 0 ||
        Severity(rank.status) < Severity(ranks[result.failed_rank].status)) {
      result.failed_rank = r;
    }
  }
  if (result.failed_rank < 0) return result;
  const Rank& cause = ranks[result.failed_rank];
  if (cause.status < 0) {
    result.status = 4;
    result.message = "rank " + std::to_string(result.failed_rank) + " was killed by signal " +
                     std::to_string(-cause.status);
  } else {
    result.status = cause.status;
    result.message = ReadNote(FailureNotePath(rendezvous, result.failed_rank));
    if (result.message.empty()) {
      result.message = "rank " + std::to_string(result.failed_rank) + " exited with status " +
                       std::to_string(cause.status);
    }
  }
  return result;
}

}  // namespace saturn::worker
