#include "table/csv_text.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <exception>
#include <thread>
#include <vector>

#include "common/error.h"
#include "common/fs.h"

namespace saturn::table {

void AdviseHugePages(const void* data, size_t bytes) {
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 2 * kHuge) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) & ~(kHuge - 1);
#ifdef MADV_HUGEPAGE
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#endif
}

namespace {

// Files smaller than this are read by one thread.
constexpr size_t kMinThreadBytes = size_t{16} << 20;
constexpr size_t kMaxThreads = 4;

// Reads [offset, offset + bytes) of `fd` into `out`; false where the file
// ends before.
bool ReadRange(int fd, char* out, size_t bytes, size_t offset, const std::string& path) {
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::pread(fd, out + got, bytes - got, static_cast<off_t>(offset + got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputError(path, 0, "", "error while reading file");
    if (n == 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

void RunParts(size_t n, const std::function<void(size_t)>& each) {
  std::vector<std::exception_ptr> errors(n);
  std::vector<std::thread> threads;
  auto run = [&](size_t k) {
    try {
      each(k);
    } catch (...) {
      errors[k] = std::current_exception();
    }
  };
  for (size_t k = 1; k < n; ++k)
    threads.emplace_back(run, k);
  if (n > 0) run(0);
  for (std::thread& t : threads)
    t.join();
  for (const std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

CsvText::CsvText(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    if (fd >= 0) ::close(fd);
    piped_ = ReadFile(path);  // its errors, and pipes
    return;
  }
  size_ = static_cast<size_t>(st.st_size);
  block_.reset(new char[size_ + 1]);
  AdviseHugePages(block_.get(), size_ + 1);
  const size_t hardware = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = std::min({hardware, kMaxThreads, size_ / kMinThreadBytes + 1});
  std::vector<char> whole(threads, 0);
  try {
    RunParts(threads, [&](size_t k) {
      size_t begin = size_ * k / threads, end = size_ * (k + 1) / threads;
      whole[k] = ReadRange(fd, block_.get() + begin, end - begin, begin, path);
    });
    // One byte more: the file did not grow meanwhile.
    if (ReadRange(fd, block_.get() + size_, 1, size_, path)) whole[0] = 0;
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  if (std::find(whole.begin(), whole.end(), 0) != whole.end()) {  // it changed: read it again
    block_.reset();
    piped_ = ReadFile(path);
  }
}

}  // namespace saturn::table
