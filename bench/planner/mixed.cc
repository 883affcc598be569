#include "bench/planner/mixed.h"

#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace saturn::bench {

Instance MixedSaturnInstance(int tasks, int nodes, uint64_t seed) {
  std::map<std::string, std::vector<ProfileRow>> base;  // by model and batch size
  for (Workload w : {Workload::kText, Workload::kImage}) {
    Instance one = SaturnLikeInstance(w, {8}, 1);
    for (const ProfileRow& row : one.profile.rows) {
      std::string key = row.task.substr(0, row.task.rfind("-lr"));
      if (row.task.find("-lr1e-5") != std::string::npos) base[key].push_back(row);
    }
  }
  std::vector<std::string> keys;
  for (const auto& [key, rows] : base)
    keys.push_back(key);
  Instance inst;
  inst.name =
      "mixed-" + std::to_string(tasks) + "x" + std::to_string(nodes) + "n-s" + std::to_string(seed);
  for (int n = 0; n < nodes; ++n)
    inst.cluster.nodes.push_back({"node" + std::to_string(n), 8, 40.0});
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int t = 0; t < tasks; ++t) {
    const std::string& key = keys[static_cast<size_t>(unit(rng) * keys.size()) % keys.size()];
    double scale = std::pow(10.0, -unit(rng));
    for (ProfileRow row : base[key]) {
      row.task = "t" + std::to_string(t) + "-" + key;
      row.runtime_s = std::max(1.0, std::round(row.runtime_s * scale));
      row.extra.clear();
      inst.profile.rows.push_back(std::move(row));
    }
  }
  return inst;
}

}  // namespace saturn::bench
