// TokenizeFiles, behind `saturn tokenize`: documents from text files and JSON
// Lines, [BOS] ids EOS each, in order whatever the thread count, written as a
// token file; bad input is one InputError naming the file and line, and
// leaves nothing behind.
#include "tokenizer/tokenize_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "tokenizer/token_file.h"

namespace saturn::tokenizer {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class TokenizeFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() /
            ("saturn-tokenize-" + std::to_string(getpid()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name()))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/tok");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A SentencePiece-style tokenizer (Llama 2's set-up) over a, b, c, ▁ and
  // byte fallback; `extra` added tokens; BOS per document.
  Tokenizer Write(json extra_added = json::array(), json config = nullptr) {
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
    for (auto [id, content] : {std::pair{0, "<unk>"}, {1, "<s>"}, {2, "</s>"}}) {
      added.push_back({{"id", id},
                       {"content", content},
                       {"special", true},
                       {"normalized", false},
                       {"lstrip", false},
                       {"rstrip", false},
                       {"single_word", false}});
    }
    for (const json& a : extra_added)
      added.push_back(a);
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
    return Tokenizer::Load(dir_ + "/tok");
  }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }

  TokenizeOptions Options(std::vector<std::string> inputs, int threads = 1) const {
    TokenizeOptions o;
    for (const std::string& in : inputs)
      o.inputs.push_back(Path(in));
    o.output = Path("out.bin");
    o.threads = threads;
    o.progress = false;
    return o;
  }

  std::vector<uint32_t> ReadIds(const std::string& path, TokenFileLayout* layout = nullptr) const {
    std::string bytes = ReadFile(path);
    TokenFileLayout l = ReadTokenFileLayout(bytes, path);
    std::vector<uint32_t> ids;
    for (uint64_t i = 0; i < l.count; ++i)
      ids.push_back(l.Id(bytes, i));
    if (layout) *layout = l;
    return ids;
  }

  // Only out.bin's absence: no temporary files left either.
  bool NothingWritten() const {
    for (const auto& entry : fs::directory_iterator(dir_)) {
      if (entry.path().filename().string().starts_with("out.bin")) return false;
    }
    return true;
  }

  std::string dir_;
};

TEST_F(TokenizeFilesTest, DocumentsInOrderWithBosAndEos) {
  Tokenizer t = Write();
  WriteFileAtomic(Path("a.jsonl"),
                  "{\"text\": \"ab\", \"id\": 1}\n\n{\"text\": \"\"}\r\n{\"text\": \"a é\"}\n");
  WriteFileAtomic(Path("b.txt"),
                  "\xef\xbb\xbf"
                  "ba\n");  // a byte-order mark, dropped
  TokenizeResult r = TokenizeFiles(t, Options({"a.jsonl", "b.txt"}));
  EXPECT_EQ(r.documents, 3u);
  EXPECT_EQ(r.empty, 1u);
  EXPECT_EQ(r.id_bytes, 2);
  EXPECT_FALSE(r.header);
  std::vector<uint32_t> want;
  for (std::string doc : {"ab", "a é", "ba\n"}) {
    want.push_back(1);
    for (uint32_t id : t.Encode(doc))
      want.push_back(id);
    want.push_back(2);
  }
  EXPECT_EQ(ReadIds(Path("out.bin")), want);
  EXPECT_EQ(r.tokens, want.size());
  // ▁a b, ▁a ▁ é's two bytes, ▁ b a \n's byte.
  EXPECT_THAT(want, ElementsAre(1, 262, 261, 2, 1, 262, 259, 3 + 0xc3, 3 + 0xa9, 2, 1, 259, 261,
                                260, 3 + 0x0a, 2));
}

TEST_F(TokenizeFilesTest, AnyThreadCountWritesTheSameFile) {
  Tokenizer t = Write();
  std::string jsonl;
  for (int i = 0; i < 500; ++i)
    jsonl +=
        json({{"body", std::string(i % 17, 'a') + " b ab é " + std::to_string(i)}}).dump() + "\n";
  WriteFileAtomic(Path("docs.jsonl"), jsonl);
  TokenizeOptions o = Options({"docs.jsonl"}, 1);
  o.field = "body";
  TokenizeFiles(t, o);
  std::string one = ReadFile(Path("out.bin"));
  for (int threads : {2, 3, 7}) {
    o.threads = threads;
    TokenizeResult r = TokenizeFiles(t, o);
    EXPECT_EQ(r.documents, 500u);
    EXPECT_EQ(ReadFile(Path("out.bin")), one) << threads << " threads";
  }
}

