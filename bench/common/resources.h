// What a benchmark process has used so far: peak memory and CPU time (on a
// shared machine wall time also counts the others' work, so the benchmarks
// print CPU seconds beside it).
#pragma once

#include <sys/resource.h>

namespace saturn::bench {

// Peak resident memory of this process, MiB.
inline double PeakRssMib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}

// CPU seconds of this process so far, user and system.
inline double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace saturn::bench
