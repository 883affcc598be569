// The roofline model of a LoRA fine-tuning step behind the `lora` section,
// and the section itself. Everything below is a model: no GPU ran.
//
// A step of a pack sends R rows (the members' batches together) of L tokens
// through the frozen base of N parameters on g GPUs; each GPU takes
// ceil(R / g) of them (data parallel; fewer rows than GPUs: no row).
//   compute   FLOPs per GPU = (4 N + 6 N_lora) x rows x L: the frozen base's
//             forward (2 N per token) and activation gradients (2 N; no
//             weight gradients), the adapters' forward and both gradients
//             (6 per parameter per token), N_lora = members x 4 r d layers
//             (rank r on q and v of every layer, A and B each r x d);
//             attention's own FLOPs are left out.
//   memory    the base's weights read from HBM twice (forward and backward),
//             2 x 2 N bytes per GPU, whatever the technique: under fsdp each
//             GPU gathers every layer and its products read all of it.
//             Activation traffic is left out (it grows with rows like the
//             FLOPs, so it moves no step across the ridge here).
//   comm      ddp: a ring all-reduce of the adapters' fp32 gradients,
//             2 (g-1)/g x 4 N_lora bytes; fsdp: the same plus all-gathers of
//             the base for forward and for backward, 2 x (g-1)/g x 2 N
//             bytes, at NVLink's one-way bandwidth, not overlapped with
//             compute (an upper bound: FSDP can prefetch).
//   overhead  per step: kStepFixedS + kernel launches x kLaunchS: per
//             layer kBaseKernelsPerLayer and, per adapted map, alone its
//             products (kAdapterKernels), in a pack of one rank the
//             batched product once (kPackKernels, models/layers.cc) and
//             per member its gradients' copies out of the stacked one
//             (kPackMemberKernels), for the members of a GPU's rows (ddp
//             and fsdp split them); per member, its Adam step: in
//             multi-tensor ops (engine/optimizer.cc UpdateMany: kAdamOps,
//             each a launch per kTensorsPerLaunch of its adapter tensors,
//             and ddp's gradients zeroed in one more; fsdp's parts of its
//             shards likewise).
//             Packs mixing ranks (a product per rank, and picking rows by
//             position) are costed as one rank, as the profiler measures
//             copies of one member.
//   step      max(compute / (peak x kMfu), memory / HBM) + comm + overhead.
//   GPU memory  base 2 N bytes (fsdp: 2 N / g + two gathered layers) +
//             rows x kActivationBytes x L x d x layers + 16 bytes per adapter
//             parameter; a step fits if that is within the GPU's memory
//             less kReservedBytes.
#include "bench/paper/lora_grid.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <random>
#include <set>

#include "bench/paper/sections.h"
#include "bench/paper/table.h"
#include "common/clock.h"
#include "common/gpu_specs.h"
#include "contracts/profile.h"
#include "planner/pack_search.h"
#include "planner/planner.h"
#include "sim/simulator.h"

