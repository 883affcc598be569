#include "engine/device.h"

#include <ATen/Parallel.h>
#include <c10/core/CPUAllocator.h>
#include <dlfcn.h>
#include <malloc.h>
#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "common/error.h"
#include "engine/errors.h"

#ifdef SATURN_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>
#endif

namespace saturn::engine {
namespace {

thread_local bool t_host_scope = false;

#ifdef SATURN_CUDA
// The caching allocator's statistics are arrays indexed by StatType, whose
// first entry, AGGREGATE, sums over pools. The enum moved (from
// c10::cuda::CUDACachingAllocator in 1.13 to c10::CachingDeviceAllocator
// in 2.5); its value 0 did not.
constexpr size_t kAggregateStat = 0;
#endif

// Counts live and peak bytes of every CPU tensor, split into device and host
// memory by the HostMemoryScope of the allocating thread. Each allocation
// carries a small header in front of the data that remembers its size and
// kind, so frees are counted right whichever thread does them; the data
// pointer is its own context, as raw_allocate() requires.
class CountingAllocator final : public c10::Allocator {
 public:
  void Install() {
    std::call_once(installed_, [this] {
      base_ = c10::GetDefaultCPUAllocator();
      c10::SetCPUAllocator(this, /*priority=*/100);
    });
  }

  void SetHardLimit(int64_t bytes) { hard_limit_ = bytes; }
  int64_t Live() const { return device_live_.load(); }
  int64_t Peak() const { return device_peak_.load(); }
  void ResetPeak() { device_peak_.store(device_live_.load()); }

  // LibTorch 2.3 made allocate() non-const and added copy_data(); declaring
  // both forms without `override` fits every version: whichever the base
  // declares is overridden, the other is an unused overload.
  c10::DataPtr allocate(size_t bytes) const { return Allocate(bytes); }
  c10::DataPtr allocate(size_t bytes) { return Allocate(bytes); }
  void copy_data(void* dest, const void* src, std::size_t count) const {
    std::memcpy(dest, src, count);
  }
  c10::DeleterFnPtr raw_deleter() const { return &Delete; }

 private:
  // 64 bytes keep the data as aligned as the default allocator's.
  struct alignas(64) Header {
    size_t bytes;
    bool host;
    void* inner_context;
    c10::DeleterFnPtr inner_deleter;
  };

  static void Delete(void* data);

  c10::DataPtr Allocate(size_t bytes) const {
    auto* self = const_cast<CountingAllocator*>(this);
    if (bytes == 0) return c10::DataPtr(nullptr, nullptr, &Delete, c10::Device(c10::kCPU));
    bool host = t_host_scope;
    if (!host) self->CountDeviceBytes(static_cast<int64_t>(bytes));
    c10::DataPtr inner;
    try {
      inner = base_->allocate(bytes + sizeof(Header));
    } catch (...) {
      if (!host) self->device_live_ -= static_cast<int64_t>(bytes);
      throw;
    }
    auto* header = static_cast<Header*>(inner.get());
    c10::DeleterFnPtr inner_deleter = inner.get_deleter();
    *header = Header{bytes, host, inner.release_context(), inner_deleter};
    void* data = header + 1;
    return c10::DataPtr(data, data, &Delete, c10::Device(c10::kCPU));
  }

  void CountDeviceBytes(int64_t bytes) {
    int64_t live = device_live_.fetch_add(bytes) + bytes;
    int64_t limit = hard_limit_.load();
    if (limit > 0 && live > limit) {
      device_live_ -= bytes;
      throw OutOfMemoryError("out of memory: needs more than " + FormatBytes(live) +
                             " per device (allocating " + FormatBytes(bytes) + " with " +
                             FormatBytes(live - bytes) + " in use passed the hard limit)");
    }
    int64_t peak = device_peak_.load();
    while (live > peak && !device_peak_.compare_exchange_weak(peak, live)) {
    }
  }

  std::once_flag installed_;
  c10::Allocator* base_ = nullptr;
  std::atomic<int64_t> device_live_{0};
  std::atomic<int64_t> device_peak_{0};
  std::atomic<int64_t> hard_limit_{0};
};

CountingAllocator g_counting;

void CountingAllocator::Delete(void* data) {
  if (data == nullptr) return;
  Header* header = static_cast<Header*>(data) - 1;
  if (!header->host) g_counting.device_live_ -= static_cast<int64_t>(header->bytes);
  header->inner_deleter(header->inner_context);
}

// OpenBLAS keeps its own thread pool; give it the device's budget so that a
// device's matrix multiplies use exactly its threads.
void SetBlasThreads(int threads) {
  using SetThreads = void (*)(int);
  if (void* symbol = dlsym(RTLD_DEFAULT, "openblas_set_num_threads")) {
    reinterpret_cast<SetThreads>(symbol)(threads);
  }
}

}  // namespace

DeviceKind ParseDeviceKind(const std::string& text) {
  if (text == "cpu") return DeviceKind::kCpu;
  if (text == "cuda") return DeviceKind::kCuda;
  throw InputError("", 0, "--device-kind", "expected cpu or cuda, got " + Quote(text));
}

HostMemoryScope::HostMemoryScope() : previous_(t_host_scope) {
  t_host_scope = true;
}
HostMemoryScope::~HostMemoryScope() {
  t_host_scope = previous_;
}

Device::Device(const DeviceSpec& spec) : spec_(spec), capacity_bytes_(spec.capacity_bytes) {
  // Denormal floats flushed to zero on the CPU, before any thread pool
  // starts (threads inherit it). An operation on a denormal costs ~100x on
  // x86; late in training, AdamW's moments of a high learning rate
  // underflow into them and a task's steps slowed 2x past what its
  // profile's first steps measured (the quickstart's gpt-large-lr3.0e-3).
  at::globalContext().setFlushDenormal(true);
  at::set_num_threads(spec.threads);
  SetBlasThreads(spec.threads);
  if (!IsCuda()) {
    // Keep freed tensor memory in the process. By default glibc hands large
    // blocks back to the OS and faults them in again on the next step: ~2,400
    // page faults per step on bench/engine's GPT, 10% of its step time.
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    g_counting.Install();
    g_counting.SetHardLimit(capacity_bytes_ > 0 ? 2 * capacity_bytes_ + (int64_t{64} << 20) : 0);
    return;
  }
#ifdef SATURN_CUDA
  int count = static_cast<int>(c10::cuda::device_count());
  if (spec.index < 0 || spec.index >= count) {
    throw InputError("", 0, "--device-ids",
                     "cuda:" + std::to_string(spec.index) + " does not exist (" +
                         std::to_string(count) + " visible devices)");
  }
  c10::cuda::set_device(static_cast<c10::DeviceIndex>(spec.index));
  int64_t total = static_cast<int64_t>(at::cuda::getDeviceProperties(spec.index)->totalGlobalMem);
  if (capacity_bytes_ <= 0 || capacity_bytes_ > total) capacity_bytes_ = total;
  c10::cuda::CUDACachingAllocator::setMemoryFraction(
      static_cast<double>(capacity_bytes_) / static_cast<double>(total), spec.index);
#else
  throw InputError("", 0, "--device-kind",
                   "this saturn-worker was built with a CPU-only LibTorch; cuda is unavailable");
#endif
}

at::Device Device::TorchDevice() const {
  if (IsCuda()) return at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(spec_.index));
  return at::Device(at::kCPU);
}

