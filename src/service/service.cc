#include "service/service.h"

#include <chrono>
#include <future>

#include "common/error.h"

namespace saturn {

using nlohmann::json;

struct Service::Request {
  enum Kind { kSubmit, kCancel } kind = kSubmit;
  Workload workload;
  Submission submission;
  std::string task;
  std::promise<Reply> reply;
};

namespace {

int HttpStatus(RunAnswer::Kind kind, int done) {
  switch (kind) {
    case RunAnswer::kDone:
      return done;
    case RunAnswer::kBadInput:
      return 400;
    case RunAnswer::kConflict:
      return 409;
    case RunAnswer::kNotFound:
      return 404;
  }
  return 500;
}

std::string EventLine(const Event& e) {
  std::string line = EventToJsonLine(e);
  return line.substr(0, line.size() - 1);
}

}  // namespace

Service::Service(const ServeOptions& options, const Clock& clock)
    : options_(options), run_(saturn::Run::OpenService(options.source, options.run, clock)) {
  for (const Event& e : run_->PastEvents())
    PushEvent(EventLine(e));
  run_->Subscribe([this](const Event& e) { PushEvent(EventLine(e)); });
  Publish(true, /*report=*/true);
}

Service::~Service() = default;

Service::Reply Service::Submit(const std::string& text, const std::string& source,
                               const std::string& base_dir) {
  auto request = std::make_unique<Request>();
  request->kind = Request::kSubmit;
  request->submission = {0, source.empty() ? "submission" : source, base_dir, text};
  try {
    request->workload = run_->CheckSubmission(request->submission);
  } catch (const InputError& e) {
    return {400, {{"error", e.what()}}};
  } catch (const SystemError& e) {  // the service's machine refused, not the workload
    return {503, {{"error", e.what()}}};
  } catch (const std::runtime_error& e) {
    return {400, {{"error", e.what()}}};
  }
  return Post(std::move(request));
}

Service::Reply Service::Cancel(const std::string& task) {
  auto request = std::make_unique<Request>();
  request->kind = Request::kCancel;
  request->task = task;
  return Post(std::move(request));
}

Service::Reply Service::Post(std::unique_ptr<Request> request) {
  std::future<Reply> reply = request->reply.get_future();
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    inbox_.push_back(std::move(request));
  }
  if (reply.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
    return {503, {{"error", "the service did not answer in time; ask again"}}};
  }
  return reply.get();
}

void Service::HandleRequests() {
  std::deque<std::unique_ptr<Request>> requests;
  {
    std::lock_guard<std::mutex> lock(inbox_mu_);
    requests.swap(inbox_);
  }
  if (requests.empty()) return;
  std::vector<Reply> replies;
  for (auto& request : requests) {
    try {
      if (request->kind == Request::kSubmit) {
        RunAnswer a = run_->Submit(request->submission, std::move(request->workload));
        replies.push_back(
            {HttpStatus(a.kind, 201), a.kind == RunAnswer::kDone
                                          ? json{{"tasks", a.tasks}, {"submission", a.submission}}
                                          : json{{"error", a.error}}});
      } else {
        RunAnswer a = run_->Cancel(request->task);
        replies.push_back(
            {HttpStatus(a.kind, 200),
             a.kind == RunAnswer::kDone
                 ? json{{"task", request->task}, {"status", std::string(ToString(a.status))}}
                 : json{{"error", a.error}}});
      }
    } catch (const std::exception& e) {
      replies.push_back({500, {{"error", e.what()}}});
    }
  }
  // Answered once the views show what the requests changed.
  Publish(true);
  for (size_t i = 0; i < requests.size(); ++i)
    requests[i]->reply.set_value(replies[i]);
}

void Service::Run(const std::atomic<bool>& stop) {
  RunHooks hooks;
  hooks.each_turn = [&] { HandleRequests(); };
  hooks.after_turn = [&] { Publish(false); };
  hooks.stop = [&] { return stop.load(); };
  run_->Drive(hooks);
  Publish(true, /*report=*/true);
}

}  // namespace saturn
