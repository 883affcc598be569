// The service's published views (part of service.h): what Run()'s thread
// publishes for the HTTP threads — tasks, plan, loss curves — and the event
// stream with its progress messages.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "common/format.h"
#include "contracts/event_kinds.h"
#include "service/service.h"

namespace saturn {

using nlohmann::json;

void Service::StreamProgress(const std::vector<TaskView>& views) {
  double now = run_->Now();
  for (const TaskView& v : views) {
    if (v.status != TaskStatus::kRunning || !v.loss || !v.steps) continue;
    auto& [step, t] = streamed_[v.name];
    if (step == v.steps_done || now - t < 1.0) continue;
    step = v.steps_done;
    t = now;
    std::string line =
        EventToJsonLine(events::TaskProgress(now, v.name, v.steps_done, *v.steps, *v.loss));
    PushEvent(line.substr(0, line.size() - 1));
  }
}

void Service::Publish(bool force, bool report) {
  double now = run_->Now();
  if (!force && now - last_publish_ < 0.25) return;
  bool refresh_losses = force || static_cast<long>(now) / 2 != static_cast<long>(last_publish_) / 2;
  last_publish_ = now;
  std::vector<TaskView> views = run_->Tasks();
  StreamProgress(views);
  json tasks = json::array();
  for (const TaskView& v : views) {
    tasks.push_back(TaskViewToJson(v));
    bool ended = IsEnded(v.status);
    if (!ended && losses_final_.count(v.name)) {
      // A cancelled task replaced by a new one of its name: its curves go.
      losses_final_.erase(v.name);
      losses_.erase(v.name);
      evals_.erase(v.name);
    }
    if (!v.steps) continue;  // not joined yet: no curve
    // Curves of running tasks every 2 s; a task's last one once it ended.
    bool ended_unread = ended && !losses_final_.count(v.name);
    bool running = v.status == TaskStatus::kRunning;
    if ((refresh_losses && running) || !losses_.count(v.name) || ended_unread) {
      json curve = json::array();
      for (const auto& [step, loss] : run_->Losses(v.name))
        curve.push_back({step, loss});
      losses_[v.name] = curve;
      json evals = json::array();
      for (const EvalPoint& e : run_->Evaluations(v.name))
        evals.push_back({e.step, e.loss});
      evals_[v.name] = evals;
      if (ended) losses_final_.insert(v.name);
    }
  }
  WriteReportIfDue(views, report);
  json view = {{"version", 1}, {"now_s", now}, {"tasks", tasks}, {"best", run_->BestSoFar()}};
  if (report_written_) view["report"] = "report.html";
  std::string plan = PlanToJson(run_->CurrentPlan()).dump();
  std::lock_guard<std::mutex> lock(view_mu_);
  tasks_view_ = std::move(view);
  tasks_view_["losses"] = losses_;
  tasks_view_["evals"] = evals_;
  plan_view_ = std::move(plan);
}

void Service::WriteReportIfDue(const std::vector<TaskView>& views, bool asked) {
  long ended = std::count_if(views.begin(), views.end(),
                             [](const TaskView& v) { return IsEnded(v.status); });
  double now = run_->Now();
  // On every task's end (at most every few seconds; at once when the last
  // one ends), and when asked.
  bool all = ended == static_cast<long>(views.size());
  bool due = ended != ended_at_report_ && (all || now - last_report_ >= kReportEvery_s);
  if (!due && !(asked && ended > 0)) return;
  try {
    run_->WriteReportNow();
    report_written_ = std::filesystem::exists(options_.source.state_dir + "/report.html");
  } catch (const std::exception& e) {
    // A report that cannot be written does not stop the service.
    std::fprintf(stderr, "saturn serve: report not written: %s\n", e.what());
  }
  ended_at_report_ = ended;
  last_report_ = now;
}

json Service::Tasks() const {
  std::lock_guard<std::mutex> lock(view_mu_);
  json view = tasks_view_;
  view.erase("losses");
  view.erase("evals");
  return view;
}

Service::Reply Service::Task(const std::string& id) const {
  std::lock_guard<std::mutex> lock(view_mu_);
  for (const json& t : tasks_view_["tasks"]) {
    if (t["id"] != id) continue;
    json task = t;
    const json& losses = tasks_view_["losses"];
    task["losses"] = losses.contains(id) ? losses[id] : json::array();
    const json& evals = tasks_view_["evals"];
    task["evals"] = evals.contains(id) ? evals[id] : json::array();
    return {200, task};
  }
  return {404, {{"error", "no task " + Quote(id)}}};
}

std::optional<std::string> Service::ReportHtml() const {
  std::ifstream in(options_.source.state_dir + "/report.html", std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream page;
  page << in.rdbuf();
  return page.str();
}

json Service::Plan() const {
  std::lock_guard<std::mutex> lock(view_mu_);
  return json::parse(plan_view_);
}

void Service::PushEvent(const std::string& line) {
  {
    std::lock_guard<std::mutex> lock(events_mu_);
    events_.emplace_back(next_event_++, line);
    // Progress messages are many: the stream keeps the newest 100 000.
    if (events_.size() > 100000) events_.pop_front();
  }
  events_cv_.notify_all();
}

std::vector<std::pair<long, std::string>> Service::EventsAfter(long after, double wait_s) const {
  std::unique_lock<std::mutex> lock(events_mu_);
  events_cv_.wait_for(lock, std::chrono::duration<double>(wait_s),
                      [&] { return !events_.empty() && events_.back().first > after; });
  std::vector<std::pair<long, std::string>> out;
  for (auto it = std::upper_bound(events_.begin(), events_.end(), after,
                                  [](long a, const auto&e) { return a < e.first; });
       it != events_.end(); ++it) {
    out.push_back(*it);
  }
  return out;
}

}  // namespace saturn
