#include "engine/formats/zip.h"

#include <algorithm>
#include <stdexcept>

#include "common/error.h"

namespace saturn::engine {
namespace {

constexpr uint32_t kLocalHeader = 0x04034b50;
constexpr uint32_t kCentralHeader = 0x02014b50;
constexpr uint32_t kEndOfDirectory = 0x06054b50;
constexpr uint32_t kZip64Locator = 0x07064b50;
constexpr uint32_t kZip64End = 0x06064b50;
constexpr uint64_t kMaxEntries = 1 << 24;

[[noreturn]] void Bad(const ByteSource& source, const std::string& message) {
  throw InputError(source.Name(), 0, "", "not a zip archive torch.save wrote: " + message);
}

uint64_t Field(const std::string& bytes, size_t at, int width) {
  return LittleEndian(bytes, at, width);
}

}  // namespace

bool LooksLikeZip(const ByteSource& source) {
  return source.Size() >= 4 && Field(source.Read(0, 4), 0, 4) == kLocalHeader;
}

std::vector<ZipEntry> ReadZipDirectory(const ByteSource& source) {
  uint64_t size = source.Size();
  if (size < 22) Bad(source, "too short for a zip directory");
  // The end-of-directory record: 22 bytes plus a comment of up to 65535.
  uint64_t tail_size = std::min<uint64_t>(size, 22 + 65535);
  std::string tail = source.Read(size - tail_size, tail_size);
  size_t end = std::string::npos;
  for (size_t i = tail.size() - 22 + 1; i-- > 0;) {
    if (Field(tail, i, 4) == kEndOfDirectory) {
      end = i;
      break;
    }
  }
  if (end == std::string::npos) Bad(source, "no end-of-directory record");
  uint64_t count = Field(tail, end + 10, 2);
  uint64_t directory_size = Field(tail, end + 12, 4);
  uint64_t directory_offset = Field(tail, end + 16, 4);
  if (count == 0xFFFF || directory_size == 0xFFFFFFFF || directory_offset == 0xFFFFFFFF) {
    uint64_t locator_at = size - tail_size + end;
    if (locator_at < 20) Bad(source, "a zip64 archive without its locator");
    std::string locator = source.Read(locator_at - 20, 20);
    if (Field(locator, 0, 4) != kZip64Locator) Bad(source, "a zip64 archive without its locator");
    uint64_t zip64_at = Field(locator, 8, 8);
    std::string zip64 = source.Read(zip64_at, 56);
    if (Field(zip64, 0, 4) != kZip64End) Bad(source, "a damaged zip64 end-of-directory record");
    count = Field(zip64, 32, 8);
    directory_size = Field(zip64, 40, 8);
    directory_offset = Field(zip64, 48, 8);
  }
  if (count > kMaxEntries) Bad(source, "more than 2^24 entries");
  if (directory_offset > size || directory_size > size - directory_offset) {
    Bad(source, "its directory lies outside the file");
  }
  std::string directory = source.Read(directory_offset, directory_size);
  std::vector<ZipEntry> entries;
  size_t at = 0;
  for (uint64_t e = 0; e < count; ++e) {
    if (at + 46 > directory.size() || Field(directory, at, 4) != kCentralHeader) {
      Bad(source, "a damaged directory entry");
    }
    uint64_t method = Field(directory, at + 10, 2);
    uint64_t compressed = Field(directory, at + 20, 4);
    uint64_t uncompressed = Field(directory, at + 24, 4);
    size_t name_length = Field(directory, at + 28, 2);
    size_t extra_length = Field(directory, at + 30, 2);
    size_t comment_length = Field(directory, at + 32, 2);
    uint64_t local = Field(directory, at + 42, 4);
    if (at + 46 + name_length + extra_length + comment_length > directory.size()) {
      Bad(source, "a damaged directory entry");
    }
    ZipEntry entry;
    entry.name = directory.substr(at + 46, name_length);
    // Zip64 sizes and offset, in this order, for the fields marked 0xFFFFFFFF.
    size_t extra = at + 46 + name_length;
    for (size_t x = extra; x + 4 <= extra + extra_length;) {
      uint64_t id = Field(directory, x, 2), length = Field(directory, x + 2, 2);
      if (x + 4 + length > extra + extra_length) Bad(source, "a damaged extra field");
      if (id == 0x0001) {
        size_t y = x + 4;
        auto next = [&](uint64_t& value) {
          if (value != 0xFFFFFFFF) return;
          if (y + 8 > x + 4 + length) Bad(source, "a damaged zip64 extra field");
          value = Field(directory, y, 8);
          y += 8;
        };
        next(uncompressed);
        next(compressed);
        next(local);
      }
      x += 4 + length;
    }
    if (method != 0 || compressed != uncompressed) {
      Bad(source, "entry " + Quote(entry.name) + " is compressed (torch.save stores entries)");
    }
    if (local > size || size - local < 30) Bad(source, "an entry outside the file");
    std::string header = source.Read(local, 30);
    if (Field(header, 0, 4) != kLocalHeader) Bad(source, "a damaged local header");
    entry.offset = local + 30 + Field(header, 26, 2) + Field(header, 28, 2);
    entry.size = uncompressed;
    if (entry.offset > size || entry.size > size - entry.offset) {
      Bad(source, "entry " + Quote(entry.name) + " runs past the end of the file");
    }
    entries.push_back(std::move(entry));
    at += 46 + name_length + extra_length + comment_length;
  }
  return entries;
}

namespace {

// Slicing-by-8 tables of the reflected polynomial 0xEDB88320.
struct CrcTables {
  uint32_t t[8][256];
  CrcTables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i) {
      for (int s = 1; s < 8; ++s)
        t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
    }
  }
};

