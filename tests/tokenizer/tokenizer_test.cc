// The tokenizer's parts on small cases worked out by hand from Hugging
// Face's documented semantics (its ids on real text are compared with Hugging
// Face's own JavaScript implementation in reference_test.sh), and the
// messages for what it does not support.
#include "tokenizer/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "tokenizer/pipeline.h"
#include "tokenizer/regex.h"

namespace saturn::tokenizer {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<std::string> Matches(const std::string& pattern, const std::string& text) {
  Regex re(pattern, "test", "pattern");
  std::vector<Span> spans;
  re.FindAll(text, &spans);
  std::vector<std::string> out;
  for (const Span& s : spans)
    out.push_back(text.substr(s.begin, s.end - s.begin));
  return out;
}

const std::string kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const std::string kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

TEST(Regex, Gpt2PatternSplitsWordsNumbersAndSpaces) {
  EXPECT_THAT(Matches(kGpt2, "Hello world's 12345  café\n\n日本"),
              ElementsAre("Hello", " world", "'s", " 12345", " ", " café", "\n", "\n", "日本"));
}

TEST(Regex, Llama3PatternHasCaseInsensitiveContractionsAndThreeDigitNumbers) {
  EXPECT_THAT(Matches(kLlama3, "I'LL see 1234567 THEY'RE"),
              ElementsAre("I", "'LL", " see", " ", "123", "456", "7", " THEY", "'RE"));
  // \s+(?!\S): the last space of a run goes with the next word.
  EXPECT_THAT(Matches(kLlama3, "a   b\t\n"), ElementsAre("a", "  ", " b", "\t\n"));
}

TEST(Regex, WhiteSpaceIsUnicodesWhiteSpace) {
  // Oniguruma's \s, as Hugging Face's: U+0085 and U+3000 are spaces, U+200B
  // (zero width space) and U+FEFF are not.
  EXPECT_THAT(Matches(R"(\s+)", "a\u0085b\u3000c\u200bd\ufeffe"), ElementsAre("\u0085", "\u3000"));
  EXPECT_THAT(Matches(R"(\p{L}+|\p{N}+)", "Ωμέγα ٣٤ 𝔘𝔫𝔦"), ElementsAre("Ωμέγα", "٣٤", "𝔘𝔫𝔦"));
}

TEST(Regex, APatternThatDoesNotCompileNamesTheField) {
  try {
    Regex("(unclosed", "tokenizer.json", "pre_tokenizer.pattern.Regex");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tokenizer.json: pre_tokenizer.pattern.Regex"));
    EXPECT_THAT(e.what(), HasSubstr("does not compile"));
  }
}

// Hugging Face's documented example of the five behaviors: "the-final--countdown"
// split on '-'.
TEST(ApplyBehavior, TheFiveBehaviorsOfHuggingFacesDocumentation) {
  std::string text = "the-final--countdown";
  std::vector<Part> parts;
  size_t prev = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '-') continue;
    if (prev < i) parts.push_back({{prev, i}, false});
    parts.push_back({{i, i + 1}, true});
    prev = i + 1;
  }
  parts.push_back({{prev, text.size()}, false});
  auto words = [&](Behavior b) {
    std::vector<std::string> out;
    for (const Span& s : ApplyBehavior(parts, b))
      out.push_back(text.substr(s.begin, s.end - s.begin));
    return out;
  };
  EXPECT_THAT(words(Behavior::kRemoved), ElementsAre("the", "final", "countdown"));
  EXPECT_THAT(words(Behavior::kIsolated), ElementsAre("the", "-", "final", "-", "-", "countdown"));
  EXPECT_THAT(words(Behavior::kMergedWithPrevious),
              ElementsAre("the-", "final-", "-", "countdown"));
  EXPECT_THAT(words(Behavior::kMergedWithNext), ElementsAre("the", "-final", "-", "-countdown"));
  EXPECT_THAT(words(Behavior::kContiguous), ElementsAre("the", "-", "final", "--", "countdown"));
}

