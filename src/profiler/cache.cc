#include "profiler/cache.h"

#include <sqlite3.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include "common/cache_dir.h"
#include "common/error.h"
#include "common/fs.h"
#include "common/sqlite_error.h"

namespace saturn {
namespace {

constexpr const char* kFormat = "saturn-profile-cache/1";

void Exec(sqlite3* db, const char* sql, const std::string& path) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw InputError(
        path, 0, "",
        "profile cache unusable (" + msg + "); delete it or choose another with --cache");
  }
}

// The one value of a single-column query, or nullopt.
std::optional<std::string> QueryOne(sqlite3* db, const char* sql, const std::string& arg) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) return std::nullopt;
  sqlite3_bind_text(stmt, 1, arg.c_str(), -1, SQLITE_TRANSIENT);
  std::optional<std::string> out;
  if (sqlite3_step(stmt) == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(stmt, 0);
    if (text) out = reinterpret_cast<const char*>(text);
  }
  sqlite3_finalize(stmt);
  return out;
}

}  // namespace

std::string ProfileCache::DefaultPath() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("SATURN_CACHE"); env && *env) return env;
  return (fs::path(SaturnCacheDir()) / "profiles.sqlite").string();
}

ProfileCache ProfileCache::Open(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  bool exists = fs::exists(path, ec);
  if (!exists && fs::path(path).has_parent_path()) {
    MakeDirectories(fs::path(path).parent_path().string());
  }
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw InputError(path, 0, "", "cannot open profile cache: " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  ProfileCache cache(db, path);
  // A non-database file fails here; a foreign database has no (or another) format.
  auto tables = QueryOne(db, "SELECT count(*) FROM sqlite_master WHERE name != ?", "");
  if (!tables) {
    throw InputError(path, 0, "",
                     std::string("not a Saturn profile cache (not an SQLite database: ") +
                         sqlite3_errmsg(db) + "); delete it or choose another with --cache");
  }
  if (*tables == "0") {
    Exec(db,
         "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
         "CREATE TABLE trials(key TEXT PRIMARY KEY, result TEXT NOT NULL, "
         "created REAL NOT NULL DEFAULT (julianday('now')));",
         path);
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(db, "INSERT INTO meta VALUES('format', ?)", -1, &stmt, nullptr);
    sqlite3_bind_text(stmt, 1, kFormat, -1, SQLITE_STATIC);
    sqlite3_step(stmt);
    sqlite3_finalize(stmt);
    return cache;
  }
  auto format = QueryOne(db, "SELECT value FROM meta WHERE key = ?", "format");
  if (!format || *format != kFormat) {
    throw InputError(path, 0, "",
                     "not a Saturn profile cache (" +
                         (format ? "format " + *format : std::string("a foreign database")) +
                         "); delete it or choose another with --cache");
  }
  auto check = QueryOne(db, "PRAGMA quick_check", "");
  if (!check || *check != "ok") {
    throw InputError(path, 0, "",
                     "profile cache is damaged (" + check.value_or("unreadable") +
                         "); delete it to start afresh");
  }
  return cache;
}

ProfileCache::ProfileCache(ProfileCache&& o) noexcept : db_(o.db_), path_(std::move(o.path_)) {
  o.db_ = nullptr;
}

ProfileCache& ProfileCache::operator=(ProfileCache&& o) noexcept {
  if (this != &o) {
    sqlite3_close(db_);
    db_ = o.db_;
    path_ = std::move(o.path_);
    o.db_ = nullptr;
  }
  return *this;
}

ProfileCache::~ProfileCache() {
  sqlite3_close(db_);
}

std::optional<nlohmann::json> ProfileCache::Get(const std::string& key) {
  auto text = QueryOne(db_, "SELECT result FROM trials WHERE key = ?", key);
  if (!text) return std::nullopt;
  try {
    return nlohmann::json::parse(*text);
  } catch (const nlohmann::json::parse_error&) {
    return std::nullopt;  // a damaged entry is a miss; the next Put replaces it
  }
}

void ProfileCache::Put(const std::string& key, const nlohmann::json& value) {
  sqlite3_stmt* stmt = nullptr;
  if (int rc = sqlite3_prepare_v2(db_, "INSERT OR REPLACE INTO trials(key, result) VALUES(?, ?)",
                                  -1, &stmt, nullptr);
      rc != SQLITE_OK) {
    ThrowSqliteError(db_, rc, "profile cache");
  }
  std::string text = value.dump();
  sqlite3_bind_text(stmt, 1, key.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 2, text.c_str(), -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(stmt);
  sqlite3_finalize(stmt);
  if (rc != SQLITE_DONE) ThrowSqliteError(db_, rc, "profile cache");
}

int ProfileCache::Size() {
  auto n = QueryOne(db_, "SELECT count(*) FROM trials WHERE key != ?", "");
  return n ? std::atoi(n->c_str()) : 0;
}

}  // namespace saturn
