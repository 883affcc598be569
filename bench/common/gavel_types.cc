#include "bench/common/gavel_types.h"

#include <cmath>
#include <cstdlib>
#include <random>

#include "common/csv.h"
#include "common/format.h"
#include "common/fs.h"

namespace saturn::bench {

TypedThroughputs LoadGavelTypedThroughputs(const std::string& csv_path) {
  CsvTable csv = ParseCsv(ReadFile(csv_path), csv_path);
  TypedThroughputs jobs;
  for (size_t r = 1; r < csv.records.size(); ++r) {
    const auto& f = csv.records[r].fields;
    double tput = std::atof(f.at(3).c_str());
    if (tput > 0) jobs[f.at(0)][f.at(2)][std::atoi(f.at(1).c_str())] = tput;
  }
  return jobs;
}

Instance GavelTypedInstance(const TypedThroughputs& jobs, int tasks,
                            const std::vector<std::pair<std::string, int>>& nodes,
                            int gpus_per_node, uint64_t seed) {
  Instance inst;
  inst.name = "gavel-types-" + std::to_string(tasks) + "-s" + std::to_string(seed);
  for (const auto& [type, count] : nodes) {
    for (int n = 0; n < count; ++n) {
      ClusterNode node;
      node.name = type + "-" + std::to_string(n);
      node.gpus = gpus_per_node;
      node.gpu_type = type;
      inst.cluster.nodes.push_back(std::move(node));
    }
  }
  // Job types that run on one V100 (the durations are read as its time).
  std::vector<const TypedThroughputs::value_type*> usable;
  for (const auto& job : jobs) {
    auto v100 = job.second.find("v100");
    if (v100 != job.second.end() && v100->second.count(1)) usable.push_back(&job);
  }
  inst.profile.extra_columns = {"steps", "job_type"};
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int t = 0; t < tasks; ++t) {
    const auto& [job_type, by_type] =
        *usable[static_cast<size_t>(unit(rng) * usable.size()) % usable.size()];
    double exponent = unit(rng) < 0.8 ? 1.5 + 1.5 * unit(rng) : 3.0 + unit(rng);
    double steps = std::round(std::pow(10.0, exponent) * 60 * by_type.at("v100").at(1));
    std::string name = "job" + std::to_string(t);
    for (const auto& [type, count] : nodes) {
      auto it = by_type.find(type);
      if (it == by_type.end()) continue;
      for (const auto& [g, tput] : it->second) {
        if (g > gpus_per_node) continue;
        ProfileRow row;
        row.task = name;
        row.technique = "ddp";
        row.gpus = g;
        row.gpu_type = type;
        row.runtime_s = std::max(1.0, std::round(steps / tput * 10) / 10);
        row.extra = {FormatNumber(steps), job_type};
        inst.profile.rows.push_back(std::move(row));
      }
    }
  }
  return inst;
}

}  // namespace saturn::bench
