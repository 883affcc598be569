// Published speeds of well-known GPUs, for analytic estimates of trials
// that are not measured (engine/estimate.h): a cluster node's `gpu_type`
// names one, and its `tflops`, `tflops_fp32` and `link_gb_s` override or
// supply them (contracts/cluster.h, NodeSpeed).
//
//   const GpuSpec* h100 = FindGpuSpec("h100");   // case-insensitive; nullptr if unknown
//   double bf16 = h100->bf16_tflops;             // 989
#pragma once

#include <cctype>
#include <string>
#include <string_view>

namespace saturn {

struct GpuSpec {
  const char* name;
  // Dense peak of one GPU, TFLOP/s: bf16 (fp16 on V100, which has no bf16
  // tensor cores) and fp32 (no TF32: LibTorch multiplies fp32 in fp32 by
  // default).
  double bf16_tflops, fp32_tflops;
  // Bandwidth to another GPU of its node, GB/s one way (NVLink; PCIe for
  // cards without it).
  double link_gb_s;
};

// NVIDIA's data sheets (dense, without sparsity).
inline constexpr GpuSpec kGpuSpecs[] = {
    {"H100", 989.0, 67.0, 450.0},      // H100 SXM5, NVLink 4
    {"H100-SXM", 989.0, 67.0, 450.0},  //
    {"H200", 989.0, 67.0, 450.0},      // H100's compute, more memory
    {"A100", 312.0, 19.5, 300.0},      // A100 SXM4, NVLink 3
    {"V100", 125.0, 15.7, 150.0},      // V100 SXM2, fp16 tensor cores, NVLink 2
    {"L4", 121.0, 30.3, 32.0},         // PCIe 4.0 x16
    {"A10G", 70.0, 31.2, 32.0},        // AWS g5, PCIe 4.0 x16
};

inline const GpuSpec* FindGpuSpec(std::string_view name) {
  for (const GpuSpec& spec : kGpuSpecs) {
    std::string_view known = spec.name;
    if (known.size() != name.size()) continue;
    bool same = true;
    for (size_t i = 0; i < name.size() && same; ++i)
      same = std::toupper(static_cast<unsigned char>(name[i])) == known[i];
    if (same) return &spec;
  }
  return nullptr;
}

// "H100, H100-SXM, ..." for messages.
inline std::string GpuSpecNames() {
  std::string names;
  for (const GpuSpec& spec : kGpuSpecs)
    names += (names.empty() ? "" : ", ") + std::string(spec.name);
  return names;
}

}  // namespace saturn
