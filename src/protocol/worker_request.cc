#include "protocol/worker_request.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <system_error>
#include <type_traits>
#include <variant>

#include "common/error.h"
#include "common/format.h"
#include "protocol/best_model.h"

namespace saturn {
namespace {

// The modes a flag belongs to.
enum : unsigned { kSearch = 1, kExecute = 2, kTechniques = 4, kRun = kSearch | kExecute };

unsigned Bit(WorkerMode mode) {
  switch (mode) {
    case WorkerMode::kSearch:
      return kSearch;
    case WorkerMode::kExecute:
      return kExecute;
    case WorkerMode::kTechniques:
      return kTechniques;
  }
  return 0;
}

using R = WorkerRequest;
using Field = std::variant<std::string R::*, int R::*, int64_t R::*, double R::*, bool R::*,
                           std::vector<int> R::*, std::vector<std::string> R::*>;

// One flag of the worker's command line: the one place each is declared,
// read by ToArgv, ParseWorkerRequest and WorkerUsage.
struct Flag {
  const char* name;
  unsigned modes;
  bool required;
  Field field;
  const char* value;  // for the usage text: "N", "PATH", ...; "" for a switch
  const char* help;
};

const std::vector<Flag>& Flags() {
  static const std::vector<Flag> flags = {
      {"--task", kRun, true, &R::task_path, "TASK.json", "the task (Contract 5 fields)"},
      {"--technique", kRun, true, &R::technique, "NAME",
       "single, ddp, fsdp, pipeline, spill, tp, tp-ddp, pipeline-tp or a plug-in's"},
      {"--gpus", kRun, true, &R::gpus, "G", "devices"},
      {"--out", kRun, true, &R::out_path, "RESULT.json",
       "result JSON, written atomically by rank 0"},
      {"--device-kind", kRun, false, &R::device_kind, "cpu|cuda", "the kind of device"},
      {"--device-ids", kRun, false, &R::device_ids, "0,1,...", "device ids, one per rank"},
      {"--memory-gib", kRun, false, &R::memory_gib, "X",
       "device capacity in GiB (0: none declared; cuda: the GPU's)"},
      {"--threads", kRun, false, &R::threads, "T", "intra-op threads per device"},
      {"--timeout-s", kRun, false, &R::timeout_s, "S", "collective and rendezvous timeout"},
      {"--rank", kRun, false, &R::rank, "R", "this rank (set by the launcher)"},
      {"--world-size", kRun, false, &R::world_size, "G", "ranks in the group"},
      {"--rendezvous", kRun, false, &R::rendezvous, "DIR", "fresh directory shared by the ranks"},
      {"--rank-from-env", kRun, false, &R::rank_from_env, "",
       "rank and size from SLURM_PROCID/NTASKS"},
      {"--plugin", kRun | kTechniques, false, &R::plugins, "LIB.so",
       "technique plug-in (shared library) to load; repeatable"},
      {"--warmup", kSearch, false, &R::warmup, "N", "steps before measuring"},
      {"--measure", kSearch, false, &R::measure, "N", "steps measured"},
      {"--estimate", kSearch, false, &R::estimate, "auto|always",
       "estimate analytically instead of measuring: where the trial cannot run here, or always"},
      {"--peak-tflops", kSearch, false, &R::peak_tflops, "T",
       "the estimated device's dense peak at the task's precision, TFLOP/s"},
      {"--link-gb-s", kSearch, false, &R::link_gb_s, "B",
       "the estimated device's link bandwidth to its node's others, GB/s one way"},
      {"--pack-sizes", kSearch, false, &R::pack_sizes, "K1,K2,...",
       "a table task: then arrays of K copies of it, measured in turn (ascending)"},
      {"--from-step", kExecute, true, &R::from_step, "A", "the step to start from"},
      {"--to-step", kExecute, true, &R::to_step, "B", "the step to stop at"},
      {"--checkpoint-dir", kExecute, true, &R::checkpoint_dir, "DIR", "the task's checkpoints"},
      {"--knobs", kExecute, false, &R::knobs, "JSON",
       "knobs JSON (from search), or a file holding it"},
      {"--checkpoint-every", kExecute, false, &R::checkpoint_every, "K",
       "steps between checkpoints (0: only at --to-step and on SIGTERM)"},
      {"--keep-checkpoints", kExecute, false, &R::keep_checkpoints, "N",
       "keep the newest N checkpoints (0: all)"},
      {"--save-model", kExecute, false, &R::save_model, "PATH",
       "also write the final weights here"},
      {"--best-dir", kExecute, false, &R::best_dir, "DIR",
       "keep the model of the best evaluation so far here"},
      {"--select", kExecute, false, &R::select, "METRIC:MODE",
       "what best means: eval_loss or eval_accuracy, min or max (default eval_loss:min)"},
  };
  return flags;
}

std::string ModesOf(unsigned modes) {
  std::string out;
  for (WorkerMode m : {WorkerMode::kSearch, WorkerMode::kExecute, WorkerMode::kTechniques}) {
    if (modes & Bit(m)) out += std::string(out.empty() ? "" : " and ") + WorkerModeName(m);
  }
  return out;
}

template <typename T>
T ParseNumber(const Flag& flag, const std::string& text, const char* expected) {
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || text.empty()) {
    throw InputError("", 0, flag.name,
                     std::string("expected ") + expected + ", got " + Quote(text));
  }
  return value;
}

// Sets the flag's field from `value` ("" for a switch).
void Set(const Flag& flag, WorkerRequest& r, const std::string& value) {
  std::visit(
      [&](auto member) {
        using T = std::remove_cvref_t<decltype(r.*member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          r.*member = value;
        } else if constexpr (std::is_same_v<T, int>) {
          r.*member = ParseNumber<int>(flag, value, "an integer");
        } else if constexpr (std::is_same_v<T, int64_t>) {
          r.*member = ParseNumber<int64_t>(flag, value, "an integer");
        } else if constexpr (std::is_same_v<T, double>) {
          r.*member = ParseNumber<double>(flag, value, "a number");
        } else if constexpr (std::is_same_v<T, bool>) {
          r.*member = true;
        } else if constexpr (std::is_same_v<T, std::vector<int>>) {
          size_t from = 0;
          while (true) {
            size_t comma = value.find(',', from);
            std::string id = value.substr(from, comma == std::string::npos ? comma : comma - from);
            (r.*member).push_back(ParseNumber<int>(flag, id, "a comma-separated list of integers"));
            if (comma == std::string::npos) break;
            from = comma + 1;
          }
        } else {
          (r.*member).push_back(value);
        }
      },
      flag.field);
}

bool IsSwitch(const Flag& flag) {
  return std::holds_alternative<bool R::*>(flag.field);
}

bool Repeatable(const Flag& flag) {
  return std::holds_alternative<std::vector<int> R::*>(flag.field) ||
         std::holds_alternative<std::vector<std::string> R::*>(flag.field);
}

// The flag's arguments for `r` (nothing where the field has its default and
// the flag is not required).
void Append(const Flag& flag, const WorkerRequest& r, std::vector<std::string>& out) {
  static const WorkerRequest defaults;
  std::visit(
      [&](auto member) {
        using T = std::remove_cvref_t<decltype(r.*member)>;
        const T& value = r.*member;
        if (!flag.required && value == defaults.*member) return;
        if constexpr (std::is_same_v<T, std::string>) {
          out.insert(out.end(), {flag.name, value});
        } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t>) {
          out.insert(out.end(), {flag.name, std::to_string(value)});
        } else if constexpr (std::is_same_v<T, double>) {
          out.insert(out.end(), {flag.name, FormatNumber(value)});
        } else if constexpr (std::is_same_v<T, bool>) {
          out.push_back(flag.name);
        } else if constexpr (std::is_same_v<T, std::vector<int>>) {
          std::string ids;
          for (int id : value)
            ids += (ids.empty() ? "" : ",") + std::to_string(id);
          out.insert(out.end(), {flag.name, ids});
        } else {
          for (const std::string& v : value)
            out.insert(out.end(), {flag.name, v});
        }
      },
      flag.field);
}

