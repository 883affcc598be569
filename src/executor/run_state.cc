#include "executor/run_state.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "common/sqlite_error.h"

namespace saturn {
namespace {

constexpr const char* kFormat = "saturn-run-state/1";

void Check(sqlite3* db, int rc, const char* what) {
  if (rc != SQLITE_OK && rc != SQLITE_DONE && rc != SQLITE_ROW) {
    ThrowSqliteError(db, rc, std::string("run state: ") + what);
  }
}

struct Statement {
  Statement(sqlite3* db, const char* sql) : db(db) {
    Check(db, sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr), sql);
  }
  ~Statement() { sqlite3_finalize(stmt); }
  Statement& Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt, i, v.c_str(), -1, SQLITE_TRANSIENT);
    return *this;
  }
  Statement& Bind(int i, double v) {
    sqlite3_bind_double(stmt, i, v);
    return *this;
  }
  Statement& Bind(int i, long v) {
    sqlite3_bind_int64(stmt, i, v);
    return *this;
  }
  bool Step() {
    int rc = sqlite3_step(stmt);
    Check(db, rc, "step");
    return rc == SQLITE_ROW;
  }
  std::string Text(int c) {
    const unsigned char* t = sqlite3_column_text(stmt, c);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  sqlite3* db;
  sqlite3_stmt* stmt = nullptr;
};

// An append cut short (a kill mid-write, a full disk) leaves a last line
// without its newline, and the next append would run on from it into one
// unreadable line: cut it off (readers skip a torn last line anyway).
void DropTornTail(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return;
  std::string text = ReadFile(path);
  if (text.empty() || text.back() == '\n') return;
  size_t keep = text.rfind('\n');
  keep = keep == std::string::npos ? 0 : keep + 1;
  if (::truncate(path.c_str(), static_cast<off_t>(keep)) != 0) {
    throw SystemError("cannot repair " + path + ": " + std::strerror(errno));
  }
}

// SQLite's own check of the file (its write-ahead log carries checksums; this
// reads the database pages): a damaged state is refused, never half-read.
void CheckIntegrity(sqlite3* db, const std::string& path) {
  std::string verdict;
  try {
    Statement s(db, "PRAGMA quick_check");
    if (s.Step()) verdict = s.Text(0);
  } catch (const std::exception& e) {
    verdict = e.what();
  }
  if (verdict != "ok") {
    throw InputError(path, 0, "",
                     "the run state is damaged (" + verdict +
                         "); it cannot be resumed (start again with another --run-dir)");
  }
}

}  // namespace

