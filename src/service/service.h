// `saturn serve`: the executor as a long-lived service. Workloads arrive at
// any time (POST /v1/workloads, server.h); each is stored durably in the
// state folder before it is acknowledged, profiled (the cache first) on
// devices no task holds while the others train, and planned in with running
// tasks pinned (executor/arrivals.h). Re-planning, retries, checkpoints,
// pre-emption and the event log are the executor's own. A SIGKILLed service
// restarted on the same state folder continues every unfinished task from
// its last checkpoint and profiles what had not been profiled yet.
//
// Threads: Run() is the one thread that owns the run (dispatch, arrivals,
// re-planning, the state database); the HTTP threads call the thread-safe
// methods below, which read views Run() publishes or hand requests to it.
//
//   Service service(options, clock);       // InputError on bad options
//   std::thread loop([&] { service.Run(stop); });
//   Service::Reply r = service.Submit(text, "w.yaml", "/home/me/project");
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "executor/executor.h"

namespace saturn {

struct ServeOptions {
  std::string cluster_path;  // required (a Slurm allocation's cluster is not wired yet)
  std::string listen = "127.0.0.1:8470";
  std::string state_dir = "saturn-service";
  std::string token_file;           // "": no token, loopback only
  size_t max_body_bytes = 1 << 20;  // larger requests get 413
  RunOptions run;                   // solver, limits, retries, profiler, backend
};

struct RunContext;
class Dispatcher;
class Arrivals;
struct Workload;

class Service {
 public:
  Service(const ServeOptions& options, const Clock& clock);
  ~Service();

  // Trains, takes submissions and cancellations, re-plans, until `stop`;
  // then stops every worker (they checkpoint) and returns.
  void Run(const std::atomic<bool>& stop);

  struct Reply {
    int status = 200;
    nlohmann::json body;
  };
  // A workload (Contract 5, YAML or JSON) from `source` (for messages),
  // relative paths resolved against `base_dir`. 201 with the task ids once
  // stored; 400 for a bad workload, 409 for a name the service has.
  Reply Submit(const std::string& text, const std::string& source, const std::string& base_dir);
  // 200 once asked (a running task checkpoints, then ends cancelled); 404.
  Reply Cancel(const std::string& task);
  nlohmann::json Tasks() const;
  Reply Task(const std::string& id) const;
  nlohmann::json Plan() const;
  // Event-stream messages with a sequence number above `after`, waiting up
  // to `wait_s` for one.
  std::vector<std::pair<long, std::string>> EventsAfter(long after, double wait_s) const;

 private:
  struct Request;
  void SetUp();
  void Restart();
  void HandleRequests();
  Reply DoSubmit(Request& request);
  Reply DoCancel(const std::string& task);
  Reply Post(std::unique_ptr<Request> request);
  void AfterArrivals();
  void Publish(bool force);
  void PushEvent(const std::string& line);
  void StreamProgress();

  ServeOptions options_;
  std::unique_ptr<RunContext> run_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::unique_ptr<Arrivals> arrivals_;
  std::string worker_;

  // Owned by Run()'s thread.
  std::map<std::string, std::string> rejected_;              // task -> why profiling refused it
  std::set<std::string> cancel_on_join_;                     // cancelled while being profiled
  std::map<std::string, std::pair<long, double>> streamed_;  // task -> (step, t) last streamed
  std::map<std::string, nlohmann::json> losses_;             // task -> [[step, loss]]
  std::set<std::string> losses_final_;                       // ended tasks whose curve is read
  std::map<std::string, double> submitted_at_;
  double last_publish_ = -1e9;

  // Requests for Run()'s thread.
  mutable std::mutex inbox_mu_;
  std::deque<std::unique_ptr<Request>> inbox_;

  // Views Run() publishes.
  mutable std::mutex view_mu_;
  nlohmann::json tasks_view_;
  std::string plan_view_;

  mutable std::mutex events_mu_;
  mutable std::condition_variable events_cv_;
  std::deque<std::pair<long, std::string>> events_;
  long next_event_ = 1;
};

}  // namespace saturn