// A character-level BPE over `chars` (and the given merges and extra tokens),
// ids in order of listing.
json Model(const std::vector<std::string>& tokens, const std::vector<std::string>& merges) {
  json vocab = json::object();
  for (size_t i = 0; i < tokens.size(); ++i)
    vocab[tokens[i]] = i;
  return {{"type", "BPE"},     {"dropout", nullptr},     {"unk_token", nullptr},
          {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", vocab},
          {"merges", merges}};
}

json TokenizerJson(json model, json pre = nullptr, json normalizer = nullptr,
                   json added = json::array()) {
  return {{"version", "1.0"},     {"added_tokens", added},     {"normalizer", normalizer},
          {"pre_tokenizer", pre}, {"post_processor", nullptr}, {"decoder", nullptr},
          {"model", model}};
}

Tokenizer Make(const json& j, const json& config = nullptr) {
  return Tokenizer::Parse(j.dump(), "tokenizer.json", config.is_null() ? "" : config.dump(),
                          "tokenizer_config.json");
}

std::string ErrorOf(const json& j, const json& config = nullptr) {
  try {
    Make(j, config);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Tokenizer, MergesByRankThenLeftmost) {
  // "aaa": the pair a a merges leftmost first; "abc" takes b c (rank 0) before a b.
  Tokenizer t =
      Make(TokenizerJson(Model({"a", "b", "c", "aa", "bc", "ab"}, {"b c", "a a", "a b"})));
  EXPECT_THAT(t.Encode("aaa"), ElementsAre(3, 0));
  EXPECT_THAT(t.Encode("abc"), ElementsAre(0, 4));
  EXPECT_EQ(t.VocabSize(), 6u);
}

TEST(Tokenizer, IgnoreMergesTakesAWordInTheVocabularyWhole) {
  json model = Model({"a", "b", "c", "bc", "abc"}, {"b c"});
  EXPECT_THAT(Make(TokenizerJson(model)).Encode("abc"), ElementsAre(0, 3));
  model["ignore_merges"] = true;
  EXPECT_THAT(Make(TokenizerJson(model)).Encode("abc"), ElementsAre(4));
}

TEST(Tokenizer, MergesMayBePairs) {
  // Pairs can hold tokens with spaces, which "a b" strings cannot.
  json model = Model({"a", " ", "b", " b", "a b"}, {});
  model["merges"] = json::array({json::array({" ", "b"}), json::array({"a", " b"})});
  EXPECT_THAT(Make(TokenizerJson(model)).Encode("a b"), ElementsAre(4));
}

TEST(Tokenizer, ByteFallbackAndFusedUnknowns) {
  std::vector<std::string> tokens = {"<unk>", "a"};
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    tokens.push_back(name);
  }
  json model = Model(tokens, {});
  model["unk_token"] = "<unk>";
  model["byte_fallback"] = true;
  // é is C3 A9: its two byte tokens.
  EXPECT_THAT(Make(TokenizerJson(model)).Encode("aé"), ElementsAre(1, 2 + 0xc3, 2 + 0xa9));
  model["byte_fallback"] = false;
  EXPECT_THAT(Make(TokenizerJson(model)).Encode("aééa"), ElementsAre(1, 0, 0, 1));
  model["fuse_unk"] = true;
  EXPECT_THAT(Make(TokenizerJson(model)).Encode("aééa"), ElementsAre(1, 0, 1));
}

TEST(Tokenizer, MetaspaceSplitsBeforeEachReplacementWhenAsked) {
  // ▁a▁▁b: unsplit, ▁ ▁ merges first; split, the words are ▁a, ▁ and ▁b.
  json model = Model({"▁", "a", "b", "▁a", "▁b", "▁▁"}, {"▁ ▁", "▁ a", "▁ b"});
  json pre = {
      {"type", "Metaspace"}, {"replacement", "▁"}, {"prepend_scheme", "always"}, {"split", false}};
  EXPECT_THAT(Make(TokenizerJson(model, pre)).Encode("a  b"), ElementsAre(3, 5, 2));
  pre["split"] = true;
  EXPECT_THAT(Make(TokenizerJson(model, pre)).Encode("a  b"), ElementsAre(3, 0, 4));
  pre["prepend_scheme"] = "never";
  EXPECT_THAT(Make(TokenizerJson(model, pre)).Encode("a b"), ElementsAre(1, 4));
}

TEST(Tokenizer, SplitInvertedKeepsTheMatches) {
  // invert: the pattern matches the pieces, the text between them is the
  // delimiter; Removed drops it ("ab12cd3" -> "12", "3").
  json model = Model({"a", "b", "c", "d", "1", "2", "3", "12"}, {"1 2"});
  json pre = {{"type", "Split"},
              {"pattern", {{"Regex", "\\d+"}}},
              {"behavior", "Removed"},
              {"invert", true}};
  EXPECT_THAT(Make(TokenizerJson(model, pre)).Encode("ab12cd3"), ElementsAre(7, 6));
  pre["invert"] = false;
  EXPECT_THAT(Make(TokenizerJson(model, pre)).Encode("ab12cd3"), ElementsAre(0, 1, 2, 3));
  // A literal pattern, MergedWithPrevious: "a1b1" -> "a1", "b1" (unsplit,
  // the merge 1 b, ranked first, would win).
  json merged = Model({"a", "b", "1", "a1", "b1", "1b"}, {"1 b", "a 1", "b 1"});
  EXPECT_THAT(Make(TokenizerJson(merged)).Encode("a1b1"), ElementsAre(0, 5, 2));
  pre = {{"type", "Split"}, {"pattern", {{"String", "1"}}}, {"behavior", "MergedWithPrevious"}};
  EXPECT_THAT(Make(TokenizerJson(merged, pre)).Encode("a1b1"), ElementsAre(3, 4));
}

TEST(Tokenizer, DigitsIndividuallyOrTogether) {
  json model = Model({"a", "1", "2", "12"}, {"1 2"});
  json pre = {{"type", "Digits"}, {"individual_digits", true}};
  EXPECT_THAT(Make(TokenizerJson(model, pre)).Encode("a12"), ElementsAre(0, 1, 2));
  pre["individual_digits"] = false;
  EXPECT_THAT(Make(TokenizerJson(model, pre)).Encode("a12"), ElementsAre(0, 3));
}

json Added(int id, const std::string& content, json extra = json::object()) {
  json a = {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
            {"rstrip", false}, {"normalized", false}, {"special", true}};
  a.update(extra);
  return a;
}

TEST(Tokenizer, AddedTokensLongestFirstSingleWordAndStrip) {
  json model = Model({"a", "b", " ", "x"}, {});
  json added = json::array({Added(4, "ab"), Added(5, "abab")});
  Tokenizer t = Make(TokenizerJson(model, nullptr, nullptr, added));
  EXPECT_THAT(t.Encode("ababab"), ElementsAre(5, 4));
  EXPECT_EQ(t.VocabSize(), 6u);

  // single_word: not inside a word ("xab" keeps its a and b).
  added = json::array({Added(4, "ab", {{"single_word", true}})});
  t = Make(TokenizerJson(model, nullptr, nullptr, added));
  EXPECT_THAT(t.Encode("ab xab ab"), ElementsAre(4, 2, 3, 0, 1, 2, 4));

  // lstrip and rstrip take the spaces beside the token.
  added = json::array({Added(4, "ab", {{"lstrip", true}, {"rstrip", true}})});
  t = Make(TokenizerJson(model, nullptr, nullptr, added));
  EXPECT_THAT(t.Encode("x  ab  x"), ElementsAre(3, 4, 3));
}

TEST(Tokenizer, NormalizedAddedTokensAreFoundInTheNormalizedText) {
  // Prepend("▁") + Replace(" ", "▁") (Llama 2): a normalized added token is
  // matched in the normalized text.
  json model = Model({"▁", "a", "b"}, {});
  json normalizer = {
      {"type", "Sequence"},
      {"normalizers",
       json::array({{{"type", "Prepend"}, {"prepend", "▁"}},
                    {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "▁"}}})}};
  json added = json::array({Added(3, "a b", {{"normalized", true}, {"special", false}})});
  Tokenizer t = Make(TokenizerJson(model, nullptr, normalizer, added));
  // Its pattern is its normalized form, ▁a▁b.
  EXPECT_THAT(t.Encode("a b"), ElementsAre(3));
  EXPECT_THAT(t.Encode("b a b"), ElementsAre(0, 2, 3));       // ▁b▁a▁b
  EXPECT_THAT(t.Encode("ba b"), ElementsAre(0, 2, 1, 0, 2));  // ▁ba▁b: no ▁a▁b in it
}

