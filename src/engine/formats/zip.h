// The directory of a zip archive, as torch.save writes one (PyTorch 1.6 and
// later): every entry stored uncompressed, so an entry is a byte range of the
// file that can be read in place. Zip64 archives (over 4 GiB, GPT-2 XL's
// pytorch_model.bin) included. Torch-free.
//
//   std::vector<ZipEntry> entries = ReadZipDirectory(FileBytes("pytorch_model.bin"));
//   // {"archive/data.pkl", offset, size}, {"archive/data/0", ...}, ...
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/formats/bytes.h"

namespace saturn::engine {

struct ZipEntry {
  std::string name;
  uint64_t offset = 0;  // of the entry's first data byte in the file
  uint64_t size = 0;
};

// True when the source starts like a zip archive.
bool LooksLikeZip(const ByteSource& source);
// InputError naming the file for anything but stored entries of a readable
// directory.
std::vector<ZipEntry> ReadZipDirectory(const ByteSource& source);

// zip's CRC-32 (IEEE 802.3), continuing from `crc` (0 to start).
uint32_t ZipCrc32(const void* data, size_t size, uint32_t crc = 0);

// Writes a zip archive of stored entries as torch.save does: each entry's
// data 64-byte aligned (padding in its extra field), its CRC and sizes in a
// data descriptor after it, zip64 records where sizes or offsets pass 4 GiB.
// Bytes go to `write` in order, so the archive can stream into a file.
//
//   ZipWriter zip([&](const void* p, size_t n) { out.Write(p, n); });
//   zip.Begin("archive/data/0", bytes); zip.Data(p, bytes); zip.End();
//   zip.Finish();
class ZipWriter {
 public:
  using Sink = std::function<void(const void*, size_t)>;
  explicit ZipWriter(Sink write);
  // Starts an entry of `size` bytes, which Data then gives (in any pieces).
  void Begin(const std::string& name, uint64_t size);
  void Data(const void* data, size_t size);
  void End();
  void Entry(const std::string& name, const std::string& data);
  // The central directory and its end records; the archive is complete.
  void Finish();

 private:
  struct Written {
    std::string name;
    uint64_t local = 0, size = 0;
    uint32_t crc = 0;
  };
  void Put(const void* data, size_t size);
  void Put(const std::string& bytes) { Put(bytes.data(), bytes.size()); }

  Sink write_;
  uint64_t offset_ = 0;
  std::vector<Written> entries_;
  bool open_ = false;
  uint64_t remaining_ = 0;
};

}  // namespace saturn::engine
