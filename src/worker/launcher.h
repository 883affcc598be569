// The launcher: starts one rank process per device and supervises them.
//
// Each rank is this program again, with "--rank r --world-size G
// --rendezvous DIR" added. Rank 0 keeps the launcher's stdout (progress
// lines); the others write theirs to stderr. SIGTERM or SIGINT to the
// launcher is passed on to every rank (they checkpoint and exit); ranks start
// with SIGTERM blocked until they can handle it. When a rank fails, the
// others are killed, so a dead rank never leaves the rest waiting: at once,
// or after up to 5 s when the first to fail did so as a peer (4) or by a
// signal, so that the rank it noticed can exit with the root cause first;
// ranks also die with the launcher (PR_SET_PDEATHSIG).
//
// The launcher's exit status is the root cause's: bad input (2) before out of
// memory (3) before the system's refusals and internal errors (1) before
// peer failures (4), which are usually the others noticing the first
// failure. A rank killed by a signal it was not sent by the launcher counts
// as a peer failure.
//
//   LaunchResult r = LaunchRanks(args, 4, "/tmp/saturn-rdzv-x");
//   if (r.status != 0) fprintf(stderr, "%s\n", r.message.c_str());
#pragma once

#include <string>
#include <vector>

namespace saturn::worker {

struct LaunchResult {
  int status = 0;
  int failed_rank = -1;
  std::string message;  // the root cause's failure note, or how it died
};

LaunchResult LaunchRanks(const std::vector<std::string>& args, int world_size,
                         const std::string& rendezvous);

// Where a failing rank leaves one line saying why, for the launcher.
std::string FailureNotePath(const std::string& rendezvous, int rank);

// A fresh private directory for a rendezvous; the caller removes it.
std::string MakeRendezvousDir();

}  // namespace saturn::worker
