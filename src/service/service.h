// `saturn serve`: a Run (executor/run.h) driven as a long-lived service, and
// what only a service does: take requests from HTTP threads, publish views
// for them, and stream the events. Workloads arrive at any time (POST
// /v1/workloads, server.h); the Run stores each durably before it is
// acknowledged, profiles it on devices no task holds while the others train,
// and plans it in with running tasks pinned. A SIGKILLed service restarted on
// the same state folder continues every unfinished task from its last
// checkpoint (the Run's restart, the same code as `saturn run --resume`).
//
// Threads: Run() is the one thread that drives the run; the HTTP threads
// call the thread-safe methods below, which read views Run() publishes or
// hand requests to it.
//
//   Service service(options, clock);       // InputError on bad options
//   std::thread loop([&] { service.Run(stop); });
//   Service::Reply r = service.Submit(text, "w.yaml", "/home/me/project");
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
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
#include "executor/run.h"

namespace saturn {

struct ServeOptions {
  ServiceSource source;  // state folder; cluster file (its nodes, or `from: slurm`)
  std::string listen = "127.0.0.1:8470";
  std::string token_file;           // "": no token, loopback only
  size_t max_body_bytes = 1 << 20;  // larger requests get 413
  RunOptions run;                   // solver, limits, retries, profiler, backend
};

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
  // report.html of the state folder; nullopt before it is written.
  std::optional<std::string> ReportHtml() const;
  // Event-stream messages with a sequence number above `after`, waiting up
  // to `wait_s` for one.
  std::vector<std::pair<long, std::string>> EventsAfter(long after, double wait_s) const;

 private:
  struct Request;
  void HandleRequests();
  Reply Post(std::unique_ptr<Request> request);
  // The views now (`force`) or at most every 0.25 s; `report`: write the
  // report too (on start and on stopping).
  void Publish(bool force, bool report = false);
  void PushEvent(const std::string& line);
  void StreamProgress(const std::vector<TaskView>& views);
  // report.json and report.html in the state folder: after tasks ended (at
  // most every kReportEvery_s, at once when the last one ends), and when
  // asked (on start and on stopping).
  void WriteReportIfDue(const std::vector<TaskView>& views, bool asked);
  static constexpr double kReportEvery_s = 5.0;

  ServeOptions options_;
  std::unique_ptr<saturn::Run> run_;

  // Owned by Run()'s thread.
  std::map<std::string, std::pair<long, double>> streamed_;  // task -> (step, t) last streamed
  std::map<std::string, nlohmann::json> losses_;             // task -> [[step, loss]]
  std::map<std::string, nlohmann::json> evals_;              // task -> [[step, eval_loss]]
  std::set<std::string> losses_final_;                       // ended tasks whose curves are read
  long ended_at_report_ = 0;                                 // ended tasks when last reported
  double last_report_ = -1e9;
  bool report_written_ = false;
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
