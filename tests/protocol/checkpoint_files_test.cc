// Checkpoint folders: publication with a manifest, the checks both sides
// apply, the newest good checkpoint, leftovers and retention.
#include "protocol/checkpoint_files.h"
#include "tests/testing/error_of.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "common/error.h"
#include "common/fs.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class CheckpointFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/saturn_checkpoint_files_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }

  // A checkpoint of `blocks` blocks at `step`, as the engine writes one.
  std::string Write(long step, int blocks = 2, size_t block_bytes = 1000) {
    std::string final = CheckpointFolder(dir_, step);
    std::string partial = final + ".partial";
    fs::create_directories(partial);
    for (int i = 0; i < blocks; ++i) {
      char name[32];
      std::snprintf(name, sizeof name, "block-%05d.pt", i);
      WriteCheckpointFile(partial, name, std::string(block_bytes, static_cast<char>('a' + i)));
    }
    WriteCheckpointFile(
        partial, "meta.json",
        "{\"step\": " + std::to_string(step) + ", \"blocks\": " + std::to_string(blocks) + "}\n");
    PublishCheckpoint(partial, final, step);
    return final;
  }

  std::set<std::string> Names() const {
    std::set<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      names.insert(e.path().filename().string());
    return names;
  }

  static void Flip(const std::string& path, size_t at) {
    std::string bytes = ReadFile(path);
    bytes[at] ^= 0x01;
    WriteFileAtomic(path, bytes);
  }

  std::string dir_;
};

TEST_F(CheckpointFiles, APublishedCheckpointListsEveryFileAndChecksGood) {
  std::string path = Write(40);
  EXPECT_EQ(Names(), (std::set<std::string>{"checkpoint-40"}));  // no .partial
  std::set<std::string> files;
  for (const auto& e : fs::directory_iterator(path))
    files.insert(e.path().filename().string());
  EXPECT_EQ(files, (std::set<std::string>{"block-00000.pt", "block-00001.pt", "meta.json",
                                          "manifest.json"}));  // no digest notes
  Manifest m = ParseManifest(ReadFile(path + "/manifest.json"), path);
  EXPECT_EQ(m.step, 40);
  ASSERT_EQ(m.files.size(), 3u);
  ASSERT_NE(m.Find("block-00001.pt"), nullptr);
  EXPECT_EQ(m.Find("block-00001.pt")->digest.size, 1000u);
  CheckpointHealth h = CheckCheckpoint(path);
  EXPECT_EQ(h.state, CheckpointState::kGood) << h.problem;
}

TEST_F(CheckpointFiles, TornDamagedAndIncompleteCheckpointsAreBadAndSayWhy) {
  std::string torn = Write(10);
  fs::resize_file(torn + "/block-00001.pt", 400);
  EXPECT_EQ(CheckCheckpoint(torn).state, CheckpointState::kBad);
  EXPECT_THAT(CheckCheckpoint(torn).problem,
              HasSubstr("block-00001.pt: 400 bytes where the manifest says 1000 (torn"));

  std::string damaged = Write(20);
  Flip(damaged + "/block-00000.pt", 500);
  EXPECT_THAT(CheckCheckpoint(damaged).problem, HasSubstr("block-00000.pt: crc32c "));
  EXPECT_THAT(CheckCheckpoint(damaged).problem, HasSubstr("(damaged)"));

  std::string missing = Write(30);
  fs::remove(missing + "/block-00000.pt");
  EXPECT_THAT(CheckCheckpoint(missing).problem, HasSubstr("block-00000.pt: missing"));

  std::string bad_manifest = Write(50);
  WriteFileAtomic(bad_manifest + "/manifest.json", "{\"format\": 1, \"files\": [");
  EXPECT_THAT(CheckCheckpoint(bad_manifest).problem, HasSubstr("manifest.json"));

  // A manifest that leaves a block of meta.json out.
  std::string short_list = Write(60);
  Manifest m = ParseManifest(ReadFile(short_list + "/manifest.json"), short_list);
  m.files.erase(m.files.begin());  // block-00000.pt
  WriteFileAtomic(short_list + "/manifest.json", ManifestToJson(m));
  EXPECT_THAT(CheckCheckpoint(short_list).problem, HasSubstr("block-00000.pt is missing"));

  // Another step's manifest.
  std::string moved = Write(70);
  fs::rename(moved, CheckpointFolder(dir_, 71));
  EXPECT_THAT(CheckCheckpoint(CheckpointFolder(dir_, 71)).problem, HasSubstr("not of this step"));
}

