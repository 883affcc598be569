// tokenizer_reference_check CASES.json: encodes every text of every case
// with Saturn's tokenizer and compares the ids with those the JavaScript
// reference wrote (tests/tokenizer/reference.mjs). Prints each mismatch (up to
// a few per tokenizer) and exits 1 if there was any.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/fs.h"
#include "tokenizer/tokenizer.h"

namespace {

std::string Escaped(const std::string& text, size_t limit = 160) {
  std::string out = nlohmann::json(text.substr(0, limit)).dump();
  if (text.size() > limit) out += "...";
  return out;
}

std::string Ids(const std::vector<uint32_t>& ids, size_t from, size_t count) {
  std::string out = "[";
  for (size_t i = from; i < ids.size() && i < from + count; ++i)
    out += (i > from ? " " : "") + std::to_string(ids[i]);
  return out + (from + count < ids.size() ? " ...]" : "]");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: tokenizer_reference_check CASES.json\n");
    return 2;
  }
  try {
    nlohmann::json cases = nlohmann::json::parse(saturn::ReadFile(argv[1]));
    int failures = 0;
    size_t texts = 0, ids_total = 0;
    for (const nlohmann::json& c : cases["cases"]) {
      std::string name = c["name"];
      saturn::tokenizer::Tokenizer t = saturn::tokenizer::Tokenizer::Load(c["dir"]);
      // One encoder for every text: its word cache is exercised too.
      saturn::tokenizer::Encoder encoder(t);
      int shown = 0, wrong = 0;
      for (size_t i = 0; i < c["texts"].size(); ++i) {
        std::string text = c["texts"][i];
        std::vector<uint32_t> want = c["ids"][i].get<std::vector<uint32_t>>();
        std::vector<uint32_t> got;
        encoder.Encode(text, &got);
        ++texts;
        ids_total += want.size();
        if (got == want && t.Encode(text) == want) continue;
        ++wrong;
        if (shown++ < 4) {
          size_t at = 0;
          while (at < got.size() && at < want.size() && got[at] == want[at])
            ++at;
          size_t from = at > 3 ? at - 3 : 0;
          std::fprintf(stderr,
                       "%s: text %zu %s\n  first difference at id %zu: got %s, the reference %s\n",
                       name.c_str(), i, Escaped(text).c_str(), at, Ids(got, from, 10).c_str(),
                       Ids(want, from, 10).c_str());
        }
      }
      std::printf("%-22s %-22s %s\n", name.c_str(), t.Kind().c_str(),
                  wrong == 0 ? "all texts as the reference"
                             : (std::to_string(wrong) + " texts differ").c_str());
      failures += wrong;
    }
    std::printf("%zu texts, %zu ids: %s\n", texts, ids_total,
                failures == 0 ? "identical to the JavaScript reference"
                              : (std::to_string(failures) + " differ").c_str());
    return failures == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tokenizer_reference_check: %s\n", e.what());
    return 1;
  }
}
