#include "protocol/checkpoint_files.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/error.h"
#include "common/fs.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;

constexpr const char* kDigestNote = ".digest-";  // notes PublishCheckpoint collects
constexpr const char* kMetaFile = "meta.json";

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string BlockName(long index) {
  char name[32];
  std::snprintf(name, sizeof name, "block-%05ld.pt", index);
  return name;
}

std::string DescribeSize(uint64_t got, uint64_t want) {
  return std::to_string(got) + " bytes where the manifest says " + std::to_string(want) +
         (got < want ? " (torn: a write did not finish)" : "");
}

// The problem with `path`/`name` against `entry`, or "" if it matches.
std::string CompareFile(const std::string& path, const ManifestEntry& entry) {
  FileDigest d;
  try {
    d = DigestFile(path + "/" + entry.name);
  } catch (const std::exception&) {
    return entry.name + ": missing or unreadable";
  }
  if (d.size != entry.digest.size)
    return entry.name + ": " + DescribeSize(d.size, entry.digest.size);
  if (d.crc32c != entry.digest.crc32c) {
    return entry.name + ": crc32c " + Crc32cHex(d.crc32c) + " where the manifest says " +
           Crc32cHex(entry.digest.crc32c) + " (damaged)";
  }
  return "";
}

// meta.json of a checkpoint, parsed; problem set if it is not an object
// whose step (when given) is `step` (when >= 0).
nlohmann::json ReadMeta(const std::string& path, long step, std::string* problem) {
  std::string text;
  try {
    text = ReadFile(path + "/" + kMetaFile);
  } catch (const std::exception&) {
    *problem = "meta.json is missing";
    return nullptr;
  }
  nlohmann::json meta = nlohmann::json::parse(text, nullptr, false);
  if (meta.is_discarded() || !meta.is_object()) {
    *problem = "meta.json is not a JSON object";
  } else if (step >= 0 && meta.contains("step") &&
             (!meta["step"].is_number_integer() || meta["step"].get<long>() != step)) {
    *problem = "meta.json is not of step " + std::to_string(step);
  }
  return meta;
}

CheckpointHealth Bad(std::string problem) {
  return {CheckpointState::kBad, std::move(problem)};
}

std::vector<std::pair<long, std::string>> Folders(const std::string& dir) {
  std::vector<std::pair<long, std::string>> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    long step = CheckpointStepOf(e.path().filename().string());
    if (step >= 0 && e.is_directory(ec)) out.emplace_back(step, e.path().string());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  return out;
}

}  // namespace

const ManifestEntry* Manifest::Find(const std::string& name) const {
  for (const ManifestEntry& e : files) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

std::string ManifestToJson(const Manifest& manifest) {
  nlohmann::json files = nlohmann::json::array();
  for (const ManifestEntry& e : manifest.files) {
    files.push_back(
        {{"name", e.name}, {"size", e.digest.size}, {"crc32c", Crc32cHex(e.digest.crc32c)}});
  }
  return nlohmann::json{{"format", 1}, {"step", manifest.step}, {"files", files}}.dump(1) + "\n";
}

Manifest ParseManifest(const std::string& text, const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw InputError(path, 0, "", "not valid JSON");
  if (!j.is_object())
    throw InputError(path, 0, "", "expected a JSON object (a checkpoint manifest)");
  if (!j.contains("format") || j["format"] != 1) throw InputError(path, 0, "format", "expected 1");
  if (!j.contains("step") || !j["step"].is_number_integer() || j["step"].get<long>() < 0) {
    throw InputError(path, 0, "step", "expected an integer >= 0");
  }
  if (!j.contains("files") || !j["files"].is_array()) {
    throw InputError(path, 0, "files", "expected a list");
  }
  Manifest m;
  m.step = j["step"].get<long>();
  for (const nlohmann::json& f : j["files"]) {
    std::string where = "files[" + std::to_string(m.files.size()) + "]";
    bool ok = f.is_object() && f.contains("name") && f["name"].is_string() && f.contains("size") &&
              f["size"].is_number_unsigned() && f.contains("crc32c") && f["crc32c"].is_string();
    std::string name = ok ? f["name"].get<std::string>() : "";
    std::string crc = ok ? f["crc32c"].get<std::string>() : "";
    if (!ok || name.empty() || name.find('/') != std::string::npos || name == ".." ||
        crc.size() != 8 || crc.find_first_not_of("0123456789abcdef") != std::string::npos) {
      throw InputError(path, 0, where,
                       "expected {name, size, crc32c} with a plain file name and 8 hex digits");
    }
    ManifestEntry e;
    e.name = name;
    e.digest.size = f["size"].get<uint64_t>();
    e.digest.crc32c = static_cast<uint32_t>(std::strtoul(crc.c_str(), nullptr, 16));
    if (m.Find(name)) throw InputError(path, 0, where, "lists " + Quote(name) + " twice");
    m.files.push_back(std::move(e));
  }
  return m;
}

long CheckpointStepOf(const std::string& name) {
  const std::string prefix = "checkpoint-";
  if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size() ||
      name.size() > prefix.size() + 18)
    return -1;
  if (name.find_first_not_of("0123456789", prefix.size()) != std::string::npos) return -1;
  return std::strtol(name.c_str() + prefix.size(), nullptr, 10);
}

