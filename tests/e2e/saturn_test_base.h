// Shared by the end-to-end tests: a fresh folder per test and the `saturn`
// binary of this build run as a child process (with this build's
// saturn-worker), its stdout and stderr in <dir>/out.log.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/fs.h"
#include "common/process.h"

namespace saturn {

class SaturnTestBase : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/saturn_e2e_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->test_suite_name() + "_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }

  ProcessSpec Saturn(const std::vector<std::string>& args) const {
    ProcessSpec spec;
    spec.argv = {SATURN_BINARY_DIR "/src/cli/saturn"};
    spec.argv.insert(spec.argv.end(), args.begin(), args.end());
    spec.env = {{"SATURN_WORKER", SATURN_BINARY_DIR "/src/worker/saturn-worker"}};
    spec.stdout_path = dir_ + "/out.log";
    spec.stderr_path = dir_ + "/out.log";
    return spec;
  }
  // Runs `saturn args...` to the end; its exit code.
  int Run(const std::vector<std::string>& args) const {
    return ExitCode(Process::Spawn(Saturn(args)).Wait());
  }
  std::string Log() const { return ReadFile(dir_ + "/out.log"); }

  // `saturn run <dir>/w.yaml --run-dir <dir>/<run> --profile <dir>/profile.csv
  // --max-retries 0 [flag]`: a run of the test's workload from its profile.
  std::vector<std::string> RunArgs(const std::string& run, const std::string& flag) const {
    std::vector<std::string> args = {
        "run",       dir_ + "/w.yaml",      "--run-dir",     dir_ + "/" + run,
        "--profile", dir_ + "/profile.csv", "--max-retries", "0"};
    if (!flag.empty()) args.push_back(flag);
    return args;
  }
  // That run's report.json (null when it wrote none) and exit code.
  nlohmann::json RunReport(const std::string& run, const std::string& flag, int* code) const {
    *code = Run(RunArgs(run, flag));
    std::string path = dir_ + "/" + run + "/report.json";
    return std::filesystem::exists(path) ? nlohmann::json::parse(ReadFile(path)) : nlohmann::json();
  }
  // A report's tasks by name.
  static std::map<std::string, nlohmann::json> TasksByName(const nlohmann::json& report) {
    std::map<std::string, nlohmann::json> out;
    for (const nlohmann::json& t : report["tasks"])
      out[t["task"].get<std::string>()] = t;
    return out;
  }

  std::string dir_;
};

}  // namespace saturn
