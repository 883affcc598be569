// Every input kept under tests/fuzz/ goes through its target again, in the
// normal build (no clang, no libFuzzer): corpus/<target>/ (interesting
// inputs: each reader's accepting and rejecting paths) and crashes/<target>/
// (every input that ever crashed, hung or broke a property; the fix made it
// pass). A finding (anything but the reader's own error) fails the test
// naming the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "fuzz/targets.h"

namespace saturn::fuzz {
namespace {

namespace fs = std::filesystem;

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

struct Replayed {
  int files = 0;
  int accepted = 0;
};

Replayed ReplayKept(const Target& t, const std::string& kind) {
  Replayed r;
  fs::path dir = fs::path(SATURN_SOURCE_DIR) / "tests/fuzz" / kind / t.name;
  if (!fs::is_directory(dir)) return r;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    ++r.files;
    try {
      r.accepted += t.run(Slurp(e.path()));
    } catch (const std::exception& ex) {
      ADD_FAILURE() << e.path() << ": " << ex.what();
    }
  }
  return r;
}

class Replay : public ::testing::TestWithParam<Target> {};

TEST_P(Replay, KeptInputsAreAcceptedOrRejectedCleanly) {
  Replayed corpus = ReplayKept(GetParam(), "corpus");
  Replayed crashes = ReplayKept(GetParam(), "crashes");
  // Each target's corpus holds inputs its reader accepts and ones it refuses.
  EXPECT_GT(corpus.accepted, 0) << GetParam().name;
  EXPECT_LT(corpus.accepted, corpus.files) << GetParam().name;
  RecordProperty("files", corpus.files + crashes.files);
}

INSTANTIATE_TEST_SUITE_P(Fuzz, Replay, ::testing::ValuesIn(Targets()),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace saturn::fuzz