// " (default: X)" for a flag whose default the usage should show.
std::string DefaultText(const Flag& flag) {
  static const WorkerRequest defaults;
  return std::visit(
      [&](auto member) -> std::string {
        using T = std::remove_cvref_t<decltype(defaults.*member)>;
        const T& value = defaults.*member;
        if constexpr (std::is_same_v<T, std::string>) {
          return value.empty() ? "" : " (default: " + value + ")";
        } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, int64_t>) {
          return " (default: " + std::to_string(value) + ")";
        } else if constexpr (std::is_same_v<T, double>) {
          return " (default: " + FormatNumber(value) + ")";
        } else {
          return "";
        }
      },
      flag.field);
}

}  // namespace

const char* WorkerModeName(WorkerMode mode) {
  switch (mode) {
    case WorkerMode::kSearch:
      return "search";
    case WorkerMode::kExecute:
      return "execute";
    case WorkerMode::kTechniques:
      return "techniques";
  }
  return "?";
}

int WorkerRequest::DeviceId(int rank_index) const {
  return device_ids.empty() ? rank_index : device_ids.at(rank_index);
}

int64_t WorkerRequest::CapacityBytes() const {
  return static_cast<int64_t>(std::llround(memory_gib * 1024.0 * 1024.0 * 1024.0));
}

