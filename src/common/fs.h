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

#include <string>

namespace saturn {

// Reads a whole file; throws InputError naming the file and the OS reason.
std::string ReadFile(const std::string& path);

// Writes `contents` to `path` atomically (temp file + fsync + rename + fsync
// of the directory). Creates missing parent directories. Throws
// std::runtime_error on failure (a full disk too: nothing is left behind).
void WriteFileAtomic(const std::string& path, const std::string& contents);

// Writes `contents` to `path` in place and flushes it to disk (no rename:
// for files of a folder that is itself renamed into place). Throws
// std::runtime_error on failure, removing what it wrote.
void WriteFileDurable(const std::string& path, const std::string& contents);

// Flushes a directory's entries (created, renamed, removed files) to disk.
// Throws std::runtime_error on failure.
void SyncDirectory(const std::string& path);

// Creates a directory and its parents; throws std::runtime_error on failure.
void MakeDirectories(const std::string& path);

}  // namespace saturn
