// The engine's `tokens` data reads both token file layouts (Contract 5):
// the same ids headerless (uint16), after a header as uint16 and as uint32
// give the same samples, training and held-out; an id at or above
// data.vocab and a malformed header are input errors naming the file.
// (LibTorch: built only with the engine.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "engine/data.h"
#include "engine/model.h"
#include "engine/task.h"
#include "tokenizer/token_file.h"

namespace saturn::engine {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kFixtures = SATURN_FIXTURES_DIR;

class EngineTokensTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        (fs::temp_directory_path() / ("saturn-engine-tokens-" + std::to_string(getpid()))).string();
    fs::create_directories(dir_);
    std::string bytes = ReadFile(kFixtures + "/tokens.bin");  // uint16 ids below 40
    TokenFileLayout layout = ReadTokenFileLayout(bytes, "tokens.bin");
    for (uint64_t i = 0; i < layout.count; ++i)
      ids_.push_back(layout.Id(bytes, i));
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, int id_bytes, bool header, uint32_t vocab = 40) {
    std::string bytes = header ? TokenFileHeader(id_bytes, vocab) : "";
    AppendTokenIds(ids_.data(), ids_.size(), id_bytes, &bytes);
    WriteFileAtomic(dir_ + "/" + name, bytes);
    return dir_ + "/" + name;
  }

  TaskSpec Task(const std::string& path) const {
    nlohmann::json task = {
        {"name", "ts"},
        {"model",
         {{"type", "torchscript"}, {"path", kFixtures + "/seq_lm.pt"}, {"loss", "cross_entropy"}}},
        {"data", {{"type", "tokens"}, {"path", path}, {"seq_len", 16}, {"vocab", 40}}},
        {"batch_size", 8},
        {"optimizer", {{"type", "sgd"}, {"lr", 0.1}}},
        {"seed", 3}};
    return ParseTask(task, "task.json");
  }

  std::string ErrorOf(const std::string& path) const {
    TaskSpec task = Task(path);
    try {
      MakeDataset(task, *BuildModel(task));
    } catch (const InputError& e) {
      return e.what();
    }
    return "(no error)";
  }

  std::string dir_;
  std::vector<uint32_t> ids_;
};

TEST_F(EngineTokensTest, BothLayoutsGiveTheSameSamples) {
  ASSERT_GT(ids_.size(), 100u);
  std::vector<std::string> files = {Write("plain.bin", 2, false), Write("u16.bin", 2, true),
                                    Write("u32.bin", 4, true)};
  std::vector<Batch> train, held_out;
  for (const std::string& file : files) {
    TaskSpec task = Task(file);
    std::unique_ptr<Model> model = BuildModel(task);
    train.push_back(MakeDataset(task, *model)->Samples(5, 8));
    held_out.push_back(MakeEvalDataset(task, *model)->Samples(0, 4));
  }
  for (size_t i = 1; i < files.size(); ++i) {
    EXPECT_TRUE(at::equal(train[i].inputs, train[0].inputs)) << files[i];
    EXPECT_TRUE(at::equal(train[i].targets, train[0].targets)) << files[i];
    EXPECT_TRUE(at::equal(held_out[i].inputs, held_out[0].inputs)) << files[i];
  }
  // The samples are windows of the file's ids.
  EXPECT_LT(train[0].inputs.max().item<int64_t>(), 40);
}

TEST_F(EngineTokensTest, IdsAtOrAboveTheVocabularyAndBadHeadersAreInputErrors) {
  ids_[7] = 70000;
  std::string big = Write("big.bin", 4, true, 128256);
  EXPECT_THAT(ErrorOf(big), HasSubstr("token id 70000 at position 7 is not below data.vocab 40"));
  std::string bytes = TokenFileHeader(4, 40);
  bytes[10] = 3;  // ids of 3 bytes
  WriteFileAtomic(dir_ + "/bad.bin", bytes + "abc");
  EXPECT_THAT(ErrorOf(dir_ + "/bad.bin"),
              HasSubstr(dir_ + "/bad.bin: its header says ids of 3 bytes"));
  WriteFileAtomic(dir_ + "/odd.bin", "abc");
  EXPECT_THAT(ErrorOf(dir_ + "/odd.bin"), HasSubstr("not a whole number of uint16 token ids"));
}

}  // namespace
}  // namespace saturn::engine
