// The limits every reader holds its input to, in one place, so that a
// number nobody means (NaN, inf, 1e300, a count that overflows) is one clear
// input error where it is read, never an attempt to use it. They are far
// above any real workload; docs/contracts.md ("Limits") lists them.
//
//   if (steps > limits::kMaxSteps) f.Fail("steps", "...");
//
// The cap on the tasks a workload expands to is a default users may raise
// (defaults::kMaxWorkloadTasks, `max_tasks:`, --max-tasks).
#pragma once

namespace saturn::limits {

// Device slots of one node (cluster gpus, gpu_range, a profile row's gpus).
inline constexpr long kMaxGpusPerNode = 4096;

// Nodes of one cluster: with kMaxGpusPerNode each, the total still fits an int.
inline constexpr long kMaxNodes = 100'000;

// Intra-op threads of one CPU device slot (cluster threads_per_gpu).
inline constexpr long kMaxThreadsPerDevice = 1024;

// Any number of seconds, GiB or rate read from a file (runtimes, plan and
// event times, gpu_memory_gib, learning rates): ~31.7 years, or 10^9 GiB,
// whose bytes still fit a 64-bit integer.
inline constexpr double kMaxNumber = 1e9;

// Training steps of one task (steps, epochs turned into steps, eval.every,
// a progress line's step): step x batch_size fits a 64-bit integer.
inline constexpr long kMaxSteps = 1'000'000'000'000;

// A model's sizes (layers, d_model, heads, seq_len, image_size, patch,
// blocks, width) and a tokens file's seq_len.
inline constexpr long kMaxModelSize = 1 << 20;

// A vocabulary (gpt2 and llama `vocab`, tokens data's `vocab`): token ids
// are int32 in the engine and uint32 in token files.
inline constexpr long kMaxVocab = 2'147'483'647;

// Samples in one batch (batch_size) and held-out batches (eval.batches).
inline constexpr long kMaxBatchSize = 1'000'000;

// Rows of one profile table: 10 000 tasks x 5 techniques x 20 GPU counts.
inline constexpr long kMaxProfileRows = 1'000'000;

// Nesting depth of JSON read from files (plans, event lines, worker results):
// deeper documents are refused before they are copied or written back, which
// recurses once per level.
inline constexpr int kMaxJsonDepth = 64;

}  // namespace saturn::limits
