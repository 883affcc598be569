// `saturn run` trains a table's groups as fused arrays (engine/array.h)
// where the plan packs them: each group's model ends as the same task
// trained alone (`--no-pack`, beside it), with its own model.pt, loss curve
// and held-out loss.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/fs.h"
#include "common/process.h"
#include "service/client.h"
#include "tests/e2e/saturn_test_base.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

class ArrayRun : public SaturnTestBase {
 protected:
  // Five stores of 30 to 110 rows, y = a_s . x + b_s; two learning rates:
  // ten tasks. The profile says a task alone takes 1 s a step and an array
  // of 8 (64 rows) 1.1 s: the plan packs them.
  void Write(const std::string& optimizer = "{type: adam, lr: 1.0e-2}",
             const std::string& lrs = "[1.0e-2, 3.0e-2]") {
    setenv("XDG_CACHE_HOME", (dir_ + "/cache").c_str(), 1);
    std::string csv = "store,x0,x1,y\n";
    uint64_t s = 3;
    auto uniform = [&s]() {
      s = s * 6364136223846793005ULL + 1442695040888963407ULL;
      return static_cast<double>(s >> 11) / static_cast<double>(1ULL << 53) * 2.0 - 1.0;
    };
    for (int g = 0; g < 5; ++g)
      for (int r = 0; r < 30 + 20 * g; ++r) {
        double x0 = uniform(), x1 = uniform();
        csv += "s" + std::to_string(g) + "," + std::to_string(x0) + "," + std::to_string(x1) + "," +
               std::to_string((g + 1) * x0 - g * x1 + 0.2 * g + 0.05 * uniform()) + "\n";
      }
    WriteFileAtomic(dir_ + "/stores.csv", csv);
    WriteFileAtomic(dir_ + "/w.yaml",
                    "cluster: {nodes: [{name: n0, gpus: 1, gpu_memory_gib: 2}]}\ntasks:\n"
                    "  - name: st\n"
                    "    model: {type: mlp, layers: 1, width: 8}\n"
                    "    data: {type: table, path: stores.csv, features: [x0, x1], label: y, "
                    "group_by: store}\n"
                    "    batch_size: 8\n"
                    "    optimizer: " +
                        optimizer +
                        "\n"
                        "    sweep: {optimizer.lr: " +
                        lrs +
                        "}\n"
                        "    epochs: 3\n");
  }
  // The workload's tasks and their steps: rows 30 + 20 g, a fifth held
  // out, 3 epochs of batch 8.
  static std::vector<std::pair<std::string, long>> Tasks(const std::vector<std::string>& lrs) {
    std::vector<std::pair<std::string, long>> tasks;
    for (const std::string& lr : lrs)
      for (int g = 0; g < 5; ++g) {
        long rows = 30 + 20 * g, held = std::lround(rows * 0.2);
        long train = rows - held;
        tasks.push_back({"st-lr" + lr + "-s" + std::to_string(g), 3 * ((train + 7) / 8)});
      }
    return tasks;
  }
  // The profile of the workload's tasks (their steps as the workload says).
  void WriteProfile(const std::vector<std::pair<std::string, long>>& tasks) {
    std::string profile =
        "task,technique,gpus,runtime_s,step_s,steps,pack_class,pack_rows,pack_step_s\n";
    for (const auto& [name, steps] : tasks)
      profile += name + ",single,1," + std::to_string(steps + 2) + ",1.0," + std::to_string(steps) +
                 ",stores,8,8:1.0 64:1.1 128:1.2\n";
    WriteFileAtomic(dir_ + "/profile.csv", profile);
  }
};

