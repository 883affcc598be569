// saturn tokenize: text files and JSON Lines to a token file for `tokens`
// data, with a model's Hugging Face tokenizer (docs/tokenize.md).
//
//   saturn tokenize --tokenizer models/llama-3-8b corpus.jsonl notes.txt --output train.bin
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "common/format.h"
#include "tokenizer/tokenize_files.h"
#include "tokenizer/tokenizer.h"

namespace saturn {
namespace {

struct TokenizeCommandOptions {
  std::string tokenizer;
  std::vector<std::string> inputs;
  std::string output;
  std::string field = "text";
  std::string eos;
  int threads = 0;
  bool quiet = false;
};

std::string Grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

int RunTokenize(const TokenizeCommandOptions& o) {
  tokenizer::Tokenizer t = tokenizer::Tokenizer::Load(o.tokenizer);
  tokenizer::TokenizeOptions options;
  options.inputs = o.inputs;
  options.output = o.output;
  options.field = o.field;
  options.threads = o.threads;
  options.progress = !o.quiet;
  if (!o.eos.empty()) options.eos = o.eos;
  tokenizer::TokenizeResult r = tokenizer::TokenizeFiles(t, options);
  double mb = static_cast<double>(r.bytes) / 1e6;
  std::string skipped =
      r.empty > 0 ? " (" + Plural(static_cast<long>(r.empty), "empty document") + " skipped)" : "";
  std::printf(
      "%s: %s%s, %s tokens from %s bytes of text in %s (%s MB/s, %s); %s ids%s, "
      "vocabulary %s, %s\n",
      o.output.c_str(),
      (Grouped(r.documents) + (r.documents == 1 ? " document" : " documents")).c_str(),
      skipped.c_str(), Grouped(r.tokens).c_str(), Grouped(r.bytes).c_str(),
      FormatDuration(r.seconds).c_str(), FormatFixed(r.seconds > 0 ? mb / r.seconds : 0, 1).c_str(),
      Plural(r.threads, "thread").c_str(), r.id_bytes == 2 ? "uint16" : "uint32",
      r.header ? " after a header" : "", Grouped(r.vocab).c_str(), t.Kind().c_str());
  return 0;
}

}  // namespace

void AddTokenizeCommand(CLI::App& app, int* status) {
  auto o = std::make_shared<TokenizeCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize", "Tokenize text files and JSON Lines into a token file for tokens data");
  cmd->add_option("--tokenizer", o->tokenizer,
                  "A model's folder with Hugging Face's tokenizer.json (and tokenizer_config.json)")
      ->required();
  cmd->add_option("inputs", o->inputs,
                  "Text files (one document each) and JSON Lines (*.jsonl, one document a line)")
      ->required();
  cmd->add_option("--output,-o", o->output, "The token file to write")->required();
  cmd->add_option("--field", o->field, "The text's field in JSON Lines")->capture_default_str();
  cmd->add_option("--eos", o->eos,
                  "The end-of-document token (default: the tokenizer's eos_token)");
  cmd->add_option("--threads", o->threads, "Threads (default: every core)")
      ->check(CLI::Range(1, 4096));
  cmd->add_flag("--quiet,-q", o->quiet, "No progress line");
  cmd->callback([o, status] { *status = RunTokenize(*o); });
}

}  // namespace saturn
