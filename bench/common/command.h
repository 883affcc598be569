// Runs a shell command and returns what it printed on stdout, for the
// benchmarks that measure in child processes (engine_bench, load_bench).
#pragma once

#include <cstdio>
#include <string>

namespace saturn::bench {

// stdout of `command`; `status` gets pclose's status (-1 if it did not start).
inline std::string CommandOutput(const std::string& command, int* status) {
  FILE* pipe = popen(command.c_str(), "r");
  std::string out;
  char buffer[4096];
  size_t n;
  while (pipe != nullptr && (n = fread(buffer, 1, sizeof buffer, pipe)) > 0)
    out.append(buffer, n);
  *status = pipe != nullptr ? pclose(pipe) : -1;
  return out;
}

}  // namespace saturn::bench