std::vector<std::string> ToArgv(const WorkerRequest& request) {
  std::vector<std::string> out = {WorkerModeName(request.mode)};
  for (const Flag& flag : Flags()) {
    if (flag.modes & Bit(request.mode)) Append(flag, request, out);
  }
  return out;
}

WorkerRequest ParseWorkerRequest(const std::vector<std::string>& args) {
  WorkerRequest r;
  const std::string expected = "expected search, execute or techniques";
  if (args.empty()) throw InputError("", 0, "", "no mode given; " + expected);
  if (args[0] == "search") {
    r.mode = WorkerMode::kSearch;
  } else if (args[0] == "execute") {
    r.mode = WorkerMode::kExecute;
  } else if (args[0] == "techniques") {
    r.mode = WorkerMode::kTechniques;
  } else {
    std::string hint = DidYouMean(args[0], {"search", "execute", "techniques"});
    throw InputError(
        "", 0, "",
        "unknown mode " + Quote(args[0]) + "; " + expected + (hint.empty() ? "" : "; " + hint));
  }
  const unsigned mode = Bit(r.mode);
  std::set<std::string> seen;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string name = args[i];
    std::string value;
    bool inline_value = false;
    if (name.rfind("--", 0) == 0) {
      if (size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1);
        name.resize(eq);
        inline_value = true;
      }
    }
    const Flag* flag = nullptr;
    std::vector<std::string> known;
    for (const Flag& f : Flags()) {
      if (name == f.name) flag = &f;
      if (f.modes & mode) known.emplace_back(f.name);
    }
    if (flag == nullptr) {
      std::string hint = DidYouMean(name, known);
      throw InputError(
          "", 0, name,
          std::string(name.rfind("-", 0) == 0 ? "unknown flag" : "unexpected argument") + " for " +
              WorkerModeName(r.mode) + (hint.empty() ? "" : "; " + hint));
    }
    if (!(flag->modes & mode)) {
      throw InputError("", 0, name,
                       std::string("not a flag of ") + WorkerModeName(r.mode) + " (only of " +
                           ModesOf(flag->modes) + ")");
    }
    if (!seen.insert(name).second && !Repeatable(*flag)) {
      throw InputError("", 0, name, "given more than once");
    }
    if (IsSwitch(*flag)) {
      if (inline_value) throw InputError("", 0, name, "takes no value, got " + Quote(value));
    } else if (!inline_value) {
      if (i + 1 >= args.size()) {
        throw InputError("", 0, name, std::string("expected a value (") + flag->value + ")");
      }
      value = args[++i];
    }
    Set(*flag, r, value);
  }
  for (const Flag& f : Flags()) {
    if (f.required && (f.modes & mode) && !seen.count(f.name)) {
      throw InputError("", 0, f.name, std::string("required for ") + WorkerModeName(r.mode));
    }
  }
  CheckWorkerRequest(r);
  return r;
}

WorkerRequest ParseWorkerRequest(int argc, const char* const* argv) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i)
    args.emplace_back(argv[i]);
  return ParseWorkerRequest(args);
}

