#include "engine/formats/bytes.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.h"

namespace saturn::engine {
namespace {

std::string PastEnd(uint64_t offset, uint64_t count, uint64_t size) {
  return "truncated: needs bytes " + std::to_string(offset) + ".." +
         std::to_string(offset + count) + " of a " + std::to_string(size) + "-byte file";
}

}  // namespace

FileBytes::FileBytes(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw InputError(path_, 0, "", std::string("cannot open: ") + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd_, &info) != 0 || !S_ISREG(info.st_mode)) {
    ::close(fd_);
    throw InputError(path_, 0, "", "not a regular file");
  }
  size_ = static_cast<uint64_t>(info.st_size);
}

FileBytes::~FileBytes() {
  if (fd_ >= 0) ::close(fd_);
}

std::string FileBytes::Read(uint64_t offset, uint64_t count) const {
  if (offset > size_ || count > size_ - offset) {
    throw InputError(path_, 0, "", PastEnd(offset, count, size_));
  }
  std::string bytes(count, '\0');
  ReadInto(offset, count, bytes.data());
  return bytes;
}

void FileBytes::ReadInto(uint64_t offset, uint64_t count, void* out) const {
  if (offset > size_ || count > size_ - offset) {
    throw InputError(path_, 0, "", PastEnd(offset, count, size_));
  }
  char* to = static_cast<char*>(out);
  // pread moves at most ~2 GiB per call.
  constexpr uint64_t kChunk = uint64_t{1} << 30;
  while (count > 0) {
    ssize_t got = ::pread(fd_, to, std::min(count, kChunk), static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      throw SystemError("cannot read " + path_ + ": " +
                        (got < 0 ? std::strerror(errno) : "it shrank while being read"));
    }
    to += got;
    offset += static_cast<uint64_t>(got);
    count -= static_cast<uint64_t>(got);
  }
}

std::unique_ptr<MappedBytes> FileBytes::Map(uint64_t offset, uint64_t count) const {
  if (offset > size_ || count > size_ - offset) {
    throw InputError(path_, 0, "", PastEnd(offset, count, size_));
  }
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  uint64_t start = offset / page * page;
  uint64_t length = std::max<uint64_t>(offset + count - start, 1);
  void* base =
      ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd_, static_cast<off_t>(start));
  if (base == MAP_FAILED) {
    throw SystemError("cannot map " + path_ + ": " + std::strerror(errno));
  }
  return std::unique_ptr<MappedBytes>(
      new MappedBytes(base, length, static_cast<char*>(base) + (offset - start), count));
}

MappedBytes::~MappedBytes() {
  ::munmap(base_, length_);
}

void MappedBytes::Populate() const {
#ifdef MADV_POPULATE_READ
  if (::madvise(base_, length_, MADV_POPULATE_READ) == 0) return;
#endif
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  volatile const char* bytes = static_cast<const char*>(base_);
  char sum = 0;
  for (uint64_t at = 0; at < length_; at += page)
    sum = static_cast<char>(sum + bytes[at]);
  (void)sum;
}

std::string StringBytes::Read(uint64_t offset, uint64_t count) const {
  if (offset > data_.size() || count > data_.size() - offset) {
    throw InputError(name_, 0, "", PastEnd(offset, count, data_.size()));
  }
  return std::string(data_.substr(offset, count));
}

uint64_t LittleEndian(std::string_view data, size_t at, int bytes) {
  uint64_t value = 0;
  for (int i = bytes - 1; i >= 0; --i)
    value = (value << 8) | static_cast<uint8_t>(data[at + static_cast<size_t>(i)]);
  return value;
}

}  // namespace saturn::engine
