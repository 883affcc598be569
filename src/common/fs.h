// File helpers: whole-file reads with a clear error, and atomic writes.
//
// Every file Saturn writes goes through WriteFileAtomic: the bytes go to a
// temporary file in the same directory, are flushed to disk, the file is
// renamed over the target and the directory is flushed too, so a reader (or
// a crash, or a power cut after it returned) never sees half a file.
// Folders published as a whole (checkpoints) are filled with
// WriteFileDurable and renamed into place after SyncDirectory.
//
//   std::string text = ReadFile("profile.csv");       // InputError if unreadable
//   WriteFileAtomic("plan.json", plan_json + "\n");  // all or nothing
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace saturn {

// Reads a whole file; throws InputError naming the file and the OS reason.
std::string ReadFile(const std::string& path);

// Writes `contents` to `path` atomically (temp file + fsync + rename + fsync
// of the directory). Creates missing parent directories. Throws
// std::runtime_error on failure (a full disk too: nothing is left behind).
void WriteFileAtomic(const std::string& path, const std::string& contents);

// WriteFileAtomic without flushing to disk: readers see all or nothing, but
// a crash may lose it. For many small files made durable at once by a later
// SyncFileSystem (an array's hundreds of members' models, before its
// result names them).
void WriteFileAtomicUnflushed(const std::string& path, const std::string& contents);

// Flushes the file system holding `path` (syncfs): everything written to it
// before is on disk. Throws std::runtime_error on failure.
void SyncFileSystem(const std::string& path);

// Writes `contents` to `path` in place and flushes it to disk (no rename:
// for files of a folder that is itself renamed into place). Throws
// std::runtime_error on failure, removing what it wrote.
void WriteFileDurable(const std::string& path, const std::string& contents);

// WriteFileAtomic for contents written piece by piece (a multi-gigabyte
// model): a temporary file beside `path`, renamed over it by Commit();
// destroyed uncommitted (an error on the way), it removes the temporary.
// Write and Commit throw SystemError naming `path` (a full disk).
//
//   AtomicFileWriter out("model.pt");
//   out.Write(header.data(), header.size());  // ... any number of times
//   out.Commit();
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  void Write(const void* data, size_t size);
  uint64_t Written() const { return written_; }
  void Commit();

 private:
  [[noreturn]] void Fail(int err);
  std::string path_, tmp_;
  int fd_ = -1;
  uint64_t written_ = 0;
};

// Flushes a directory's entries (created, renamed, removed files) to disk.
// Throws std::runtime_error on failure.
void SyncDirectory(const std::string& path);

// Creates a directory and its parents; throws std::runtime_error on failure.
void MakeDirectories(const std::string& path);

}  // namespace saturn
