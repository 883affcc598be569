// Devices and memory metering.
//
// A device is a CUDA device where there is one, otherwise a CPU device: this
// process, with a thread budget and a declared memory capacity. One process
// serves one device, so per-process counters are per-device counters.
//
// Metering. On CPU, a counting allocator wraps LibTorch's default CPU
// allocator and counts the live and peak bytes of every tensor. Memory that a
// technique keeps "in host memory" (spilled parameters, offloaded shards) is
// allocated inside a HostMemoryScope and counted apart, so that device memory
// means the same on CPU as on a GPU. On CUDA the caching allocator's
// statistics are used and host tensors are ordinary (pinned) CPU tensors.
//
// Capacity. Going over the declared capacity is an out-of-memory result, not
// a crash: techniques check OverCapacity() after each step (a collective
// decision, so ranks stay in step). As a safety net against a configuration
// far too big, an allocation that would pass the hard limit (twice the
// capacity plus 64 MiB) throws OutOfMemoryError at once.
//
//   Device device(DeviceSpec{.kind = DeviceKind::kCpu, .threads = 2,
//                            .capacity_bytes = 1 << 30});
//   at::Tensor w = device.ToDevice(host_weight);     // counted as device memory
//   { HostMemoryScope host; cache = at::empty({n}); } // counted as host memory
//   if (device.PeakBytes() > device.CapacityBytes()) ...;
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

namespace saturn::engine {

enum class DeviceKind { kCpu, kCuda };

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;               // CUDA device index; a label only on CPU
  int threads = 1;             // intra-op threads of this process
  int64_t capacity_bytes = 0;  // 0: unlimited on CPU, the physical size on CUDA
};

// Parses "cpu" or "cuda"; InputError otherwise.
DeviceKind ParseDeviceKind(const std::string& text);

// Allocations on this thread count as host memory while a scope is alive.
class HostMemoryScope {
 public:
  HostMemoryScope();
  ~HostMemoryScope();
  HostMemoryScope(const HostMemoryScope&) = delete;
  HostMemoryScope& operator=(const HostMemoryScope&) = delete;

 private:
  bool previous_;
};

// Faults in the pages of fresh host memory (a tensor just allocated) in one
// call rather than one fault per page as a copy touches them: on this
// project's VMs a page fault costs ~15 us, so filling 500 MB page by page
// takes seconds, populated ~0.15 s. A no-op where the kernel predates
// MADV_POPULATE_WRITE (Linux 5.14) or for memory that is not the CPU's.
void PopulateForWrite(const at::Tensor& fresh);

class Device {
 public:
  // Sets the thread budget and installs metering; one Device per process.
  explicit Device(const DeviceSpec& spec);

  const DeviceSpec& Spec() const { return spec_; }
  bool IsCuda() const { return spec_.kind == DeviceKind::kCuda; }
  at::Device TorchDevice() const;
  at::TensorOptions Options(at::ScalarType dtype = at::kFloat) const;
  // "cpu:0 (2 threads, 1.0 GiB)" for messages.
  std::string Describe() const;

  // A device copy of a tensor that lives anywhere (the copy is always new).
  at::Tensor ToDevice(const at::Tensor& tensor) const;
  // A host-memory copy of a tensor.
  at::Tensor ToHost(const at::Tensor& tensor) const;
  // Data for the device: moved on CUDA, the same tensor on CPU.
  at::Tensor Place(const at::Tensor& tensor) const;
  // Waits for queued device work (timing on CUDA).
  void Synchronize() const;

  int64_t CapacityBytes() const { return capacity_bytes_; }
  int64_t LiveBytes() const;
  int64_t PeakBytes() const;
  void ResetPeak() const;
  bool OverCapacity() const { return capacity_bytes_ > 0 && PeakBytes() > capacity_bytes_; }

 private:
  DeviceSpec spec_;
  int64_t capacity_bytes_ = 0;
};

// True for the out-of-memory errors of either device kind, whatever layer
// (ATen, autograd, OpenMP) rethrew them.
bool IsOutOfMemory(const std::exception& error);

// An exception's message without LibTorch's C++ backtrace.
std::string ErrorText(const std::exception& error);

// "1.50 GiB" style sizes for messages.
std::string FormatBytes(int64_t bytes);

}  // namespace saturn::engine
