#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>

#include "common/clock.h"
#include "common/csv.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "common/json_text.h"

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
    } catch (const SystemError& e) {  // the system's refusal, not a bug
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

TEST(Fs, ReadFileRefusesADeviceThatNeverEnds) {
  // /dev/zero read "forever" (ASan stopped saturn plan at a 32 GiB buffer).
  try {
    ReadFile("/dev/zero");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/dev/zero: expected a file, found a device"));
  }
}

TEST(Error, QuoteShortensLongValuesBetweenCharacters) {
  EXPECT_EQ(Quote("abc"), "'abc'");
  std::string long_value = std::string(59, 'a') + "\xc3\xa9" + "tail";  // 'é' across the cut
  EXPECT_EQ(Quote(long_value), "'" + std::string(59, 'a') + "...'");
  EXPECT_TRUE(IsUtf8(Quote(long_value)));
}

TEST(JsonText, Utf8AsJsonWritesIt) {
  for (std::string ok :
       {"", "plain", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xf4\x8f\xbf\xbf"}) {
    EXPECT_TRUE(IsUtf8(ok)) << ok;
    EXPECT_NO_THROW(nlohmann::json(ok).dump());
  }
  // Truncated, a stray continuation, overlong, a surrogate, past U+10FFFF, 0xff.
  for (std::string bad : {"\xc3", "\x80", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80",
                          "\xf4\x90\x80\x80", "\xff", "ab\xf0\x9f\x98"}) {
    EXPECT_FALSE(IsUtf8(bad)) << bad;
    EXPECT_THROW(nlohmann::json(bad).dump(), nlohmann::json::type_error) << bad;
  }
  EXPECT_EQ(UnlessUtf8("ab\xff"
                       "c"),
            "expected UTF-8 text, got the byte 0xff at offset 2");
}

TEST(JsonText, ParsesWithinBoundsOrSaysWhy) {
  nlohmann::json j;
  std::string why;
  EXPECT_TRUE(ParseJsonText(std::string(64, '[') + std::string(64, ']'), &j, &why));
  EXPECT_FALSE(ParseJsonText(std::string(65, '[') + std::string(65, ']'), &j, &why));
  EXPECT_EQ(why, "nested deeper than 64 levels");
  EXPECT_FALSE(ParseJsonText("[1e400]", &j, &why));
  EXPECT_THAT(why, HasSubstr("number overflow"));
  EXPECT_FALSE(ParseJsonText("{\"a\": ", &j, &why));
  EXPECT_THAT(why, HasSubstr("parse_error"));
}

TEST(Format, Durations) {
  EXPECT_EQ(FormatDuration(42.5), "42.5s");
  EXPECT_EQ(FormatDuration(125), "2m05s");
  EXPECT_EQ(FormatDuration(3725), "1h02m");
  EXPECT_EQ(FormatDuration(86400 * 4), "4.0d");
  EXPECT_EQ(FormatDuration(81945.8), "22h46m");  // saturn validate said "81945.8 s"
  EXPECT_EQ(FormatDuration(0.5), "0.5s");
  EXPECT_EQ(FormatDuration(0.04), "0.04s");  // a fast solve, not "0.0s"
  EXPECT_EQ(FormatDuration(0.001), "0.0s");  // a progress line at its start
  EXPECT_EQ(FormatDuration(19), "19.0s");
  EXPECT_EQ(FormatDuration(245), "4m05s");
  EXPECT_EQ(FormatDuration(-125), "-2m05s");
  EXPECT_EQ(FormatDuration(std::nan("")), "?");
  // A value just under a unit's end reads in the next unit, never as 60 of
  // the one it leaves.
  EXPECT_EQ(FormatDuration(0.0949), "0.09s");
  EXPECT_EQ(FormatDuration(0.096), "0.1s");
  EXPECT_EQ(FormatDuration(59.94), "59.9s");
  EXPECT_EQ(FormatDuration(59.97), "1m00s");
  EXPECT_EQ(FormatDuration(3599.4), "59m59s");
  EXPECT_EQ(FormatDuration(3599.6), "1h00m");
  EXPECT_EQ(FormatDuration(3 * 86400 - 31), "71h59m");
  EXPECT_EQ(FormatDuration(3 * 86400 - 29), "3.0d");
}

TEST(Format, TheClosestNameToAnUnknownOne) {
  const std::vector<std::string> models = {"gpt", "gpt2", "vit", "resnet", "mlp", "torchscript"};
  EXPECT_EQ(ClosestName("MLP", models), "mlp");                       // case
  EXPECT_EQ(ClosestName("resnt", models), "resnet");                  // a letter missing
  EXPECT_EQ(ClosestName("gpt3", models), "gpt");                      // the first of the closest
  EXPECT_EQ(ClosestName("torch", models), "torchscript");             // its beginning
  EXPECT_EQ(ClosestName("transformer", models), "");                  // nothing close
  EXPECT_EQ(ClosestName("fdsp", {"single", "ddp", "fsdp"}), "fsdp");  // two letters swapped
  EXPECT_EQ(ClosestName("current_practice", {"auto", "current-practice"}), "current-practice");
  EXPECT_EQ(ClosestName("z", {"x", "y"}), "");  // a short name: no guess
  EXPECT_EQ(ClosestName("", {"x"}), "");
  EXPECT_EQ(DidYouMean("MLP", models), "did you mean 'mlp'?");
  EXPECT_EQ(DidYouMean("transformer", models), "");
}

TEST(Format, LossesShowTheirDigits) {
  EXPECT_EQ(FormatLoss(1.50883), "1.5088");
  EXPECT_EQ(FormatLoss(0.0000234), "2.34e-05");  // not 0.0000
  EXPECT_EQ(FormatLoss(0), "0.0000");
  EXPECT_EQ(FormatMilliseconds(30115.800000000003), "30115.8");
  EXPECT_EQ(FormatMilliseconds(12), "12");
  EXPECT_EQ(FormatMilliseconds(0.0004), "0");
  EXPECT_EQ(FormatMilliseconds(-0.0001), "0");
  EXPECT_EQ(FormatMilliseconds(2.5), "2.5");
  EXPECT_EQ(FormatMilliseconds(-1.5), "-1.5");
  EXPECT_EQ(FormatMilliseconds(1e70), "1e+70");  // not cut at the buffer's end
  EXPECT_EQ(FormatMilliseconds(100), "100");
}

TEST(Format, PluralsOfCountedWords) {
  EXPECT_EQ(Plural(1, "task"), "1 task");
  EXPECT_EQ(Plural(0, "task"), "0 tasks");
  EXPECT_EQ(Plural(2, "switch"), "2 switches");
  EXPECT_EQ(Plural(1, "switch"), "1 switch");
  EXPECT_EQ(Plural(3, "pass"), "3 passes");
  EXPECT_EQ(Plural(4, "GPU"), "4 GPUs");
}

TEST(Format, ListsInWords) {
  EXPECT_EQ(JoinWithAnd({}), "");
  EXPECT_EQ(JoinWithAnd({"single"}), "single");
  EXPECT_EQ(JoinWithAnd({"single", "ddp"}), "single and ddp");
  EXPECT_EQ(JoinWithAnd({"single", "ddp", "fsdp"}), "single, ddp and fsdp");
}

}  // namespace
}  // namespace saturn

namespace saturn {
namespace {

TEST(Clock, AManualClocksSleepMovesItsTimeOn) {
  ManualClock clock;
  clock.Set(10.0);
  const Clock& c = clock;
  c.Sleep(0.25);
  c.Sleep(0.5);
  EXPECT_DOUBLE_EQ(clock.Now(), 10.75);
  Deadline d(clock, 1.0);
  c.Sleep(0.9);
  EXPECT_FALSE(d.Expired());
  c.Sleep(0.1);
  EXPECT_TRUE(d.Expired());
}

TEST(Clock, ASteadyClocksSleepWaitsAtLeastThatLong) {
  SteadyClock clock;
  double t0 = clock.Now();
  clock.Sleep(0.02);
  EXPECT_GE(clock.Now() - t0, 0.02);
}

}  // namespace
}  // namespace saturn
