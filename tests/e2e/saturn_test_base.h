// Shared by the end-to-end tests: a fresh folder per test and the `saturn`
// binary of this build run as a child process (with this build's
// saturn-worker), its stdout and stderr in <dir>/out.log.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
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

  std::string dir_;
};

}  // namespace saturn
