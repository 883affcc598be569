// Reading a table (issue 45): what a workload's table data costs before its
// first trial, from a CSV to the group file and one task per group. Torch-free.
//
//   table_read_bench --csv zipf.csv --group-by group --features f0,...,f7 --label y
//                    [--repeat 3] [--dir /tmp/table_read_bench]
//
// Each repeat, in a fresh cache: `workload` is ParseWorkload of a one-task
// workload over the CSV (reading it, hashing it for the cache key, writing
// the group file, expanding one task per group: the whole reading step of
// `saturn run` and `saturn profile`); then `read` (ReadGroupedTable: the CSV
// into a table) and `write` (WriteGroupFile) alone. Prints each stage's
// lowest time and the group file's CRC-32C, the same before and after a
// change to the reader when its output is the same bit for bit.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include "common/checksum.h"
#include "contracts/workload.h"
#include "table/group_file.h"
#include "table/grouped_table.h"

namespace {

namespace fs = std::filesystem;

// Wall and CPU seconds (this process's, all threads) since it was made.
struct Timer {
  std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
  std::clock_t cpu = std::clock();
  double Wall() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count();
  }
  double Cpu() const { return static_cast<double>(std::clock() - cpu) / CLOCKS_PER_SEC; }
};

// The lowest wall and CPU times of a stage.
struct Lowest {
  double wall = std::numeric_limits<double>::infinity(), cpu = wall;
  void Add(const Timer& t) {
    wall = std::min(wall, t.Wall());
    cpu = std::min(cpu, t.Cpu());
  }
};

std::ostream& operator<<(std::ostream& out, const Lowest& l) {
  return out << l.wall << " s (cpu " << l.cpu << " s)";
}

std::string Workload(const saturn::table::TableSpec& spec) {
  std::string features;
  for (const std::string& f : spec.features)
    features += (features.empty() ? "" : ",") + f;
  return "cluster: {nodes: [{name: n0, gpus: 2, gpu_memory_gib: 4}]}\n"
         "tasks:\n"
         "  - name: g\n"
         "    model: {type: mlp, layers: 0}\n"
         "    data: {type: table, path: " +
         spec.path + ", features: [" + features + "], label: " + spec.label +
         ", group_by: " + spec.group_by + (spec.task.empty() ? "" : ", task: " + spec.task) +
         "}\n"
         "    batch_size: 64\n"
         "    optimizer: {type: adam, lr: 1.0e-2}\n"
         "    epochs: 5\n";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"reading a CSV table into a group file"};
  saturn::table::TableSpec spec;
  std::string dir = "/tmp/table_read_bench";
  int repeat = 3;
  app.add_option("--csv", spec.path)->required();
  app.add_option("--group-by", spec.group_by)->required();
  app.add_option("--features", spec.features)->required()->delimiter(',');
  app.add_option("--label", spec.label)->required();
  app.add_option("--task", spec.task);
  app.add_option("--repeat", repeat);
  app.add_option("--dir", dir, "scratch folder (removed)");
  CLI11_PARSE(app, argc, argv);
  spec.path = fs::absolute(spec.path).string();
  const std::string text = Workload(spec);
  Lowest workload, read, write;
  size_t tasks = 0;
  uint32_t crc = 0;
  uintmax_t bytes = 0;
  for (int i = 0; i < repeat; ++i) {
    std::string cache = dir + "/cache" + std::to_string(i);
    fs::remove_all(cache);
    setenv("XDG_CACHE_HOME", cache.c_str(), 1);
    Timer timer;
    saturn::Workload w = saturn::ParseWorkload(text, "bench.yaml", dir);
    workload.Add(timer);
    tasks = w.tasks.size();
    std::string made = w.tasks.at(0).spec["data"]["path"];
    bytes = fs::file_size(made);
    std::vector<char> file(bytes);
    std::ifstream(made, std::ios::binary).read(file.data(), static_cast<std::streamsize>(bytes));
    crc = saturn::Crc32c(file.data(), file.size());
    timer = Timer();
    saturn::table::GroupedTable t = saturn::table::ReadGroupedTable(spec, "bench.yaml", 1, "data");
    read.Add(timer);
    timer = Timer();
    saturn::table::WriteGroupFile(t, dir + "/again.groups");
    write.Add(timer);
    fs::remove_all(cache);
  }
  fs::remove_all(dir);
  std::cout << "csv " << spec.path << " (" << fs::file_size(spec.path) << " bytes)\n"
            << "workload (csv -> group file -> " << tasks << " tasks): " << workload << "\n"
            << "  ReadGroupedTable: " << read << "\n"
            << "  WriteGroupFile: " << write << "\n"
            << "group file: " << bytes << " bytes, crc32c " << saturn::Crc32cHex(crc) << "\n"
            << "(lowest of " << repeat << ")\n";
  return 0;
}
