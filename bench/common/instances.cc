#include "bench/common/instances.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>

#include "common/csv.h"
#include "common/format.h"
#include "common/fs.h"

namespace saturn::bench {
namespace {

// Device and interconnect of an A100-40GB node (AWS p4d), as in the paper.
struct Hardware {
  double memory = 40e9;          // bytes per device
  double flops = 312e12 * 0.45;  // bf16 peak x utilisation at large per-device batches
  double nvlink = 150e9;         // bytes/s of collective bus bandwidth
  double pcie = 20e9;            // bytes/s host <-> device
  double host_optimizer = 10e9;  // bytes/s of optimizer state updated on the host
};

struct Model {
  std::string name;
  double params;
  int layers;
  double flops_per_sample;  // forward + backward
  double act_full;          // activation bytes per sample, no checkpointing
  double act_ckpt;          // with activation checkpointing
  double samples;           // samples per epoch
  int epochs;
  double loader_cap;       // samples/s one node can feed (data loading), inf if none
  double half_efficiency;  // per-device samples at which a device reaches half its
                           // large-batch throughput (small GEMMs, launch overheads)
  // Transformers (tensor parallelism splits their layers): tokens per
  // sample, width and attention heads; 0 for other models.
  double seq = 0, width = 0;
  int heads = 0;
};

constexpr double kInf = std::numeric_limits<double>::infinity();

Model Gpt2() {
  // GPT-2 XL: 1.56B parameters, 48 layers, d=1600, sequences of 1024 tokens.
  double s = 1024, d = 1600, L = 48;
  Model m{"gpt2",   1.56e9, 48,   6 * 1.56e9 * s, 34 * s * d * L, 2 * s * d * L + 34 * s * d,
          20e6 / s, 10,     kInf, 2048 / s};
  m.seq = s;
  m.width = d;
  m.heads = 25;
  return m;
}
Model GptJ() {
  double s = 1024, d = 4096, L = 28;
  Model m{"gptj",   6.05e9, 28,   6 * 6.05e9 * s, 34 * s * d * L, 2 * s * d * L + 34 * s * d,
          20e6 / s, 10,     kInf, 2048 / s};
  m.seq = s;
  m.width = d;
  m.heads = 16;
  return m;
}
Model VitG() {
  // ViT-G/14: 1.8B parameters, 48 layers, d=1664, 257 tokens per image.
  double s = 257, d = 1664, L = 48;
  Model m{"vitg", 1.8e9, 48,   6 * 1.8e9 * s, 34 * s * d * L, 2 * s * d * L + 34 * s * d,
          128e3,  10,    2500, 4096 / s};
  m.seq = s;
  m.width = d;
  m.heads = 16;
  return m;
}
Model ResNet() {
  // A 200M-parameter wide ResNet: ~33 GFLOPs forward per 224px image.
  return {"resnet", 200e6, 50, 3 * 33e9, 1.2e8, 3e7, 128e3, 10, 2500, 16};
}

struct StepEstimate {
  double step_s;
  double peak_bytes;
  std::string knobs;
};

// Fastest knob setting that fits, or nothing.
std::optional<StepEstimate> Best(std::vector<StepEstimate> options, const Hardware& hw) {
  std::optional<StepEstimate> best;
  for (const StepEstimate& e : options) {
    if (e.peak_bytes > hw.memory) continue;
    if (!best || e.step_s < best->step_s) best = e;
  }
  return best;
}

std::optional<StepEstimate> EstimateStep(const Model& m, int batch, const std::string& technique,
                                         int g, const Hardware& hw) {
  const double states = 16 * m.params;  // fp16 weights+grads, fp32 master+Adam moments
  const double weights16 = 2 * m.params;
  // Seconds to run `samples` samples through the whole model on one device
  // that processes `per_device` samples at a time.
  auto compute_of = [&](double samples, double per_device) {
    double efficiency = per_device / (per_device + m.half_efficiency);
    return m.flops_per_sample * samples / (hw.flops * efficiency);
  };
  const double loader_floor = batch / m.loader_cap;
  std::vector<StepEstimate> options;
  for (bool ckpt : {false, true}) {
    double act = (ckpt ? m.act_ckpt : m.act_full);
    double recompute = ckpt ? 4.0 / 3.0 : 1.0;
    std::string knob = std::string("ckpt=") + (ckpt ? "on" : "off");
    if (technique == "ddp") {
      double comm = g > 1 ? 2.0 * (g - 1) / g * weights16 / hw.nvlink * 0.4 : 0.0;
      double step =
          std::max(compute_of(batch, 1.0 * batch / g) * recompute / g + comm, loader_floor);
      options.push_back({step, states + act * batch / g, knob});
    } else if (technique == "fsdp" && g >= 2) {
      double comm = 3.0 * (g - 1) / g * weights16 / hw.nvlink * 0.3 + 2e-3 * m.layers;
      double step =
          std::max(compute_of(batch, 1.0 * batch / g) * recompute * 1.05 / g + comm, loader_floor);
      double peak = states / g + 4 * weights16 / m.layers + act * batch / g;
      options.push_back({step, peak, knob});
    } else if (technique == "pipeline" && g >= 2 && g <= m.layers) {
      for (int micro : {g, 2 * g, 4 * g}) {
        if (micro > batch) continue;
        double bubble = static_cast<double>(micro + g - 1) / micro;
        double step = std::max(
            compute_of(batch, 1.0 * batch / micro) * recompute / g * bubble * 1.02, loader_floor);
        double peak = states / g + act * batch / g;
        options.push_back({step, peak, knob + ",microbatches=" + std::to_string(micro)});
      }
    } else if (technique == "tp" && g >= 2 && m.heads > 0 && m.heads % g == 0) {
      // Megatron: every device runs the whole batch through 1/g of each
      // layer (GEMMs as narrow as a 1/g batch's); per layer two all-reduces
      // of the activations forward and two backward (three each with
      // recomputation), bf16, over NVLink within the node; parameters,
      // gradients and optimizer state split g ways, activations partly.
      double activation = batch * m.seq * m.width * 2;
      double allreduces = (ckpt ? 6.0 : 4.0) * m.layers;
      double comm = allreduces * 2.0 * (g - 1) / g * activation / hw.nvlink;
      double step =
          std::max(compute_of(batch, 1.0 * batch / g) * recompute / g + comm, loader_floor);
      double peak = states / g + act * batch * (0.3 + 0.7 / g);
      options.push_back({step, peak, knob});
    } else if (technique == "tp-ddp" || technique == "pipeline-tp") {
      // The hybrids: t-way tp inside groups of consecutive GPUs (one node's
      // NVLink), g/t groups. tp-ddp: each group a replica on batch/(g/t)
      // samples, plus ddp's all-reduce of the group's 1/t of the weights.
      // pipeline-tp: g/t GPipe stages of layers/(g/t) layers, each tp's
      // all-reduces on the stage's layers only.
      for (int t = 2; t * 2 <= g; ++t) {
        if (g % t != 0 || m.heads <= 0 || m.heads % t != 0) continue;
        const int groups = g / t;
        const double split = 0.3 + 0.7 / t;  // activations tp splits
        const std::string tk = knob + ",tp=" + std::to_string(t);
        auto tp_comm = [&](double samples, double layers) {
          double activation = samples * m.seq * m.width * 2;
          return (ckpt ? 6.0 : 4.0) * layers * 2.0 * (t - 1) / t * activation / hw.nvlink;
        };
        if (technique == "tp-ddp") {
          double replica = 1.0 * batch / groups;
          double comm = tp_comm(replica, m.layers) +
                        2.0 * (groups - 1) / groups * weights16 / t / hw.nvlink * 0.4;
          double step =
              std::max(compute_of(batch, 1.0 * batch / g) * recompute / g + comm, loader_floor);
          options.push_back({step, states / t + act * replica * split, tk});
        } else if (groups <= m.layers) {
          for (int micro : {groups, 2 * groups, 4 * groups}) {
            if (micro > batch) continue;
            double bubble = static_cast<double>(micro + groups - 1) / micro;
            double compute =
                compute_of(batch, 1.0 * batch / micro / t) * recompute / g * bubble * 1.02;
            double step = std::max(compute + tp_comm(batch, 1.0 * m.layers / groups), loader_floor);
            double peak = states / g + act * batch / groups * split;
            options.push_back({step, peak, tk + ",microbatches=" + std::to_string(micro)});
          }
        }
      }
    } else if (technique == "spill" && g == 1) {
      double paging = 2 * weights16 / hw.pcie * 0.5;  // weights in for fwd and bwd, half hidden
      double optimizer = states / hw.host_optimizer;  // Adam on the host
      double step =
          std::max(compute_of(batch, batch) * recompute + paging + optimizer, loader_floor);
      double peak = 2 * states / m.layers + act * batch;
      options.push_back({step, peak, knob});
    }
  }
  return Best(options, hw);
}

std::string LrName(double lr) {
  if (lr == 1e-5) return "1e-5";
  if (lr == 1e-4) return "1e-4";
  if (lr == 3e-3) return "3e-3";
  return FormatNumber(lr);
}

}  // namespace

std::string SourceDir() {
#ifdef SATURN_SOURCE_DIR
  return SATURN_SOURCE_DIR;
#else
  return ".";
#endif
}

Instance SaturnLikeInstance(Workload workload, const std::vector<int>& node_gpus, uint64_t seed,
                            bool tensor_parallel) {
  Instance inst;
  std::string sizes;
  for (size_t n = 0; n < node_gpus.size(); ++n) {
    inst.cluster.nodes.push_back({"node" + std::to_string(n), node_gpus[n], 40.0, "cpu", 1, ""});
    sizes += (n ? "+" : "") + std::to_string(node_gpus[n]);
  }
  inst.name = std::string(workload == Workload::kText ? "txt" : "img") + "-" + sizes + "-s" +
              std::to_string(seed) + (tensor_parallel ? "-tp" : "");
  std::vector<Model> models = workload == Workload::kText ? std::vector<Model>{Gpt2(), GptJ()}
                                                          : std::vector<Model>{VitG(), ResNet()};
  std::vector<int> batches =
      workload == Workload::kText ? std::vector<int>{16, 32} : std::vector<int>{64, 128};
  inst.profile.extra_columns = {"step_s", "steps", "peak_memory_gib", "knobs"};
  Hardware hw;
  int max_gpus = *std::max_element(node_gpus.begin(), node_gpus.end());
  for (const Model& m : models) {
    for (int b : batches) {
      for (double lr : {1e-5, 1e-4, 3e-3}) {
        std::string task = m.name + "-bs" + std::to_string(b) + "-lr" + LrName(lr);
        double steps = std::ceil(m.samples / b) * m.epochs;
        std::vector<const char*> techniques = {"ddp", "fsdp", "pipeline", "spill"};
        if (tensor_parallel) techniques.insert(techniques.end(), {"tp", "tp-ddp", "pipeline-tp"});
        for (const char* technique : techniques) {
          for (int g = 1; g <= max_gpus; ++g) {
            std::optional<StepEstimate> e = EstimateStep(m, b, technique, g, hw);
            if (!e) continue;
            ProfileRow row;
            row.task = task;
            row.technique = technique;
            row.gpus = g;
            row.runtime_s = std::round(e->step_s * steps * 10) / 10;
            row.extra = {FormatFixed(e->step_s, 4), FormatNumber(steps),
                         FormatFixed(e->peak_bytes / (1u << 30), 2), e->knobs};
            inst.profile.rows.push_back(std::move(row));
          }
        }
      }
    }
  }
  return inst;
}

std::vector<GavelJob> LoadGavelThroughputs(const std::string& csv_path) {
  CsvTable csv = ParseCsv(ReadFile(csv_path), csv_path);
  std::map<std::string, GavelJob> by_type;
  for (size_t r = 1; r < csv.records.size(); ++r) {
    const auto& f = csv.records[r].fields;
    GavelJob& job = by_type[f.at(0)];
    job.type = f.at(0);
    job.steps_per_s.push_back({std::atoi(f.at(1).c_str()), std::atof(f.at(2).c_str())});
  }
  std::vector<GavelJob> jobs;
  for (auto& [type, job] : by_type)
    jobs.push_back(std::move(job));
  return jobs;
}

Instance GavelInstance(const std::vector<GavelJob>& jobs, int tasks, int nodes, int gpus_per_node,
                       uint64_t seed) {
  Instance inst;
  inst.name =
      "gavel-" + std::to_string(tasks) + "x" + std::to_string(nodes) + "n-s" + std::to_string(seed);
  for (int n = 0; n < nodes; ++n) {
    inst.cluster.nodes.push_back(
        {"node" + std::to_string(n), gpus_per_node, std::nullopt, "cpu", 1, ""});
  }
  inst.profile.extra_columns = {"steps", "job_type"};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int t = 0; t < tasks; ++t) {
    const GavelJob& job = jobs[static_cast<size_t>(unit(rng) * jobs.size()) % jobs.size()];
    double exponent = unit(rng) < 0.8 ? 1.5 + 1.5 * unit(rng) : 3.0 + unit(rng);
    double minutes = std::pow(10.0, exponent);
    double one_gpu = 0;
    for (const auto& [g, tput] : job.steps_per_s) {
      if (g == 1) one_gpu = tput;
    }
    double steps = std::round(minutes * 60 * one_gpu);
    std::string name = "job" + std::to_string(t);
    for (const auto& [g, tput] : job.steps_per_s) {
      if (g > gpus_per_node) continue;
      ProfileRow row;
      row.task = name;
      row.technique = "ddp";
      row.gpus = g;
      row.runtime_s = std::max(1.0, std::round(steps / tput * 10) / 10);
      row.extra = {FormatNumber(steps), job.type};
      inst.profile.rows.push_back(std::move(row));
    }
  }
  return inst;
}

}  // namespace saturn::bench
