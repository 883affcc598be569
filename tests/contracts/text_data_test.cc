// `data: {type: text, path, tokenizer: DIR}` for gpt2 and llama: the text
// becomes a token file in the token cache, with the ids `saturn tokenize`
// writes (the same documents, BOS and EOS), once per content; bad input is
// one error naming the field or the file, and leaves no entry behind.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/fs.h"
#include "contracts/text_data.h"
#include "contracts/workload.h"
#include "tokenizer/token_file.h"
#include "tokenizer/tokenize_files.h"
#include "tokenizer/tokenizer.h"

namespace saturn {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

class TextDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("saturn-text-data-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/tok");
    WriteFileAtomic(dir_ + "/cluster.yaml", "nodes:\n  - {name: n0, gpus: 4}\n");
    setenv("SATURN_TOKEN_CACHE", (dir_ + "/cache").c_str(), 1);
    WriteTokenizer();
  }
  void TearDown() override {
    unsetenv("SATURN_TOKEN_CACHE");
    fs::remove_all(dir_);
  }

  // A SentencePiece-style tokenizer (Llama 2's set-up, as in
  // tests/tokenizer) over a, b, ▁ and byte fallback, BOS per document, and
  // an added token <big> at id 70000: 70,001 ids, past uint16.
  void WriteTokenizer(json config = nullptr) {
    json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      vocab[name] = 3 + b;
    }
    vocab["▁"] = 259;
    vocab["a"] = 260;
    vocab["b"] = 261;
    vocab["▁a"] = 262;
    json added = json::array();
    for (auto [id, content] : {std::pair{0, "<unk>"}, {1, "<s>"}, {2, "</s>"}, {70000, "<big>"}}) {
      added.push_back({{"id", id},
                       {"content", content},
                       {"special", true},
                       {"normalized", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"single_word", false}});
    }
    json normalizer = {
        {"type", "Sequence"},
        {"normalizers",
         json::array({{{"type", "Prepend"}, {"prepend", "▁"}},
                      {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}})}};
    json tokenizer = {{"added_tokens", added},
                      {"normalizer", normalizer},
                      {"pre_tokenizer", nullptr},
                      {"model",
                       {{"type", "BPE"},
                        {"unk_token", "<unk>"},
                        {"byte_fallback", true},
                        {"fuse_unk", true},
                        {"vocab", vocab},
                        {"merges", json::array({"▁ a"})}}}};
    if (config.is_null())
      config = {{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"add_bos_token", true}};
    WriteFileAtomic(dir_ + "/tok/tokenizer.json", tokenizer.dump());
    WriteFileAtomic(dir_ + "/tok/tokenizer_config.json", config.dump());
  }

  static std::string Task(const std::string& data, const std::string& model = kModel) {
    return "  - name: t\n    model: " + model + "\n    data: " + data +
           "\n    batch_size: 2\n    optimizer: {type: adamw, lr: 1.0e-4}\n    epochs: 1\n";
  }
  Workload Parse(const std::string& tasks) {
    return ParseWorkload("cluster: cluster.yaml\ntasks:\n" + tasks, "w.yaml", dir_);
  }
  std::string ErrorOf(const std::string& tasks) {
    try {
      Parse(tasks);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  }
  static std::vector<uint32_t> Ids(const std::string& path) {
    std::string bytes = ReadFile(path);
    TokenFileLayout layout = ReadTokenFileLayout(bytes, path);
    std::vector<uint32_t> ids;
    for (uint64_t i = 0; i < layout.count; ++i)
      ids.push_back(layout.Id(bytes, i));
    return ids;
  }
  // The cache's files (entries and anything half-written).
  std::vector<std::string> CacheFiles() const {
    std::vector<std::string> names;
    std::error_code ec;
    if (!fs::is_directory(dir_ + "/cache", ec)) return names;
    for (const auto& e : fs::directory_iterator(dir_ + "/cache"))
      names.push_back(e.path().filename().string());
    return names;
  }

  static inline const std::string kModel =
      "{type: llama, layers: 2, d_model: 32, heads: 2, ffn: 64, vocab: 70001, seq_len: 4}";
  std::string dir_;
};