void CheckWorkerRequest(const WorkerRequest& o) {
  auto fail = [](const char* flag, const std::string& message) {
    throw InputError("", 0, flag, message);
  };
  if (o.mode == WorkerMode::kTechniques) return;
  if (o.gpus < 1) fail("--gpus", "expected an integer >= 1");
  if (o.device_kind != "cpu" && o.device_kind != "cuda") {
    fail("--device-kind", "expected cpu or cuda, got " + Quote(o.device_kind));
  }
  if (o.threads < 1) fail("--threads", "expected an integer >= 1");
  if (!(o.timeout_s > 0) || !std::isfinite(o.timeout_s)) {
    fail("--timeout-s", "expected seconds > 0");
  }
  if (!(o.memory_gib >= 0) || !std::isfinite(o.memory_gib)) {
    fail("--memory-gib", "expected GiB >= 0");
  }
  if (!o.device_ids.empty() && static_cast<int>(o.device_ids.size()) != o.gpus) {
    fail("--device-ids", "expected " + std::to_string(o.gpus) + " ids, one per device");
  }
  for (int id : o.device_ids) {
    if (id < 0) fail("--device-ids", "expected ids >= 0");
  }
  if (o.IsRank()) {
    if (o.world_size < 1 || o.rank >= o.world_size) {
      fail("--rank", "expected 0 <= rank < --world-size");
    }
    if (o.world_size > 1 && o.rendezvous.empty()) fail("--rendezvous", "required with --rank");
  } else if (o.rank != -1) {
    fail("--rank", "expected an integer >= 0");
  }
  if (o.mode == WorkerMode::kSearch) {
    if (o.warmup < 0) fail("--warmup", "expected an integer >= 0");
    if (o.measure < 1) fail("--measure", "expected an integer >= 1");
    if (!o.estimate.empty() && o.estimate != "auto" && o.estimate != "always") {
      fail("--estimate", "expected auto or always, got " + Quote(o.estimate));
    }
    if (!(o.peak_tflops >= 0) || !std::isfinite(o.peak_tflops)) {
      fail("--peak-tflops", "expected TFLOP/s >= 0");
    }
    if (!(o.link_gb_s >= 0) || !std::isfinite(o.link_gb_s))
      fail("--link-gb-s", "expected GB/s >= 0");
    for (size_t i = 0; i < o.pack_sizes.size(); ++i) {
      if (o.pack_sizes[i] < 1 || o.pack_sizes[i] > kMaxPackSize ||
          (i > 0 && o.pack_sizes[i] <= o.pack_sizes[i - 1]))
        fail("--pack-sizes", "expected ascending sizes from 1 to " + std::to_string(kMaxPackSize));
    }
  } else {
    if (o.from_step < 0) fail("--from-step", "expected an integer >= 0");
    if (o.to_step < o.from_step) fail("--to-step", "expected >= --from-step");
    if (o.checkpoint_every < 0) fail("--checkpoint-every", "expected an integer >= 0");
    if (o.keep_checkpoints < 0) fail("--keep-checkpoints", "expected an integer >= 0");
    if (!ParseBestMetric(o.select)) {
      fail("--select",
           "expected eval_loss or eval_accuracy, then :min or :max, got " + Quote(o.select));
    }
  }
}

std::string WorkerUsage() {
  std::string out =
      "saturn-worker: runs search or execute of one task, or lists the techniques "
      "(internal; docs/worker.md)\n\nusage: saturn-worker search|execute|techniques [flags]\n";
  for (WorkerMode m : {WorkerMode::kSearch, WorkerMode::kExecute, WorkerMode::kTechniques}) {
    out += std::string("\n") + WorkerModeName(m) + ":\n";
    for (const Flag& f : Flags()) {
      if (!(f.modes & Bit(m))) continue;
      std::string left = std::string("  ") + f.name + (*f.value ? " " : "") + f.value;
      left.resize(std::max<size_t>(left.size() + 2, 34), ' ');
      // --rank's -1 and --world-size's 0 say "not a rank": no default to show.
      bool rank = f.name == std::string("--rank") || f.name == std::string("--world-size");
      out += left + f.help + (f.required ? " (required)" : rank ? "" : DefaultText(f)) + "\n";
    }
  }
  return out;
}

}  // namespace saturn
