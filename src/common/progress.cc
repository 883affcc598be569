#include "common/progress.h"

#include <unistd.h>

#include <atomic>

#include "common/format.h"

namespace saturn {
namespace {
std::atomic<bool> g_quiet{false};
}

Progress::Progress(std::string label, long total, const Clock* clock, std::FILE* out,
                   double min_interval_s)
    : label_(std::move(label)),
      total_(total),
      clock_(clock ? clock : &own_clock_),
      out_(out),
      min_interval_s_(min_interval_s),
      start_(clock_->Now()),
      tty_(::isatty(::fileno(out)) != 0) {}

Progress::~Progress() {
  if (!finished_ && tty_ && last_width_ > 0 && !g_quiet) std::fputc('\n', out_);
}

void Progress::SetQuiet(bool quiet) {
  g_quiet = quiet;
}

void Progress::Update(long done, const std::string& detail) {
  double now = clock_->Now();
  if (!tty_ && now - last_print_ < min_interval_s_) return;
  last_print_ = now;
  Print(done, detail, false);
}

void Progress::Finish(const std::string& detail) {
  Print(total_, detail, true);
  finished_ = true;
}

void Progress::Print(long done, const std::string& detail, bool final) {
  if (g_quiet) return;
  double elapsed = clock_->Now() - start_;
  std::string line = label_ + " " + std::to_string(done) + "/" + std::to_string(total_);
  if (total_ > 0) line += " (" + std::to_string(done * 100 / total_) + "%)";
  line += " elapsed " + FormatDuration(elapsed);
  if (!final && done > 0 && done < total_) {
    line += ", ~" + FormatDuration(elapsed / done * (total_ - done)) + " left";
  }
  if (!detail.empty()) line += "  " + detail;
  if (tty_) {
    std::string pad = line.size() < last_width_ ? std::string(last_width_ - line.size(), ' ') : "";
    std::fprintf(out_, "\r%s%s", line.c_str(), pad.c_str());
    if (final) std::fputc('\n', out_);
    last_width_ = line.size();
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

}  // namespace saturn
