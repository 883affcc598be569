#include "service/server.h"

#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <exception>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "common/signals.h"
#include "service/dashboard.h"

namespace saturn {

using nlohmann::json;

ListenAddress ParseListen(const std::string& text) {
  size_t colon = text.rfind(':');
  ListenAddress a;
  if (colon == std::string::npos) {
    throw InputError("", 0, "--listen", "expected HOST:PORT, got " + Quote(text));
  }
  a.host = colon == 0 ? "127.0.0.1" : text.substr(0, colon);
  if (a.host.size() > 2 && a.host.front() == '[' && a.host.back() == ']') {
    a.host = a.host.substr(1, a.host.size() - 2);
  }
  std::string port = text.substr(colon + 1);
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) {
    throw InputError("", 0, "--listen", "expected a port from 0 to 65535, got " + Quote(port));
  }
  a.port = static_cast<int>(p);
  return a;
}

bool IsLoopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

bool SameToken(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    unsigned char x = i < a.size() ? a[i] : 0;
    unsigned char y = i < b.size() ? b[i] : 0;
    diff |= x ^ y;
  }
  return diff == 0;
}

std::string ReadToken(const std::string& path, std::string_view field) {
  std::string text;
  try {
    text = ReadFile(path);
  } catch (const std::exception&) {
    throw InputError(path, 0, field, "cannot read the token file");
  }
  size_t b = text.find_first_not_of(" \t\r\n");
  size_t e = text.find_last_not_of(" \t\r\n");
  if (b == std::string::npos) throw InputError(path, 0, field, "the token file is empty");
  return text.substr(b, e - b + 1);
}

namespace {

void Send(httplib::Response& res, const Service::Reply& reply) {
  res.status = reply.status;
  // Messages may quote what a client sent, bytes that are not UTF-8 included.
  res.set_content(reply.body.dump(-1, ' ', false, json::error_handler_t::replace),
                  "application/json");
}

void SendError(httplib::Response& res, int status, const std::string& message) {
  Send(res, {status, {{"error", message}}});
}

// The event stream: everything after Last-Event-ID (or ?since=), then live.
void StreamEvents(Service& service, const std::atomic<bool>& stop, const httplib::Request& req,
                  httplib::Response& res) {
  long after = 0;
  std::string since = req.has_header("Last-Event-ID") ? req.get_header_value("Last-Event-ID")
                                                      : req.get_param_value("since");
  if (!since.empty()) after = std::strtol(since.c_str(), nullptr, 10);
  auto cursor = std::make_shared<long>(after);
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream", [&service, &stop, cursor](size_t, httplib::DataSink& sink) {
        if (stop) {
          sink.done();
          return false;
        }
        auto events = service.EventsAfter(*cursor, 1.0);
        std::string out;
        for (const auto& [seq, line] : events) {
          out += "id: " + std::to_string(seq) + "\ndata: " + line + "\n\n";
          *cursor = seq;
        }
        if (out.empty()) out = ": keep-alive\n\n";
        return sink.write(out.data(), out.size());
      });
}

