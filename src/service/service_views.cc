// The service's published views (part of service.h): what Run()'s thread
// publishes for the HTTP threads — tasks, plan, loss curves — and the event
// stream with its progress messages.
#include <algorithm>
#include <chrono>
#include <map>

#include "executor/arrivals.h"
#include "executor/run_context.h"
#include "service/service.h"

namespace saturn {

using nlohmann::json;

namespace {

json OrNull(bool known, const json& value) {
  return known ? value : json(nullptr);
}

double MedianOf(std::deque<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

void Service::StreamProgress() {
  RunContext& run = *run_;
  double now = run.Now();
  for (int j = 0; j < run.NumTasks(); ++j) {
    const LiveTask& l = run.tasks[j];
    if (!run.Running(j) || l.reported.step <= l.record.checkpoint_step) continue;
    auto& [step, t] = streamed_[l.record.name];
    if (step == l.reported.step || now - t < 1.0) continue;
    step = l.reported.step;
    t = now;
    std::string line = EventToJsonLine(events::TaskProgress(now, l.record.name, l.reported.step,
                                                            run.Steps(j), l.reported.last_loss));
    PushEvent(line.substr(0, line.size() - 1));
  }
}

void Service::Publish(bool force) {
  RunContext& run = *run_;
  double now = run.Now();
  if (!force && now - last_publish_ < 0.25) return;
  bool refresh_losses = force || static_cast<long>(now) / 2 != static_cast<long>(last_publish_) / 2;
  last_publish_ = now;
  std::map<std::string, const PlanTask*> planned;
  for (const PlanTask& p : run.plan().tasks)
    planned[p.task] = &p;
  json tasks = json::array();
  for (int j = 0; j < run.NumTasks(); ++j) {
    const LiveTask& l = run.tasks[j];
    const TaskRecord& r = l.record;
    const PlanTask* p = planned.count(r.name) ? planned[r.name] : nullptr;
    bool placed = !r.technique.empty();
    // A task yet to run shows where the plan puts it; one that ended without
    // ever running (cancelled before it started) ran nowhere and shows none.
    const PlanTask* to_run = run.Done(j) ? nullptr : p;
    bool finished = r.status == TaskStatus::kFinished;
    std::string status =
        r.status == TaskStatus::kWaiting ? "queued" : std::string(ToString(r.status));
    json eta = nullptr;
    if (run.Running(j) && !l.reported.recent_step_s.empty()) {
      eta = now + MedianOf(l.reported.recent_step_s) * std::max(0L, run.Steps(j) - l.reported.step);
    } else if (!run.Done(j) && p) {
      eta = p->end_s;
    }
    // Curves of running tasks every 2 s; a task's last one once it ended.
    bool ended_unread = run.Done(j) && !losses_final_.count(r.name);
    if ((refresh_losses && run.Running(j)) || !losses_.count(r.name) || ended_unread) {
      json curve = json::array();
      for (const auto& [step, loss] : run.site.state->Losses(r.name))
        curve.push_back({step, loss});
      losses_[r.name] = curve;
      if (run.Done(j)) losses_final_.insert(r.name);
    }
    tasks.push_back(
        {{"id", r.name},
         {"status", status},
         {"technique", placed   ? json(r.technique)
                       : to_run ? json(to_run->technique)
                                : json()},
         {"gpus", placed   ? json(r.gpus)
                  : to_run ? json(to_run->gpus)
                           : json()},
         {"node", placed   ? json(r.node)
                  : to_run ? json(to_run->node)
                           : json()},
         {"gpu_ids", placed   ? json(r.gpu_ids)
                     : to_run ? json(to_run->gpu_ids)
                              : json::array()},
         {"steps_done", finished ? run.Steps(j) : std::max(l.reported.step, r.checkpoint_step)},
         {"steps", run.Steps(j)},
         {"eta_s", eta},
         {"planned_start_s", p ? json(p->start_s) : json()},
         {"loss",
          OrNull(l.reported.step > 0 || finished, finished ? r.final_loss : l.reported.last_loss)},
         {"final_loss", OrNull(finished, r.final_loss)},
         {"attempts", r.launches},
         {"failures", r.failures},
         {"submitted_s", submitted_at_.count(r.name) ? json(submitted_at_[r.name]) : json()},
         {"error", r.error}});
  }
  auto pending = [&](const std::string& name, const char* status) {
    tasks.push_back(
        {{"id", name},
         {"status", status},
         {"technique", nullptr},
         {"gpus", nullptr},
         {"node", nullptr},
         {"gpu_ids", json::array()},
         {"steps_done", 0},
         {"steps", nullptr},
         {"eta_s", nullptr},
         {"planned_start_s", nullptr},
         {"loss", nullptr},
         {"final_loss", nullptr},
         {"attempts", 0},
         {"failures", 0},
         {"submitted_s", submitted_at_.count(name) ? json(submitted_at_[name]) : json()},
         {"error", rejected_.count(name) ? rejected_[name] : ""}});
  };
  for (const std::string& n : arrivals_->Profiling())
    pending(n, "profiling");
  for (const std::string& n : arrivals_->Queued())
    pending(n, "queued");
  for (const auto& [n, why] : rejected_)
    pending(n, "failed");
  json view = {{"version", 1}, {"now_s", now}, {"tasks", tasks}};
  std::string plan = PlanToJson(run.plan()).dump();
  std::lock_guard<std::mutex> lock(view_mu_);
  tasks_view_ = std::move(view);
  tasks_view_["losses"] = losses_;
  plan_view_ = std::move(plan);
}

json Service::Tasks() const {
  std::lock_guard<std::mutex> lock(view_mu_);
  json view = tasks_view_;
  view.erase("losses");
  return view;
}

Service::Reply Service::Task(const std::string& id) const {
  std::lock_guard<std::mutex> lock(view_mu_);
  for (const json& t : tasks_view_["tasks"]) {
    if (t["id"] != id) continue;
    json task = t;
    const json& losses = tasks_view_["losses"];
    task["losses"] = losses.contains(id) ? losses[id] : json::array();
    return {200, task};
  }
  return {404, {{"error", "no task " + Quote(id)}}};
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
