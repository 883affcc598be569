#include "common/fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "common/error.h"

namespace saturn {

std::string ReadFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputError(path, 0, "", "expected a file, found a directory");
  }
  // A device (/dev/zero, /dev/urandom) never ends: refused before reading.
  // Pipes are read (a process substitution, <(...), is one).
  if (std::filesystem::is_character_file(path, ec) || std::filesystem::is_block_file(path, ec)) {
    throw InputError(path, 0, "", "expected a file, found a device");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw InputError(path, 0, "", std::string("cannot read file: ") + std::strerror(errno));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw InputError(path, 0, "", "error while reading file");
  return buffer.str();
}

void MakeDirectories(const std::string& path) {
  if (path.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw SystemError("cannot create directory " + path + ": " + ec.message());
}

namespace {

// Writes all of `contents` to a new file at `path` and fsyncs it; on failure
// removes it and returns the errno.
int WriteAndSync(const std::string& path, const std::string& contents) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  const char* data = contents.data();
  size_t left = contents.size();
  int err = 0;
  while (left > 0 && err == 0) {
    ssize_t n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
    } else {
      data += n;
      left -= static_cast<size_t>(n);
    }
  }
  if (err == 0 && ::fsync(fd) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) ::unlink(path.c_str());
  return err;
}

std::string Parent(const std::string& path) {
  std::filesystem::path p(path);
  return p.has_parent_path() ? p.parent_path().string() : ".";
}

}  // namespace

void SyncDirectory(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw SystemError("cannot open directory " + path + ": " + std::strerror(errno));
  int err = ::fsync(fd) != 0 ? errno : 0;
  ::close(fd);
  // EINVAL: a file system that cannot flush directories (it orders them itself).
  if (err != 0 && err != EINVAL)
    throw SystemError("cannot flush directory " + path + ": " + std::strerror(err));
}

void WriteFileAtomicUnflushed(const std::string& path, const std::string& contents) {
  MakeDirectories(Parent(path));
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wbe");
  bool ok = f != nullptr && std::fwrite(contents.data(), 1, contents.size(), f) == contents.size();
  int err = ok ? 0 : errno;
  if (f != nullptr && std::fclose(f) != 0 && err == 0) err = errno;
  if (err == 0 && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.c_str());
    throw SystemError("cannot write " + path + ": " + std::strerror(err));
  }
}

void SyncFileSystem(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw SystemError("cannot open " + path + ": " + std::strerror(errno));
  int err = ::syncfs(fd) != 0 ? errno : 0;
  ::close(fd);
  if (err != 0) throw SystemError("cannot flush " + path + ": " + std::strerror(err));
}

void WriteFileDurable(const std::string& path, const std::string& contents) {
  if (int err = WriteAndSync(path, contents)) {
    throw SystemError("cannot write " + path + ": " + std::strerror(err));
  }
}

AtomicFileWriter::AtomicFileWriter(std::string path) : path_(std::move(path)) {
  MakeDirectories(Parent(path_));
  tmp_ = path_ + ".tmp." + std::to_string(::getpid());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw SystemError("cannot write " + path_ + ": " + std::strerror(errno));
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_.c_str());
  }
}

void AtomicFileWriter::Fail(int err) {
  ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  throw SystemError("cannot write " + path_ + ": " + std::strerror(err));
}

void AtomicFileWriter::Write(const void* data, size_t size) {
  const char* from = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, from, size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) Fail(errno);
    from += n;
    size -= static_cast<size_t>(n);
    written_ += static_cast<uint64_t>(n);
  }
}

void AtomicFileWriter::Commit() {
  if (::fsync(fd_) != 0) Fail(errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp_.c_str());
    throw SystemError("cannot write " + path_ + ": " + std::strerror(err));
  }
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp_.c_str());
    throw SystemError("cannot write " + path_ + ": " + std::strerror(err));
  }
  SyncDirectory(Parent(path_));
}

void WriteFileAtomic(const std::string& path, const std::string& contents) {
  AtomicFileWriter out(path);
  out.Write(contents.data(), contents.size());
  out.Commit();
}

}  // namespace saturn