TEST_F(CheckpointFiles, ACheckpointWithoutManifestIsUnverifiedIfItsMetaReads) {
  fs::create_directories(dir_ + "/checkpoint-8");
  WriteFileAtomic(dir_ + "/checkpoint-8/meta.json", "{\"step\": 8}");
  CheckpointHealth h = CheckCheckpoint(dir_ + "/checkpoint-8");
  EXPECT_EQ(h.state, CheckpointState::kUnverified);
  EXPECT_TRUE(h.usable());
  EXPECT_THAT(h.problem, HasSubstr("no manifest.json"));
  WriteFileAtomic(dir_ + "/checkpoint-8/meta.json", "{\"step\": 9}");
  EXPECT_EQ(CheckCheckpoint(dir_ + "/checkpoint-8").state, CheckpointState::kBad);
  WriteFileAtomic(dir_ + "/checkpoint-8/meta.json", "{\"st");
  EXPECT_EQ(CheckCheckpoint(dir_ + "/checkpoint-8").state, CheckpointState::kBad);
  fs::remove(dir_ + "/checkpoint-8/meta.json");
  EXPECT_THAT(CheckCheckpoint(dir_ + "/checkpoint-8").problem, HasSubstr("meta.json is missing"));
}

TEST_F(CheckpointFiles, TheNewestGoodOneIsChosenAndBadNewerOnesAreSetAside) {
  Write(10);
  Write(20);
  std::string damaged = Write(30);
  Flip(damaged + "/meta.json", 3);
  std::string torn = Write(40);
  fs::resize_file(torn + "/block-00000.pt", 10);
  fs::create_directories(dir_ + "/checkpoint-50.partial");  // never published
  NewestCheckpoint n = FindNewestCheckpoint(dir_);
  EXPECT_EQ(n.step, 20);
  EXPECT_FALSE(n.unverified);
  ASSERT_EQ(n.skipped.size(), 2u);
  EXPECT_EQ(n.skipped[0].step, 40);
  EXPECT_THAT(n.skipped[0].problem, HasSubstr("torn"));
  EXPECT_EQ(n.skipped[1].step, 30);
  EXPECT_EQ(Names(),
            (std::set<std::string>{"checkpoint-10", "checkpoint-20", "checkpoint-30.corrupt",
                                   "checkpoint-40.corrupt", "checkpoint-50.partial"}));
  // Set aside once: the next look meets only good ones.
  n = FindNewestCheckpoint(dir_);
  EXPECT_EQ(n.step, 20);
  EXPECT_TRUE(n.skipped.empty());
  RemoveCheckpointLeftovers(dir_);
  EXPECT_EQ(Names(), (std::set<std::string>{"checkpoint-10", "checkpoint-20",
                                            "checkpoint-30.corrupt", "checkpoint-40.corrupt"}));
}

TEST_F(CheckpointFiles, NoUsableCheckpointMeansStepZero) {
  EXPECT_EQ(FindNewestCheckpoint(dir_).step, 0);
  EXPECT_EQ(FindNewestCheckpoint(dir_ + "/none").step, 0);
  std::string only = Write(5);
  fs::remove(only + "/meta.json");
  NewestCheckpoint n = FindNewestCheckpoint(dir_);
  EXPECT_EQ(n.step, 0);
  ASSERT_EQ(n.skipped.size(), 1u);
}

TEST_F(CheckpointFiles, LeftoversOfInterruptedWritesAreRemoved) {
  Write(10);
  fs::create_directories(dir_ + "/checkpoint-20.partial");
  fs::create_directories(dir_ + "/checkpoint-10.old");
  WriteFileAtomic(dir_ + "/checkpoint-30.tmp.123", "x");
  fs::create_directories(dir_ + ".eval/checkpoint-12");
  RemoveCheckpointLeftovers(dir_);
  EXPECT_EQ(Names(), (std::set<std::string>{"checkpoint-10"}));
  EXPECT_FALSE(fs::exists(dir_ + ".eval"));
}

TEST_F(CheckpointFiles, RetentionKeepsTheNewestAtOrBelowTheLastWritten) {
  for (long step : {10, 20, 30, 40, 50})
    Write(step);
  EXPECT_TRUE(PruneCheckpoints(dir_, 50, 0).empty());  // 0 keeps all
  EXPECT_EQ(Names().size(), 5u);
  // Written after a resume from 30: 40 and 50 are from before, left alone.
  EXPECT_EQ(PruneCheckpoints(dir_, 30, 2), (std::vector<long>{10}));
  EXPECT_EQ(Names(), (std::set<std::string>{"checkpoint-20", "checkpoint-30", "checkpoint-40",
                                            "checkpoint-50"}));
  EXPECT_EQ(PruneCheckpoints(dir_, 50, 2), (std::vector<long>{30, 20}));
  EXPECT_EQ(Names(), (std::set<std::string>{"checkpoint-40", "checkpoint-50"}));
  EXPECT_EQ(PruneCheckpoints(dir_, 50, 1), (std::vector<long>{40}));
  EXPECT_EQ(Names(), (std::set<std::string>{"checkpoint-50"}));
}

