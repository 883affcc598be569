#include "tests/engine/worker_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "common/fs.h"

namespace saturn::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

double Now() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

TestDir::TestDir(const std::string& name) : path_(::testing::TempDir() + "saturn_" + name) {
  std::filesystem::remove_all(path_);
  std::filesystem::create_directories(path_);
}

std::string TestDir::Write(const std::string& name, const std::string& contents) const {
  WriteFileAtomic(Path(name), contents);
  return Path(name);
}

WorkerProcess::WorkerProcess(const std::vector<std::string>& args, const std::string& log_prefix)
    : out_path_(log_prefix + ".out"), err_path_(log_prefix + ".err") {
  std::vector<std::string> full{SATURN_WORKER_PATH};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : full)
    argv.push_back(arg.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    int out = open(out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int err = open(err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(out, STDOUT_FILENO);
    dup2(err, STDERR_FILENO);
    execv(argv[0], argv.data());
    _exit(127);
  }
}

WorkerProcess::~WorkerProcess() {
  if (!Exited()) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

bool WorkerProcess::Exited() {
  if (status_ >= 0) return true;
  int raw = 0;
  if (waitpid(pid_, &raw, WNOHANG) != pid_) return false;
  status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  return true;
}

bool WorkerProcess::WaitForOutput(const std::string& text, double timeout_s) {
  double end = Now() + timeout_s;
  while (Now() < end) {
    if (Stdout().find(text) != std::string::npos) return true;
    if (Exited()) return Stdout().find(text) != std::string::npos;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

void WorkerProcess::Signal(int signal) const {
  kill(pid_, signal);
}

int WorkerProcess::Wait(double timeout_s) {
  double end = Now() + timeout_s;
  while (!Exited()) {
    if (Now() > end) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      status_ = -1;
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return status_;
}

std::string WorkerProcess::Stdout() const {
  return Slurp(out_path_);
}
std::string WorkerProcess::Stderr() const {
  return Slurp(err_path_);
}

std::vector<std::string> ExecuteArgs(const TestDir& dir, const std::string& task,
                                     const std::string& technique, int gpus,
                                     const std::string& name, int64_t to_step) {
  return {"execute",
          "--task",
          task,
          "--technique",
          technique,
          "--gpus",
          std::to_string(gpus),
          "--out",
          dir.Path(name + ".json"),
          "--from-step",
          "0",
          "--to-step",
          std::to_string(to_step),
          "--checkpoint-dir",
          dir.Path(name)};
}

WorkerRun RunWorker(const std::vector<std::string>& args, const std::string& log_prefix,
                    double timeout_s) {
  WorkerProcess process(args, log_prefix);
  WorkerRun run;
  run.status = process.Wait(timeout_s);
  run.out = process.Stdout();
  run.err = process.Stderr();
  return run;
}

std::vector<pid_t> ChildPids(pid_t parent) {
  std::string path =
      "/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children";
  std::istringstream in(Slurp(path));
  std::vector<pid_t> pids;
  pid_t pid;
  while (in >> pid)
    pids.push_back(pid);
  return pids;
}

nlohmann::json TinyTask(const std::string& family) {
  nlohmann::json model;
  if (family == "gpt") {
    model = {{"type", "gpt"}, {"layers", 2}, {"d_model", 32}, {"heads", 2}, {"seq_len", 16}};
  } else if (family == "vit") {
    model = {{"type", "vit"}, {"layers", 2},     {"d_model", 32},
             {"heads", 2},    {"image_size", 8}, {"patch", 4}};
  } else if (family == "resnet") {
    model = {{"type", "resnet"}, {"blocks", 2}, {"width", 16}, {"image_size", 8}};
  } else {
    model = {{"type", "mlp"}, {"layers", 3}, {"width", 32}};
  }
  return {{"name", "tiny-" + family},
          {"model", model},
          {"data", {{"type", "synthetic"}}},
          {"batch_size", 12},
          {"optimizer", {{"type", "adamw"}, {"lr", 3e-3}}},
          {"steps", 10},
          {"seed", 7}};
}

nlohmann::json ReadJson(const std::string& path) {
  return nlohmann::json::parse(ReadFile(path));
}

}  // namespace saturn::testing