at::TensorOptions Device::Options(at::ScalarType dtype) const {
  return at::TensorOptions().dtype(dtype).device(TorchDevice());
}

std::string Device::Describe() const {
  std::string text = (IsCuda() ? "cuda:" : "cpu:") + std::to_string(spec_.index) + " (" +
                     std::to_string(spec_.threads) + " threads";
  if (capacity_bytes_ > 0) text += ", " + FormatBytes(capacity_bytes_);
  return text + ")";
}

void PopulateForWrite(const at::Tensor& fresh) {
#ifdef MADV_POPULATE_WRITE
  if (!fresh.is_cpu() || fresh.nbytes() < (size_t{1} << 20)) return;  // small: not worth a call
  const uintptr_t page = 4096;
  auto data = reinterpret_cast<uintptr_t>(fresh.data_ptr());
  uintptr_t begin = (data + page - 1) & ~(page - 1);
  uintptr_t end = (data + fresh.nbytes()) & ~(page - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)fresh;
#endif
}

at::Tensor Device::ToDevice(const at::Tensor& tensor) const {
  if (IsCuda()) return tensor.to(TorchDevice(), /*non_blocking=*/true, /*copy=*/true);
  bool previous = t_host_scope;
  t_host_scope = false;
  at::Tensor copy =
      at::empty(tensor.sizes(), tensor.options().memory_format(at::MemoryFormat::Contiguous));
  t_host_scope = previous;
  PopulateForWrite(copy);
  copy.copy_(tensor);
  return copy;
}

at::Tensor Device::ToHost(const at::Tensor& tensor) const {
  HostMemoryScope host;
  if (IsCuda()) return tensor.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true);
  return tensor.clone(at::MemoryFormat::Contiguous);
}

at::Tensor Device::Place(const at::Tensor& tensor) const {
  return IsCuda() ? tensor.to(TorchDevice(), /*non_blocking=*/true) : tensor;
}

void Device::Synchronize() const {
#ifdef SATURN_CUDA
  if (IsCuda()) c10::cuda::device_synchronize();
#endif
}

int64_t Device::LiveBytes() const {
#ifdef SATURN_CUDA
  if (IsCuda()) {
    return c10::cuda::CUDACachingAllocator::getDeviceStats(spec_.index)
        .allocated_bytes[kAggregateStat]
        .current;
  }
#endif
  return g_counting.Live();
}

int64_t Device::PeakBytes() const {
#ifdef SATURN_CUDA
  if (IsCuda()) {
    return c10::cuda::CUDACachingAllocator::getDeviceStats(spec_.index)
        .allocated_bytes[kAggregateStat]
        .peak;
  }
#endif
  return g_counting.Peak();
}

void Device::ResetPeak() const {
#ifdef SATURN_CUDA
  if (IsCuda()) {
    c10::cuda::CUDACachingAllocator::resetPeakStats(spec_.index);
    return;
  }
#endif
  g_counting.ResetPeak();
}

bool IsOutOfMemory(const std::exception& error) {
  if (dynamic_cast<const OutOfMemoryError*>(&error) != nullptr) return true;
  std::string_view message = error.what();
  return message.find("out of memory") != std::string_view::npos;
}

std::string ErrorText(const std::exception& error) {
  if (const auto* c10_error = dynamic_cast<const c10::Error*>(&error)) {
    return c10_error->what_without_backtrace();
  }
  return error.what();
}

std::string FormatBytes(int64_t bytes) {
  char text[32];
  double value = static_cast<double>(bytes);
  if (bytes >= (int64_t{1} << 30)) {
    std::snprintf(text, sizeof text, "%.2f GiB", value / (1 << 30));
  } else if (bytes >= (1 << 20)) {
    std::snprintf(text, sizeof text, "%.1f MiB", value / (1 << 20));
  } else {
    std::snprintf(text, sizeof text, "%.1f KiB", value / 1024);
  }
  return text;
}

}  // namespace saturn::engine
