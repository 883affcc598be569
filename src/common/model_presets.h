// The published sizes of GPT-2 (Radford et al. 2019) and of the Llama
// family (Llama, Mistral, Qwen2 as Hugging Face defines them), for `model:
// {type: gpt2 | llama, preset: NAME}`: the workload reader checks a task
// with them and the engine builds it with them, so both read these tables.
//
//   const Gpt2Preset* p = FindGpt2Preset("xl");   // nullptr if unknown
//   int64_t layers = p->layers;                   // 48
//   const LlamaPreset* l = FindLlamaPreset("llama-3.2-1b");
//   l->kv_heads;                                  // 8
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace saturn {

struct Gpt2Preset {
  const char* name;
  int64_t layers, d_model, heads;
};

inline constexpr Gpt2Preset kGpt2Presets[] = {{"small", 12, 768, 12},
                                              {"medium", 24, 1024, 16},
                                              {"large", 36, 1280, 20},
                                              {"xl", 48, 1600, 25}};
// Every size shares these.
inline constexpr int64_t kGpt2Vocab = 50257;
inline constexpr int64_t kGpt2Positions = 1024;

inline const Gpt2Preset* FindGpt2Preset(std::string_view name) {
  for (const Gpt2Preset& p : kGpt2Presets)
    if (name == p.name) return &p;
  return nullptr;
}

// A Llama-family model's published configuration (its config.json), in
// task.json's names (the contract of `model: {type: llama}`,
// docs/contracts.md).
struct LlamaRopeScaling {
  const char* type;  // "" (none), "llama3" or "linear"
  double factor, low_freq_factor, high_freq_factor;
  int64_t original_max_position_embeddings;
};

struct LlamaPreset {
  const char* name;
  int64_t layers, d_model, heads, kv_heads, head_dim, ffn, vocab, positions;
  double rope_theta;
  LlamaRopeScaling rope_scaling;
  double norm_eps;
  bool tie_embeddings;
  const char* flavor;  // config.json's model_type: llama, mistral or qwen2
  bool attention_bias;
  int64_t sliding_window;  // mistral: attention's window; 0: full attention
};

inline constexpr LlamaRopeScaling kNoRopeScaling = {"", 0, 0, 0, 0};

// clang-format off
inline constexpr LlamaPreset kLlamaPresets[] = {
  // name            layers d_model heads kv head_dim  ffn   vocab  positions  theta
  {"smollm-135m",      30,   576,   9,   3,   64,   1536,  49152,   2048,    10000.0,
   kNoRopeScaling,                        1e-5, true,  "llama",   false, 0},
  {"tinyllama-1.1b",   22,  2048,  32,   4,   64,   5632,  32000,   2048,    10000.0,
   kNoRopeScaling,                        1e-5, false, "llama",   false, 0},
  {"llama-3.2-1b",     16,  2048,  32,   8,   64,   8192, 128256, 131072,   500000.0,
   {"llama3", 32.0, 1.0, 4.0, 8192},      1e-5, true,  "llama",   false, 0},
  {"llama-3.2-3b",     28,  3072,  24,   8,  128,   8192, 128256, 131072,   500000.0,
   {"llama3", 32.0, 1.0, 4.0, 8192},      1e-5, true,  "llama",   false, 0},
  {"llama-3.1-8b",     32,  4096,  32,   8,  128,  14336, 128256, 131072,   500000.0,
   {"llama3", 8.0, 1.0, 4.0, 8192},       1e-5, false, "llama",   false, 0},
  {"qwen2.5-0.5b",     24,   896,  14,   2,   64,   4864, 151936,  32768,  1000000.0,
   kNoRopeScaling,                        1e-6, true,  "qwen2",   true,  0},
  {"qwen2.5-7b",       28,  3584,  28,   4,  128,  18944, 152064, 131072,  1000000.0,
   kNoRopeScaling,                        1e-6, false, "qwen2",   true,  0},
  {"mistral-7b",       32,  4096,  32,   8,  128,  14336,  32000,  32768,    10000.0,
   kNoRopeScaling,                        1e-5, false, "mistral", false, 4096},
};
// clang-format on

inline const LlamaPreset* FindLlamaPreset(std::string_view name) {
  for (const LlamaPreset& p : kLlamaPresets)
    if (name == p.name) return &p;
  return nullptr;
}

// The presets' names, for "did you mean" hints.
inline std::vector<std::string> LlamaPresetNameList() {
  std::vector<std::string> out;
  for (const LlamaPreset& p : kLlamaPresets)
    out.emplace_back(p.name);
  return out;
}

// "smollm-135m, tinyllama-1.1b, ..., mistral-7b", for messages.
inline std::string LlamaPresetNames() {
  std::string out;
  for (const LlamaPreset& p : kLlamaPresets)
    out += (out.empty() ? "" : ", ") + std::string(p.name);
  return out;
}

}  // namespace saturn
