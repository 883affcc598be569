#include "profiler/pack_trials.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "common/format.h"

namespace saturn {
namespace {

using nlohmann::json;

// Pack sizes measured for a class of `size` tasks: 2, 4, 8, while a pack of
// half as many is smaller than the class; an array's 2, 16, 128 and 1024
// while the one before is smaller than the class (its step time grows
// about linearly with its size, which the planner interpolates; each size
// measured is a worker's start-up, most of a trial of a model this small).
std::vector<int> PackSizes(size_t size, bool array) {
  std::vector<int> out;
  const int factor = array ? 8 : 2, largest = array ? 1024 : 8;
  for (int k = 2; static_cast<size_t>(k / factor) < size; k = std::min(k * factor, largest)) {
    out.push_back(k);
    if (k == largest) break;
  }
  return out;
}

// The pack class of a table task (an array's member, engine/array.h):
// one architecture, batch size and optimizer state, as a JSON object whose
// first key is "array".
std::string ArrayClassOf(const json& s, const std::string& optimizer_kind) {
  json key = {{"array", s.value("model", json::object())},
              {"batch_size", s.value("batch_size", 0)},
              {"optimizer", optimizer_kind}};
  return key.dump();
}

bool Fits(const Trial& t) {
  return t.result.feasible && t.estimated_from.empty() && t.result.estimated.empty();
}

double Rows(const WorkloadTask& task) {
  return task.spec.value("batch_size", 1.0);
}

// The task file of a pack of k copies of `spec`.
json PackOf(const json& spec, int k) {
  json members = json::array();
  for (int i = 0; i < k; ++i) {
    json m = spec;
    m["name"] = spec.value("name", std::string("task")) + "-member" + std::to_string(i + 1);
    members.push_back(std::move(m));
  }
  return {{"pack", std::move(members)}};
}

std::string Number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

std::string Curve(const std::vector<std::pair<double, double>>& points) {
  std::string out;
  for (const auto& [rows, s] : points)
    out += (out.empty() ? "" : " ") + Number(rows) + ":" + Number(s);
  return out;
}

}  // namespace

std::string PackClassOf(const WorkloadTask& task, std::string* why_not) {
  auto no = [&](const std::string& why) {
    if (why_not) *why_not = why;
    return std::string();
  };
  const json& s = task.spec;
  if (task.is_command) return no("a command task (the user's own program)");
  const json& opt = s.value("optimizer", json::object());
  std::string kind = opt.value("type", std::string("sgd"));
  if (kind == "sgd") kind += opt.value("momentum", 0.0) == 0.0 ? "" : "+momentum";
  if (!task.group.empty()) {
    if (s.contains("eval") && s["eval"].value("every", 0) > 0)
      return no("it evaluates during training (an array takes its held-out loss at the end)");
    if (opt.value("clip_grad_norm", 0.0) > 0.0) return no("it clips gradients (not in arrays yet)");
    if (s.value("precision", std::string("fp32")) != "fp32") return no("arrays train in fp32");
    if (!task.techniques.empty() && std::find(task.techniques.begin(), task.techniques.end(),
                                              "single") == task.techniques.end()) {
      return no("its techniques leave out single, on which arrays train");
    }
    return ArrayClassOf(s, kind == "adamw" ? "adam" : kind);  // adam and adamw: the same state
  }
  if (!s.contains("finetune") || !s["finetune"].contains("lora"))
    return no("not a LoRA task (only LoRA tasks share a frozen base)");
  const json& model = s.value("model", json::object());
  std::string type = model.value("type", std::string());
  if (type != "gpt" && type != "gpt2" && type != "llama")
    return no("a " + type + " model (packs take gpt, gpt2 and llama)");
  // Members evaluate as alone (worker/pack_job.h); one that an early_stop:
  // rule stops leaves its pack, which goes on without it (the executor's
  // dispatcher).
  json key = {{"model", model},
              {"precision", s.value("precision", std::string("fp32"))},
              {"optimizer", kind}};
  // Members that evaluate keep their best models by one select: (a pack's
  // worker ranks them all by it); a workload's tasks share theirs.
  key["select"] = task.select.metric + (task.select.maximize ? ":max" : ":min");
  if (!model.contains("init")) key["seed"] = s.value("seed", 0);
  return key.dump();
}

std::vector<PackClassTrials> PackClasses(const Workload& workload, const ProfileRun& run,
                                         const std::set<std::string>& takes_packs) {
  std::map<std::string, std::vector<size_t>> members;
  std::vector<std::string> order;
  for (size_t k = 0; k < workload.tasks.size(); ++k) {
    std::string cls = PackClassOf(workload.tasks[k]);
    if (cls.empty()) continue;
    if (members[cls].empty()) order.push_back(cls);
    members[cls].push_back(k);
  }
  std::vector<PackClassTrials> out;
  for (const std::string& cls : order) {
    const std::vector<size_t>& tasks = members[cls];
    if (tasks.size() < 2) continue;
    bool array = !workload.tasks[tasks[0]].group.empty();
    PackClassTrials c{cls, tasks, PackSizes(tasks.size(), array), {}, array};
    for (int base : run.task_trials[tasks[0]]) {
      const Trial& t = run.trials[base];
      bool takes = array ? t.technique == "single" && t.gpus == 1  // arrays: one device
                         : takes_packs.count(t.technique) > 0;
      if (!t.result.feasible || !t.estimated_from.empty() || !takes) continue;
      c.configs.push_back({base, {}, false, false, ""});
    }
    // Per GPU count and type, fastest alone first (ties: the order measured).
    auto group = [&](const PackClassTrials::Config& x) {
      const Trial& t = run.trials[x.base_trial];
      return std::make_pair(t.gpus, t.gpu_type);
    };
    std::stable_sort(c.configs.begin(), c.configs.end(), [&](const auto& a, const auto& b) {
      if (group(a) != group(b)) return group(a) < group(b);
      return run.trials[a.base_trial].result.step_s < run.trials[b.base_trial].result.step_s;
    });
    for (size_t k = 0; k < c.configs.size(); ++k)
      c.configs[k].measuring = k == 0 || group(c.configs[k]) != group(c.configs[k - 1]);
    for (PackClassTrials::Config& config : c.configs) {
      // An array's sizes were measured in its member's own trial
      // (AddArrayTrials), unless that trial is another class's as well and
      // carried its sizes: this one's are then measured apart.
      const std::vector<std::pair<int, int>>& riders = run.trials[config.base_trial].riders;
      if (!array || riders.size() != c.sizes.size()) continue;
      config.pack_trials = riders;
      config.measuring = false;
      config.ended = true;
      for (auto [k, i] : riders) {
        if (Fits(run.trials[i])) continue;
        config.why_ended = std::to_string(k) + " do not fit";
        break;
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

// A pack trial of k copies of `first` in the configuration of trial `t`.
Trial PackTrial(const Trial& t, const WorkloadTask& first, int k) {
  Trial pack;
  pack.trial_key = json{{"pack_of", json::parse(t.trial_key)}, {"members", k}}.dump();
  pack.technique = t.technique;
  pack.gpus = t.gpus;
  pack.device_kind = t.device_kind;
  pack.memory_gib = t.memory_gib;
  pack.threads = t.threads;
  pack.gpu_type = t.gpu_type;
  pack.node = t.node;
  pack.example_task = first.name + " (pack of " + std::to_string(k) + ")";
  return pack;
}

}  // namespace

void AddArrayTrials(const Workload& workload, ProfileRun& run) {
  std::map<std::string, std::vector<size_t>> members;
  for (size_t k = 0; k < workload.tasks.size(); ++k) {
    if (workload.tasks[k].group.empty()) continue;
    std::string cls = PackClassOf(workload.tasks[k]);
    if (!cls.empty()) members[cls].push_back(k);
  }
  for (const auto& [cls, tasks] : members) {
    if (tasks.size() < 2) continue;
    const WorkloadTask& first = workload.tasks[tasks[0]];
    const std::vector<int> sizes = PackSizes(tasks.size(), true);
    for (int base : run.task_trials[tasks[0]]) {
      if (run.trials[base].technique != "single" || run.trials[base].gpus != 1) continue;
      if (!run.trials[base].riders.empty()) continue;  // a class sharing its trial key
      std::vector<std::pair<int, int>> riders;
      for (int k : sizes) {
        Trial pack = PackTrial(run.trials[base], first, k);
        pack.carried_by = base;
        riders.emplace_back(k, static_cast<int>(run.trials.size()));
        run.trials.push_back(std::move(pack));
      }
      run.trials[base].riders = std::move(riders);
    }
  }
}

bool AddPackTrials(const Workload& workload, std::vector<PackClassTrials>& classes, ProfileRun& run,
                   std::map<std::string, json>* specs) {
  bool added = false;
  for (PackClassTrials& c : classes) {
    const WorkloadTask& first = workload.tasks[c.tasks[0]];
    for (PackClassTrials::Config& config : c.configs) {
      if (!config.measuring) continue;
      const Trial t = run.trials[config.base_trial];  // a copy: run.trials grows below
      int k = c.sizes[config.pack_trials.size()];
      Trial pack = PackTrial(t, first, k);
      (*specs)[pack.trial_key] = PackOf(first.spec, k);
      config.pack_trials.emplace_back(k, static_cast<int>(run.trials.size()));
      run.trials.push_back(std::move(pack));
      added = true;
    }
  }
  return added;
}

namespace {

// The fewest device-seconds a step of the class's measured member takes
// alone on devices of `type`, over its own measured trials (every technique
// and GPU count), and where; 0 when there is none.
std::pair<double, std::string> BestAlone(const PackClassTrials& c, const ProfileRun& run,
                                         const std::string& type) {
  std::pair<double, std::string> best{0.0, ""};
  for (int i : run.task_trials[c.tasks[0]]) {
    const Trial& t = run.trials[i];
    if (!t.result.feasible || !t.estimated_from.empty() || t.gpu_type != type) continue;
    double cost = t.gpus * t.result.step_s;
    if (best.first == 0.0 || cost < best.first)
      best = {cost, t.technique + " x" + std::to_string(t.gpus)};
  }
  return best;
}

// Why config's next pack size (twice its last) cannot matter, or "": a pack
// never steps a member faster than it steps alone on the same devices, so
// it only helps by taking fewer device-seconds per member step than any way
// of training the member alone. The next doubling is taken to gain at most
// what the last one did (a step time a + b k, or flat up to a saturation
// point, gains less with each doubling).
std::string NoLargerPackCanMatter(const PackClassTrials::Config& config, const PackClassTrials& c,
                                  const ProfileRun& run) {
  const Trial& base = run.trials[config.base_trial];
  auto cost = [&](int members, const Trial& t) { return t.gpus * t.result.step_s / members; };
  const std::vector<std::pair<int, int>>& packs = config.pack_trials;
  auto [k, i] = packs.back();
  double last = cost(k, run.trials[i]);
  double before = packs.size() >= 2 ? cost(packs[packs.size() - 2].first,
                                           run.trials[packs[packs.size() - 2].second])
                                    : cost(1, base);
  double next = last * last / before;
  auto [alone, where] = BestAlone(c, run, base.gpu_type);
  if (alone <= 0 || next < alone) return "";
  return "a pack of " + std::to_string(c.sizes[config.pack_trials.size()]) +
         " would take at least " + FormatFixed(next, 4) +
         " device-seconds a member step (its last doubling's gain again), no fewer than " +
         FormatFixed(alone, 4) + " alone under " + where + ": larger packs not measured";
}

// After its latest pack: whether config goes on, and why not.
void Judge(PackClassTrials::Config& config, const PackClassTrials& c, const ProfileRun& run,
           bool* next_technique) {
  auto [k, i] = config.pack_trials.back();
  const Trial& t = run.trials[i];
  double alone_s = run.trials[config.base_trial].result.step_s;
  config.measuring = false;
  config.ended = true;
  std::string hopeless;
  if (!Fits(t)) {
    config.why_ended = std::to_string(k) + " do not fit";
    *next_technique = true;
  } else if (!c.array && t.result.step_s > (1.0 - kPackGain) * k * alone_s) {
    config.why_ended = "a pack of " + std::to_string(k) + " steps no faster than its members " +
                       "one after another: larger packs not measured";
  } else if (config.pack_trials.size() < c.sizes.size() && !c.array &&
             !(hopeless = NoLargerPackCanMatter(config, c, run)).empty()) {
    config.why_ended = hopeless;
  } else if (config.pack_trials.size() == c.sizes.size()) {
    config.ended = true;
  } else {
    config.measuring = true;
    config.ended = false;
  }
}

}  // namespace

void AfterPackRound(std::vector<PackClassTrials>& classes, const ProfileRun& run) {
  for (PackClassTrials& c : classes) {
    for (size_t n = 0; n < c.configs.size(); ++n) {
      PackClassTrials::Config& config = c.configs[n];
      if (!config.measuring || config.pack_trials.empty()) continue;
      bool next_technique = false;
      Judge(config, c, run, &next_technique);
      if (!next_technique) continue;
      // The next fastest of this GPU count and type, if not measured yet.
      const Trial& t = run.trials[config.base_trial];
      for (size_t m = n + 1; m < c.configs.size(); ++m) {
        const Trial& o = run.trials[c.configs[m].base_trial];
        if (o.gpus != t.gpus || o.gpu_type != t.gpu_type) break;
        if (c.configs[m].pack_trials.empty() && !c.configs[m].measuring) {
          c.configs[m].measuring = true;
          break;
        }
      }
    }
  }
}

void AddPackColumns(const Workload& workload, const std::vector<PackClassTrials>& classes,
                    ProfileRun& run) {
  if (classes.empty()) return;
  ProfileTable& table = run.table;
  const size_t first = table.extra_columns.size();
  for (const char* column :
       {"pack_class", "pack_rows", "pack_step_s", "pack_start_s", "pack_knobs"})
    table.extra_columns.push_back(column);
  const size_t columns = table.extra_columns.size();
  const size_t kClass = first, kRows = first + 1, kStep = first + 2, kStart = first + 3,
               kKnobs = first + 4;
  for (ProfileRow& row : table.rows)
    row.extra.resize(columns);
  std::map<std::string, size_t> task_index;
  for (size_t k = 0; k < workload.tasks.size(); ++k)
    task_index[workload.tasks[k].name] = k;
  for (size_t c = 0; c < classes.size(); ++c) {
    const PackClassTrials& cls = classes[c];
    const double rows0 = Rows(workload.tasks[cls.tasks[0]]);
    std::string label = "pack" + std::to_string(c + 1);
    std::string line;
    std::set<size_t> in_class(cls.tasks.begin(), cls.tasks.end());
    for (const PackClassTrials::Config& config : cls.configs) {
      const Trial& base = run.trials[config.base_trial];
      std::vector<std::pair<double, double>> points = {{rows0, base.result.step_s}};
      // What a start costs: launch (with the trainer's setup) and the warm-up's extra.
      auto start = [](const Trial& t) { return t.result.launch_s + StartCost(t.result); };
      std::vector<std::pair<double, double>> starts = {{rows0, start(base)}};
      // The technique's settings each size ran with (its search chose
      // them; {}: its plain ones): what the executor runs a pack of that
      // size with.
      std::string knobs;
      auto add_knobs = [&](double rows, const Trial& t) {
        if (!t.result.knobs.is_object()) return;
        knobs += (knobs.empty() ? "" : " ") + Number(rows) + ":" + t.result.knobs.dump();
      };
      add_knobs(rows0, base);
      std::string ended = config.why_ended.empty() ? "" : "; " + config.why_ended;
      if (config.pack_trials.empty()) ended = " (packs not measured: a faster one of its GPUs is)";
      for (auto [k, i] : config.pack_trials) {
        const Trial& t = run.trials[i];
        if (!Fits(t)) break;
        points.emplace_back(k * rows0, t.result.step_s);
        starts.emplace_back(k * rows0, start(t));
        add_knobs(k * rows0, t);
      }
      std::string curve = Curve(points), start_curve = Curve(starts);
      for (ProfileRow& row : table.rows) {
        auto it = task_index.find(row.task);
        if (it == task_index.end() || !in_class.count(it->second)) continue;
        if (row.technique != base.technique || row.gpus != base.gpus ||
            row.gpu_type != base.gpu_type)
          continue;
        row.extra[kStep] = curve;
        row.extra[kStart] = start_curve;
        row.extra[kKnobs] = knobs;
      }
      line += "\n    " + base.technique + " x" + std::to_string(base.gpus) + ": " + curve + ended;
    }
    for (ProfileRow& row : table.rows) {
      auto it = task_index.find(row.task);
      if (it == task_index.end() || !in_class.count(it->second)) continue;
      row.extra[kClass] = label;
      row.extra[kRows] = Number(Rows(workload.tasks[it->second]));
    }
    run.pack_summary += "  " + label + ": " + Plural(static_cast<long>(cls.tasks.size()), "task") +
                        (cls.array ? " may train as one fused array" : " may share a base") +
                        " (measured with " + workload.tasks[cls.tasks[0]].name +
                        "), step seconds at ROWS rows:" + line + "\n";
  }
}

}  // namespace saturn