// Each document is [BOS] ids EOS: BOS <s> = 1, EOS </s> = 2; "ab a" is
// "▁ab▁a" after the normalizers, and BPE's one merge makes it ▁a b ▁a.
TEST_F(TextDataTest, TheTaskTrainsOnTheIdsSaturnTokenizeWrites) {
  WriteFileAtomic(
      dir_ + "/corpus.jsonl",
      "{\"text\": \"ab a\"}\n{\"text\": \"ba\", \"id\": 2}\n\n{\"text\": \"<big>a\"}\n");
  Workload w = Parse(Task("{type: text, path: corpus.jsonl, tokenizer: tok}"));
  const json& data = w.tasks[0].spec["data"];
  EXPECT_EQ(data["type"], "tokens");
  EXPECT_EQ(data["vocab"], 70001);
  EXPECT_EQ(data["seq_len"], 4);
  std::string path = data["path"];
  EXPECT_EQ(fs::path(path).parent_path(), fs::path(dir_ + "/cache"));
  tokenizer::Tokenizer t = tokenizer::Tokenizer::Load(dir_ + "/tok");
  std::vector<uint32_t> want = {1, 262, 261, 262, 2,  // ab a
                                1, 259, 261, 260, 2,  // ba: no merge makes ▁b
                                1};
  std::vector<uint32_t> big = t.Encode("<big>a");  // the added token, then a
  ASSERT_GE(big.size(), 2u);
  EXPECT_EQ(big[0], 70000u);
  want.insert(want.end(), big.begin(), big.end());
  want.push_back(2);
  EXPECT_EQ(Ids(path), want);
  // Byte for byte what `saturn tokenize` writes (uint32 after a header).
  tokenizer::TokenizeOptions o;
  o.inputs = {dir_ + "/corpus.jsonl"};
  o.output = dir_ + "/direct.bin";
  o.progress = false;
  tokenizer::TokenizeFiles(t, o);
  EXPECT_EQ(ReadFile(path), ReadFile(dir_ + "/direct.bin"));
  EXPECT_TRUE(HasTokenFileMagic(ReadFile(path)));
  // 14 or 15 ids, windows of 4: 3 samples, 2 batches of 2.
  EXPECT_EQ(w.tasks[0].steps, 2);

  // Plain text is one document; the record beside the tokens names its
  // sources.
  WriteFileAtomic(dir_ + "/notes.txt", "ab a ab");
  Workload plain = Parse(Task("{type: text, path: notes.txt, tokenizer: tok}"));
  std::string notes = plain.tasks[0].spec["data"]["path"];
  EXPECT_EQ(Ids(notes), (std::vector<uint32_t>{1, 262, 261, 262, 262, 261, 2}));
  json record = json::parse(ReadFile(notes.substr(0, notes.size() - 7) + ".json"));
  EXPECT_EQ(record["text"], fs::absolute(dir_ + "/notes.txt").lexically_normal().string());
  EXPECT_EQ(record["tokenizer"], fs::absolute(dir_ + "/tok").lexically_normal().string());
  EXPECT_EQ(record["tokens"], 7);

  // Held-out text (eval_path) is tokenized alike, into its own entry.
  Workload held = Parse(
      Task("{type: text, path: corpus.jsonl, eval_path: notes.txt, tokenizer: tok}"));
  EXPECT_EQ(held.tasks[0].spec["data"]["path"], path);
  EXPECT_EQ(held.tasks[0].spec["data"]["eval_path"], notes);
}

