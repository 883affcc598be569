// Saturn's token files (docs/contracts.md, Contract 5, "Token files"): the
// ids a `tokens` data source trains on, little-endian, one after another.
//
// Two layouts, told apart by the file's first bytes:
//   - headerless: uint16 ids, nothing else (what Saturn always read, what
//     numpy's `ids.astype("<u2").tofile(path)` writes);
//   - with a 16-byte header: the magic FF FF 'S' 'A' 'T' 'T' 'O' 'K', a
//     uint16 version (1), a uint16 id size in bytes (2 or 4) and a uint32
//     vocabulary size (every id is below it), then the ids.
// `saturn tokenize` writes a vocabulary of at most 65,536 headerless as
// uint16 and a larger one with the header as uint32. A headerless file could
// begin with the magic's bytes only if its first id were 65,535 followed by
// 16,723 21,588 19,279 (a vocabulary of exactly 65,536): the writer puts a
// header on such a file (WriterIdBytes/NeedsHeader), so what it writes reads
// back unambiguously.
//
// Header-only and torch-free: the engine's `tokens` reader (engine/data.cc)
// includes it without linking the tokenizer library.
//
//   TokenFileLayout layout = ReadTokenFileLayout(bytes, path);  // InputError if malformed
//   for (uint64_t i = 0; i < layout.count; ++i) ids.push_back(layout.Id(bytes, i));
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "common/error.h"

namespace saturn {

inline constexpr char kTokenFileMagic[8] = {'\xff', '\xff', 'S', 'A', 'T', 'T', 'O', 'K'};
inline constexpr size_t kTokenFileHeaderBytes = 16;
inline constexpr uint16_t kTokenFileVersion = 1;
// The largest vocabulary uint16 ids can hold.
inline constexpr uint64_t kMaxUint16Vocab = 65536;

struct TokenFileLayout {
  size_t header_bytes = 0;  // 0 (headerless) or kTokenFileHeaderBytes
  int id_bytes = 2;         // 2 (uint16) or 4 (uint32)
  uint64_t vocab = 0;       // from the header; 0 for a headerless file
  uint64_t count = 0;       // ids in the file

  // Id i of the file's bytes (as given to ReadTokenFileLayout).
  uint32_t Id(std::string_view bytes, uint64_t i) const {
    const unsigned char* p =
        reinterpret_cast<const unsigned char*>(bytes.data()) + header_bytes + i * id_bytes;
    if (id_bytes == 2) return static_cast<uint32_t>(p[0] | p[1] << 8);
    return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
           static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
  }
};

namespace token_file_detail {
inline uint32_t Le(const char* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = v << 8 | static_cast<unsigned char>(p[i]);
  return v;
}
inline void PutLe(std::string* out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out->push_back(static_cast<char>(v >> (8 * i) & 0xff));
}
}  // namespace token_file_detail

inline bool HasTokenFileMagic(std::string_view bytes) {
  return bytes.size() >= sizeof kTokenFileMagic &&
         std::memcmp(bytes.data(), kTokenFileMagic, sizeof kTokenFileMagic) == 0;
}

// The layout of a token file's bytes; InputError naming `path` if they are
// not a whole number of ids or the header is not one this reader knows.
inline TokenFileLayout ReadTokenFileLayout(std::string_view bytes, const std::string& path) {
  using token_file_detail::Le;
  TokenFileLayout layout;
  if (!HasTokenFileMagic(bytes)) {
    if (bytes.size() % 2 != 0) {
      throw InputError(path, 0, "",
                       "has " + std::to_string(bytes.size()) +
                           " bytes, not a whole number of uint16 token ids (a headerless token "
                           "file; docs/contracts.md, Contract 5)");
    }
    layout.count = bytes.size() / 2;
    return layout;
  }
  if (bytes.size() < kTokenFileHeaderBytes) {
    throw InputError(path, 0, "",
                     "begins with a token file's magic but has only " +
                         std::to_string(bytes.size()) + " bytes, less than its 16-byte header");
  }
  uint32_t version = Le(bytes.data() + 8, 2);
  if (version != kTokenFileVersion) {
    throw InputError(path, 0, "",
                     "token file version " + std::to_string(version) +
                         " is not one this Saturn reads (version 1); was it written by a newer "
                         "Saturn?");
  }
  layout.header_bytes = kTokenFileHeaderBytes;
  layout.id_bytes = static_cast<int>(Le(bytes.data() + 10, 2));
  if (layout.id_bytes != 2 && layout.id_bytes != 4) {
    throw InputError(path, 0, "",
                     "its header says ids of " + std::to_string(layout.id_bytes) +
                         " bytes; expected 2 (uint16) or 4 (uint32)");
  }
  layout.vocab = Le(bytes.data() + 12, 4);
  if (layout.vocab == 0) throw InputError(path, 0, "", "its header says a vocabulary of 0 ids");
  size_t body = bytes.size() - kTokenFileHeaderBytes;
  if (body % layout.id_bytes != 0) {
    throw InputError(path, 0, "",
                     "has " + std::to_string(body) +
                         " bytes after its header, not a whole number of " +
                         (layout.id_bytes == 2 ? "uint16" : "uint32") + " token ids");
  }
  layout.count = body / layout.id_bytes;
  return layout;
}

// The id size the writer uses for a vocabulary: uint16 up to 65,536 ids,
// else uint32.
inline int WriterIdBytes(uint64_t vocab) {
  return vocab <= kMaxUint16Vocab ? 2 : 4;
}

// The 16-byte header for ids of `id_bytes` below `vocab`.
inline std::string TokenFileHeader(int id_bytes, uint32_t vocab) {
  using token_file_detail::PutLe;
  std::string header(kTokenFileMagic, sizeof kTokenFileMagic);
  PutLe(&header, kTokenFileVersion, 2);
  PutLe(&header, static_cast<uint32_t>(id_bytes), 2);
  PutLe(&header, vocab, 4);
  return header;
}

// Whether a uint16 file whose ids begin with `first` (at least its first
// four ids, or all of them) needs a header to be read back as uint16: only
// if those bytes spell the magic.
inline bool NeedsHeader(const uint32_t* first, size_t count) {
  if (count < 4) return false;
  std::string bytes;
  for (size_t i = 0; i < 4; ++i)
    token_file_detail::PutLe(&bytes, first[i], 2);
  return HasTokenFileMagic(bytes);
}

// Appends ids to `out` as `id_bytes`-byte little-endian integers.
inline void AppendTokenIds(const uint32_t* ids, size_t count, int id_bytes, std::string* out) {
  size_t at = out->size();
  out->resize(at + count * id_bytes);
  char* p = out->data() + at;
  for (size_t i = 0; i < count; ++i) {
    for (int b = 0; b < id_bytes; ++b)
      *p++ = static_cast<char>(ids[i] >> (8 * b) & 0xff);
  }
}

}  // namespace saturn
