// The persistent profile cache: trial results in SQLite, keyed by everything
// that determines them (what the task computes, technique, GPU count, device
// kind, capacity and threads, the worker's build). Profiling a workload again
// runs no trial whose key is cached; `--refresh` overwrites. A file that is
// not a Saturn cache (another database, a truncated or corrupt file) is
// reported, never trusted or overwritten.
//
//   ProfileCache cache = ProfileCache::Open("~/.cache/saturn/profiles.sqlite");
//   if (auto hit = cache.Get(key)) use(*hit);
//   cache.Put(key, result_json);
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

struct sqlite3;

namespace saturn {

class ProfileCache {
 public:
  // Creates the file (and folders) if missing. InputError if the file exists
  // but is not a Saturn profile cache or is damaged.
  static ProfileCache Open(const std::string& path);
  ProfileCache(ProfileCache&&) noexcept;
  ProfileCache& operator=(ProfileCache&&) noexcept;
  ~ProfileCache();

  std::optional<nlohmann::json> Get(const std::string& key);
  void Put(const std::string& key, const nlohmann::json& value);
  int Size();
  const std::string& path() const { return path_; }

  // The default location: $SATURN_CACHE, else $XDG_CACHE_HOME/saturn, else
  // ~/.cache/saturn, file profiles.sqlite.
  static std::string DefaultPath();

 private:
  ProfileCache(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace saturn