TEST(Tokenizer, BosAndEosFromTheConfigOrThePostProcessor) {
  json model = Model({"a", "<s>", "</s>", "<|begin|>"}, {});
  json added = json::array({Added(1, "<s>"), Added(2, "</s>"), Added(3, "<|begin|>")});
  json j = TokenizerJson(model, nullptr, nullptr, added);
  Tokenizer t = Make(j, {{"bos_token", {{"content", "<s>"}, {"lstrip", false}}},
                         {"eos_token", "</s>"},
                         {"add_bos_token", true}});
  EXPECT_EQ(t.bos_id(), 1u);
  EXPECT_EQ(t.eos_id(), 2u);
  EXPECT_TRUE(t.add_bos());

  // No add_bos_token: the template of the post-processor says (Llama 3).
  j["post_processor"] = {
      {"type", "Sequence"},
      {"processors",
       json::array(
           {{{"type", "ByteLevel"}},
            {{"type", "TemplateProcessing"},
             {"single", json::array({{{"SpecialToken", {{"id", "<|begin|>"}, {"type_id", 0}}}},
                                     {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}}})}};
  t = Make(j, {{"bos_token", "<|begin|>"}, {"eos_token", "</s>"}});
  EXPECT_TRUE(t.add_bos());
  EXPECT_EQ(t.bos_id(), 3u);
  t = Make(j, {{"eos_token", "</s>"}, {"add_bos_token", false}});
  EXPECT_FALSE(t.add_bos());

  EXPECT_THAT(
      ErrorOf(j, {{"eos_token", "<nope>"}}),
      HasSubstr("tokenizer_config.json: eos_token: '<nope>' is not a token of tokenizer.json"));
}

TEST(Tokenizer, AnEncoderGivesTheSameIdsAgain) {
  json model = Model({"a", "b", "ab", " "}, {"a b"});
  json pre = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  // A byte-level vocabulary: a, b, ab and Ġ (the space's symbol).
  model["vocab"] = {{"a", 0}, {"b", 1}, {"ab", 2}, {"Ġ", 3}, {"Ġab", 4}};
  model["merges"] = {"a b", "Ġ ab"};
  Tokenizer t = Make(TokenizerJson(model, pre));
  Encoder encoder(t);
  for (int round = 0; round < 3; ++round) {
    std::vector<uint32_t> ids;
    encoder.Encode("ab ab ba", &ids);
    EXPECT_THAT(ids, ElementsAre(2, 4, 3, 1, 0));
  }
}

TEST(Tokenizer, TextThatIsNotUtf8IsAnInputError) {
  Tokenizer t = Make(TokenizerJson(Model({"a"}, {})));
  EXPECT_THROW(t.Encode("a\xff"), InputError);
}

TEST(Tokenizer, UnsupportedKindsNameTheFileAndField) {
  json wordpiece = TokenizerJson({{"type", "WordPiece"}, {"vocab", {{"a", 0}}}});
  EXPECT_THAT(ErrorOf(wordpiece),
              HasSubstr("tokenizer.json: model.type: the model 'WordPiece' is not supported"));
  json unigram = TokenizerJson({{"type", "Unigram"}, {"vocab", json::array()}});
  EXPECT_THAT(ErrorOf(unigram), HasSubstr("model.type: the model 'Unigram'"));

  json model = Model({"a"}, {});
  json pre = {{"type", "Sequence"},
              {"pretokenizers", json::array({{{"type", "Digits"}}, {{"type", "Whitespace"}}})}};
  EXPECT_THAT(ErrorOf(TokenizerJson(model, pre)),
              HasSubstr("tokenizer.json: pre_tokenizer.pretokenizers[1].type: the pre-tokenizer "
                        "'Whitespace' is not supported"));
  json normalizer = {{"type", "Sequence"}, {"normalizers", json::array({{{"type", "Lowercase"}}})}};
  EXPECT_THAT(
      ErrorOf(TokenizerJson(model, nullptr, normalizer)),
      HasSubstr("normalizer.normalizers[0].type: the normalizer 'Lowercase' is not supported"));
  json split = {{"type", "Split"}, {"pattern", {{"Regex", "a"}}}, {"behavior", "Isolate"}};
  EXPECT_THAT(ErrorOf(TokenizerJson(model, split)),
              HasSubstr("pre_tokenizer.behavior: unknown behavior 'Isolate'"));
  split = {{"type", "Split"}, {"pattern", {{"Regex", "(a"}}}, {"behavior", "Isolated"}};
  EXPECT_THAT(ErrorOf(TokenizerJson(model, split)), HasSubstr("pre_tokenizer.pattern.Regex"));
}

TEST(Tokenizer, MalformedModelsNameTheField) {
  EXPECT_THAT(
      ErrorOf(TokenizerJson(Model({"a", "b", "ab"}, {"a b", "a  b"}))),
      HasSubstr("tokenizer.json: model.merges[1]: expected two tokens separated by one space"));
  EXPECT_THAT(ErrorOf(TokenizerJson(Model({"a", "b"}, {"a b"}))),
              HasSubstr("model.merges[0]: the merged token 'ab' is not in model.vocab"));
  EXPECT_THAT(ErrorOf(TokenizerJson(Model({"a", "b"}, {"a c"}))),
              HasSubstr("model.merges[0]: 'c' is not in model.vocab"));
  json model = Model({"a"}, {});
  model["dropout"] = 0.1;
  EXPECT_THAT(ErrorOf(TokenizerJson(model)), HasSubstr("model.dropout"));
  model = Model({"a"}, {});
  model["vocab"]["b"] = -1;
  EXPECT_THAT(ErrorOf(TokenizerJson(model)), HasSubstr("model.vocab['b']"));
  try {
    Tokenizer::Parse("{\"model\": ", "tokenizer.json");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tokenizer.json: invalid JSON"));
  }
}

TEST(Tokenizer, LoadNeedsAFolderWithTokenizerJson) {
  try {
    Tokenizer::Load("/nonexistent/model");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/model: is not a folder"));
  }
  try {
    Tokenizer::Load("/");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tokenizer.json: not found"));
  }
}

}  // namespace
}  // namespace saturn::tokenizer
