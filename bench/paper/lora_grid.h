// LoRA grids for paper_bench's `lora` section: profiles (Contract 2 with the
// pack columns, planner/packing.h) of LoRA fine-tuning tasks on one node of
// 8 H100s, made by a roofline model of a LoRA step (lora_grid.cc documents
// every constant), then planned by the real planner with and without packs
// and by current practice.
//
//   LoraBase llama = {"llama-3.1-8b", 8.0e9, 4096, 32, 512, 8};
//   LoraStep s = LoraStepTime(llama, /*rank=*/8, /*members=*/2, "ddp", 2, H100Sxm());
//   if (s.fits) use(s.seconds, s.bytes_per_gpu);
//   std::string csv = LoraProfileCsv({{"a", llama, 8, 2000}, ...}, H100Sxm());
#pragma once

#include <string>
#include <vector>

namespace saturn::bench {

// A frozen base model and how each of its tasks feeds it. Its name is the
// tasks' pack class: tasks of one base may share a pack.
struct LoraBase {
  std::string name;
  double params = 0;  // N, frozen, bf16
  int d_model = 0;
  int layers = 0;
  int seq_len = 0;  // L, tokens per sequence
  int batch = 0;    // b, sequences (rows) each task sends per step
};

struct LoraTask {
  std::string name;
  LoraBase base;
  int rank = 0;  // adapters of rank r on q and v of every layer
  int steps = 0;
};

// What the model needs of a GPU, in bytes and seconds.
struct LoraGpu {
  double peak_flops = 0;        // dense bf16, FLOP/s
  double hbm_bytes_per_s = 0;   // memory bandwidth
  double link_bytes_per_s = 0;  // to another GPU of the node, one way
  double memory_bytes = 0;      // usable for the task
};
// H100 SXM5: peak and NVLink from common/gpu_specs.h, HBM from NVIDIA's data sheet.
LoraGpu H100Sxm();

// One step of a pack of `members` tasks alike (each `base.batch` rows,
// adapters of `rank`; 1: the task alone) with `technique` (single, ddp,
// fsdp) on `gpus` GPUs. `fits` is false when the busiest GPU's memory
// exceeds the GPU's, or when there are fewer rows than GPUs.
struct LoraStep {
  bool fits = false;
  double seconds = 0;
  double bytes_per_gpu = 0;
  double compute_s = 0, memory_s = 0, comm_s = 0, overhead_s = 0;  // the terms
};
LoraStep LoraStepTime(const LoraBase& base, int rank, int members, const std::string& technique,
                      int gpus, const LoraGpu& gpu);

// A worker's fixed cost before its first step: start and loading the base.
double LoraStartS(const LoraBase& base);

// The profile: a row per task and (technique, GPU count) that fits, from
// single on 1 GPU, ddp and fsdp on 2, 4 and 8, with step_s, steps,
// pack_class, pack_rows and pack_step_s at 1, 2, 4, 8 and 16 members' rows
// (up to the last that fits).
std::string LoraProfileCsv(const std::vector<LoraTask>& tasks, const LoraGpu& gpu);

// One line: the roofline's assumptions (MFU, bandwidths, overheads).
std::string LoraAssumptions(const LoraGpu& gpu);

}  // namespace saturn::bench
