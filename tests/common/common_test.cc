#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

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

// A write past a file-size limit (a full disk, as RLIMIT_FSIZE stands in
// for one) fails with the reason and leaves the old file whole, no
// temporary beside it. In a child process: the limit is process-wide.
TEST(Fs, AFullDiskLeavesTheOldFileAndNoTemporary) {
  std::string dir = ::testing::TempDir() + "/saturn_fs_full";
  std::filesystem::remove_all(dir);
  WriteFileAtomic(dir + "/f.txt", "old");
  pid_t child = ::fork();
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {4096, 4096};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    int code = 3;
    try {
      WriteFileAtomic(dir + "/f.txt", std::string(10000, 'n'));
      code = 1;
    } catch (const std::runtime_error& e) {
      code = std::string(e.what()).find("File too large") != std::string::npos ? 0 : 2;
    }
    try {
      WriteFileDurable(dir + "/g.txt", std::string(10000, 'n'));
      code = code == 0 ? 4 : code;
    } catch (const std::runtime_error&) {
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);  // 1: no error, 2: another error, 4: g.txt written
  EXPECT_EQ(ReadFile(dir + "/f.txt"), "old");
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"f.txt"});
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

TEST(Format, PluralsOfCountedWords) {
  EXPECT_EQ(Plural(1, "task"), "1 task");
  EXPECT_EQ(Plural(0, "task"), "0 tasks");
  EXPECT_EQ(Plural(2, "switch"), "2 switches");
  EXPECT_EQ(Plural(1, "switch"), "1 switch");
  EXPECT_EQ(Plural(3, "pass"), "3 passes");
  EXPECT_EQ(Plural(4, "GPU"), "4 GPUs");
}

}  // namespace
}  // namespace saturn