TEST_F(CheckpointFiles, ReplacingACheckpointOfTheSameStepPublishesTheNewOne) {
  Write(10, 1, 100);
  Write(10, 3, 200);
  Manifest m = ParseManifest(ReadFile(dir_ + "/checkpoint-10/manifest.json"), dir_);
  EXPECT_EQ(m.files.size(), 4u);
  EXPECT_EQ(CheckCheckpoint(dir_ + "/checkpoint-10").state, CheckpointState::kGood);
  EXPECT_EQ(Names(), (std::set<std::string>{"checkpoint-10"}));
}

TEST_F(CheckpointFiles, BytesReadAreCheckedAgainstTheManifest) {
  std::string path = Write(10);
  Manifest m = ParseManifest(ReadFile(path + "/manifest.json"), path);
  std::string bytes = ReadFile(path + "/block-00000.pt");
  EXPECT_NO_THROW(CheckCheckpointBytes(m, path, "block-00000.pt", bytes));
  bytes[7] ^= 0x40;
  try {
    CheckCheckpointBytes(m, path, "block-00000.pt", bytes);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("block-00000.pt: damaged checkpoint: crc32c"));
  }
  EXPECT_THAT(
      test::ErrorOf([&] { CheckCheckpointBytes(m, path, "block-00000.pt", "short"); }),
      HasSubstr("block-00000.pt: damaged checkpoint: 5 bytes where the manifest says 1000 (torn"));
  EXPECT_THAT(test::ErrorOf([&] { CheckCheckpointBytes(m, path, "block-00009.pt", "x"); }),
              HasSubstr("block-00009.pt: not in the checkpoint's manifest.json"));
}

TEST_F(CheckpointFiles, ManifestsThatAreNotOneAreInputErrors) {
  auto error = [](const std::string& text) {
    return test::ErrorOf([&] { ParseManifest(text, "m"); });
  };
  EXPECT_THAT(error("[]"), HasSubstr("m: expected a JSON object"));
  EXPECT_THAT(error("{\"format\": 2, \"step\": 1, \"files\": []}"),
              HasSubstr("m: format: expected 1"));
  EXPECT_THAT(error("{\"format\": 1, \"step\": -1, \"files\": []}"),
              HasSubstr("m: step: expected an integer >= 0"));
  EXPECT_THAT(error(R"({"format": 1, "step": 1, "files": [{"name": "../x", "size": 1,
                        "crc32c": "00000000"}]})"),
              HasSubstr("m: files[0]: expected {name, size, crc32c} with a plain file name"));
  EXPECT_THAT(
      error(R"({"format": 1, "step": 1, "files": [{"name": "a", "size": 1,
                        "crc32c": "0000000g"}]})"),
      HasSubstr(
          "m: files[0]: expected {name, size, crc32c} with a plain file name and 8 hex digits"));
  EXPECT_THAT(error(R"({"format": 1, "step": 1, "files": [{"name": "a", "size": 1,
                        "crc32c": "00000000"}, {"name": "a", "size": 2,
                        "crc32c": "00000000"}]})"),
              HasSubstr("m: files[1]: lists 'a' twice"));
  EXPECT_EQ(CheckpointStepOf("checkpoint-12"), 12);
  EXPECT_EQ(CheckpointStepOf("checkpoint-12.partial"), -1);
  EXPECT_EQ(CheckpointStepOf("checkpoint-"), -1);
  EXPECT_EQ(CheckpointStepOf("checkpoint-1x"), -1);
}

// A full disk (RLIMIT_FSIZE) while a checkpoint is written: the write fails,
// the previous checkpoint stays good, and the new one never appears.
TEST_F(CheckpointFiles, AFullDiskFailsTheWriteAndLeavesThePreviousOne) {
  Write(10);
  pid_t child = ::fork();
  if (child == 0) {
    ::signal(SIGXFSZ, SIG_IGN);
    struct rlimit limit = {20000, 20000};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    try {
      Write(20, 2, 50000);
      ::_exit(1);
    } catch (const std::runtime_error& e) {
      ::_exit(std::string(e.what()).find("File too large") != std::string::npos ? 0 : 2);
    }
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(CheckCheckpoint(dir_ + "/checkpoint-10").state, CheckpointState::kGood);
  EXPECT_FALSE(fs::exists(dir_ + "/checkpoint-20"));
  // The writer's folder is what the engine's writer removes (or the
  // executor, if the writer was killed).
  EXPECT_TRUE(fs::exists(dir_ + "/checkpoint-20.partial"));
  EXPECT_FALSE(fs::exists(dir_ + "/checkpoint-20.partial/block-00000.pt"));
  EXPECT_EQ(FindNewestCheckpoint(dir_).step, 10);
  RemoveCheckpointLeftovers(dir_);
  EXPECT_EQ(Names(), (std::set<std::string>{"checkpoint-10"}));
}

}  // namespace
}  // namespace saturn