TEST_F(TextDataTest, ATextIsTokenizedOncePerContent) {
  WriteFileAtomic(dir_ + "/corpus.txt", "ab a ab a ba");
  const std::string task = Task("{type: text, path: corpus.txt, tokenizer: tok}");
  ::testing::internal::CaptureStderr();
  // A sweep's two variants and a second task of the same text: one tokenization.
  std::string other = task;
  other.replace(other.find("name: t"), 7, "name: u");
  Workload w = Parse(task + "    sweep: {optimizer.lr: [1.0e-4, 1.0e-3]}\n" + other);
  std::string said = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(w.tasks.size(), 3u);
  EXPECT_EQ(w.tasks[0].spec["data"], w.tasks[2].spec["data"]);
  size_t first = said.find("saturn: tokenizing ");
  EXPECT_NE(first, std::string::npos) << said;
  EXPECT_EQ(said.find("saturn: tokenizing ", first + 1), std::string::npos) << said;

  // Another process (here: the text touched, so nothing in memory matches)
  // finds the entry on disk and leaves it as it is.
  std::string path = w.tasks[0].spec["data"]["path"];
  auto old = fs::file_time_type::clock::now() - std::chrono::hours(24);
  fs::last_write_time(path, old);
  fs::last_write_time(dir_ + "/corpus.txt", fs::file_time_type::clock::now());
  ::testing::internal::CaptureStderr();
  Workload again = Parse(task);
  said = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(said.find("tokenizing"), std::string::npos) << said;
  EXPECT_EQ(again.tasks[0].spec["data"]["path"], path);
  EXPECT_EQ(fs::last_write_time(path), old);
  EXPECT_EQ(CacheFiles().size(), 2u);  // KEY.tokens and KEY.json

  // Changed text, or a changed tokenizer config: another entry.
  WriteFileAtomic(dir_ + "/corpus.txt", "ba ba");
  std::string changed = Parse(task).tasks[0].spec["data"]["path"];
  EXPECT_NE(changed, path);
  EXPECT_EQ(Ids(changed), (std::vector<uint32_t>{1, 259, 261, 260, 259, 261, 260, 2}));
  WriteTokenizer({{"bos_token", "<s>"}, {"eos_token", "</s>"}, {"add_bos_token", false}});
  std::string no_bos = Parse(task).tasks[0].spec["data"]["path"];
  EXPECT_NE(no_bos, changed);
  EXPECT_EQ(Ids(no_bos), (std::vector<uint32_t>{259, 261, 260, 259, 261, 260, 2}));
  EXPECT_EQ(CacheFiles().size(), 6u);
}

TEST_F(TextDataTest, BadInputIsOneErrorAndLeavesNoEntry) {
  WriteFileAtomic(dir_ + "/corpus.jsonl", "{\"text\": \"ab\"}\n{\"body\": \"a\"}\n");
  EXPECT_THAT(ErrorOf(Task("{type: text, path: corpus.jsonl, tokenizer: tok}")),
              HasSubstr(dir_ + "/corpus.jsonl:2: text: missing (each line needs the text in "
                               "\"text\""));
  EXPECT_TRUE(CacheFiles().empty());
  EXPECT_THAT(ErrorOf(Task("{type: text, path: corpus.jsonl, tokenizer: tok, field: body}")),
              HasSubstr(dir_ + "/corpus.jsonl:1: body: missing"));
  EXPECT_TRUE(CacheFiles().empty());

  WriteFileAtomic(dir_ + "/corpus.txt", "ab a ab a");
  EXPECT_THAT(
      ErrorOf(Task("{type: text, path: corpus.txt, tokenizer: .}")),
      HasSubstr("w.yaml:5: tasks[0].data.tokenizer: " +
                fs::absolute(dir_).lexically_normal().string() + "/ has no tokenizer.json"));
  EXPECT_THAT(ErrorOf(Task("{type: text, path: corpus.txt, tokenizer: nowhere}")),
              HasSubstr("tasks[0].data.tokenizer: no such folder: "));
  EXPECT_THAT(ErrorOf(Task("{type: text, path: corpus.txt, tokenizer: tok, field: body}")),
              HasSubstr("tasks[0].data.field: names the text's field in JSON Lines"));
  EXPECT_THAT(ErrorOf(Task("{type: text, path: corpus.txt, tokenizer: tok, eos: '<eos>'}")),
              HasSubstr("tasks[0].data.eos: '<eos>' is not a token of "));
  const std::string small =
      "{type: llama, layers: 2, d_model: 32, heads: 2, ffn: 64, vocab: 300, seq_len: 4}";
  EXPECT_THAT(ErrorOf(Task("{type: text, path: corpus.txt, tokenizer: tok}", small)),
              HasSubstr("tasks[0].data.tokenizer: its vocabulary has 70001 ids, more than the "
                        "model's vocab 300"));
  const std::string long_windows =
      "{type: llama, layers: 2, d_model: 32, heads: 2, ffn: 64, vocab: 70001, seq_len: 64}";
  EXPECT_THAT(ErrorOf(Task("{type: text, path: corpus.txt, tokenizer: tok}", long_windows)),
              HasSubstr("tasks[0].data.path: makes 8 tokens with this tokenizer; the model's "
                        "seq_len 64 needs at least 66"));
  WriteTokenizer({{"bos_token", "<s>"}, {"add_bos_token", true}});
  EXPECT_THAT(ErrorOf(Task("{type: text, path: corpus.txt, tokenizer: tok}")),
              HasSubstr("tasks[0].data.tokenizer: names no end-of-document token"));
  EXPECT_EQ(ErrorOf(Task("{type: text, path: corpus.txt, tokenizer: tok, eos: '</s>'}")),
            "no error");
  // Not half-written: only whole entries are in the cache, those of the two
  // tokenizations that went through (seq_len 64's, refused after, and the
  // last one).
  for (const std::string& name : CacheFiles()) {
    EXPECT_TRUE(name.ends_with(".tokens") || name.ends_with(".json")) << name;
  }
  EXPECT_EQ(CacheFiles().size(), 4u);
}

