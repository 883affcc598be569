#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "common/csv.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;

TEST(Csv, ParsesQuotedFieldsAndLineNumbers) {
  CsvTable t = ParseCsv("a,b\n\n\"x,1\",\"say \"\"hi\"\"\"\r\nlast,\n", "t.csv");
  ASSERT_EQ(t.records.size(), 3u);
  EXPECT_EQ(t.records[1].fields[0], "x,1");
  EXPECT_EQ(t.records[1].fields[1], "say \"hi\"");
  EXPECT_EQ(t.records[1].line, 3);
  EXPECT_EQ(t.records[2].fields, (std::vector<std::string>{"last", ""}));
  EXPECT_EQ(t.records[2].line, 4);
}

TEST(Csv, QuotedFieldsMaySpanLines) {
  CsvTable t = ParseCsv("a\n\"two\nlines\"\nnext\n", "t.csv");
  ASSERT_EQ(t.records.size(), 3u);
  EXPECT_EQ(t.records[1].fields[0], "two\nlines");
  EXPECT_EQ(t.records[2].line, 4);
}

TEST(Csv, UnterminatedQuoteIsAnInputError) {
  try {
    ParseCsv("a\n\"open\n", "bad.csv");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad.csv:2"));
    EXPECT_THAT(e.what(), HasSubstr("unterminated"));
  }
}

TEST(Csv, LineRoundTrips) {
  std::vector<std::string> fields = {"plain", "with,comma", "with \"quote\"", ""};
  CsvTable t = ParseCsv(CsvLine(fields), "x");
  EXPECT_EQ(t.records[0].fields, fields);
}

TEST(Fs, WriteFileAtomicReplacesWholeFilesAndCreatesDirectories) {
  std::string dir = ::testing::TempDir() + "/saturn_fs_test/a/b";
  std::filesystem::remove_all(::testing::TempDir() + "/saturn_fs_test");
  WriteFileAtomic(dir + "/f.txt", "first");
  WriteFileAtomic(dir + "/f.txt", "second");
  EXPECT_EQ(ReadFile(dir + "/f.txt"), "second");
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);  // no temporary left behind
}

TEST(Fs, ReadFileNamesTheFileWhenItCannot) {
  try {
    ReadFile("/nonexistent/saturn.yaml");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/saturn.yaml"));
    EXPECT_THAT(e.what(), HasSubstr("No such file"));
  }
}

TEST(Format, Durations) {
  EXPECT_EQ(FormatDuration(42.5), "42.5s");
  EXPECT_EQ(FormatDuration(125), "2m05s");
  EXPECT_EQ(FormatDuration(3725), "1h02m");
  EXPECT_EQ(FormatDuration(86400 * 4), "4.0d");
}

}  // namespace
}  // namespace saturn
