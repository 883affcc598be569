// How fast does Saturn tokenize? MB of text per second through a Hugging
// Face tokenizer (src/tokenizer), on one thread and on every core (split by
// documents, as `saturn tokenize` does), and end to end through
// TokenizeFiles (JSON Lines read, ids written). Target: >= 5 MB/s a thread.
//
//   tokenizer_bench [--tokenizer DIR] [--mb 64] [--threads N]
//   tokenizer_bench --mb 64 --write-jsonl docs.jsonl   # the text alone, for `saturn tokenize`
//
// DIR is a model's folder with tokenizer.json (default: Llama 3's, which
// the reference test rebuilds from npm's llama3-tokenizer-js in
// build/tests/tokenizer/reference/cases/llama3-real: run
// `ctest --test-dir build -R tokenizer_reference` once). The text is
// generated: documents of 1-8 KB, words drawn from a Zipf law over common
// English words and 50,000 made-up ones (so the word cache meets new words
// as in real text), with capitals, punctuation, numbers, accented words, a
// CJK sentence, emoji and code-like lines now and then.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "tokenizer/tokenize_files.h"
#include "tokenizer/tokenizer.h"

namespace {

using saturn::tokenizer::Encoder;
using saturn::tokenizer::Tokenizer;

const char* const kCommon[] = {
    "the",    "of",    "and",      "to",    "a",      "in",    "is",      "it",   "you",   "that",
    "he",     "was",   "for",      "on",    "are",    "with",  "as",      "I",    "his",   "they",
    "be",     "at",    "one",      "have",  "this",   "from",  "or",      "had",  "by",    "word",
    "but",    "what",  "some",     "we",    "can",    "out",   "other",   "were", "all",   "there",
    "when",   "up",    "use",      "your",  "how",    "said",  "an",      "each", "she",   "which",
    "do",     "their", "time",     "if",    "will",   "way",   "about",   "many", "then",  "them",
    "write",  "would", "like",     "so",    "these",  "her",   "long",    "make", "thing", "see",
    "him",    "two",   "has",      "look",  "more",   "day",   "could",   "go",   "come",  "did",
    "number", "sound", "no",       "most",  "people", "my",    "over",    "know", "water", "than",
    "call",   "first", "who",      "may",   "down",   "side",  "been",    "now",  "find",  "model",
    "data",   "train", "learning", "don't", "it's",   "we're", "they'll", "I've"};
const char* const kAccented[] = {"café",   "naïve", "résumé", "über", "Straße", "señor",
                                 "façade", "Ωμέγα", "Привет", "мир",  "größer", "année"};
const char* const kCjk[] = {"日本語のテキストです。", "中文文本，很好。", "한국어 텍스트입니다.",
                            "東京は晴れ、気温は２５度です。"};
const char* const kEmoji[] = {"😀", "👍🏽", "🎉", "🦙", "❤️", "🇫🇷"};
const char* const kSyllables[] = {"ka", "lo", "mi", "ren", "tu", "sa",  "vel", "dor", "qui",
                                  "an", "ex", "or", "ith", "ul", "zen", "pra", "ost", "ne"};

std::string MadeUpWord(std::mt19937_64& rng) {
  std::string w;
  int n = 2 + static_cast<int>(rng() % 3);
  for (int i = 0; i < n; ++i)
    w += kSyllables[rng() % std::size(kSyllables)];
  return w;
}

std::vector<std::string> GenerateDocuments(size_t bytes, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::string> vocabulary(std::begin(kCommon), std::end(kCommon));
  while (vocabulary.size() < 50'000)
    vocabulary.push_back(MadeUpWord(rng));
  // Zipf weights (s = 1).
  std::vector<double> cumulative(vocabulary.size());
  double sum = 0;
  for (size_t i = 0; i < vocabulary.size(); ++i)
    cumulative[i] = sum += 1.0 / static_cast<double>(i + 1);
  std::uniform_real_distribution<double> uniform(0, sum);
  auto word = [&] {
    size_t i =
        std::lower_bound(cumulative.begin(), cumulative.end(), uniform(rng)) - cumulative.begin();
    return vocabulary[std::min(i, vocabulary.size() - 1)];
  };
  std::vector<std::string> docs;
  size_t total = 0;
  while (total < bytes) {
    size_t size = 1000 + rng() % 7000;
    std::string doc;
    bool sentence_start = true;
    while (doc.size() < size) {
      int r = static_cast<int>(rng() % 1000);
      std::string w;
      if (r < 8) {
        w = kAccented[rng() % std::size(kAccented)];
      } else if (r < 11) {
        w = kCjk[rng() % std::size(kCjk)];
      } else if (r < 13) {
        w = kEmoji[rng() % std::size(kEmoji)];
      } else if (r < 40) {
        w = std::to_string(rng() % (r < 20 ? 100 : 100000));
      } else if (r < 43) {
        w = "\n    return f(x, y) + 1;  // code\n";
      } else {
        w = word();
      }
      if (sentence_start && !w.empty() && w[0] >= 'a' && w[0] <= 'z')
        w[0] = static_cast<char>(w[0] - 32);
      sentence_start = false;
      doc += w;
      int p = static_cast<int>(rng() % 100);
      if (p < 7) {
        doc += ". ";
        sentence_start = true;
      } else if (p < 11) {
        doc += ", ";
      } else if (p < 12) {
        doc += ".\n\n";
        sentence_start = true;
      } else {
        doc += " ";
      }
    }
    total += doc.size();
    docs.push_back(std::move(doc));
  }
  return docs;
}

// CPU seconds of the whole process: on a machine shared with other work,
// MB per CPU-second is what a thread would do with a core to itself.
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

struct Run {
  double seconds, cpu_seconds;
  size_t ids;
};

// Encodes docs on `threads` threads, contiguous runs of documents each.
Run EncodeAll(const Tokenizer& t, const std::vector<std::string>& docs, int threads) {
  std::vector<size_t> counts(threads);
  double cpu = CpuSeconds();
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int k = 0; k < threads; ++k) {
    pool.emplace_back([&, k] {
      Encoder encoder(t);
      std::vector<uint32_t> ids;
      size_t begin = docs.size() * k / threads, end = docs.size() * (k + 1) / threads;
      for (size_t i = begin; i < end; ++i) {
        ids.clear();
        encoder.Encode(docs[i], &ids);
        counts[k] += ids.size();
      }
    });
  }
  for (std::thread& th : pool)
    th.join();
  double s = Seconds(start);
  size_t ids = 0;
  for (size_t c : counts)
    ids += c;
  return {s, CpuSeconds() - cpu, ids};
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = std::string(SATURN_BINARY_DIR) + "/tests/tokenizer/reference/cases/llama3-real";
  double mb = 64;
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::string write_jsonl;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--tokenizer" && i + 1 < argc) {
      dir = argv[++i];
    } else if (a == "--mb" && i + 1 < argc) {
      mb = std::atof(argv[++i]);
    } else if (a == "--write-jsonl" && i + 1 < argc) {
      write_jsonl = argv[++i];
    } else if (a == "--threads" && i + 1 < argc) {
      threads = std::max(1, std::atoi(argv[++i]));
    } else {
      std::fprintf(stderr,
                   "usage: tokenizer_bench [--tokenizer DIR] [--mb 64] [--threads N] "
                   "[--write-jsonl FILE]\n");
      return 2;
    }
  }
  if (!write_jsonl.empty()) {
    std::string jsonl;
    for (const std::string& d : GenerateDocuments(static_cast<size_t>(mb * 1e6), 1))
      jsonl += nlohmann::json({{"text", d}}).dump() + "\n";
    saturn::WriteFileAtomic(write_jsonl, jsonl);
    return 0;
  }
  if (!std::filesystem::exists(dir + "/tokenizer.json")) {
    std::fprintf(
        stderr,
        "tokenizer_bench: no %s/tokenizer.json; pass --tokenizer DIR (a model's folder) or "
        "run `ctest --test-dir build -R tokenizer_reference` once to rebuild Llama 3's\n",
        dir.c_str());
    return 2;
  }
  try {
    auto start = std::chrono::steady_clock::now();
    Tokenizer t = Tokenizer::Load(dir);
    std::printf("tokenizer %s: %s, %u ids, loaded in %.2f s\n", dir.c_str(), t.Kind().c_str(),
                t.VocabSize(), Seconds(start));
    std::vector<std::string> docs = GenerateDocuments(static_cast<size_t>(mb * 1e6), 1);
    size_t bytes = 0;
    for (const std::string& d : docs)
      bytes += d.size();
    std::printf("text: %zu documents, %.1f MB (generated)\n", docs.size(), bytes / 1e6);

    Run one = EncodeAll(t, docs, 1);
    double mbs = bytes / 1e6;
    std::printf(
        "1 thread:   %6.1f MB/s wall, %6.1f MB per CPU-second  (%.2f s, %.2f M tokens, "
        "%.2f bytes/token)\n",
        mbs / one.seconds, mbs / one.cpu_seconds, one.seconds, one.ids / 1e6,
        static_cast<double>(bytes) / one.ids);
    Run all = EncodeAll(t, docs, threads);
    std::printf(
        "%d threads: %6.1f MB/s wall, %6.1f MB per CPU-second  (%.2f s, %.2fx one thread)\n",
        threads, mbs / all.seconds, mbs / all.cpu_seconds, all.seconds, one.seconds / all.seconds);
    if (all.ids != one.ids) {
      std::fprintf(stderr, "tokenizer_bench: %zu ids on %d threads, %zu on one\n", all.ids, threads,
                   one.ids);
      return 1;
    }

    // End to end: the documents as JSON Lines through TokenizeFiles.
    std::string folder = std::filesystem::temp_directory_path() / "saturn-tokenizer-bench";
    std::filesystem::create_directories(folder);
    std::string jsonl;
    for (const std::string& d : docs)
      jsonl += nlohmann::json({{"text", d}}).dump() + "\n";
    saturn::WriteFileAtomic(folder + "/docs.jsonl", jsonl);
    saturn::tokenizer::TokenizeOptions o;
    o.inputs = {folder + "/docs.jsonl"};
    o.output = folder + "/docs.bin";
    o.threads = threads;
    o.progress = false;
    saturn::tokenizer::TokenizeResult r = saturn::tokenizer::TokenizeFiles(t, o);
    std::printf("saturn tokenize (JSON Lines, %d threads): %6.1f MB/s  (%.2f s, %llu tokens)\n",
                threads, r.bytes / 1e6 / r.seconds, r.seconds,
                static_cast<unsigned long long>(r.tokens));
    std::filesystem::remove_all(folder);
    double per_thread = mbs / one.cpu_seconds;
    std::printf("%s: %.1f MB per CPU-second on one thread (target >= 5 MB/s a thread)\n",
                per_thread >= 5 ? "PASS" : "BELOW TARGET", per_thread);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "tokenizer_bench: %s\n", e.what());
    return 1;
  }
}
