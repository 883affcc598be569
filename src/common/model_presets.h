// The published sizes of GPT-2 (Radford et al. 2019), for `model: {type:
// gpt2, preset: NAME}`: the workload reader checks a task with them and the
// engine builds it with them, so both read this one table.
//
//   const Gpt2Preset* p = FindGpt2Preset("xl");   // nullptr if unknown
//   int64_t layers = p->layers;                   // 48
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

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

// The published sizes of the Llama family's models (Hugging Face's
// config.json of each), for `model: {type: llama, preset: NAME}`.
// rope_scaling: nullptr (none), "llama3" (with the factors) or "linear".
struct LlamaPreset {
  const char* name;
  const char* flavor;  // llama | mistral | qwen2
  int64_t layers, d_model, heads, kv_heads, head_dim, ffn, vocab, positions;
  double rope_theta;
  const char* rope_scaling;
  double rope_factor, rope_low_freq_factor, rope_high_freq_factor;
  int64_t rope_original_positions;
  double norm_eps;
  bool tie_embeddings, attention_bias;
  int64_t sliding_window;  // 0: none
};

inline constexpr LlamaPreset kLlamaPresets[] = {
    {"smollm-135m", "llama", 30, 576, 9, 3, 64,   1536, 49152, 2048,
     10000.0,       nullptr, 1,  1,   4, 0, 1e-5, true, false, 0},
    {"tinyllama-1.1b", "llama", 22, 2048, 32, 4, 64,   5632,  32000, 2048,
     10000.0,          nullptr, 1,  1,    4,  0, 1e-5, false, false, 0},
    {"llama-3.2-1b", "llama",  16, 2048, 32, 8,    64,   8192, 128256, 131072,
     500000.0,       "llama3", 32, 1,    4,  8192, 1e-5, true, false,  0},
    {"llama-3.2-3b", "llama",  28, 3072, 24, 8,    128,  8192, 128256, 131072,
     500000.0,       "llama3", 32, 1,    4,  8192, 1e-5, true, false,  0},
    {"llama-3.1-8b", "llama",  32, 4096, 32, 8,    128,  14336, 128256, 131072,
     500000.0,       "llama3", 8,  1,    4,  8192, 1e-5, false, false,  0},
    {"qwen2.5-0.5b", "qwen2", 24, 896, 14, 2, 64,   4864, 151936, 32768,
     1000000.0,      nullptr, 1,  1,   4,  0, 1e-6, true, true,   0},
    {"qwen2.5-7b", "qwen2", 28, 3584, 28, 4, 128,  18944, 152064, 131072,
     1000000.0,    nullptr, 1,  1,    4,  0, 1e-6, false, true,   0},
    {"mistral-7b", "mistral", 32, 4096, 32, 8, 128,  14336, 32000, 32768,
     10000.0,      nullptr,   1,  1,    4,  0, 1e-5, false, false, 4096},
};

inline const LlamaPreset* FindLlamaPreset(std::string_view name) {
  for (const LlamaPreset& p : kLlamaPresets)
    if (name == p.name) return &p;
  return nullptr;
}

// "smollm-135m, tinyllama-1.1b, ..." for messages.
inline std::string LlamaPresetNames() {
  std::string names;
  for (const LlamaPreset& p : kLlamaPresets)
    names += (names.empty() ? "" : ", ") + std::string(p.name);
  return names;
}

}  // namespace saturn