void Append(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xFF));
}

constexpr uint64_t k32 = 0xFFFFFFFF;

}  // namespace

uint32_t ZipCrc32(const void* data, size_t size, uint32_t crc) {
  static const CrcTables tables;
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = ~crc;
  while (size >= 8) {
    uint32_t lo = c ^ (static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                       static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24);
    c = tables.t[7][lo & 0xFF] ^ tables.t[6][(lo >> 8) & 0xFF] ^ tables.t[5][(lo >> 16) & 0xFF] ^
        tables.t[4][lo >> 24] ^ tables.t[3][p[4]] ^ tables.t[2][p[5]] ^ tables.t[1][p[6]] ^
        tables.t[0][p[7]];
    p += 8;
    size -= 8;
  }
  while (size-- > 0)
    c = tables.t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return ~c;
}

ZipWriter::ZipWriter(Sink write) : write_(std::move(write)) {}

void ZipWriter::Put(const void* data, size_t size) {
  write_(data, size);
  offset_ += size;
}

void ZipWriter::Begin(const std::string& name, uint64_t size) {
  if (open_) throw std::logic_error("ZipWriter: an entry is already open");
  Written entry{name, offset_, size, 0};
  bool big = size >= k32;
  std::string header;
  Append(header, kLocalHeader, 4);
  Append(header, big ? 45 : 20, 2);  // version needed
  Append(header, 0x0808, 2);         // sizes in a data descriptor; UTF-8 names
  Append(header, 0, 2);              // stored
  Append(header, 0, 4);              // time, date
  Append(header, 0, 4);              // crc: in the descriptor
  Append(header, big ? k32 : 0, 4);
  Append(header, big ? k32 : 0, 4);
  Append(header, name.size(), 2);
  // Extra fields: zip64 sizes (for a big entry), then padding that puts the
  // data on a 64-byte boundary.
  std::string extra;
  if (big) {
    Append(extra, 0x0001, 2);
    Append(extra, 16, 2);
    Append(extra, 0, 8);
    Append(extra, 0, 8);
  }
  uint64_t before = offset_ + 30 + name.size() + extra.size() + 4;
  uint64_t pad = (64 - before % 64) % 64;
  Append(extra, 0x4246, 2);  // "FB", as PyTorch pads
  Append(extra, pad, 2);
  extra.append(pad, 'Z');
  Append(header, extra.size(), 2);
  header += name;
  header += extra;
  Put(header);
  entries_.push_back(entry);
  open_ = true;
  remaining_ = size;
}

