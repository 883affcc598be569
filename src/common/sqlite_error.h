// SQLite failures as Saturn's errors: what the system refuses (a full disk,
// an I/O error, a file that cannot be opened or written, a lock held too
// long) is a SystemError; anything else (a malformed statement: a bug) a
// std::runtime_error. Header-only: only the files that use SQLite include it.
//
//   if (rc != SQLITE_DONE) ThrowSqliteError(db, rc, "run state: insert");
#pragma once

#include <sqlite3.h>

#include <stdexcept>
#include <string>

#include "common/error.h"

namespace saturn {

[[noreturn]] inline void ThrowSqliteError(sqlite3* db, int rc, const std::string& what) {
  const std::string message = what + ": " + sqlite3_errmsg(db);
  switch (rc & 0xff) {
    case SQLITE_FULL:
    case SQLITE_IOERR:
    case SQLITE_CANTOPEN:
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_NOLFS:
      throw SystemError(message);
    default:
      throw std::runtime_error(message);
  }
}

}  // namespace saturn
