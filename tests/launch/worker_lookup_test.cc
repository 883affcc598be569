// Where saturn looks for saturn-worker: SATURN_WORKER, beside itself, an
// installed tree's libexec/saturn/, the build tree.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>

#include "launch/worker.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

class WorkerLookup : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("saturn-worker-lookup-" +
             std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "bin");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Touch(const fs::path& p) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << "#!/bin/sh\n";
  }
  std::string Bin() const { return (root_ / "bin").string(); }
  fs::path root_;
};

TEST_F(WorkerLookup, AnInstalledTreeHasItUnderLibexec) {
  Touch(root_ / "libexec" / "saturn" / "saturn-worker");
  EXPECT_EQ(FindWorkerBinaryFrom(Bin(), nullptr),
            fs::weakly_canonical(root_ / "libexec" / "saturn" / "saturn-worker").string());
}

TEST_F(WorkerLookup, OneBesideTheProgramComesFirst) {
  Touch(root_ / "libexec" / "saturn" / "saturn-worker");
  Touch(root_ / "bin" / "saturn-worker");
  EXPECT_EQ(FindWorkerBinaryFrom(Bin(), nullptr),
            fs::weakly_canonical(root_ / "bin" / "saturn-worker").string());
}

TEST_F(WorkerLookup, SaturnWorkerOverridesEverything) {
  Touch(root_ / "bin" / "saturn-worker");
  Touch(root_ / "mine" / "w");
  std::string mine = (root_ / "mine" / "w").string();
  EXPECT_EQ(FindWorkerBinaryFrom(Bin(), mine.c_str()), mine);
  EXPECT_EQ(FindWorkerBinaryFrom(Bin(), ""),
            fs::weakly_canonical(root_ / "bin" / "saturn-worker").string());
}

TEST_F(WorkerLookup, ASaturnWorkerThatIsNotAFileIsNamed) {
  std::string missing = (root_ / "nowhere").string();
  try {
    FindWorkerBinaryFrom(Bin(), missing.c_str());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("SATURN_WORKER is set to " + missing + ", which is not a file"));
  }
}

TEST_F(WorkerLookup, NoneFoundListsEveryPlaceAndSuggestsNoRebuild) {
  try {
    FindWorkerBinaryFrom(Bin(), nullptr);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    for (const std::string& p : WorkerCandidates(Bin()))
      EXPECT_THAT(e.what(), HasSubstr("\n  " + p));
    EXPECT_THAT(e.what(), HasSubstr((root_ / "libexec" / "saturn" / "saturn-worker").string()));
    EXPECT_THAT(e.what(), HasSubstr("set SATURN_WORKER"));
    EXPECT_THAT(e.what(), Not(HasSubstr("build with")));
  }
}

}  // namespace
}  // namespace saturn
