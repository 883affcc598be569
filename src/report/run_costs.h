// What a run cost beyond its plan: how much slower than profiled its tasks
// trained (on a machine shared with other work every task may take several
// times its profiled steps, while current practice's time is estimated from
// that same profile), and the disk its tasks' folders take.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "report/run_report.h"

namespace saturn {

// A task's measured wall seconds per step over its profiled ones, from its
// runs that ended with a known step (started -> stopped or finished) in a
// configuration with a pace; nullopt where there is none.
std::optional<double> SlowdownOf(const RunReportTask& t, const std::vector<Event>& events);

// report.json's "slowdown_vs_profile": the median over tasks of each one's
// slowdown, and the warning from kMarkedSlowdown up; null without any.
nlohmann::json SlowdownVsProfile(const std::vector<std::optional<double>>& slowdowns,
                                 bool compared);

// Bytes of the files under `dir` (0 if it is missing).
long long FolderBytes(const std::string& dir);
// The tasks' disk_bytes summed; nullopt when none is known.
std::optional<long long> TotalDiskBytes(const RunReportInput& in);

}  // namespace saturn
