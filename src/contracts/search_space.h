// Sampled search spaces for the workload reader (workload.h): a task's
//
//   search:
//     samples: 16
//     seed: 7                                       # optional, default 0
//     space:
//       optimizer.lr: {log_uniform: [1.0e-5, 1.0e-2]}
//       optimizer.weight_decay: {uniform: [0.0, 0.1]}
//       finetune.lora.rank: {int: [4, 32]}          # inclusive
//       batch_size: {choice: [8, 16, 32]}
//
// becomes `samples` variants of the task (contracts/task_variants.h makes
// them, with any `sweep:`), each with a value drawn for every field of the
// space and named by them like a sweep's variants.
//
// The same workload draws the same values on every machine: the numbers are
// splitmix64's (SearchRandom), seeded with `seed`, and turned into values
// with integer arithmetic, IEEE additions, multiplications and divisions,
// and the exact frexp, ldexp, round, fmin and fmax only (no log or exp of a
// maths library: their last bits differ between platforms; this file is
// compiled without fused multiply-adds). Sample i draws one 64-bit
// number per field, in the order the space's fields are written: field j of
// sample i takes number i * fields + j + 1 of the sequence, x, and
//   uniform [lo, hi]:      lo + u (hi - lo), u = (x >> 11) / 2^53 in [0, 1)
//   log_uniform [lo, hi]:  exp(ln lo + u (ln hi - ln lo)), with SearchLog
//                          and SearchExp
//   int [lo, hi]:          lo + floor(x (hi - lo + 1) / 2^64)
//   choice [v0, v1, ...]:  v[floor(x n / 2^64)], as written (its YAML type)
// each number kept within [lo, hi].
//
//   SearchSpace s = ReadSearchSpace(task_fields, sweep_axes);
//   for (const SearchSample& sample : DrawSamples(s)) sample.values, sample.suffix;
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "contracts/sweep.h"
#include "contracts/yaml_fields.h"

namespace saturn {

enum class SearchKind { kLogUniform, kUniform, kInt, kChoice };

struct SearchField {
  std::string path;  // dotted field, e.g. "optimizer.lr"
  SearchKind kind = SearchKind::kUniform;
  double lo = 0, hi = 0;        // kLogUniform, kUniform
  long int_lo = 0, int_hi = 0;  // kInt
  YAML::Node choices;           // kChoice: a non-empty sequence
  int line = 0;                 // where the field is written
};

struct SearchSpace {
  long samples = 0;  // 0: the task has no `search:`
  std::uint64_t seed = 0;
  std::vector<SearchField> fields;
  int line = 0;  // where `search:` is written
};

// The task's `search:` (samples 0 when it has none). InputError naming the
// file, line and field for: a search that is not a map of samples, seed and
// space; samples < 1; an empty space; a field that cannot be searched
// (CheckVariedField), or that is also swept (`sweep_axes`) or searched
// twice (one path inside the other counts); a distribution other than
// exactly one of log_uniform, uniform, int and choice; bounds that are not
// [lo, hi] with lo <= hi; log_uniform's lo <= 0; int's bounds not integers
// (within +-2^53); an empty choice.
SearchSpace ReadSearchSpace(const YamlFields& task, const std::vector<SweepAxis>& sweep_axes);

// splitmix64 (Steele, Lea and Flood, 2014): the state advances by
// 0x9E3779B97F4A7C15 per number, which is the state mixed by two
// multiply-xorshift rounds.
class SearchRandom {
 public:
  explicit SearchRandom(std::uint64_t seed) : state_(seed) {}
  std::uint64_t Next();

 private:
  std::uint64_t state_;
};

// ln x (x > 0) and e^y, from IEEE basic operations only, so the same on
// every machine; within a few units in the last place of std::log and
// std::exp (e^y for |y| < 700).
double SearchLog(double x);
double SearchExp(double y);

// A field's value for the number `x` (the formulas above): a scalar for
// log_uniform, uniform and int (numbers as text that reads back exactly),
// the written node for a choice.
YAML::Node SampleValue(const SearchField& field, std::uint64_t x);

struct SearchSample {
  std::vector<YAML::Node> values;  // one per field of the space
  // "-<short key><value>" per field (SweepShortKey; numbers to 4
  // significant digits: "-lr3.162e-5-bs16"), then "-s<i>" where two samples
  // would have the same.
  std::string suffix;
};

// The space's samples, in order.
std::vector<SearchSample> DrawSamples(const SearchSpace& space);

}  // namespace saturn