namespace saturn::bench {
namespace {

// NVIDIA H100 Tensor Core GPU data sheet (2023), H100 SXM: 80 GB HBM3 at
// 3.35 TB/s. (A100 SXM 80GB, for comparison: 2.04 TB/s.)
constexpr double kH100HbmBytesPerS = 3.35e12;
constexpr double kH100MemoryBytes = 80e9;
// Assumption: memory the CUDA context, NCCL's buffers and the caching
// allocator's fragmentation take from each GPU.
constexpr double kReservedBytes = 4e9;
// Assumption: model-FLOPs utilisation of the base's matrix products.
constexpr double kMfu = 0.5;
// Assumption: one kernel launch (CUDA's launch latency is a few µs).
constexpr double kLaunchS = 5e-6;
// Assumption: kernels of one transformer layer's forward and backward, about
// 20 forward (2 norms, the projections, attention, activation, residuals)
// and twice that backward.
constexpr double kBaseKernelsPerLayer = 60;
// An adapted map's adapters alone (models/layers.cc): x A, then B, the
// scale and the add (4 forward), and dB, d(xA), dA, dx and the scale's (5
// backward).
constexpr double kAdapterKernels = 9;
// A pack's batched product on one map for the members of one rank: the A's
// and B's stacked, two bmm's, the scales and the add (6 forward), and the
// bmm's four gradients and the scale's (5 backward).
constexpr double kPackKernels = 11;
// Per member and map in a pack: its A's and B's gradients copied out of
// the stacked ones.
constexpr double kPackMemberKernels = 2;
// engine/optimizer.cc's Adam (Adam::Step): the decay, two moments (two ops
// each), the square root, its scale, eps and the step.
constexpr double kAdamOps = 9;
// PyTorch's multi-tensor kernels (multi_tensor_apply) take a bounded list
// of tensors per launch: 110 for one list, 48 for three (Adam's addcmul
// and addcdiv take three).
constexpr double kTensorsPerLaunch = 48;
// Assumption: per step, data loading, the loss read back and the host
// code around the kernels.
constexpr double kStepFixedS = 2e-3;
// Assumption: a worker's start (process, CUDA and NCCL initialisation).
constexpr double kWorkerStartS = 30;
// Assumption: storage read bandwidth when loading the base's weights.
constexpr double kLoadBytesPerS = 2e9;
// Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
// Transformer Models", Sec. 4.1: a layer keeps s b h (34 + 5 a s / h) bytes
// of 16-bit activations; with flash attention the 5 a s / h term (the
// attention matrix) is not kept: 34 bytes per token and model dimension.
// An upper bound for a frozen base, whose linear maps need not keep inputs.
constexpr double kActivationBytes = 34;
constexpr double kBf16Bytes = 2;        // the base's weights
constexpr double kFp32Bytes = 4;        // adapter gradients all-reduced
constexpr double kAdamStateBytes = 16;  // fp32 weight, gradient, Adam m and v
// Adapted maps per layer (q and v, as the LoRA paper) x A and B.
constexpr double kAdapterMatrices = 4;
// Pack sizes measured on each row's curve.
constexpr int kPackSizes[] = {1, 2, 4, 8, 16};

// Kernels a step launches per layer for `members` of one rank.
double KernelsPerLayer(int members) {
  const double maps = kAdapterMatrices / 2;
  if (members <= 1) return kBaseKernelsPerLayer + maps * kAdapterKernels;
  return kBaseKernelsPerLayer + maps * (kPackKernels + members * kPackMemberKernels);
}
// Kernels of one member's optimizer step under `technique`.
double OptimizerKernels(const LoraBase& base, const std::string& technique) {
  const double tensors = kAdapterMatrices * base.layers;
  const double zero = technique == "ddp" ? 1 : 0;  // single and pipeline release them
  return (kAdamOps + zero) * std::ceil(tensors / kTensorsPerLaunch);
}

double AdapterParams(const LoraBase& base, int rank) {
  return kAdapterMatrices * rank * static_cast<double>(base.d_model) * base.layers;
}

}  // namespace

LoraGpu H100Sxm() {
  const GpuSpec* h100 = FindGpuSpec("H100");
  return {h100->bf16_tflops * 1e12, kH100HbmBytesPerS, h100->link_gb_s * 1e9,
          kH100MemoryBytes - kReservedBytes};
}

LoraStep LoraStepTime(const LoraBase& base, int rank, int members, const std::string& technique,
                      int gpus, const LoraGpu& gpu) {
  LoraStep s;
  const double rows = static_cast<double>(members) * base.batch;
  if (rows < gpus) return s;
  const double rows_per_gpu = std::ceil(rows / gpus);
  const double n = base.params;
  const double lora = members * AdapterParams(base, rank);
  const double tokens = rows_per_gpu * base.seq_len;
  s.compute_s = (4 * n + 6 * lora) * tokens / (gpu.peak_flops * kMfu);
  s.memory_s = 2 * kBf16Bytes * n / gpu.hbm_bytes_per_s;
  const double ring = gpus > 1 ? 2.0 * (gpus - 1) / gpus : 0.0;
  s.comm_s = ring * kFp32Bytes * lora / gpu.link_bytes_per_s;
  double weights = kBf16Bytes * n;
  if (technique == "fsdp") {
    s.comm_s += ring * kBf16Bytes * n / gpu.link_bytes_per_s;
    weights = kBf16Bytes * n / gpus + 2 * kBf16Bytes * n / base.layers;
  }
  s.overhead_s =
      kStepFixedS +
      (base.layers * KernelsPerLayer(static_cast<int>(std::ceil(double(members) / gpus))) +
       members * OptimizerKernels(base, technique)) *
          kLaunchS;
  s.seconds = std::max(s.compute_s, s.memory_s) + s.comm_s + s.overhead_s;
  const double activations =
      tokens * kActivationBytes * static_cast<double>(base.d_model) * base.layers;
  s.bytes_per_gpu = weights + activations + kAdamStateBytes * lora;
  s.fits = s.bytes_per_gpu <= gpu.memory_bytes;
  return s;
}

double LoraStartS(const LoraBase& base) {
  return kWorkerStartS + kBf16Bytes * base.params / kLoadBytesPerS;
}

std::string LoraProfileCsv(const std::vector<LoraTask>& tasks, const LoraGpu& gpu) {
  struct Config {
    const char* technique;
    int gpus;
  };
  const Config configs[] = {{"single", 1}, {"ddp", 2},  {"ddp", 4}, {"ddp", 8},
                            {"fsdp", 2},   {"fsdp", 4}, {"fsdp", 8}};
  std::string csv = "task,technique,gpus,runtime_s,step_s,steps,pack_class,pack_rows,pack_step_s\n";
  for (const LoraTask& t : tasks) {
    for (const Config& c : configs) {
      LoraStep alone = LoraStepTime(t.base, t.rank, 1, c.technique, c.gpus, gpu);
      if (!alone.fits) continue;  // the task does not fit: no row
      std::string curve;
      for (int k : kPackSizes) {
        LoraStep s = LoraStepTime(t.base, t.rank, k, c.technique, c.gpus, gpu);
        if (!s.fits) break;  // larger packs do not fit either: the curve ends
        curve += Fmt("%s%d:%.6g", curve.empty() ? "" : " ", k * t.base.batch, s.seconds);
      }
      csv += Fmt("%s,%s,%d,%.6f,%.6g,%d,%s,%d,%s\n", t.name.c_str(), c.technique, c.gpus,
                 LoraStartS(t.base) + t.steps * alone.seconds, alone.seconds, t.steps,
                 t.base.name.c_str(), t.base.batch, curve.c_str());
    }
  }
  return csv;
}

std::string LoraAssumptions(const LoraGpu& gpu) {
  return Fmt(
      "Roofline (bench/paper/lora_grid.cc): H100 SXM, %.0f TFLOP/s bf16 peak x MFU %.2f, HBM "
      "%.2f TB/s, NVLink %.0f GB/s one way, %.0f GB usable per GPU (80 GB less %.0f GB "
      "reserved); step = max(FLOPs / (peak x MFU), 2 x 2N bytes / HBM) + collectives (ddp: "
      "adapter gradients; fsdp: also the base gathered twice, not overlapped) + %.0f ms + "
      "launches of %.0f us (per layer %.0f alone, %.0f + %.0f per member in a pack; per member "
      "Adam's %.0f multi-tensor ops, a launch per %.0f tensors); activations %.0f bytes per "
      "token x d_model x layer (Korthikanti et al. 2022, flash attention); a worker starts in "
      "%.0f s + the base read at %.0f GB/s. Attention FLOPs and activation traffic left out.",
      gpu.peak_flops / 1e12, kMfu, gpu.hbm_bytes_per_s / 1e12, gpu.link_bytes_per_s / 1e9,
      gpu.memory_bytes / 1e9, kReservedBytes / 1e9, kStepFixedS * 1e3, kLaunchS * 1e6,
      KernelsPerLayer(1), KernelsPerLayer(2) - 2 * (KernelsPerLayer(3) - KernelsPerLayer(2)),
      KernelsPerLayer(3) - KernelsPerLayer(2), kAdamOps, kTensorsPerLaunch, kActivationBytes,
      kWorkerStartS, kLoadBytesPerS / 1e9);
}

namespace {

// GPT-2 small (Radford et al. 2019; Hugging Face `gpt2` config: n_embd 768,
// n_layer 12), 124M parameters. L and b from the LoRA paper's E2E recipe
// (microsoft/LoRA examples/NLG: --train_batch_size 8 --seq_len 512).
LoraBase Gpt2Small() {
  return {"gpt2-small", 124e6, 768, 12, 512, 8};
}
// That recipe's 5 epochs over E2E's 42,061 training examples at batch 8; the
// grid's second dataset (WebNLG) is given the same steps (equal steps).
constexpr int kE2eSteps = 5 * 42061 / 8;
// Llama-3.1-8B (Meta's model card; config: hidden_size 4096, 32 layers) and
// Qwen2.5-7B (Qwen2.5 technical report; config: hidden_size 3584, 28
// layers). Assumption: L and b as GPT-2's recipe.
LoraBase Llama31_8B() {
  return {"llama-3.1-8b", 8.0e9, 4096, 32, 512, 8};
}
LoraBase Qwen25_7B() {
  return {"qwen2.5-7b", 7.6e9, 3584, 28, 512, 8};
}
// Assumption: steps of the 7-8B grids (the mixed grid's cycle through these).
constexpr int kLlamaSteps = 2000;
constexpr int kMixedSteps[] = {500, 1000, 2000};
// A grid's learning rates (they name tasks; a step's time does not depend
// on them) and ranks (the E2E recipe's 4, and 8).
const char* const kLearningRates[] = {"1e-4", "2e-4", "5e-4", "1e-3"};
constexpr int kRanks[] = {4, 8};
constexpr int kNodeGpus = 8;

struct Grid {
  std::string label, what;
  std::vector<LoraTask> tasks;
};

// `base`'s tasks: every learning rate x rank (x `datasets` when given).
void AddTasks(std::vector<LoraTask>& tasks, const LoraBase& base,
              const std::vector<std::string>& datasets, bool cycle_steps, int steps) {
  for (const std::string& d : datasets) {
    for (const char* lr : kLearningRates) {
      for (int r : kRanks) {
        if (cycle_steps) steps = kMixedSteps[tasks.size() % std::size(kMixedSteps)];
        std::string name = base.name + "-lr" + lr + "-r" + std::to_string(r);
        tasks.push_back({d.empty() ? name : name + "-" + d, base, r, steps});
      }
    }
  }
}

std::vector<Grid> Grids() {
  std::vector<Grid> grids(3);
  grids[0] = {"gpt2-16", "GPT-2 small, 4 lr x 2 ranks x 2 datasets, equal steps", {}};
  AddTasks(grids[0].tasks, Gpt2Small(), {"e2e", "webnlg"}, false, kE2eSteps);
  grids[1] = {"llama8b-8", "Llama-3.1-8B, 4 lr x 2 ranks, equal steps", {}};
  AddTasks(grids[1].tasks, Llama31_8B(), {""}, false, kLlamaSteps);
  grids[2] = {
      "mixed-12", "8 Llama-3.1-8B + 4 Qwen2.5-7B (2 lr x 2 ranks), steps 500/1000/2000", {}};
  AddTasks(grids[2].tasks, Llama31_8B(), {""}, true, 0);
  std::vector<LoraTask> qwen;
  AddTasks(qwen, Qwen25_7B(), {""}, true, 0);
  qwen.resize(4);
  grids[2].tasks.insert(grids[2].tasks.end(), qwen.begin(), qwen.end());
  return grids;
}

Cluster OneH100Node() {
  ClusterNode node;
  node.name = "node0";
  node.gpus = kNodeGpus;
  node.gpu_memory_gib = kH100MemoryBytes / (1024.0 * 1024 * 1024);
  node.device = "cuda";
  node.gpu_type = "H100";
  Cluster c;
  c.nodes.push_back(node);
  return c;
}

void Print(Report& report, const std::string& markdown_text) {
  std::printf("%s", markdown_text.c_str());
  std::fflush(stdout);
  report.markdown += markdown_text;
}

// The model's figures: each base's step (ms) at 1..16 members per
// technique, and the memory per GPU of one member.
Table RooflineTable(const LoraGpu& gpu) {
  Table t({"base", "technique", "GPUs", "k=1 ms", "k=2 ms", "k=4 ms", "k=8 ms", "k=16 ms",
           "k=1 GB/GPU", "k=1 bound"});
  for (const LoraBase& base : {Gpt2Small(), Llama31_8B(), Qwen25_7B()}) {
    for (const auto& [technique, gpus] : std::vector<std::pair<std::string, int>>{
             {"single", 1}, {"ddp", 2}, {"ddp", 8}, {"fsdp", 2}, {"fsdp", 8}}) {
      std::vector<std::string> row = {base.name, technique, std::to_string(gpus)};
      for (int k : kPackSizes) {
        LoraStep s = LoraStepTime(base, kRanks[1], k, technique, gpus, gpu);
        row.push_back(s.fits ? Fmt("%.1f", 1e3 * s.seconds) : "-");
      }
      LoraStep one = LoraStepTime(base, kRanks[1], 1, technique, gpus, gpu);
      row.push_back(one.fits ? Fmt("%.1f", one.bytes_per_gpu / 1e9) : "-");
      const double terms[] = {one.compute_s, one.memory_s, one.comm_s, one.overhead_s};
      const char* names[] = {"compute", "HBM", "comm", "overhead"};
      row.push_back(names[std::max_element(std::begin(terms), std::end(terms)) - terms]);
      t.Add(row);
    }
  }
  return t;
}

struct GridResult {
  double packed_s = 0, unpacked_s = 0, current_s = 0, wall_s = 0;
  std::string sizes, describe;
  int packs = 0;
};

GridResult PlanGrid(const Grid& grid, const LoraGpu& gpu) {
  SteadyClock clock;
  const double t0 = clock.Now();
  const Cluster cluster = OneH100Node();
  const std::string source = "lora-" + grid.label + ".csv";
  ProfileTable profile = ParseProfileCsv(LoraProfileCsv(grid.tasks, gpu), source, cluster);
  Problem problem = ProblemFromProfile(profile, cluster);
  PackTerms terms = PackTermsFromProfile(profile, problem, source);
  PlanRequest request;
  request.solver = "auto";
  request.time_limit_s = 10;
  request.work_scale = 0.2;
  request.anytime = false;
  request.seed = 1;
  PackedPlanResult packed = PlanWithPacks(problem, terms, request, true);
  PackedPlanResult unpacked = PlanWithPacks(problem, terms, request, false);
  PlanRequest current = request;
  current.solver = "current-practice";
  GridResult r;
  r.packed_s = packed.result.plan.makespan_s;
  r.unpacked_s = unpacked.result.plan.makespan_s;
  r.current_s = RunPlanner(problem, current).plan.makespan_s;
  for (const std::vector<int>& g : packed.packing) {
    if (g.size() < 2) continue;
    ++r.packs;
    r.sizes += (r.sizes.empty() ? "" : ",") + std::to_string(g.size());
  }
  if (r.sizes.empty()) r.sizes = "-";
  r.describe = DescribePacks(problem, terms, packed, false);
  r.wall_s = clock.Now() - t0;
  return r;
}

// A grid under ASHA, simulated (sim/simulator.h): every task evaluates
// every eighth of the shortest task's steps, ASHA (grace that, reduction
// factor 2) judges the whole grid as one group, and each task reports a
// quality drawn from `seed`, fixed over its steps (the rule's ranking, not
// a learning curve). Truth = belief; introspection every minute, re-plans
// by auto (limit 2 s, work scale 0.2) switching for a gain of 30 s, a
// restart costing a start (loading the base). Packed: packs chosen as `saturn
// simulate` chooses them (ChooseSimPacks), members leaving where the rule
// stops them; current practice: each task on the whole node in turn, the
// next starting when the rule stops one. `seed` draws the qualities.
struct AshaResult {
  double packed_s = 0, unpacked_s = 0, current_s = 0;
  int packs = 0, stopped = 0;
  std::string described;  // the packs, as DescribePacks has them
};

AshaResult SimulateAsha(const Grid& grid, const LoraGpu& gpu, uint64_t seed) {
  const Cluster cluster = OneH100Node();
  const std::string source = "lora-" + grid.label + ".csv";
  ProfileTable profile = ParseProfileCsv(LoraProfileCsv(grid.tasks, gpu), source, cluster);
  Problem problem = ProblemFromProfile(profile, cluster);
  PackTerms terms = PackTermsFromProfile(profile, problem, source);
  long shortest = 1L << 40;
  for (const LoraTask& t : grid.tasks)
    shortest = std::min<long>(shortest, t.steps);
  const long every = std::max(1L, shortest / 8);
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> quality(0.0, 1.0);
  std::vector<SimEarlyStop> stops(static_cast<size_t>(problem.NumTasks()));
  for (int j = 0; j < problem.NumTasks(); ++j) {
    SimEarlyStop& e = stops[static_cast<size_t>(j)];
    e.spec.rule = "asha";
    e.spec.grace_steps = every;
    e.spec.reduction_factor = 2;
    e.group = "grid";
    e.steps = static_cast<long>(terms.tasks[static_cast<size_t>(j)].steps);
    e.eval_every = every;
    e.curve = {{0, quality(rng)}};
    const Option& first = problem.tasks[static_cast<size_t>(j)].options.front();
    const double training = e.steps * terms.curves[static_cast<size_t>(j)][0].step_s;
    e.fixed_fraction = std::clamp(1.0 - training / first.runtime_s, 0.0, 0.9);
  }
  SimOptions o;
  o.early_stop = stops;
  o.interval_s = 60;
  o.policy.threshold_s = 30;
  o.policy.switch_cost_s = LoraStartS(grid.tasks.front().base);  // a restart loads the base
  o.record_events = false;
  o.policy.solver = "auto";
  o.policy.time_limit_s = 2;
  o.policy.work_scale = 0.2;
  o.policy.seed = seed;
  const std::vector<std::vector<double>> truth = TruthEqualsBelief(problem);
  AshaResult r;
  SimResult unpacked = Simulate(problem, truth, {}, o);
  r.unpacked_s = unpacked.makespan_s;
  PlanRequest request(o.policy);
  request.time_limit_s = 10;
  request.anytime = false;
  o.packs = ChooseSimPacks(problem, terms, stops, {}, request, &r.described);
  SimResult packed = Simulate(problem, truth, {}, o);
  r.packed_s = packed.makespan_s;
  std::set<std::string> packs;
  for (const SimTaskResult& t : packed.tasks) {
    if (!t.pack.empty()) packs.insert(t.pack);
    r.stopped += t.status == TaskStatus::kStopped ? 1 : 0;
  }
  r.packs = static_cast<int>(packs.size());
  o.packs = nullptr;
  o.policy.solver = "current-practice";
  o.introspection = false;
  r.current_s = Simulate(problem, truth, {}, o).makespan_s;
  return r;
}

// The grids again under ASHA: simulated runs, not plans; the mean over
// kAshaSeeds draws of the tasks' qualities (which tasks the rule stops,
// and when, depends on them).
constexpr int kAshaSeeds = 5;

void AshaTable(Report& report, const LoraGpu& gpu) {
  Table t({"grid", "tasks", "stopped", "packed h", "unpacked h", "current-practice h",
           "unpacked / packed", "current practice / packed", "packs"});
  std::string described;
  for (const Grid& grid : Grids()) {
    AshaResult sum;
    for (int seed = 1; seed <= kAshaSeeds; ++seed) {
      AshaResult r = SimulateAsha(grid, gpu, static_cast<uint64_t>(seed));
      if (seed == 1) described += grid.label + ", seed 1:\n" + r.described + "\n";
      sum.packed_s += r.packed_s / kAshaSeeds;
      sum.unpacked_s += r.unpacked_s / kAshaSeeds;
      sum.current_s += r.current_s / kAshaSeeds;
      sum.packs += r.packs;
      sum.stopped += r.stopped;
    }
    t.Add({grid.label, std::to_string(grid.tasks.size()),
           Fmt("%.1f", static_cast<double>(sum.stopped) / kAshaSeeds),
           Fmt("%.2f", sum.packed_s / 3600), Fmt("%.2f", sum.unpacked_s / 3600),
           Fmt("%.2f", sum.current_s / 3600), Fmt("%.2fx", sum.unpacked_s / sum.packed_s),
           Fmt("%.2fx", sum.current_s / sum.packed_s),
           Fmt("%.1f", static_cast<double>(sum.packs) / kAshaSeeds)});
  }
  Print(report,
        "\nUnder ASHA (simulated runs, the mean of " + std::to_string(kAshaSeeds) +
            " seeds: every task evaluates every eighth of the shortest task's steps, ASHA with "
            "that grace and reduction factor 2 over the whole grid, each task's quality drawn "
            "from the seed; packs chosen on expected work, members leaving where the rule stops "
            "them; re-planned every minute, a switch worth 30 s, a restart costing a start; "
            "`stopped` and `packs`: in the packed runs):\n\n");
  std::printf("%s\n%s", t.Text().c_str(), described.c_str());
  report.markdown += t.Markdown() + "\nThe packs of the first seed:\n\n```\n" + described + "```\n";
}

}  // namespace

void LoraSection(Lab& lab, Report& report) {
  (void)lab;  // the same in every mode: cheap
  const LoraGpu gpu = H100Sxm();
  const std::string intro =
      "Simulated, not measured: LoRA grids on one node of 8 H100 SXM, each task's profile (single "
      "on 1 GPU, ddp and fsdp on 2/4/8 where they fit, pack_step_s at 1/2/4/8/16 members' rows "
      "up to the last that fits) from a roofline model of a LoRA step. Planned by auto (limit 10 "
      "s, work scale 0.2, not anytime) with packs (PlanWithPacks) and without, and by "
      "current-practice (each task alone on the whole node, one after another). Speed-ups: "
      "unpacked / packed and current practice / packed (planned makespans).\n\n" +
      LoraAssumptions(gpu);
  std::printf("\n== LoRA grids: packed vs unpacked Saturn vs current practice ==\n%s\n\n",
              intro.c_str());
  report.markdown +=
      "\n## LoRA grids: packed vs unpacked Saturn vs current practice\n\n" + intro + "\n\n";
  Table roofline = RooflineTable(gpu);
  Print(report, "Roofline step times (rank 8; k members of b rows each; -: does not fit):\n\n");
  std::printf("%s\n", roofline.Text().c_str());
  report.markdown += roofline.Markdown() + "\n";
  Table t({"grid", "tasks", "packed h", "unpacked h", "current-practice h", "unpacked / packed",
           "current practice / packed", "packs", "pack sizes", "plan s"});
  std::string described;
  for (const Grid& grid : Grids()) {
    GridResult r = PlanGrid(grid, gpu);
    const double vs_unpacked = r.unpacked_s / r.packed_s, vs_current = r.current_s / r.packed_s;
    t.Add({grid.label, std::to_string(grid.tasks.size()), Fmt("%.2f", r.packed_s / 3600),
           Fmt("%.2f", r.unpacked_s / 3600), Fmt("%.2f", r.current_s / 3600),
           Fmt("%.2fx", vs_unpacked), Fmt("%.2fx", vs_current), std::to_string(r.packs), r.sizes,
           Fmt("%.1f", r.wall_s)});
    described += grid.label + " (" + grid.what + "):\n" + r.describe + "\n";
    report.targets.push_back(
        {"lora " + grid.label +
             " (simulated, roofline profiles): packed >= 1.3x faster than unpacked and >= 2x "
             "faster than current practice",
         vs_unpacked >= 1.3 && vs_current >= 2.0,
         Fmt("unpacked / packed %.2fx, current practice / packed %.2fx", vs_unpacked, vs_current)});
  }
  std::printf("%s\n%s", t.Text().c_str(), described.c_str());
  report.markdown +=
      t.Markdown() + "\nThe packs, as `saturn plan` describes them:\n\n```\n" + described + "```\n";
  AshaTable(report, gpu);
}

}  // namespace saturn::bench
