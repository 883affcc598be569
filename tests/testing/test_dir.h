// A scratch folder of the running test's own. ctest runs each test of a
// suite as its own process, two at a time, so a folder shared by a suite's
// tests is written by two of them at once (a CI run lost a Node.js script's
// output that way).
//
//   dir_ = test::OwnTestDir("search");   // <TempDir>/saturn_search_Suite.Name
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace saturn::test {

// <TempDir>/saturn_<prefix>_<suite>.<test>, emptied and created.
inline std::string OwnTestDir(const std::string& prefix) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string dir = ::testing::TempDir() + "/saturn_" + prefix;
  if (info) dir += std::string("_") + info->test_suite_name() + "." + info->name();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace saturn::test
