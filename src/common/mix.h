// SplitMix64's finaliser: decorrelates nearby integers (a seed and a block
// or sample index) into well-spread 64-bit keys. Determinism-critical: the
// engine's initial weights and sample order derive from it, so a change
// here changes every run's numbers.
//
//   uint64_t key = SplitMix64(SplitMix64(seed) ^ index);
#pragma once

#include <cstdint>

namespace saturn {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace saturn
