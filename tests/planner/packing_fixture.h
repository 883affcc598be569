// A pack's test instances (tests/planner/packing_test.cc,
// packing_early_stop_test.cc): a profile of LoRA tasks with pack curves, and
// a reference that steps a pack one step at a time.
#pragma once

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "contracts/cluster.h"
#include "contracts/profile.h"
#include "planner/packing.h"
#include "planner/problem.h"

namespace saturn::packing_test {

// One task of a test profile: its class, rows, steps and step time alone on
// one GPU; ddp on 2 GPUs steps `ddp_speedup` times faster.
struct Spec {
  std::string name;
  std::string cls;
  double rows = 4;
  int steps = 100;
  double step_s = 0.3;
};

// A pack's step time at `rows` rows on one GPU for a class whose member
// steps in `base` alone at `rows0` rows: memory-bound below the knee (the
// base's weights read once a step whatever the batch), then linear in rows.
inline double TrueStep(double base, double rows0, double rows) {
  return base * (0.6 + 0.4 * rows / rows0);
}

struct Instance {
  Cluster cluster;
  ProfileTable profile;
  Problem problem;
  PackTerms terms;
};

// The profile: rows for single (1 GPU) and ddp (2 GPUs, 0.55x the step);
// pack curves measured at 1, 2, 4 (and on 2 GPUs 8) members' rows.
inline std::string ProfileCsv(const std::vector<Spec>& specs, double overhead_s) {
  std::ostringstream csv;
  csv << "task,technique,gpus,runtime_s,step_s,steps,pack_class,pack_rows,pack_step_s\n";
  for (const Spec& s : specs) {
    for (int gpus : {1, 2}) {
      double scale = gpus == 1 ? 1.0 : 0.55;
      double step = s.step_s * scale;
      std::string curve;
      for (int k : {1, 2, 4, 8}) {
        if (gpus == 1 && k == 8) break;  // 8 members do not fit one device
        double rows = k * s.rows;
        curve += (curve.empty() ? "" : " ") + std::to_string(rows) + ":" +
                 std::to_string(TrueStep(step, s.rows, rows));
      }
      csv << s.name << "," << (gpus == 1 ? "single" : "ddp") << "," << gpus << ","
          << overhead_s + s.steps * step << "," << step << "," << s.steps << "," << s.cls << ","
          << s.rows << "," << (s.cls.empty() ? "" : curve) << "\n";
    }
  }
  return csv.str();
}

inline Instance MakeInstance(const std::vector<Spec>& specs, int nodes, double overhead_s = 5.0) {
  Instance in;
  std::string yaml = "nodes:\n";
  for (int n = 0; n < nodes; ++n)
    yaml += "  - {name: node" + std::to_string(n) + ", gpus: 2}\n";
  in.cluster = ParseCluster(YAML::Load(yaml), "cluster.yaml");
  in.profile = ParseProfileCsv(ProfileCsv(specs, overhead_s), "profile.csv", in.cluster);
  in.problem = ProblemFromProfile(in.profile, in.cluster);
  in.terms = PackTermsFromProfile(in.profile, in.problem, "profile.csv");
  return in;
}

// The reference: steps one at a time, every member still training sends its
// rows; the step time is interpolated in the measured curve (written here
// again, not taken from packing.cc); the launch's `overhead` once: when
// members end, or their early_stop: rule stops them, the others go on in
// the same worker (worker/pack_job.h).
inline std::vector<double> StepByStepEnds(const std::vector<Spec>& members, double step_alone,
                                          const std::vector<std::pair<double, double>>& curve,
                                          double overhead) {
  auto at = [&](double rows) {
    for (size_t i = 1; i < curve.size(); ++i) {
      if (rows <= curve[i].first) {
        double f = (rows - curve[i - 1].first) / (curve[i].first - curve[i - 1].first);
        return curve[i - 1].second * (1 - f) + curve[i].second * f;
      }
    }
    return curve.back().second;
  };
  (void)step_alone;
  std::vector<double> ends(members.size());
  double t = overhead;
  int longest = 0;
  for (const Spec& m : members)
    longest = std::max(longest, m.steps);
  for (int step = 0; step < longest; ++step) {
    double rows = 0;
    for (const Spec& m : members)
      rows += step < m.steps ? m.rows : 0;
    t += at(rows);
    for (size_t i = 0; i < members.size(); ++i)
      if (members[i].steps == step + 1) ends[i] = t;
  }
  return ends;
}

}  // namespace saturn::packing_test
