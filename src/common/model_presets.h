// The published sizes of GPT-2 (Radford et al. 2019), for `model: {type:
// gpt2, preset: NAME}`: the workload reader checks a task with them and the
// engine builds it with them, so both read this one table.
//
//   const Gpt2Preset* p = FindGpt2Preset("xl");   // nullptr if unknown
//   int64_t layers = p->layers;                   // 48
#pragma once

#include <cstdint>
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

}  // namespace saturn
