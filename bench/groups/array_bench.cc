// Learning over groups on the engine (issue 45): one model per group of a
// table, trained as one fused array (engine/array.h) and, as the baseline
// in the same process on the same cores, each group's model alone one after
// another through the same code (an array of one), i.e. one task per group
// without its process launch. Prints both times, their ratio and the
// per-group held-out losses as JSON (bench/groups/groups_bench.sh compares
// them with plain PyTorch, bench/groups/plain_loop.py).
//
//   array_bench --csv zipf.csv --group-by group --features f0,...,f7 --label y
//               --epochs 5 --batch 64 --lr 1e-2 --threads 1 --out array.json
#include <ATen/Parallel.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/fs.h"
#include "engine/array.h"
#include "table/group_file.h"
#include "table/grouped_table.h"

namespace {

using json = nlohmann::json;
using saturn::engine::ArrayResult;
using saturn::engine::FusedArray;
using saturn::engine::TaskSpec;

double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"fused arrays against each group alone"};
  saturn::table::TableSpec spec;
  std::string out, group_file = "/tmp/array_bench.groups";
  int64_t epochs = 5, batch = 64, layers = 0, width = 16;
  int threads = 1, alone_limit = 0;
  double lr = 1e-2;
  app.add_option("--csv", spec.path)->required();
  app.add_option("--group-by", spec.group_by)->required();
  app.add_option("--features", spec.features)->required()->delimiter(',');
  app.add_option("--label", spec.label)->required();
  app.add_option("--epochs", epochs);
  app.add_option("--batch", batch);
  app.add_option("--lr", lr);
  app.add_option("--layers", layers);
  app.add_option("--width", width);
  app.add_option("--threads", threads);
  app.add_option("--min-group-rows", spec.min_group_rows);
  app.add_option("--alone-limit", alone_limit, "time only the first N groups alone (0: all)");
  app.add_option("--group-file", group_file);
  app.add_option("--out", out);
  CLI11_PARSE(app, argc, argv);
  at::set_num_threads(threads);

  auto start = std::chrono::steady_clock::now();
  saturn::table::GroupedTable t = saturn::table::ReadGroupedTable(spec, "array_bench", 0, "--csv");
  saturn::table::WriteGroupFile(t, group_file);
  const double read_s = Since(start);
  std::vector<TaskSpec> members;
  int64_t steps = 0;
  for (const saturn::table::TableGroup& g : t.groups) {
    json task = {{"name", saturn::table::GroupNameForTask(g.name)},
                 {"model",
                  {{"type", "mlp"},
                   {"layers", layers},
                   {"width", width},
                   {"inputs", t.Features()},
                   {"outputs", t.Outputs()},
                   {"loss", t.classification ? "cross_entropy" : "mse"}}},
                 {"data", {{"type", "table"}, {"path", group_file}, {"group", g.name}}},
                 {"batch_size", batch},
                 {"optimizer", {{"type", "adam"}, {"lr", lr}}},
                 {"steps", epochs * ((g.train_rows + batch - 1) / batch)}};
    steps += task["steps"].get<int64_t>();
    members.push_back(saturn::engine::ParseTask(task, "array_bench"));
  }
  start = std::chrono::steady_clock::now();
  FusedArray array(members, "array_bench");
  const double load_s = Since(start);
  start = std::chrono::steady_clock::now();
  ArrayResult fused = array.Train(at::Device(at::kCPU));
  const double fused_s = Since(start);

  const size_t alone_groups =
      alone_limit > 0 ? std::min<size_t>(static_cast<size_t>(alone_limit), members.size())
                      : members.size();
  start = std::chrono::steady_clock::now();
  double max_apart = 0.0;
  int64_t alone_steps = 0;
  for (size_t k = 0; k < alone_groups; ++k) {
    FusedArray one({members[k]}, "array_bench");
    ArrayResult r = one.Train(at::Device(at::kCPU));
    alone_steps += static_cast<int64_t>(r.members[0].losses.size());
    const std::vector<double>& a = r.members[0].losses;
    const std::vector<double>& f = fused.members[k].losses;
    for (size_t s = 0; s < a.size() && s < f.size(); ++s)
      max_apart = std::max(max_apart, std::fabs(a[s] - f[s]) / std::max(std::fabs(a[s]), 1e-12));
  }
  const double alone_s = Since(start);

  json groups = json::object();
  for (size_t k = 0; k < members.size(); ++k)
    groups[t.groups[k].name] = {{"rows", t.groups[k].rows},
                                {"train_rows", t.groups[k].train_rows},
                                {"steps", fused.members[k].losses.size()},
                                {"eval_loss", fused.members[k].eval_loss}};
  json result = {{"read_seconds", read_s},
                 {"load_seconds", load_s},
                 {"fused_seconds", fused_s},
                 {"fused_array_steps", fused.steps},
                 {"steps", steps},
                 {"alone_groups", alone_groups},
                 {"alone_steps", alone_steps},
                 {"alone_seconds", alone_s},
                 {"max_relative_difference", max_apart},
                 {"threads", threads},
                 {"groups", groups}};
  std::cerr << "array_bench: " << members.size() << " groups, " << steps << " steps: CSV " << read_s
            << " s, fused " << fused_s << " s (" << fused.steps << " array steps); alone, "
            << alone_groups << " groups: " << alone_s << " s; trajectories apart at most "
            << max_apart << " (relative)\n";
  if (!out.empty()) saturn::WriteFileAtomic(out, result.dump(1) + "\n");
  return 0;
}
