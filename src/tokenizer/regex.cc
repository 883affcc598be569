#include "tokenizer/regex.h"

#include <oniguruma.h>

#include <mutex>
#include <stdexcept>

#include "common/error.h"

namespace saturn::tokenizer {
namespace {

void InitializeOniguruma() {
  static std::once_flag once;
  std::call_once(once, [] {
    OnigEncoding encodings[] = {ONIG_ENCODING_UTF8};
    onig_initialize(encodings, 1);
  });
}

// One match region per thread, reused by every search on it.
OnigRegion* ThreadRegion() {
  struct Holder {
    OnigRegion* region = onig_region_new();
    ~Holder() { onig_region_free(region, 1); }
  };
  thread_local Holder holder;
  return holder.region;
}

size_t Utf8Length(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xe0) return 2;
  if (lead < 0xf0) return 3;
  return 4;
}

}  // namespace

Regex::Regex(std::string_view pattern, std::string_view file, std::string_view field) {
  InitializeOniguruma();
  OnigErrorInfo info;
  regex_t* re = nullptr;
  const auto* p = reinterpret_cast<const OnigUChar*>(pattern.data());
  int rc = onig_new(&re, p, p + pattern.size(), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                    ONIG_SYNTAX_ONIGURUMA, &info);
  if (rc != ONIG_NORMAL) {
    OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
    onig_error_code_to_str(message, rc, &info);
    throw InputError(file, 0, field,
                     "the regular expression " + Quote(pattern) +
                         " does not compile: " + reinterpret_cast<const char*>(message));
  }
  regex_ = re;
}

Regex::~Regex() {
  onig_free(static_cast<regex_t*>(regex_));
}

void Regex::FindAll(std::string_view text, std::vector<Span>* out) const {
  auto* re = static_cast<regex_t*>(regex_);
  OnigRegion* region = ThreadRegion();
  const auto* begin = reinterpret_cast<const OnigUChar*>(text.data());
  const auto* end = begin + text.size();
  size_t at = 0;
  while (at < text.size()) {
    int rc = onig_search(re, begin, end, begin + at, end, region, ONIG_OPTION_NONE);
    if (rc == ONIG_MISMATCH) return;
    if (rc < 0) {
      OnigUChar message[ONIG_MAX_ERROR_MESSAGE_LEN];
      onig_error_code_to_str(message, rc);
      throw std::runtime_error(std::string("regular expression search failed: ") +
                               reinterpret_cast<const char*>(message));
    }
    size_t b = static_cast<size_t>(region->beg[0]), e = static_cast<size_t>(region->end[0]);
    if (e > b) {
      out->push_back({b, e});
      at = e;
    } else {
      if (b >= text.size()) return;
      at = b + Utf8Length(static_cast<unsigned char>(text[b]));
    }
  }
}

long Regex::MatchAt(std::string_view text, size_t at) const {
  auto* re = static_cast<regex_t*>(regex_);
  const auto* begin = reinterpret_cast<const OnigUChar*>(text.data());
  int rc = onig_match(re, begin, begin + text.size(), begin + at, ThreadRegion(), ONIG_OPTION_NONE);
  return rc >= 0 ? rc : -1;
}

}  // namespace saturn::tokenizer
