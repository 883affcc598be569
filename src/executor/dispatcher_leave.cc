// Members leaving a running pack (part of the dispatcher, dispatcher.h):
// the worker trains on without a member that ended, was stopped by its
// rule or was cancelled (worker/pack_job.h), and each settles as it
// leaves; where it was the pack's host, the worker and its devices pass to
// a member still in.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "common/format.h"
#include "common/fs.h"
#include "executor/dispatcher.h"
#include "planner/packing.h"

namespace saturn {

namespace fs = std::filesystem;
using nlohmann::json;

int Dispatcher::SettleLeftMember(int host, long k, long step) {
  const int m = PackMemberAt(host, k);
  if (m < 0 || run_.tasks[m].record.status != TaskStatus::kRunning) return host;
  const std::string dir = PackDir(run_.tasks[host].pack);
  const std::string name = run_.tasks[m].record.name;
  std::error_code ec;
  const std::string path = dir + "/checkpoints/" + name + "/left.json";
  json entry = fs::exists(path, ec) ? json::parse(ReadFile(path), nullptr, false) : json();
  if (!entry.is_object() || entry.value("name", "") != name)
    return host;  // settled at the pack's exit, from its result
  if (m == host) {
    // The worker passes to a member still in; where it cannot, the host
    // settles at the worker's exit, from its result.
    std::vector<int> rest = MembersHostedBy(host);
    std::erase(rest, m);
    if (rest.empty() || !MovePackHost(host, rest.front())) return host;
    host = rest.front();
  }
  WorkerExecuteResult result;
  result.completed_steps = step;
  result.checkpoint = run_.TaskDirOf(m) + "/checkpoints/checkpoint-" + std::to_string(step);
  LiveTask& l = run_.tasks[m];
  l.record.worker_pgid = 0;
  l.stop.pending = false;
  SettleMember(m, dir, entry, result);
  if (run_.options().progress) {
    const char* how = l.record.status == TaskStatus::kCancelled ? "was cancelled"
                      : l.record.status == TaskStatus::kStopped ? "was stopped by its rule"
                                                                : "ended";
    std::fprintf(stderr, "%s: %s %s at step %ld; %s still in\n", l.pack.c_str(), name.c_str(), how,
                 step, Plural(static_cast<long>(MembersHostedBy(host).size()), "task").c_str());
  }
  return host;
}

bool Dispatcher::RequestLeave(int j) {
  const LiveTask& l = run_.tasks[j];
  if (l.pack_host < 0 || l.record.status != TaskStatus::kRunning) return false;
  // An array's worker (engine/array.h) takes no requests: it stops whole.
  if (!run_.WorkloadTaskOf(j).group.empty()) return false;
  const int host = l.pack_host;
  if (!run_.tasks[host].process || run_.tasks[host].stop.pending) return false;
  if (MembersHostedBy(host).size() < 2) return false;
  const std::string dir = PackDir(l.pack) + "/checkpoints/" + l.record.name;
  MakeDirectories(dir);
  WriteFileAtomic(dir + "/leave", "");
  return true;
}

bool Dispatcher::MovePackHost(int from, int to) {
  const Problem& problem = run_.tasks.problem();
  std::optional<Assignment> a = run_.tasks.placements().On(from);
  if (!a) return false;
  const int option = MatchingOption(problem.tasks[to], problem.tasks[from].options[a->option]);
  if (option < 0) return false;  // not as planned
  LiveTask &old = run_.tasks[from], &next = run_.tasks[to];
  run_.tasks.placements().Move(from, to, option);
  next.process = std::move(old.process);
  old.process.reset();
  next.stop.pending = old.stop.pending;
  next.stop.since_s = old.stop.since_s;
  for (LiveTask& t : run_.tasks)
    if (t.pack_host == from) t.pack_host = to;
  return true;
}

}  // namespace saturn
