// A CSV's bytes in memory (table/csv_text.h): the whole file, large ones
// read by threads at once, and ReadFile's errors.
#include "table/csv_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>

#include "common/error.h"
#include "common/fs.h"
#include "tests/testing/test_dir.h"

namespace saturn::table {
namespace {

using ::testing::HasSubstr;

std::string ErrorOf(const std::string& path) {
  try {
    CsvText text(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(CsvText, HoldsTheWholeFile) {
  std::string dir = test::OwnTestDir("csv_text");
  std::string big(40u << 20, '\0');  // read by threads
  for (size_t i = 0; i < big.size(); ++i)
    big[i] = static_cast<char>('a' + (i * 7919) % 26);
  for (const std::string& contents : {std::string(), std::string("g,x\na,1"), big}) {
    WriteFileAtomic(dir + "/t.csv", contents);
    CsvText text(dir + "/t.csv");
    EXPECT_EQ(text.view().size(), contents.size());
    EXPECT_TRUE(text.view() == contents);
  }
  for (const std::string& path : {dir + "/none.csv", dir}) {  // ReadFile's errors
    std::string want;
    try {
      ReadFile(path);
    } catch (const InputError& e) {
      want = e.what();
    }
    EXPECT_EQ(ErrorOf(path), want);
  }
  EXPECT_THAT(ErrorOf(dir), HasSubstr("expected a file, found a directory"));
}

TEST(CsvText, RunPartsRunsEveryPartAndRethrowsTheFirstError) {
  std::atomic<int> sum{0};
  RunParts(5, [&](size_t k) { sum += static_cast<int>(k) + 1; });
  EXPECT_EQ(sum, 15);
  try {
    RunParts(3, [](size_t k) {
      if (k > 0) throw std::runtime_error("part " + std::to_string(k));
    });
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "part 1");
  }
}

}  // namespace
}  // namespace saturn::table
