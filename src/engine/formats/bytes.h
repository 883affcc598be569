// Random access to the bytes of a file (pread) or of a string, for the
// weight-file readers: they read headers and directories, never a whole
// multi-gigabyte file. Torch-free.
//
//   FileBytes file("model.safetensors");       // InputError if it cannot be opened
//   std::string header = file.Read(8, n);      // InputError if past the end
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace saturn::engine {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // The name errors give ("pytorch_model.bin").
  virtual const std::string& Name() const = 0;
  virtual uint64_t Size() const = 0;
  // Exactly `count` bytes from `offset`; InputError when they are not there.
  virtual std::string Read(uint64_t offset, uint64_t count) const = 0;
};

// `count` bytes of a file mapped copy-on-write (MAP_PRIVATE): reading them
// shares the page cache's pages (no copy, no fresh memory), a write copies
// the page it touches, and the file itself never changes. The mapping lives
// as long as this object, even after the file is closed. A file that is
// truncated while mapped makes a read of the lost pages fail (SIGBUS), as it
// does for torch.load(mmap=True): replace weight files, do not rewrite them
// in place.
class MappedBytes {
 public:
  ~MappedBytes();
  MappedBytes(const MappedBytes&) = delete;
  MappedBytes& operator=(const MappedBytes&) = delete;
  void* data() const { return data_; }
  uint64_t size() const { return count_; }
  // Reads every page in now (one call where the kernel has
  // MADV_POPULATE_READ, Linux 5.14; a read per page otherwise), so that
  // later reads do not wait on the disk.
  void Populate() const;

 private:
  friend class FileBytes;
  MappedBytes(void* base, uint64_t length, void* data, uint64_t count)
      : base_(base), length_(length), data_(data), count_(count) {}
  void* base_;
  uint64_t length_;
  void* data_;
  uint64_t count_;
};

class FileBytes final : public ByteSource {
 public:
  explicit FileBytes(std::string path);
  ~FileBytes() override;
  FileBytes(const FileBytes&) = delete;
  FileBytes& operator=(const FileBytes&) = delete;
  const std::string& Name() const override { return path_; }
  uint64_t Size() const override { return size_; }
  std::string Read(uint64_t offset, uint64_t count) const override;
  // Reads `count` bytes at `offset` straight into `out` (in chunks; no copy).
  void ReadInto(uint64_t offset, uint64_t count, void* out) const;
  // Maps `count` bytes at `offset` (MappedBytes; nothing is read yet).
  std::unique_ptr<MappedBytes> Map(uint64_t offset, uint64_t count) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

class StringBytes final : public ByteSource {
 public:
  StringBytes(std::string_view data, std::string name) : data_(data), name_(std::move(name)) {}
  const std::string& Name() const override { return name_; }
  uint64_t Size() const override { return data_.size(); }
  std::string Read(uint64_t offset, uint64_t count) const override;

 private:
  std::string_view data_;
  std::string name_;
};

// Little-endian unsigned integer of `bytes` bytes at `at` of `data`.
uint64_t LittleEndian(std::string_view data, size_t at, int bytes);

}  // namespace saturn::engine