void ZipWriter::Data(const void* data, size_t size) {
  if (!open_ || size > remaining_) throw std::logic_error("ZipWriter: data past the entry's size");
  entries_.back().crc = ZipCrc32(data, size, entries_.back().crc);
  remaining_ -= size;
  Put(data, size);
}

void ZipWriter::End() {
  if (!open_ || remaining_ != 0) throw std::logic_error("ZipWriter: entry ended early");
  const Written& entry = entries_.back();
  bool big = entry.size >= k32;
  std::string descriptor;
  Append(descriptor, 0x08074b50, 4);
  Append(descriptor, entry.crc, 4);
  Append(descriptor, entry.size, big ? 8 : 4);
  Append(descriptor, entry.size, big ? 8 : 4);
  Put(descriptor);
  open_ = false;
}

void ZipWriter::Entry(const std::string& name, const std::string& data) {
  Begin(name, data.size());
  Data(data.data(), data.size());
  End();
}

void ZipWriter::Finish() {
  if (open_) throw std::logic_error("ZipWriter: an entry is still open");
  uint64_t directory_offset = offset_;
  for (const Written& e : entries_) {
    bool big_size = e.size >= k32, big_offset = e.local >= k32;
    std::string extra;
    if (big_size || big_offset) {
      Append(extra, 0x0001, 2);
      Append(extra, (big_size ? 16 : 0) + (big_offset ? 8 : 0), 2);
      if (big_size) {
        Append(extra, e.size, 8);
        Append(extra, e.size, 8);
      }
      if (big_offset) Append(extra, e.local, 8);
    }
    std::string header;
    Append(header, kCentralHeader, 4);
    Append(header, extra.empty() ? 20 : 45, 2);  // made by
    Append(header, extra.empty() ? 20 : 45, 2);  // needed
    Append(header, 0x0808, 2);
    Append(header, 0, 2);
    Append(header, 0, 4);
    Append(header, e.crc, 4);
    Append(header, big_size ? k32 : e.size, 4);
    Append(header, big_size ? k32 : e.size, 4);
    Append(header, e.name.size(), 2);
    Append(header, extra.size(), 2);
    Append(header, 0, 2);  // comment
    Append(header, 0, 2);  // disk
    Append(header, 0, 2);  // internal attributes
    Append(header, 0, 4);  // external attributes
    Append(header, big_offset ? k32 : e.local, 4);
    header += e.name;
    header += extra;
    Put(header);
  }
  uint64_t directory_size = offset_ - directory_offset;
  uint64_t count = entries_.size();
  bool zip64 = count >= 0xFFFF || directory_offset >= k32 || directory_size >= k32;
  if (zip64) {
    uint64_t record = offset_;
    std::string end64;
    Append(end64, kZip64End, 4);
    Append(end64, 44, 8);  // size of the rest of the record
    Append(end64, 45, 2);
    Append(end64, 45, 2);
    Append(end64, 0, 4);
    Append(end64, 0, 4);
    Append(end64, count, 8);
    Append(end64, count, 8);
    Append(end64, directory_size, 8);
    Append(end64, directory_offset, 8);
    Append(end64, kZip64Locator, 4);
    Append(end64, 0, 4);
    Append(end64, record, 8);
    Append(end64, 1, 4);
    Put(end64);
  }
  std::string end;
  Append(end, kEndOfDirectory, 4);
  Append(end, 0, 4);
  Append(end, zip64 ? 0xFFFF : count, 2);
  Append(end, zip64 ? 0xFFFF : count, 2);
  Append(end, zip64 ? k32 : directory_size, 4);
  Append(end, zip64 ? k32 : directory_offset, 4);
  Append(end, 0, 2);
  Put(end);
}

}  // namespace saturn::engine
