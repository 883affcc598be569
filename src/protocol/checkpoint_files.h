// Checkpoint folders on disk as both sides of the worker protocol see them
// (docs/worker.md, "Checkpoints"): the worker writes and loads them
// (engine/checkpoint.h adds the tensors), the executor finds the newest
// good one to resume from, and either side prunes old ones. Torch-free.
//
// A checkpoint is a folder `checkpoint-<step>/` whose `manifest.json` lists
// every other file in it with its size and CRC-32C:
//   {"format": 1, "step": 400,
//    "files": [{"name": "meta.json", "size": 310, "crc32c": "1c2d3e4f"}, ...]}
// Writers fill `checkpoint-<step>.partial/` (every file flushed), then one
// process re-reads every file against the digests its writer computed,
// writes the manifest last, flushes the folder and renames it into place
// (flushing the parent): a `checkpoint-<step>/` is complete and verified
// from the moment it exists. A folder without a manifest was written before
// checksums existed: it is "unverified" and still loaded (its meta.json
// must parse and name its step), with a warning.
//
//   WriteCheckpointFile(partial, "block-00003.pt", bytes);        // any rank
//   PublishCheckpoint(partial, final, 400, {});                     // one rank
//   CheckpointHealth h = CheckCheckpoint(final);                    // kGood
//   NewestCheckpoint n = FindNewestCheckpoint(dir);  // renames bad ones *.corrupt
//   PruneCheckpoints(dir, 400, /*keep=*/2);          // keeps 400 and the one before
#pragma once

#include <string>
#include <vector>

#include "common/checksum.h"

namespace saturn {

inline constexpr const char* kCheckpointManifest = "manifest.json";

struct ManifestEntry {
  std::string name;
  FileDigest digest;
};

struct Manifest {
  long step = 0;
  std::vector<ManifestEntry> files;
  const ManifestEntry* Find(const std::string& name) const;
};

std::string ManifestToJson(const Manifest& manifest);
// InputError naming `path` if `text` is not a manifest.
Manifest ParseManifest(const std::string& text, const std::string& path);

// "checkpoint-<step>" (no suffix); -1 for any other name.
long CheckpointStepOf(const std::string& folder_name);
std::string CheckpointFolder(const std::string& dir, long step);

// Writes one file of a checkpoint being written (flushed, with a note of its
// digest for PublishCheckpoint). Throws std::runtime_error on failure (a
// full disk: the partial file is removed).
void WriteCheckpointFile(const std::string& partial, const std::string& name,
                         const std::string& bytes);

// Publishes `partial` as `final` (checkpoint-<step>): checks that every file
// written by WriteCheckpointFile reads back with its digest, writes the
// manifest, flushes, renames, flushes the parent. A `final` already there
// is replaced. Throws std::runtime_error if a file does not read back as
// written or a write fails; `partial` is then left for the caller to remove.
void PublishCheckpoint(const std::string& partial, const std::string& final, long step);

enum class CheckpointState { kGood, kUnverified, kBad };
struct CheckpointHealth {
  CheckpointState state = CheckpointState::kBad;
  std::string problem;  // why it is bad, or why unverified
  bool usable() const { return state != CheckpointState::kBad; }
};

// Checks a checkpoint folder against its manifest (every byte of every
// file), or a manifest-less one's meta.json. The worker's loader applies
// the same rules file by file as it reads (engine/checkpoint.h).
CheckpointHealth CheckCheckpoint(const std::string& path);

// Throws InputError naming the file if `bytes`, read from `name` of the
// checkpoint at `path`, differ from the manifest's size or digest.
void CheckCheckpointBytes(const Manifest& manifest, const std::string& path,
                          const std::string& name, const std::string& bytes);

struct SkippedCheckpoint {
  long step = 0;
  std::string problem;
};

struct NewestCheckpoint {
  long step = 0;                           // 0: none usable, start from scratch
  std::vector<SkippedCheckpoint> skipped;  // newer ones found bad, newest first
  bool unverified = false;                 // the one chosen has no manifest
};

// The newest usable checkpoint in `dir`. Bad ones newer than it are renamed
// `checkpoint-<step>.corrupt` (kept for inspection, never loaded) and
// reported, so the next look does not meet them again.
NewestCheckpoint FindNewestCheckpoint(const std::string& dir);

// Removes what interrupted writes leave in a checkpoint directory:
// checkpoint-*.partial and checkpoint-*.old folders, temporary files, and
// the evaluation scratch folder `dir`.eval. Only while nothing writes there.
void RemoveCheckpointLeftovers(const std::string& dir);

// Retention: with keep > 0, removes the checkpoints older than the `keep`
// newest at or below step `newest` (which must be complete and verified);
// newer ones and *.corrupt folders are left. keep == 0 keeps all. Returns
// the steps removed.
std::vector<long> PruneCheckpoints(const std::string& dir, long newest, int keep);

}  // namespace saturn
