#include "tokenizer/tokenize_files.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "common/json_text.h"
#include "common/progress.h"
#include "tokenizer/token_file.h"

namespace saturn::tokenizer {
namespace {

// Bytes of text encoded per thread between writes.
constexpr size_t kBatchBytesPerThread = size_t{4} << 20;

// Writes ids as a token file, deciding its layout once the first ids are
// known (a uint16 file whose first ids spell the magic gets a header).
class TokenWriter {
 public:
  TokenWriter(const std::string& path, uint32_t vocab)
      : out_(path), vocab_(vocab), id_bytes_(WriterIdBytes(vocab)) {}

  void Write(const std::vector<uint32_t>& ids) {
    if (!decided_) {
      pending_.insert(pending_.end(), ids.begin(), ids.end());
      if (pending_.size() >= 4) Decide();
      return;
    }
    Put(ids.data(), ids.size());
  }

  void Commit() {
    if (!decided_) Decide();
    out_.Commit();
  }
  int id_bytes() const { return id_bytes_; }
  bool header() const { return header_; }

 private:
  void Decide() {
    decided_ = true;
    header_ = id_bytes_ == 4 || NeedsHeader(pending_.data(), pending_.size());
    if (header_) {
      std::string h = TokenFileHeader(id_bytes_, vocab_);
      out_.Write(h.data(), h.size());
    }
    Put(pending_.data(), pending_.size());
    pending_.clear();
  }
  void Put(const uint32_t* ids, size_t count) {
    buffer_.clear();
    AppendTokenIds(ids, count, id_bytes_, &buffer_);
    out_.Write(buffer_.data(), buffer_.size());
  }

  AtomicFileWriter out_;
  uint32_t vocab_;
  int id_bytes_;
  bool decided_ = false, header_ = false;
  std::vector<uint32_t> pending_;
  std::string buffer_;
};

// A batch of inputs: a text file's document, or a JSON line (parsed by the
// thread that encodes it, so that reading stays the only serial part).
struct Item {
  std::string text;  // the document, or the JSON line
  size_t file;       // index into the inputs
  int line;          // the JSON line's number; 0: a text file's document
};

// The document an item holds: its text, or its JSON line's field.
std::string& DocumentOf(Item& item, const TokenizeOptions& o) {
  if (item.line == 0) return item.text;
  const std::string& in = o.inputs[item.file];
  nlohmann::json j;
  std::string why;
  if (!ParseJsonText(item.text, &j, &why))
    throw InputError(in, item.line, "", "not a JSON line: " + why);
  if (!j.is_object()) {
    throw InputError(in, item.line, "", "expected a JSON object with a \"" + o.field + "\" field");
  }
  auto it = j.find(o.field);
  if (it == j.end()) {
    throw InputError(
        in, item.line, o.field,
        "missing (each line needs the text in \"" + o.field + "\"; --field names another field)");
  }
  if (!it->is_string()) throw InputError(in, item.line, o.field, "expected a string");
  item.text = std::move(it->get_ref<std::string&>());
  return item.text;
}

// The inputs' total bytes; InputError for one that is missing, not a file,
// or the output itself.
uint64_t CheckInputs(const TokenizeOptions& o) {
  namespace fs = std::filesystem;
  if (o.inputs.empty()) throw InputError("no input files to tokenize");
  uint64_t total = 0;
  std::error_code ec;
  for (const std::string& in : o.inputs) {
    if (!fs::is_regular_file(in, ec)) {
      throw InputError(in, 0, "", fs::exists(in, ec) ? "is not a regular file" : "not found");
    }
    if (fs::exists(o.output, ec) && fs::equivalent(in, o.output, ec)) {
      throw InputError(o.output, 0, "", "is also an input; write the tokens to another file");
    }
    total += fs::file_size(in, ec);
  }
  return total;
}

// Items gathered into batches, each encoded by `threads` threads (contiguous
// runs of about equal bytes) and written in input order.
class Batches {
 public:
  Batches(const Tokenizer& tokenizer, const TokenizeOptions& o, int threads, TokenizeResult& result)
      : o_(o), threads_(threads), result_(result), outputs_(threads) {
    std::optional<uint32_t> eos = o.eos ? tokenizer.TokenId(*o.eos) : tokenizer.eos_id();
    if (o.eos && !eos)
      throw InputError("--eos: " + Quote(*o.eos) + " is not a token of the tokenizer");
    if (!eos) {
      throw InputError(
          "the tokenizer names no end-of-document token (eos_token in tokenizer_config.json or "
          "special_tokens_map.json); name one with --eos TOKEN, e.g. --eos '<|endoftext|>'");
    }
    eos_ = *eos;
    bos_ = tokenizer.add_bos() ? tokenizer.bos_id() : std::nullopt;
    for (int i = 0; i < threads; ++i)
      encoders_.push_back(std::make_unique<Encoder>(tokenizer));
  }

  // Adds an item; true when a full batch was just encoded and written.
  bool Add(std::string text, size_t file, int line, TokenWriter& writer) {
    bytes_ += text.size();
    items_.push_back({std::move(text), file, line});
    if (bytes_ < kBatchBytesPerThread * threads_) return false;
    Flush(writer);
    return true;
  }