RunState RunState::Open(const std::string& run_dir, bool create) {
  namespace fs = std::filesystem;
  std::string path = run_dir + "/state.sqlite";
  std::error_code ec;
  bool exists = fs::exists(path, ec);
  if (!exists && !create) {
    throw InputError(run_dir, 0, "--resume", "no run to resume here (no state.sqlite)");
  }
  MakeDirectories(run_dir);
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr) !=
      SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw InputError(path, 0, "", "cannot open run state: " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  // WAL + NORMAL: every commit survives the orchestrator being killed; only a
  // power cut can lose the last few (the event log is fsynced separately).
  sqlite3_exec(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", nullptr, nullptr,
               nullptr);
  RunState state(db, run_dir, -1);
  if (exists) CheckIntegrity(db, path);
  DropTornTail(run_dir + "/events.jsonl");
  state.events_fd_ =
      ::open((run_dir + "/events.jsonl").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  char* err = nullptr;
  if (!exists) {
    int rc = sqlite3_exec(
        db,
        "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE tasks(name TEXT PRIMARY KEY, record TEXT NOT NULL);"
        "CREATE TABLE losses(task TEXT NOT NULL, step INTEGER NOT NULL, loss REAL NOT NULL,"
        " PRIMARY KEY(task, step));",
        nullptr, nullptr, &err);
    if (rc != SQLITE_OK) {
      std::string msg = err ? err : "";
      sqlite3_free(err);
      throw InputError(path, 0, "", "cannot create run state: " + msg);
    }
    state.SetText("format", kFormat);
    state.CreateSubmissions();
    return state;
  }
  std::optional<std::string> format;
  try {
    format = state.GetText("format");
  } catch (const std::exception& e) {
    throw InputError(path, 0, "", std::string("not a Saturn run state (") + e.what() + ")");
  }
  if (format != kFormat) throw InputError(path, 0, "", "not a Saturn run state");
  state.CreateSubmissions();
  return state;
}

void RunState::CreateSubmissions() {
  Check(db_,
        sqlite3_exec(db_,
                     "CREATE TABLE IF NOT EXISTS submissions(seq INTEGER PRIMARY KEY AUTOINCREMENT,"
                     " source TEXT NOT NULL, base_dir TEXT NOT NULL, text TEXT NOT NULL)",
                     nullptr, nullptr, nullptr),
        "create submissions");
}

long RunState::AddSubmission(const Submission& submission) {
  Statement s(db_, "INSERT INTO submissions(source, base_dir, text) VALUES(?, ?, ?)");
  s.Bind(1, submission.source).Bind(2, submission.base_dir).Bind(3, submission.text).Step();
  return static_cast<long>(sqlite3_last_insert_rowid(db_));
}

std::vector<Submission> RunState::Submissions() {
  std::vector<Submission> all;
  Statement s(db_, "SELECT seq, source, base_dir, text FROM submissions ORDER BY seq");
  while (s.Step()) {
    all.push_back({std::stol(s.Text(0)), s.Text(1), s.Text(2), s.Text(3)});
  }
  return all;
}

RunState::RunState(RunState&& o) noexcept
    : db_(o.db_), dir_(std::move(o.dir_)), events_fd_(o.events_fd_) {
  o.db_ = nullptr;
  o.events_fd_ = -1;
}

RunState& RunState::operator=(RunState&& o) noexcept {
  if (this != &o) {
    sqlite3_close(db_);
    if (events_fd_ >= 0) ::close(events_fd_);
    db_ = o.db_;
    dir_ = std::move(o.dir_);
    events_fd_ = o.events_fd_;
    o.db_ = nullptr;
    o.events_fd_ = -1;
  }
  return *this;
}

RunState::~RunState() {
  sqlite3_close(db_);
  if (events_fd_ >= 0) ::close(events_fd_);
}

std::optional<std::string> RunState::GetText(const std::string& key) {
  Statement s(db_, "SELECT value FROM meta WHERE key = ?");
  s.Bind(1, key);
  if (!s.Step()) return std::nullopt;
  return s.Text(0);
}

void RunState::SetText(const std::string& key, const std::string& value) {
  Statement s(db_, "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)");
  s.Bind(1, key).Bind(2, value).Step();
}

std::optional<std::string> RunState::Get(MetaKey<std::string> key) {
  return GetText(key.name);
}

std::optional<double> RunState::Get(MetaKey<double> key) {
  std::optional<std::string> text = GetText(key.name);
  if (!text) return std::nullopt;
  return std::stod(*text);
}

std::optional<int> RunState::Get(MetaKey<int> key) {
  std::optional<std::string> text = GetText(key.name);
  if (!text) return std::nullopt;
  return std::stoi(*text);
}

void RunState::Set(MetaKey<std::string> key, const std::string& value) {
  SetText(key.name, value);
}

void RunState::Set(MetaKey<double> key, double value) {
  SetText(key.name, FormatNumber(value));
}

void RunState::Set(MetaKey<int> key, int value) {
  SetText(key.name, std::to_string(value));
}

std::vector<TaskRecord> RunState::Tasks() {
  std::vector<TaskRecord> out;
  Statement s(db_, "SELECT record FROM tasks ORDER BY rowid");
  while (s.Step()) {
    nlohmann::json j = nlohmann::json::parse(s.Text(0));
    TaskRecord t;
    t.name = j.value("name", "");
    std::string status = j.value("status", std::string(ToString(TaskStatus::kQueued)));
    std::optional<TaskStatus> parsed = TaskStatusFromString(status);
    if (!parsed) {
      throw std::runtime_error("run state: task " + t.name + ": unknown status \"" + status + "\"");
    }
    t.status = *parsed;
    t.checkpoint_step = j.value("checkpoint_step", 0L);
    t.steps_done = j.value("steps_done", 0L);
    // Stored under their first names: "launches" (runs before it stored the
    // failures as "attempts") and "first_start_s".
    t.attempts = j.value("launches", 0);
    t.failures = j.contains("failures") ? j.value("failures", 0) : j.value("attempts", 0);
    t.error = j.value("error", "");
    t.final_loss = j.value("final_loss", 0.0);
    t.start_s = j.value("first_start_s", -1.0);
    t.end_s = j.value("end_s", -1.0);
    t.technique = j.value("technique", "");
    t.gpus = j.value("gpus", 0);
    t.node = j.value("node", "");
    t.gpu_ids = j.value("gpu_ids", std::vector<int>{});
    t.worker_pgid = j.value("worker_pgid", 0);
    out.push_back(std::move(t));
  }
  return out;
}

void RunState::SaveTask(const TaskRecord& t) {
  nlohmann::json j = {{"name", t.name},
                      {"status", std::string(ToString(t.status))},
                      {"checkpoint_step", t.checkpoint_step},
                      {"steps_done", t.steps_done},
                      {"launches", t.attempts},
                      {"failures", t.failures},
                      {"error", t.error},
                      {"final_loss", t.final_loss},
                      {"first_start_s", t.start_s},
                      {"end_s", t.end_s},
                      {"technique", t.technique},
                      {"gpus", t.gpus},
                      {"node", t.node},
                      {"gpu_ids", t.gpu_ids},
                      {"worker_pgid", t.worker_pgid}};
  Statement s(db_,
              "INSERT INTO tasks(name, record) VALUES(?, ?) "
              "ON CONFLICT(name) DO UPDATE SET record = excluded.record");
  s.Bind(1, t.name).Bind(2, j.dump()).Step();
}

void RunState::AddLoss(const std::string& task, long step, double loss) {
  if (!std::isfinite(loss)) return;  // a diverged step: no point of a curve
  Statement s(db_, "INSERT OR REPLACE INTO losses(task, step, loss) VALUES(?, ?, ?)");
  s.Bind(1, task).Bind(2, step).Bind(3, loss).Step();
}

void RunState::AddLosses(const std::string& task,
                         const std::vector<std::pair<long, double>>& points) {
  if (points.empty()) return;
  Batch batch(*this);
  Statement s(db_, "INSERT OR REPLACE INTO losses(task, step, loss) VALUES(?, ?, ?)");
  for (const auto& [step, loss] : points) {
    if (!std::isfinite(loss)) continue;
    s.Bind(1, task).Bind(2, step).Bind(3, loss).Step();
    sqlite3_reset(s.stmt);
  }
}

RunState::Batch::Batch(RunState& state) : state_(state) {
  Check(state_.db_, sqlite3_exec(state_.db_, "SAVEPOINT batch", nullptr, nullptr, nullptr),
        "SAVEPOINT");
  ++state_.batch_depth_;
}

RunState::Batch::~Batch() {
  --state_.batch_depth_;
  // Kept on an exception too: a batch is for speed, not all or nothing (the
  // events and files it went with stay), so the state keeps what was done.
  if (sqlite3_exec(state_.db_, "RELEASE batch", nullptr, nullptr, nullptr) != SQLITE_OK) {
    // A destructor cannot throw: say so, and leave no transaction open.
    std::fprintf(stderr, "saturn: warning: cannot commit the run state: %s\n",
                 sqlite3_errmsg(state_.db_));
    if (state_.batch_depth_ == 0) sqlite3_exec(state_.db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  if (state_.batch_depth_ == 0) ::fdatasync(state_.events_fd_);
}

std::vector<std::pair<long, double>> RunState::Losses(const std::string& task) {
  std::vector<std::pair<long, double>> out;
  Statement s(db_, "SELECT step, loss FROM losses WHERE task = ? ORDER BY step");
  s.Bind(1, task);
  while (s.Step()) {
    out.push_back({sqlite3_column_int64(s.stmt, 0), sqlite3_column_double(s.stmt, 1)});
  }
  return out;
}

void RunState::Append(const Event& event) {
  std::string line = EventToJsonLine(event);
  const char* data = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t n = ::write(events_fd_, data, left);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw SystemError("cannot append to the event log");
    data += n;
    left -= static_cast<size_t>(n);
  }
  if (batch_depth_ == 0) ::fdatasync(events_fd_);
}

double RunState::ResumeClock() {
  double t = Get(meta::kClockS).value_or(0.0);
  for (const Event& e : Events())
    t = std::max(t, e.t);
  return t;
}

std::vector<Event> RunState::Events() {
  return ParseEventLines(ReadFile(dir_ + "/events.jsonl"), dir_ + "/events.jsonl");
}

}  // namespace saturn