TEST_F(TextDataTest, WhichModelsTakeATokenizer) {
  WriteFileAtomic(dir_ + "/corpus.txt", std::string(64, 'a'));
  EXPECT_THAT(ErrorOf(Task("{type: text, path: corpus.txt, tokenizer: tok}",
                           "{type: gpt, layers: 1, d_model: 8, heads: 2, seq_len: 8}")),
              HasSubstr("tasks[0].data.tokenizer: a tokenizer makes token ids for gpt2 and llama "
                        "models; gpt reads text as bytes (leave tokenizer out)"));
  EXPECT_THAT(ErrorOf(Task("{type: text, path: corpus.txt}")),
              HasSubstr("tasks[0].data.type: text data without a tokenizer is bytes, for the "
                        "byte-level gpt; llama takes token ids: add tokenizer: DIR"));
  // gpt2's vocab must hold the tokenizer's.
  EXPECT_THAT(ErrorOf(Task("{type: text, path: corpus.txt, tokenizer: tok}",
                           "{type: gpt2, layers: 1, d_model: 8, heads: 2, positions: 8}")),
              HasSubstr("its vocabulary has 70001 ids, more than the model's vocab 50257"));
  Workload w = Parse(Task("{type: text, path: corpus.txt, tokenizer: tok}",
                          "{type: gpt2, layers: 1, d_model: 8, heads: 2, positions: 8, "
                          "vocab: 70001}"));
  EXPECT_EQ(w.tasks[0].spec["data"]["seq_len"], 8);
  EXPECT_EQ(w.tasks[0].spec["data"]["type"], "tokens");
}

TEST(TokenCache, LivesInTheUsersCacheUnlessTold) {
  const char* keep = std::getenv("XDG_CACHE_HOME");
  std::string saved = keep ? keep : "";
  unsetenv("SATURN_TOKEN_CACHE");
  setenv("XDG_CACHE_HOME", "/x/cache", 1);
  EXPECT_EQ(TokenCacheDir(), "/x/cache/saturn/tokens");
  setenv("SATURN_TOKEN_CACHE", "/shared/tokens", 1);
  EXPECT_EQ(TokenCacheDir(), "/shared/tokens");
  unsetenv("SATURN_TOKEN_CACHE");
  if (keep) {
    setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  } else {
    unsetenv("XDG_CACHE_HOME");
  }
}

}  // namespace
}  // namespace saturn
