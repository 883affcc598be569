// What a run cost beyond its plan: how much slower than profiled its tasks
// trained, and the disk its tasks' folders take.
#include "report/run_costs.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>

#include "report/phrases.h"

namespace saturn {
namespace {

using nlohmann::json;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

// A task's measured wall seconds per step over its profiled ones, from its
// runs that ended with a known step (started -> stopped or finished) in a
// configuration with a pace; nullopt where there is none.
std::optional<double> SlowdownOf(const RunReportTask& t, const std::vector<Event>& events) {
  if (t.profiled.empty()) return std::nullopt;
  auto pace = [&](const Event& e) -> const ProfiledPace* {
    for (const ProfiledPace& p : t.profiled) {
      if (p.technique == e.technique && p.gpus == e.gpus && p.node == e.node) return &p;
    }
    return nullptr;
  };
  double measured_s = 0, profiled_s = 0;
  const Event* started = nullptr;
  for (const Event& e : events) {
    if (e.task != t.name) continue;
    if (e.kind == EventKind::kTaskStarted) {
      started = &e;
      continue;
    }
    if (e.kind != EventKind::kTaskStopped && e.kind != EventKind::kTaskFinished &&
        e.kind != EventKind::kTaskFailed && e.kind != EventKind::kTaskCancelled &&
        e.kind != EventKind::kTaskEarlyStopped)
      continue;
    const Event* from = started;
    started = nullptr;
    // A failed or cancelled run's steps since its last checkpoint are not
    // counted: its time is not a pace.
    if (from == nullptr || e.kind == EventKind::kTaskFailed || e.kind == EventKind::kTaskCancelled)
      continue;
    const char* field = e.kind == EventKind::kTaskFinished ? "steps" : "step";
    if (!e.extra.contains(field) || !from->extra.contains("step")) continue;
    const long steps = e.extra[field].get<long>() - from->extra["step"].get<long>();
    const ProfiledPace* p = pace(*from);
    if (steps <= 0 || p == nullptr || p->s_per_step <= 0 || e.t <= from->t) continue;
    measured_s += e.t - from->t;
    profiled_s += p->fixed_s + static_cast<double>(steps) * p->s_per_step;
  }
  if (profiled_s <= 0) return std::nullopt;
  return measured_s / profiled_s;
}

json SlowdownVsProfile(const std::vector<std::optional<double>>& slowdowns, bool compared) {
  std::vector<double> known;
  for (const std::optional<double>& s : slowdowns) {
    if (s) known.push_back(*s);
  }
  if (known.empty()) return nullptr;
  const double median = Median(known);
  const int tasks = static_cast<int>(known.size());
  return {{"median", median},
          {"tasks", tasks},
          {"warning",
           median >= kMarkedSlowdown ? json(ContentionWarning(median, tasks, compared)) : json()}};
}

std::optional<long long> TotalDiskBytes(const RunReportInput& in) {
  std::optional<long long> total;
  for (const RunReportTask& t : in.tasks) {
    if (t.disk_bytes >= 0) total = total.value_or(0) + t.disk_bytes;
  }
  return total;
}

long long FolderBytes(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  long long total = 0;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code size_ec;
    if (it->is_regular_file(size_ec)) {
      const std::uintmax_t size = it->file_size(size_ec);
      if (!size_ec) total += static_cast<long long>(size);
    }
  }
  return total;
}

}  // namespace saturn