std::string CheckpointFolder(const std::string& dir, long step) {
  return dir + "/checkpoint-" + std::to_string(step);
}

void WriteCheckpointFile(const std::string& partial, const std::string& name,
                         const std::string& bytes) {
  FileDigest d{bytes.size(), Crc32c(bytes.data(), bytes.size())};
  WriteFileDurable(partial + "/" + name, bytes);
  WriteFileDurable(partial + "/" + kDigestNote + name,
                   std::to_string(d.size) + " " + Crc32cHex(d.crc32c) + "\n");
}

void PublishCheckpoint(const std::string& partial, const std::string& final, long step) {
  Manifest manifest;
  manifest.step = step;
  std::vector<fs::path> notes;
  for (const auto& e : fs::directory_iterator(partial)) {
    std::string file = e.path().filename().string();
    if (file.rfind(kDigestNote, 0) != 0) continue;
    ManifestEntry entry;
    entry.name = file.substr(std::string(kDigestNote).size());
    char crc[16] = {0};
    unsigned long long size = 0;
    if (std::sscanf(ReadFile(e.path().string()).c_str(), "%llu %8s", &size, crc) != 2) {
      throw std::runtime_error("checkpoint " + partial + ": unreadable digest note " + file);
    }
    entry.digest = {size, static_cast<uint32_t>(std::strtoul(crc, nullptr, 16))};
    // What is on disk is what the writer meant: nothing torn, nothing lost.
    std::string problem = CompareFile(partial, entry);
    if (!problem.empty()) throw std::runtime_error("checkpoint " + partial + ": " + problem);
    manifest.files.push_back(std::move(entry));
    notes.push_back(e.path());
  }
  std::sort(manifest.files.begin(), manifest.files.end(),
            [](const ManifestEntry& a, const ManifestEntry& b) { return a.name < b.name; });
  if (!manifest.Find(kMetaFile))
    throw std::runtime_error("checkpoint " + partial + ": no meta.json");
  for (const fs::path& note : notes)
    fs::remove(note);
  WriteFileDurable(partial + "/" + kCheckpointManifest, ManifestToJson(manifest));
  SyncDirectory(partial);
  std::string old = final + ".old";
  fs::remove_all(old);
  if (fs::exists(final)) fs::rename(final, old);
  fs::rename(partial, final);
  fs::remove_all(old);
  SyncDirectory(fs::path(final).parent_path().string());
}