  void Flush(TokenWriter& writer) {
    if (items_.empty()) return;
    Cut();
    std::vector<std::thread> pool;
    for (int t = 1; t < threads_; ++t) {
      if (cut_[t] < cut_[t + 1]) pool.emplace_back([this, t] { Encode(t); });
    }
    Encode(0);
    for (std::thread& th : pool)
      th.join();
    // The first error in input order: threads hold runs in order.
    for (int t = 0; t < threads_; ++t) {
      if (cut_[t] < cut_[t + 1] && outputs_[t].error) std::rethrow_exception(outputs_[t].error);
    }
    for (int t = 0; t < threads_; ++t) {
      if (cut_[t] == cut_[t + 1]) continue;
      writer.Write(outputs_[t].ids);
      result_.tokens += outputs_[t].ids.size();
      result_.documents += outputs_[t].documents;
      result_.empty += outputs_[t].empty;
      result_.bytes += outputs_[t].bytes;
    }
    items_.clear();
    bytes_ = 0;
  }

 private:
  struct Output {
    std::vector<uint32_t> ids;
    uint64_t documents = 0, empty = 0, bytes = 0;
    std::exception_ptr error;
  };

  // Contiguous runs of items of about equal bytes, one per thread.
  void Cut() {
    cut_.assign(1, 0);
    size_t share = bytes_ / threads_ + 1, acc = 0;
    for (size_t i = 0; i < items_.size(); ++i) {
      acc += items_[i].text.size();
      if (acc >= share * cut_.size() && static_cast<int>(cut_.size()) < threads_) {
        cut_.push_back(i + 1);
      }
    }
    while (cut_.size() <= static_cast<size_t>(threads_))
      cut_.push_back(items_.size());
  }

  void Encode(int t) {
    Output& out = outputs_[t];
    out.ids.clear();
    out.documents = out.empty = out.bytes = 0;
    try {
      for (size_t i = cut_[t]; i < cut_[t + 1]; ++i) {
        const std::string& text = DocumentOf(items_[i], o_);
        out.bytes += text.size();
        if (text.empty()) {
          ++out.empty;
          continue;
        }
        ++out.documents;
        if (bos_) out.ids.push_back(*bos_);
        encoders_[t]->Encode(text, &out.ids);
        out.ids.push_back(eos_);
      }
    } catch (...) {
      out.error = std::current_exception();
    }
  }

  const TokenizeOptions& o_;
  int threads_;
  TokenizeResult& result_;
  uint32_t eos_ = 0;
  std::optional<uint32_t> bos_;
  std::vector<std::unique_ptr<Encoder>> encoders_;
  std::vector<Item> items_;
  size_t bytes_ = 0;
  std::vector<size_t> cut_;
  std::vector<Output> outputs_;
};

}  // namespace

bool IsJsonLines(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return ext == ".jsonl";
}

TokenizeResult TokenizeFiles(const Tokenizer& tokenizer, const TokenizeOptions& o) {
  auto t0 = std::chrono::steady_clock::now();
  TokenizeResult result;
  result.vocab = tokenizer.VocabSize();
  int threads = o.threads > 0 ? o.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::max(threads, 1);
  result.threads = threads;
  Batches batches(tokenizer, o, threads, result);
  uint64_t total = CheckInputs(o);
  TokenWriter writer(o.output, result.vocab);
  std::unique_ptr<Progress> progress;
  long total_mb = static_cast<long>((total + 999'999) / 1'000'000);
  if (o.progress && total >= (size_t{16} << 20))
    progress = std::make_unique<Progress>("tokenizing (MB of text)", total_mb);
  uint64_t read = 0;  // bytes of the input files read, for the progress line
  auto add = [&](std::string text, size_t file, int line) {
    if (batches.Add(std::move(text), file, line, writer) && progress) {
      progress->Update(static_cast<long>(read / 1'000'000));
    }
  };
  for (size_t f = 0; f < o.inputs.size(); ++f) {
    const std::string& in = o.inputs[f];
    if (!IsJsonLines(in)) {
      std::string text = ReadFile(in);
      read += text.size();
      if (text.starts_with("\xef\xbb\xbf")) text.erase(0, 3);
      if (!IsUtf8(text)) throw InputError(in, 0, "", UnlessUtf8(text));
      add(std::move(text), f, 0);
      continue;
    }
    std::ifstream file(in, std::ios::binary);
    if (!file) throw InputError(in, 0, "", "cannot be read");
    std::string line;
    int number = 0;
    while (std::getline(file, line)) {
      ++number;
      if (!line.empty() && line.back() == '\r') line.pop_back();
      read += line.size() + 1;
      if (line.find_first_not_of(" \t") == std::string::npos) continue;
      add(std::move(line), f, number);
      line = std::string();
    }
    if (file.bad()) throw InputError(in, number, "", "read failed");
  }
  batches.Flush(writer);
  writer.Commit();
  if (progress) progress->Finish();
  result.id_bytes = writer.id_bytes();
  result.header = writer.header();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return result;
}

}  // namespace saturn::tokenizer
