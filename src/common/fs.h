// File helpers: whole-file reads with a clear error, and atomic writes.
//
// Every file Saturn writes goes through WriteFileAtomic: the bytes go to a
// temporary file in the same directory, are flushed to disk, and the file is
// renamed over the target, so a reader (or a crash) never sees half a file.
//
//   std::string text = ReadFile("profile.csv");       // InputError if unreadable
//   WriteFileAtomic("plan.json", plan_json + "\n");  // all or nothing
#pragma once

#include <string>

namespace saturn {

// Reads a whole file; throws InputError naming the file and the OS reason.
std::string ReadFile(const std::string& path);

// Writes `contents` to `path` atomically (temp file + fsync + rename). Creates
// missing parent directories. Throws std::runtime_error on failure.
void WriteFileAtomic(const std::string& path, const std::string& contents);

// Creates a directory and its parents; throws std::runtime_error on failure.
void MakeDirectories(const std::string& path);

}  // namespace saturn