TEST_F(TokenizeFilesTest, ALargeVocabularyWritesUint32AfterAHeader) {
  json big = json::array({{{"id", 70000}, {"content", "<big>"}, {"special", true}}});
  Tokenizer t = Write(big);
  EXPECT_EQ(t.VocabSize(), 70001u);
  WriteFileAtomic(Path("a.txt"), "a<big>b");
  TokenizeResult r = TokenizeFiles(t, Options({"a.txt"}));
  EXPECT_EQ(r.id_bytes, 4);
  EXPECT_TRUE(r.header);
  TokenFileLayout layout;
  EXPECT_THAT(ReadIds(Path("out.bin"), &layout), ElementsAre(1, 262, 70000, 259, 261, 2));
  EXPECT_EQ(layout.vocab, 70001u);
}

TEST_F(TokenizeFilesTest, AUint16FileThatWouldReadAsAHeaderGetsOne) {
  // Ids 65535 16723 21588 19279 first spell the magic: the file gets a
  // header (uint16) and reads back as written.
  json added = json::array();
  for (auto [id, c] : {std::pair{65535, "<w>"}, {16723, "<x>"}, {21588, "<y>"}, {19279, "<z>"}})
    added.push_back({{"id", id}, {"content", c}, {"special", true}});
  Tokenizer t = Write(added, {{"eos_token", "</s>"}, {"add_bos_token", false}});
  WriteFileAtomic(Path("a.txt"), "<w><x><y><z>");
  TokenizeResult r = TokenizeFiles(t, Options({"a.txt"}));
  EXPECT_EQ(r.id_bytes, 2);
  EXPECT_TRUE(r.header);
  EXPECT_THAT(ReadIds(Path("out.bin")), ElementsAre(65535, 16723, 21588, 19279, 2));
}

std::string ErrorOf(const Tokenizer& t, const TokenizeOptions& o) {
  try {
    TokenizeFiles(t, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST_F(TokenizeFilesTest, BadInputNamesTheFileAndLineAndWritesNothing) {
  Tokenizer t = Write();
  WriteFileAtomic(Path("a.jsonl"), "{\"text\": \"ab\"}\n{\"body\": \"ab\"}\n");
  EXPECT_THAT(ErrorOf(t, Options({"a.jsonl"})), HasSubstr("a.jsonl:2: text: missing"));
  EXPECT_TRUE(NothingWritten());
  WriteFileAtomic(Path("b.jsonl"), "{\"text\": \"ab\"}\n\n{\"text\": 3}\n");
  EXPECT_THAT(ErrorOf(t, Options({"b.jsonl"})), HasSubstr("b.jsonl:3: text: expected a string"));
  WriteFileAtomic(Path("c.jsonl"), "{\"text\": \"ab\"\n");
  EXPECT_THAT(ErrorOf(t, Options({"c.jsonl"})), HasSubstr("c.jsonl:1: not a JSON line"));
  WriteFileAtomic(Path("d.txt"), "ok\xff");
  EXPECT_THAT(ErrorOf(t, Options({"d.txt"})), HasSubstr("d.txt: expected UTF-8 text"));
  EXPECT_THAT(ErrorOf(t, Options({"a.txt"})), HasSubstr("a.txt: not found"));
  EXPECT_TRUE(NothingWritten());
  // On many threads, the first bad line in input order is the one named.
  std::string many;
  for (int i = 1; i <= 300; ++i)
    many += (i == 150 || i == 280 ? std::string("{\"body\": 1}") : "{\"text\": \"ab ba\"}") + "\n";
  WriteFileAtomic(Path("many.jsonl"), many);
  EXPECT_THAT(ErrorOf(t, Options({"many.jsonl"}, 4)), HasSubstr("many.jsonl:150: text: missing"));
  EXPECT_TRUE(NothingWritten());
  // A previous output stays as it was.
  WriteFileAtomic(Path("out.bin"), "old!");
  ErrorOf(t, Options({"a.jsonl"}));
  EXPECT_EQ(ReadFile(Path("out.bin")), "old!");
}

TEST_F(TokenizeFilesTest, AnEndOfDocumentTokenIsNeeded) {
  Tokenizer t = Write(json::array(), {{"bos_token", "<s>"}});
  WriteFileAtomic(Path("a.txt"), "ab");
  EXPECT_THAT(ErrorOf(t, Options({"a.txt"})), HasSubstr("--eos TOKEN"));
  TokenizeOptions o = Options({"a.txt"});
  o.eos = "</s>";
  TokenizeFiles(t, o);
  EXPECT_THAT(ReadIds(Path("out.bin")), ElementsAre(262, 261, 2));  // no add_bos_token: no BOS
  o.eos = "<eos>";
  EXPECT_THAT(ErrorOf(t, o), HasSubstr("--eos: '<eos>' is not a token"));
}

}  // namespace
}  // namespace saturn::tokenizer
