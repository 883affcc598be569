#include "profiler/trial_set.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "common/format.h"

namespace saturn {

void DeviceFor(const Cluster& cluster, int gpus, const std::string& gpu_type, Trial* t) {
  bool found = false;
  t->gpu_type = gpu_type;
  for (const ClusterNode& n : cluster.nodes) {
    if (n.gpus < gpus || n.gpu_type != gpu_type) continue;
    double memory = n.gpu_memory_gib.value_or(0.0);
    if (!found || (memory > 0 && (t->memory_gib == 0 || memory < t->memory_gib))) {
      t->memory_gib = memory;
      t->device_kind = n.device;
      t->threads = n.threads_per_gpu;
      t->node = n.name;
      t->speed_fp32 = NodeSpeed(n, "fp32");
      t->speed_bf16 = NodeSpeed(n, "bf16");
    }
    found = true;
  }
}

std::string ReferenceType(const Cluster& cluster) {
  std::string best;
  int most = -1;
  double memory = 0;
  for (const std::string& type : cluster.GpuTypes()) {
    double least = -1;  // its tightest device, as trials run on the tightest node
    for (const ClusterNode& n : cluster.nodes) {
      if (n.gpu_type != type) continue;
      double m = n.gpu_memory_gib.value_or(0.0);
      double as_number = m > 0 ? m : std::numeric_limits<double>::infinity();
      least = least < 0 ? as_number : std::min(least, as_number);
    }
    const int gpus = cluster.MaxGpusPerNode(type);
    if (gpus > most || (gpus == most && least > memory)) {
      most = gpus;
      memory = least;
      best = type;
    }
  }
  return best;
}

namespace {

double PeakBytes(const Trial& t) {
  double peak = 0;
  for (double b : t.result.peak_memory_bytes)
    peak = std::max(peak, b);
  return peak;
}

// Whether devices of `a` hold more than those of `b` (0 GiB: unlimited).
bool MoreMemory(const Trial& a, const Trial& b) {
  if (b.memory_gib <= 0) return false;
  return a.memory_gib <= 0 || a.memory_gib > b.memory_gib;
}

// Whether what `measured` used fits the devices of `on`.
bool Fits(const Trial& measured, const Trial& on) {
  return on.memory_gib <= 0 || PeakBytes(measured) <= on.memory_gib * (1 << 30);
}

// `reference`'s trial as if it were on the devices of `on` (not run there).
Trial OnDevicesOf(const Trial& reference, const Trial& on) {
  Trial t = reference;
  t.gpu_type = on.gpu_type;
  t.node = on.node;
  t.device_kind = on.device_kind;
  t.memory_gib = on.memory_gib;
  t.threads = on.threads;
  t.cached = false;
  t.wall_s = 0;
  return t;
}

// `reference`'s configuration on the devices of `on`, its step times scaled
// by what `anchor` measured on both types.
Trial Scaled(const Trial& reference, const Trial& on, const Trial& anchor_reference,
             const Trial& anchor_other) {
  Trial t = OnDevicesOf(reference, on);
  const double ratio = anchor_other.result.step_s / anchor_reference.result.step_s;
  t.result.step_s *= ratio;
  for (double& s : t.result.step_samples_s)
    s *= ratio;
  for (double& s : t.result.warmup_step_s)
    s *= ratio;
  t.result.eval_s *= ratio;
  t.step_se_s *= ratio;
  t.estimated_from = "x" + FormatFixed(ratio, 3) + " of " + GpuTypeLabel(reference.gpu_type) +
                     " (" + anchor_other.technique + " x" + std::to_string(anchor_other.gpus) +
                     " measured on both)";
  return t;
}

// `reference`'s verdict of infeasible, carried to devices `on` that hold no
// more memory.
Trial InfeasibleToo(const Trial& reference, const Trial& on) {
  Trial t = OnDevicesOf(reference, on);
  t.estimated_from = "infeasible on " + GpuTypeLabel(reference.gpu_type);
  t.result.reason = "as on " + GpuTypeLabel(reference.gpu_type) +
                    ", whose devices hold as much: " + reference.result.reason;
  return t;
}

// Which of two configurations to measure on another type: the one whose
// trial took less time on the reference (when both were run now; a cached
// trial's time is unknown), then the fewer GPUs, then the faster steps.
bool Cheaper(const Trial& a, const Wanted& wa, const Trial& b, const Wanted& wb) {
  if (a.wall_s > 0 && b.wall_s > 0 && a.wall_s != b.wall_s) return a.wall_s < b.wall_s;
  if (wa.gpus != wb.gpus) return wa.gpus < wb.gpus;
  return a.result.step_s < b.result.step_s;
}

}  // namespace

void EstimateOtherTypes(const Workload& workload, const std::vector<Wanted>& wanted,
                        TrialSet& trials, ProfileRun& run,
                        const std::function<void(size_t from)>& measure,
                        const std::function<bool(const Trial& trial)>& cached) {
  if (wanted.empty()) return;
  const std::string reference = ReferenceType(workload.cluster);
  // (trial key, type) -> the configurations its tasks want there.
  std::map<std::pair<std::string, std::string>, std::vector<const Wanted*>> groups;
  for (const Wanted& w : wanted)
    groups[{workload.tasks[w.task].trial_key, w.type}].push_back(&w);
  auto on_type = [&](const Wanted& w) {
    Trial t;
    DeviceFor(workload.cluster, w.gpus, w.type, &t);
    return t;
  };
  struct Anchor {
    int reference = -1;  // trial on the reference type
    int other = -1;      // the same configuration measured on the group's type
  };
  std::map<std::pair<std::string, std::string>, Anchor> anchors;
  const size_t anchors_from = run.trials.size();
  for (const auto& [group, configs] : groups) {
    const Wanted* best = nullptr;
    int best_reference = -1;
    for (const Wanted* w : configs) {
      int r = trials.Find(group.first, w->technique, w->gpus, reference);
      if (r < 0 || !run.trials[r].result.feasible || !Fits(run.trials[r], on_type(*w))) continue;
      if (!best || Cheaper(run.trials[r], *w, run.trials[best_reference], *best)) {
        best = w;
        best_reference = r;
      }
    }
    if (!best) continue;
    Anchor& a = anchors[group];
    a.reference = best_reference;
    for (const Wanted* w : configs) {
      if (w->technique == best->technique && w->gpus == best->gpus)
        a.other = trials.Add(w->task, w->technique, w->gpus, w->type);
    }
  }
  measure(anchors_from);

  const size_t rest_from = run.trials.size();
  for (const auto& [group, configs] : groups) {
    auto found = anchors.find(group);
    const Anchor* a = found == anchors.end() ? nullptr : &found->second;
    bool scalable = a && run.trials[a->other].result.feasible;
    for (const Wanted* w : configs) {
      if (a && run.trials[a->reference].technique == w->technique &&
          run.trials[a->reference].gpus == w->gpus) {
        continue;  // the anchor: measured
      }
      Trial on = on_type(*w);
      on.trial_key = group.first;
      on.technique = w->technique;
      on.gpus = w->gpus;
      int r = trials.Find(group.first, w->technique, w->gpus, reference);
      const Trial* ref = r < 0 ? nullptr : &run.trials[r];
      if (cached(on)) {
        trials.Add(w->task, w->technique, w->gpus, w->type);  // measured before: read back
      } else if (ref && ref->result.feasible && scalable && Fits(*ref, on)) {
        trials.AddEstimated(w->task, w->technique, w->gpus, w->type, [&] {
          return Scaled(*ref, on, run.trials[a->reference], run.trials[a->other]);
        });
      } else if (ref && !ref->result.feasible && !ref->transient &&
                 ref->device_kind == on.device_kind && !MoreMemory(on, *ref)) {
        trials.AddEstimated(w->task, w->technique, w->gpus, w->type,
                            [&] { return InfeasibleToo(*ref, on); });
      } else {
        trials.Add(w->task, w->technique, w->gpus, w->type);
      }
    }
  }
  measure(rest_from);
}

}  // namespace saturn