TEST_F(ArrayRun, EachGroupEndsAsTheSameTaskTrainedAlone) {
  Write();
  std::vector<std::pair<std::string, long>> tasks = Tasks({"1.0e-2", "3.0e-2"});
  WriteProfile(tasks);
  int code = 0;
  json packed = RunReport("packed", "", &code);
  ASSERT_EQ(code, 0) << Log();
  EXPECT_THAT(Log(), HasSubstr("tasks train together from step 0"));
  json alone = RunReport("alone", "--no-pack", &code);
  ASSERT_EQ(code, 0) << Log();
  std::map<std::string, json> p = TasksByName(packed), a = TasksByName(alone);
  ASSERT_EQ(p.size(), 10u);
  int in_arrays = 0;
  for (const auto& [name, steps] : tasks) {
    const json& t = p[name];
    EXPECT_EQ(t["status"], "finished") << name;
    EXPECT_EQ(t["steps_done"], steps) << name;
    in_arrays += t.contains("pack");
    EXPECT_FALSE(a[name].contains("pack")) << name;
    EXPECT_NEAR(t["final_loss"].get<double>(), a[name]["final_loss"].get<double>(),
                1e-4 * std::fabs(a[name]["final_loss"].get<double>()))
        << name;
    // The array's held-out loss at the end, as the task alone reports it.
    ASSERT_TRUE(t["last_eval"].is_object()) << name;
    ASSERT_TRUE(a[name]["last_eval"].is_object()) << name;
    EXPECT_EQ(t["last_eval"]["step"], steps) << name;
    EXPECT_NEAR(t["last_eval"]["eval_loss"].get<double>(),
                a[name]["last_eval"]["eval_loss"].get<double>(),
                1e-4 * std::fabs(a[name]["last_eval"]["eval_loss"].get<double>()))
        << name;
    EXPECT_TRUE(fs::exists(dir_ + "/packed/tasks/" + name + "/model.pt")) << name;
    EXPECT_EQ(t["loss_curve"].size(), static_cast<size_t>(steps)) << name;
  }
  EXPECT_GE(in_arrays, 8);
  // Each group's learning rates are its own sweep: the best of each.
  std::map<std::string, std::string> best;
  for (const json& b : packed["best"])
    best[b["sweep"].get<std::string>()] = b["task"];
  EXPECT_EQ(best.size(), 5u);
  EXPECT_TRUE(best.count("st@s0"));
  // Every group's best model in one file (executor/group_models.h).
  std::string tensors = ReadFile(dir_ + "/packed/groups.safetensors");
  ASSERT_GT(tensors.size(), 8u);
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i)
    length = (length << 8) | static_cast<unsigned char>(tensors[static_cast<size_t>(i)]);
  json header = json::parse(tensors.substr(8, length));
  json index = json::parse(ReadFile(dir_ + "/packed/groups.json"));
  ASSERT_EQ(index["groups"].size(), 5u);
  for (int g = 0; g < 5; ++g) {
    std::string group = "s" + std::to_string(g);
    const json& entry = index["groups"][group];
    EXPECT_EQ(entry["task"], best["st@" + group]) << group;
    for (const char* name : {"layers.0.weight", "layers.0.bias", "out.weight", "out.bias"})
      EXPECT_TRUE(header.contains(group + "/" + name)) << group << name;
  }
}