CheckpointHealth CheckCheckpoint(const std::string& path) {
  long step = CheckpointStepOf(fs::path(path).filename().string());
  std::string manifest_path = path + "/" + kCheckpointManifest;
  std::error_code ec;
  if (!fs::exists(manifest_path, ec)) {
    std::string problem;
    ReadMeta(path, step, &problem);
    if (!problem.empty()) return Bad(problem);
    return {CheckpointState::kUnverified, "no manifest.json (written before checksums)"};
  }
  Manifest manifest;
  try {
    manifest = ParseManifest(ReadFile(manifest_path), manifest_path);
  } catch (const std::exception& e) {
    return Bad(std::string("manifest.json: ") + e.what());
  }
  if (step >= 0 && manifest.step != step) return Bad("manifest.json is not of this step");
  if (!manifest.Find(kMetaFile)) return Bad("manifest.json does not list meta.json");
  for (const ManifestEntry& entry : manifest.files) {
    std::string problem = CompareFile(path, entry);
    if (!problem.empty()) return Bad(problem);
  }
  std::string problem;
  nlohmann::json meta = ReadMeta(path, step, &problem);
  if (!problem.empty()) return Bad(problem);
  if (meta.contains("blocks") && meta["blocks"].is_number_integer()) {
    for (long i = 0; i < meta["blocks"].get<long>(); ++i) {
      if (!manifest.Find(BlockName(i))) return Bad(BlockName(i) + " is missing");
    }
  }
  return {CheckpointState::kGood, ""};
}

void CheckCheckpointBytes(const Manifest& manifest, const std::string& path,
                          const std::string& name, const std::string& bytes) {
  const ManifestEntry* entry = manifest.Find(name);
  std::string file = path + "/" + name;
  if (!entry) throw InputError(file, 0, "", "not in the checkpoint's manifest.json");
  if (bytes.size() != entry->digest.size) {
    throw InputError(file, 0, "",
                     "damaged checkpoint: " + DescribeSize(bytes.size(), entry->digest.size));
  }
  uint32_t crc = Crc32c(bytes.data(), bytes.size());
  if (crc != entry->digest.crc32c) {
    throw InputError(file, 0, "",
                     "damaged checkpoint: crc32c " + Crc32cHex(crc) + " where the manifest says " +
                         Crc32cHex(entry->digest.crc32c));
  }
}

NewestCheckpoint FindNewestCheckpoint(const std::string& dir) {
  NewestCheckpoint newest;
  for (const auto& [step, path] : Folders(dir)) {
    CheckpointHealth health = CheckCheckpoint(path);
    if (health.usable()) {
      newest.step = step;
      newest.unverified = health.state == CheckpointState::kUnverified;
      return newest;
    }
    std::error_code ec;
    std::string quarantine = path + ".corrupt";
    fs::remove_all(quarantine, ec);
    fs::rename(path, quarantine, ec);
    if (ec) fs::remove_all(path, ec);  // never load it, whatever it takes
    newest.skipped.push_back({step, health.problem});
  }
  return newest;
}

void RemoveCheckpointLeftovers(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string name = e.path().filename().string();
    bool interrupted =
        name.rfind("checkpoint-", 0) == 0 && (EndsWith(name, ".partial") || EndsWith(name, ".old"));
    if (interrupted || name.find(".tmp.") != std::string::npos) fs::remove_all(e.path(), ec);
  }
  fs::remove_all(dir + ".eval", ec);
  fs::remove_all(dir + ".members", ec);  // a pack's members' evaluations (worker/pack_job.h)
}

std::vector<long> PruneCheckpoints(const std::string& dir, long newest, int keep) {
  std::vector<long> removed;
  if (keep <= 0) return removed;
  int kept = 0;
  for (const auto& [step, path] : Folders(dir)) {
    if (step > newest) continue;
    if (kept < keep) {
      ++kept;
      continue;
    }
    // Renamed first, so that a kill while removing leaves a leftover, not a
    // checkpoint with files missing.
    std::error_code ec;
    std::string doomed = path + ".old";
    fs::remove_all(doomed, ec);
    fs::rename(path, doomed, ec);
    if (ec) continue;
    removed.push_back(step);
    fs::remove_all(doomed, ec);
  }
  return removed;
}

}  // namespace saturn
