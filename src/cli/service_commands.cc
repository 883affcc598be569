// saturn serve (service/server.h) and its clients: submit, status, cancel,
// wait. Clients take --server (default http://127.0.0.1:8470) and the token
// from SATURN_TOKEN or --token-file.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/executor_options.h"
#include "common/defaults.h"
#include "common/error.h"
#include "common/format.h"
#include "common/fs.h"
#include "contracts/task_view.h"
#include "report/best.h"
#include "report/hyperparameters.h"
#include "service/client.h"
#include "service/server.h"

namespace saturn {
namespace {

using nlohmann::json;
namespace fs = std::filesystem;

constexpr const char* kDefaultServer = "http://127.0.0.1:8470";

struct ClientFlags {
  std::string server = kDefaultServer;
  std::string token_file;
  bool json = false;
};

void AddClientFlags(CLI::App* cmd, ClientFlags* f) {
  cmd->add_option("--server", f->server, "The service's URL")->capture_default_str();
  cmd->add_option("--token-file", f->token_file,
                  "File holding the service's token (default: $SATURN_TOKEN)");
}

ServiceClient Client(const ClientFlags& f) {
  std::string token;
  if (!f.token_file.empty()) {
    token = ReadToken(f.token_file, "--token-file");
  } else if (const char* env = std::getenv("SATURN_TOKEN")) {
    token = env;
  }
  return ServiceClient(f.server, token);
}

// An answer that is not a success: its message, exit code 2 for a refused
// request (bad workload, unknown task, name taken), 1 otherwise.
int Refused(const ServiceClient::Reply& r) {
  std::string message = r.body.is_object() && r.body.contains("error")
                            ? r.body["error"].get<std::string>()
                            : r.body.dump();
  std::fprintf(stderr, "saturn: error: %s (HTTP %d)\n", message.c_str(), r.status);
  return r.status >= 400 && r.status < 500 ? 2 : 1;
}

int Submit(const ClientFlags& f, const std::string& path) {
  std::string text;
  try {
    text = ReadFile(path);
  } catch (const std::exception&) {
    throw InputError(path, 0, "", "cannot read the workload file");
  }
  fs::path abs = fs::absolute(path).lexically_normal();
  json body = {{"workload", text}, {"source", path}, {"base_dir", abs.parent_path().string()}};
  ServiceClient::Reply r = Client(f).Post("/v1/workloads", body);
  if (r.status != 201) return Refused(r);
  for (const json& id : r.body["tasks"])
    std::printf("%s\n", id.get<std::string>().c_str());
  return 0;
}

std::string Text(const json& v, int decimals = 3) {
  if (v.is_null()) return "-";
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_float()) return FormatFixed(v.get<double>(), decimals);
  return v.dump();
}

// The status of a task in a reply (Contract 6); nullopt for a word this
// client does not know.
std::optional<TaskStatus> StatusOf(const json& task) {
  if (!task.contains("status") || !task["status"].is_string()) return std::nullopt;
  return TaskStatusFromString(task["status"].get<std::string>());
}

// A task's value of a metric in its latest evaluation ("" without one).
std::string EvalCell(const json& task, const char* metric) {
  const json& e = task.contains("eval") ? task["eval"] : json();
  // JSON has no NaN: a diverged evaluation's loss is null.
  if (!e.is_object() || !e.contains(metric)) return "";
  return e[metric].is_number() ? FormatLoss(e[metric].get<double>()) : "nan";
}

// The results table: a column per swept or searched field and per metric,
// each task's latest evaluation, the best so far of each sweep marked; then
// each sweep's best with its margin over the runner-up. Nothing when no
// task varied a field or evaluated.
void PrintResults(const json& body) {
  std::vector<std::string> paths;
  bool evaluated = false, accuracy = false;
  for (const json& t : body["tasks"]) {
    const json hp = t.value("hyperparameters", json::object());
    for (auto it = hp.begin(); it != hp.end(); ++it) {
      if (std::find(paths.begin(), paths.end(), it.key()) == paths.end()) paths.push_back(it.key());
    }
    evaluated = evaluated || !EvalCell(t, "eval_loss").empty();
    accuracy = accuracy || !EvalCell(t, "eval_accuracy").empty();
  }
  if (paths.empty() && !evaluated) return;
  std::map<std::string, bool> best;  // the best so far of its sweep
  for (const json& b : body.value("best", json::array()))
    best[b["task"].get<std::string>()] = true;
  const auto columns = HyperParameterHeaders(paths);
  std::vector<size_t> widths;
  for (const auto& [path, header] : columns) {
    size_t w = header.size();
    for (const json& t : body["tasks"]) {
      const json hp = t.value("hyperparameters", json::object());
      if (hp.contains(path)) w = std::max(w, HyperParameterText(hp[path]).size());
    }
    widths.push_back(w);
  }
  auto row = [&](const std::string& task, const std::vector<std::string>& values,
                 const std::string& loss, const std::string& se, const std::string& acc,
                 const std::string& step, const std::string& mark) {
    std::string line = task + std::string(task.size() < 24 ? 25 - task.size() : 1, ' ');
    for (size_t c = 0; c < values.size(); ++c)
      line += values[c] + std::string(widths[c] - values[c].size() + 2, ' ');
    std::printf("%s%10s %9s", line.c_str(), loss.c_str(), se.c_str());
    if (accuracy) std::printf(" %9s", acc.c_str());
    std::printf(" %7s%s\n", step.c_str(), mark.empty() ? "" : ("  " + mark).c_str());
  };
  std::vector<std::string> headers;
  for (const auto& [path, header] : columns)
    headers.push_back(header);
  std::printf("\n");
  row("RESULTS", headers, "EVAL LOSS", "SE", "EVAL ACC", "STEP", "");
  for (const json& t : body["tasks"]) {
    const json hp = t.value("hyperparameters", json::object());
    std::vector<std::string> values;
    for (const auto& [path, header] : columns)
      values.push_back(hp.contains(path) ? HyperParameterText(hp[path]) : "-");
    const json& e = t.contains("eval") ? t["eval"] : json();
    std::string loss = EvalCell(t, "eval_loss");
    std::string id = t["id"].get<std::string>();
    row(id, values, loss.empty() ? "-" : loss, loss.empty() ? "" : EvalCell(t, "eval_loss_se"),
        EvalCell(t, "eval_accuracy"), e.is_object() ? Text(e["step"]) : "-",
        best.count(id) ? "best so far" : "");
  }
  for (const json& b : body.value("best", json::array())) {
    std::string margin = MarginPhrase(b);
    std::printf("best so far of %s: %s, %s %s at step %s%s%s\n", Text(b["sweep"]).c_str(),
                Text(b["task"]).c_str(), Text(b["metric"]).c_str(),
                b["value"].is_number() ? FormatLoss(b["value"].get<double>()).c_str() : "-",
                Text(b["step"]).c_str(), margin.empty() ? "" : ", ", margin.c_str());
  }
}

int Status(const ClientFlags& f) {
  ServiceClient::Reply r = Client(f).Get("/v1/tasks");
  if (r.status != 200) return Refused(r);
  if (f.json) {
    std::printf("%s\n", r.body.dump(2).c_str());
    return 0;
  }
  double now = r.body.value("now_s", 0.0);
  // Tasks that share a pack (one worker, one base) say which, in a last column.
  bool packs = false;
  for (const json& t : r.body["tasks"])
    packs = packs || t.contains("pack");
  std::printf("%-24s %-10s %-10s %5s %-8s %13s %10s %9s%s\n", "TASK", "STATUS", "TECHNIQUE", "GPUS",
              "NODE", "STEPS", "ETA", "LOSS", packs ? "  PACK" : "");
  for (const json& t : r.body["tasks"]) {
    // Before planning (profiling, queued) a task has no step count yet.
    std::string steps = t["steps"].is_null() ? "-" : Text(t["steps_done"]) + "/" + Text(t["steps"]);
    const json& loss = t["final_loss"].is_null() ? t["loss"] : t["final_loss"];
    std::string eta = t["eta_s"].is_number() && StatusOf(t) != TaskStatus::kFinished
                          ? FormatDuration(std::max(0.0, t["eta_s"].get<double>() - now))
                          : "-";
    std::string pack = packs ? "  " + t.value("pack", std::string("-")) : "";
    std::printf("%-24s %-10s %-10s %5s %-8s %13s %10s %9s%s\n", Text(t["id"]).c_str(),
                Text(t["status"]).c_str(), Text(t["technique"]).c_str(), Text(t["gpus"]).c_str(),
                Text(t["node"]).c_str(), steps.c_str(), eta.c_str(),
                loss.is_number() ? FormatLoss(loss.get<double>()).c_str() : Text(loss).c_str(),
                pack.c_str());
    if (!t.value("error", "").empty()) std::printf("    %s\n", Text(t["error"]).c_str());
  }
  PrintResults(r.body);
  return 0;
}

int Cancel(const ClientFlags& f, const std::string& task) {
  ServiceClient::Reply r = Client(f).Delete("/v1/tasks/" + UrlPathEscape(task));
  if (r.status != 200) return Refused(r);
  std::string status = Text(r.body["status"]);
  if (StatusOf(r.body) == TaskStatus::kRunning) {
    // It ends cancelled once its worker has checkpointed and exited.
    std::printf(
        "cancelling: %s is stopping (it checkpoints first, as on a plan switch), then ends "
        "cancelled (saturn status shows it)\n",
        task.c_str());
  } else {
    std::printf("%s: %s\n", task.c_str(), status.c_str());
  }
  return 0;
}

// Until every task named (or every task) has ended: 0 if all finished, 1
// if any failed or was cancelled.
int Wait(const ClientFlags& f, const std::vector<std::string>& tasks, double timeout_s) {
  ServiceClient client = Client(f);
  auto start = std::chrono::steady_clock::now();
  while (true) {
    ServiceClient::Reply r = client.Get("/v1/tasks");
    if (r.status != 200) return Refused(r);
    std::map<std::string, std::optional<TaskStatus>> status;
    for (const json& t : r.body["tasks"])
      status[t["id"].get<std::string>()] = StatusOf(t);
    for (const std::string& t : tasks) {
      if (!status.count(t))
        throw InputError("", 0, "task " + Quote(t), "the service has no such task");
    }
    bool all_ended = true, all_finished = true;
    for (const auto& [id, s] : status) {
      if (!tasks.empty() && std::find(tasks.begin(), tasks.end(), id) == tasks.end()) continue;
      // A word this client does not know is a status of a newer service:
      // not ended, so it waits.
      all_ended = all_ended && s && IsEnded(*s);
      // A task its early-stopping rule ended is a success of the search.
      all_finished = all_finished && (s == TaskStatus::kFinished || s == TaskStatus::kStopped);
    }
    if (all_ended) {
      if (!all_finished) {
        for (const auto& [id, s] : status) {
          bool named = tasks.empty() || std::find(tasks.begin(), tasks.end(), id) != tasks.end();
          if (named && s != TaskStatus::kFinished && s != TaskStatus::kStopped) {
            std::fprintf(stderr, "%s: %s\n", id.c_str(), std::string(ToString(*s)).c_str());
          }
        }
      }
      return all_finished ? 0 : 1;
    }
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeout_s > 0 && waited > timeout_s) {
      std::fprintf(stderr, "saturn wait: still running after %s\n", FormatDuration(waited).c_str());
      return 3;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
}

}  // namespace

void AddServiceCommands(CLI::App& app, int* status) {
  auto o = std::make_shared<ServeOptions>();
  auto no_introspection = std::make_shared<bool>(false);
  CLI::App* serve = app.add_subcommand(
      "serve", "Run Saturn as a service: workloads submitted at any time, a live dashboard");
  serve
      ->add_option("--cluster", o->source.cluster_path,
                   "Cluster file (YAML, Contract 1), or one that says `from: slurm` (the nodes of "
                   "the Slurm allocation the service runs in, with --backend slurm)")
      ->required();
  serve->add_option("--listen", o->listen, "Address to listen on, HOST:PORT (port 0: any free)")
      ->capture_default_str();
  serve
      ->add_option("--state-dir", o->source.state_dir,
                   "Folder of the service's state (submissions, tasks, checkpoints, events); "
                   "a restart on the same folder continues every unfinished task")
      ->capture_default_str();
  serve->add_option("--token-file", o->token_file,
                    "File holding a token every request must bring (required to listen on a "
                    "non-loopback address)");
  serve->add_option("--max-body", o->max_body_bytes, "Largest request body, bytes (else 413)")
      ->capture_default_str();
  AddExecutorOptions(serve, &o->run, no_introspection.get());
  auto no_pack = std::make_shared<bool>(false);
  serve->add_flag("--no-pack", *no_pack,
                  "Train every task alone: measure no packs and form none (LoRA tasks on one "
                  "base, a table's groups in arrays)");
  // A service has no planned makespan to take its defaults from.
  serve->get_option("--interval")
      ->description("Seconds between re-planning checks (default: " +
                    FormatNumber(defaults::kServiceIntervalS) + ")");
  serve->get_option("--threshold")
      ->description(
          "Switch only if the plan ends this much sooner (s) (default: two switch "
          "costs)");
  serve->callback([o, no_introspection, no_pack, status] {
    o->run.introspection = !*no_introspection;
    o->run.pack = !*no_pack;
    o->run.progress = false;
    *status = Serve(*o);
  });

  auto submit_flags = std::make_shared<ClientFlags>();
  auto workload = std::make_shared<std::string>();
  CLI::App* submit = app.add_subcommand("submit", "Submit a workload to a running saturn serve");
  submit->add_option("workload", *workload, "Workload file (YAML, Contract 5)")->required();
  AddClientFlags(submit, submit_flags.get());
  submit->callback([=] { *status = Submit(*submit_flags, *workload); });

  auto status_flags = std::make_shared<ClientFlags>();
  CLI::App* st = app.add_subcommand("status", "Show the tasks of a running saturn serve");
  st->add_flag("--json", status_flags->json, "Print the API's JSON");
  AddClientFlags(st, status_flags.get());
  st->callback([=] { *status = Status(*status_flags); });

  auto cancel_flags = std::make_shared<ClientFlags>();
  auto task = std::make_shared<std::string>();
  CLI::App* cancel = app.add_subcommand(
      "cancel", "Cancel a task of a running saturn serve (it checkpoints first)");
  cancel->add_option("task", *task, "Task id")->required();
  AddClientFlags(cancel, cancel_flags.get());
  cancel->callback([=] { *status = Cancel(*cancel_flags, *task); });

  auto wait_flags = std::make_shared<ClientFlags>();
  auto tasks = std::make_shared<std::vector<std::string>>();
  auto timeout = std::make_shared<double>(0.0);
  CLI::App* wait = app.add_subcommand(
      "wait",
      "Wait for tasks of a running saturn serve to end (exit 0: all finished, 1: some "
      "failed or were cancelled, 3: timed out)");
  wait->add_option("tasks", *tasks, "Task ids (default: every task)");
  wait->add_option("--timeout", *timeout, "Give up after this many seconds (0: never)")
      ->capture_default_str();
  AddClientFlags(wait, wait_flags.get());
  wait->callback([=] { *status = Wait(*wait_flags, *tasks, *timeout); });
}

}  // namespace saturn
