// Errors at Saturn's boundaries.
//
// One style everywhere: bad user input is an `InputError` thrown where it is
// found, carrying one message that names the file, the line or field and what
// was expected. The CLI turns it into that message on stderr and exit code 2.
// What the system refuses, not the user nor a bug (a file that cannot be
// written: a full disk, a file-size limit; a service that cannot be reached;
// a process that cannot be started), is a `SystemError`: "error: <message>"
// and exit code 1. Any other exception is an internal failure (exit code 1,
// "internal error"). Expected outcomes
// of an algorithm (a solver that hit its time limit, an infeasible
// configuration) are return values, never exceptions.
//
//   throw InputError("cluster.yaml", 4, "nodes[1].gpus", "expected an integer >= 1, got 'x'");
//   // -> "cluster.yaml:4: nodes[1].gpus: expected an integer >= 1, got 'x'"
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace saturn {

class InputError : public std::runtime_error {
 public:
  explicit InputError(const std::string& message) : std::runtime_error(message) {}
  // file:line: field: message; line <= 0 or an empty field are left out.
  InputError(std::string_view file, int line, std::string_view field, std::string_view message);
  // The line it names (0: none, as in the one-string form).
  int line() const { return line_; }
  // The same error at another line (a reader that knows better where it
  // is); the one-string form has no parts to move and stays as it is.
  InputError AtLine(int line) const;

 private:
  std::string file_, field_, message_;
  int line_ = 0;
  bool parts_ = false;
};

class SystemError : public std::runtime_error {
 public:
  explicit SystemError(const std::string& message) : std::runtime_error(message) {}
};

// Quotes a user-supplied value for an error message: 'value', shortened if long.
std::string Quote(std::string_view value);

}  // namespace saturn