// `saturn serve` packs a submitted table's groups into arrays as `saturn
// run` does (replan/packed.h, PackArrivals), measuring the array sizes when
// it profiles the submission; each group ends as its twin alone. With
// --no-pack it trains every group alone, as before.
TEST_F(ArrayRun, ServeTrainsASubmittedTablesGroupsInArrays) {
  Write();
  std::vector<std::pair<std::string, long>> tasks = Tasks({"1.0e-2", "3.0e-2"});
  WriteProfile(tasks);
  int code = 0;
  json alone = RunReport("alone", "--no-pack", &code);
  ASSERT_EQ(code, 0) << Log();
  std::map<std::string, json> a = TasksByName(alone);
  WriteFileAtomic(dir_ + "/cluster.yaml", "nodes: [{name: n0, gpus: 1, gpu_memory_gib: 2}]\n");
  std::string workload = ReadFile(dir_ + "/w.yaml");
  workload = workload.substr(workload.find("tasks:"));
  for (const bool pack : {true, false}) {
    const std::string state = dir_ + (pack ? "/served" : "/served-alone");
    std::vector<std::string> args = {"serve",    "--cluster",   dir_ + "/cluster.yaml",
                                     "--listen", "127.0.0.1:0", "--state-dir",
                                     state};
    if (!pack) args.push_back("--no-pack");
    Process server = Process::Spawn(Saturn(args));
    for (int i = 0; i < 600 && !fs::exists(state + "/server.json"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ServiceClient client(json::parse(ReadFile(state + "/server.json"))["url"], "");
    ServiceClient::Reply r = client.Post(
        "/v1/workloads", {{"workload", workload}, {"source", "w.yaml"}, {"base_dir", dir_}});
    ASSERT_EQ(r.status, 201) << r.body.dump();
    // A second table of another model: its own arrays, never one with the
    // first's groups (each batch's profile names its classes pack1, ...).
    std::string wide = workload;
    wide.replace(wide.find("name: st"), 8, "name: wide");
    wide.replace(wide.find("width: 8"), 8, "width: 16");
    r = client.Post("/v1/workloads",
                    {{"workload", wide}, {"source", "wide.yaml"}, {"base_dir", dir_}});
    ASSERT_EQ(r.status, 201) << r.body.dump();
    json served;
    for (int i = 0; i < 1200; ++i) {
      served = client.Get("/v1/tasks").body;
      bool ended = served["tasks"].size() == 2 * tasks.size();
      for (const json& t : served["tasks"]) {
        const std::string status = t["status"];
        ended = ended && (status == "finished" || status == "failed" || status == "cancelled");
      }
      if (ended) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(server.pid(), SIGTERM);
    server.Wait();
    int in_arrays = 0;
    std::map<std::string, std::set<std::string>> tables_of;  // pack -> its tasks' tables
    for (const json& t : served["tasks"]) {
      const std::string name = t["id"];
      EXPECT_EQ(t["status"], "finished") << name;
      if (t.contains("pack")) tables_of[t["pack"]].insert(name.substr(0, name.find('-')));
      if (name.rfind("wide", 0) == 0) continue;
      in_arrays += t.contains("pack");
      EXPECT_NEAR(t["final_loss"].get<double>(), a[name]["final_loss"].get<double>(),
                  1e-4 * std::fabs(a[name]["final_loss"].get<double>()))
          << name;
    }
    for (const auto& [name, tables] : tables_of)
      EXPECT_EQ(tables.size(), 1u) << name << " holds tasks of both tables";
    if (pack) {
      EXPECT_GE(in_arrays, 8);
      EXPECT_GE(tables_of.size(), 2u);
      // Every group's best model, once every task ended, as a run writes it.
      json index = json::parse(ReadFile(state + "/groups.json"));
      EXPECT_EQ(index["groups"].size(), 10u);  // two table tasks: keyed <task>@<group>
      EXPECT_TRUE(fs::exists(state + "/groups.safetensors"));
    } else {
      EXPECT_EQ(in_arrays, 0);
    }
  }
}

TEST_F(ArrayRun, AGroupThatDivergesFailsAloneAndItsArrayGoesOn) {
  // SGD at 1e3 on a least-squares loss blows up within a few steps; the
  // array trains on (its losses are null in the result: JSON has no NaN).
  Write("{type: sgd, lr: 1.0e-2}", "[1.0e-2, 1.0e3]");
  std::vector<std::pair<std::string, long>> tasks = Tasks({"1.0e-2", "1.0e3"});
  WriteProfile(tasks);
  int code = 0;
  json report = RunReport("packed", "", &code);
  EXPECT_EQ(code, 1) << Log();  // ended with failures, not a crash
  EXPECT_THAT(Log(), HasSubstr("tasks train together from step 0"));
  std::map<std::string, json> t = TasksByName(report);
  ASSERT_EQ(t.size(), 10u);
  for (int g = 0; g < 5; ++g) {
    std::string group = "s" + std::to_string(g);
    EXPECT_EQ(t["st-lr1.0e-2-" + group]["status"], "finished") << group;
    const json& diverged = t["st-lr1.0e3-" + group];
    EXPECT_EQ(diverged["status"], "failed") << group;
    EXPECT_THAT(diverged["error"].get<std::string>(), HasSubstr("diverged")) << group;
  }
  // Each group's model is its finished task's.
  json index = json::parse(ReadFile(dir_ + "/packed/groups.json"));
  for (int g = 0; g < 5; ++g) {
    std::string group = "s" + std::to_string(g);
    EXPECT_EQ(index["groups"][group]["task"], "st-lr1.0e-2-" + group) << group;
  }
}

TEST_F(ArrayRun, TheArraySizesAreMeasuredInTheProcessOfTheGroupsOwnTrial) {
  // Ten tasks of one class: arrays of 2 and 16 (PackSizes) ride along the
  // first group's single x1 trial, one worker start-up for all three.
  Write();
  ASSERT_EQ(Run({"profile", dir_ + "/w.yaml", "--output", dir_ + "/profile.csv", "--work-dir",
                 dir_ + "/trials"}),
            0)
      << Log();
  std::vector<std::string> results;
  for (const auto& entry : fs::directory_iterator(dir_ + "/trials"))
    if (entry.path().string().ends_with(".result.json")) results.push_back(entry.path());
  ASSERT_EQ(results.size(), 1u) << "one worker process measures the task and its arrays";
  json result = json::parse(ReadFile(results[0]));
  EXPECT_EQ(result["technique"], "single");
  ASSERT_EQ(result["pack_sizes"].size(), 2u) << result.dump();
  EXPECT_EQ(result["pack_sizes"][0]["members"], 2);
  EXPECT_EQ(result["pack_sizes"][1]["members"], 16);
  for (const json& size : result["pack_sizes"]) {
    EXPECT_TRUE(size["feasible"].get<bool>()) << size.dump();
    EXPECT_GT(size["step_s"].get<double>(), 0.0);
  }
  // The profile's curve: the task alone at its 8 rows, then 2 and 16 members.
  // Its pack_start_s column (no field of these rows holds a comma).
  std::istringstream csv(ReadFile(dir_ + "/profile.csv"));
  std::string header, row;
  std::getline(csv, header);
  std::getline(csv, row);
  auto fields = [](const std::string& line) {
    std::vector<std::string> out;
    std::istringstream in(line);
    for (std::string f; std::getline(in, f, ',');)
      out.push_back(f);
    return out;
  };
  std::vector<std::string> names = fields(header), values = fields(row);
  const size_t column =
      static_cast<size_t>(std::find(names.begin(), names.end(), "pack_start_s") - names.begin());
  ASSERT_LT(column, names.size()) << header;
  ASSERT_LT(column, values.size()) << row;
  std::string curve = values[column];
  std::vector<std::string> rows_at;
  for (size_t at = 0; at < curve.size();) {
    size_t colon = curve.find(':', at), space = curve.find(' ', at);
    rows_at.push_back(curve.substr(at, colon - at));
    EXPECT_GT(std::stod(curve.substr(colon + 1, space - colon - 1)), 0.0) << curve;
    at = space == std::string::npos ? curve.size() : space + 1;
  }
  EXPECT_THAT(rows_at, ::testing::ElementsAre("8", "16", "128")) << row;
  EXPECT_THAT(Log(), HasSubstr("3 trials run"));
}

}  // namespace
}  // namespace saturn
