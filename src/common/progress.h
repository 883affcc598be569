// Progress for long work, on stderr.
//
// On a terminal the line is redrawn in place; otherwise (logs, CI) a line is
// printed at most every `min_interval_s` seconds and at the end, so logs stay
// short. Quiet mode prints nothing.
//
//   Progress p("profiling", total_trials);
//   p.Update(done, "gpt-small fsdp x4");   // "profiling 3/40 (7%) gpt-small ..."
//   p.Finish("done");
#pragma once

#include <cstdio>
#include <string>

#include "common/clock.h"

namespace saturn {

class Progress {
 public:
  Progress(std::string label, long total, const Clock* clock = nullptr, std::FILE* out = stderr,
           double min_interval_s = 5.0);
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // `done` of `total` units finished; `detail` says what runs now. The line
  // shows elapsed time and, once something is done, the estimated remainder.
  void Update(long done, const std::string& detail = "");
  void Finish(const std::string& detail = "");
  static void SetQuiet(bool quiet);

 private:
  void Print(long done, const std::string& detail, bool final);

  std::string label_;
  long total_;
  const Clock* clock_;
  SteadyClock own_clock_;
  std::FILE* out_;
  double min_interval_s_;
  double start_;
  double last_print_ = -1e300;
  bool tty_;
  bool finished_ = false;
  size_t last_width_ = 0;
};

}  // namespace saturn