void Route(httplib::Server& http, Service& service, const std::atomic<bool>& stop) {
  http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    const DashboardFile* page = FindDashboardFile("index.html");
    if (!page) return SendError(res, 404, "this build has no dashboard");
    res.set_content(std::string(page->body), std::string(page->content_type));
  });
  http.Get(R"(/dashboard/([A-Za-z0-9._-]+))",
           [](const httplib::Request& req, httplib::Response& res) {
             const DashboardFile* f = FindDashboardFile(req.matches[1].str());
             if (!f) return SendError(res, 404, "no dashboard file " + Quote(req.matches[1].str()));
             res.set_content(std::string(f->body), std::string(f->content_type));
           });
  http.Post("/v1/workloads", [&](const httplib::Request& req, httplib::Response& res) {
    json body;
    std::string text = req.body, source = "submission", base_dir;
    if (req.get_header_value("Content-Type").find("json") != std::string::npos) {
      try {
        body = json::parse(req.body);
        text = body.at("workload").get<std::string>();
        source = body.value("source", source);
        base_dir = body.value("base_dir", "");
      } catch (const json::exception& e) {
        return SendError(
            res, 400, std::string("expected {\"workload\": TEXT, \"base_dir\": DIR}: ") + e.what());
      }
    } else {
      base_dir = req.get_header_value("X-Saturn-Base-Dir");
      source = req.has_header("X-Saturn-Source") ? req.get_header_value("X-Saturn-Source") : source;
    }
    Send(res, service.Submit(text, source, base_dir));
  });
  http.Get("/v1/tasks", [&](const httplib::Request&, httplib::Response& res) {
    Send(res, {200, service.Tasks()});
  });
  http.Get(R"(/v1/tasks/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    Send(res, service.Task(req.matches[1].str()));
  });
  http.Delete(R"(/v1/tasks/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    Send(res, service.Cancel(req.matches[1].str()));
  });
  http.Get("/v1/plan", [&](const httplib::Request&, httplib::Response& res) {
    Send(res, {200, service.Plan()});
  });
  // The run's report so far (report.html in the state folder, written as
  // tasks end): from the dashboard's "report" link.
  http.Get("/report.html", [&](const httplib::Request&, httplib::Response& res) {
    std::optional<std::string> page = service.ReportHtml();
    if (!page) return SendError(res, 404, "no report yet: it is written once a task has ended");
    res.set_content(*page, "text/html; charset=utf-8");
  });
  http.Get("/v1/events", [&](const httplib::Request& req, httplib::Response& res) {
    StreamEvents(service, stop, req, res);
  });
  http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      SendError(res, res.status,
                res.status == 413 ? "request body too large" : "no such endpoint or method");
    }
  });
}

void RequireToken(httplib::Server& http, const std::string& token) {
  http.set_pre_routing_handler([token](const httplib::Request& req, httplib::Response& res) {
    // The page itself holds no data: it loads without the token and brings
    // the one in its address (#token=...) to every API call.
    if (req.method == "GET" && (req.path == "/" || req.path.rfind("/dashboard/", 0) == 0)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    std::string given;
    std::string auth = req.get_header_value("Authorization");
    if (auth.rfind("Bearer ", 0) == 0) {
      given = auth.substr(7);
    } else if (req.method == "GET") {
      given = req.get_param_value("access_token");
    }
    if (!given.empty() && SameToken(given, token)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.set_header("WWW-Authenticate", "Bearer");
    SendError(res, 401, "missing or wrong token (Authorization: Bearer <token>)");
    return httplib::Server::HandlerResponse::Handled;
  });
}

}  // namespace

int Serve(const ServeOptions& options) {
  ListenAddress at = ParseListen(options.listen);
  std::string token;
  if (!options.token_file.empty()) {
    token = ReadToken(options.token_file, "--token-file");
  } else if (!IsLoopback(at.host)) {
    throw InputError("", 0, "--listen",
                     "listening on " + Quote(at.host) +
                         " (not loopback) needs --token-file: anyone who reaches the port could "
                         "run commands as this user");
  }
  CatchStopSignals();
  SteadyClock clock;
  Service service(options, clock);
  std::atomic<bool> stop{false};
  httplib::Server http;
  http.new_task_queue = [] { return new httplib::ThreadPool(32); };
  http.set_payload_max_length(options.max_body_bytes);
  if (!token.empty()) RequireToken(http, token);
  Route(http, service, stop);
  int port = at.port == 0 ? http.bind_to_any_port(at.host)
                          : (http.bind_to_port(at.host, at.port) ? at.port : -1);
  if (port <= 0) throw InputError("", 0, "--listen", "cannot listen on " + options.listen);
  std::thread server([&] { http.listen_after_bind(); });
  std::string url = "http://" +
                    (at.host.find(':') != std::string::npos ? "[" + at.host + "]" : at.host) + ":" +
                    std::to_string(port);
  // Where clients (and tests) find a service started on port 0.
  WriteFileAtomic(options.source.state_dir + "/server.json",
                  json{{"url", url}, {"pid", static_cast<long>(::getpid())}}.dump() + "\n");
  std::fprintf(stderr, "saturn serve: listening on %s/ (state in %s)\n", url.c_str(),
               options.source.state_dir.c_str());
  std::thread watcher([&] {
    while (!StopRequested() && !stop)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    stop = true;
  });
  std::exception_ptr failed;
  try {
    service.Run(stop);
  } catch (...) {
    failed = std::current_exception();
  }
  stop = true;
  http.stop();
  server.join();
  watcher.join();
  if (failed) std::rethrow_exception(failed);
  std::fprintf(stderr, "saturn serve: stopped; every worker checkpointed\n");
  return 0;
}

}  // namespace saturn
