// A table's CSV bytes in memory, and big buffers, on huge pages where the
// kernel gives them: reading a CSV of hundreds of MB otherwise spends much
// of its time in page faults (one per 4 KiB).
//
//   CsvText text(path);                       // ReadFile's errors
//   Crc32c(text.view().data(), text.view().size());
//   std::vector<float> v;
//   ReserveHuge(v, rows * features);          // then fill it
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace saturn::table {

// A file's bytes, read in one block (by a few threads at once for a large
// file; a pipe or a device as ReadFile reads it, with its errors).
class CsvText {
 public:
  explicit CsvText(const std::string& path);
  CsvText(const CsvText&) = delete;
  CsvText& operator=(const CsvText&) = delete;
  std::string_view view() const {
    return block_ ? std::string_view(block_.get(), size_) : std::string_view(piped_);
  }

 private:
  std::unique_ptr<char[]> block_;
  size_t size_ = 0;
  std::string piped_;
};

// Asks the kernel for huge pages for [data, data + bytes) (a hint: nothing
// happens where it has none, or for a few MB).
void AdviseHugePages(const void* data, size_t bytes);

// Runs each(0) .. each(n - 1) at once, on threads (each(0) on the caller's),
// and then rethrows the exception of the first that threw, if any.
void RunParts(size_t n, const std::function<void(size_t)>& each);

// v.reserve(n), on huge pages.
template <typename T>
void ReserveHuge(std::vector<T>& v, size_t n) {
  v.reserve(n);
  AdviseHugePages(v.data(), v.capacity() * sizeof(T));
}

}  // namespace saturn::table
