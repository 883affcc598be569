// The models of every group in one file (executor/group_models.h): a run
// folder made by hand, each task's model.pt written by the torch-free
// TorchSaveWriter with known numbers, exported; groups.safetensors is read
// back by parsing its header here (the format's definition: 8-byte
// little-endian length, JSON {name: {dtype, shape, data_offsets}}, bytes
// after the header), and groups.json's fields are checked one by one. No
// torch: tests/python/test_group_models.py checks a real run's file against
// torch.load and a forward pass.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/fs.h"
#include "engine/formats/torch_save.h"
#include "executor/group_models.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

// A tensor: its shape and values.
struct Tensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// A linear model of `inputs` features and `outputs` outputs, its numbers
// made from `seed` (out.weight [outputs, inputs], out.bias [outputs]).
std::vector<Tensor> Linear(int64_t inputs, int64_t outputs, float seed) {
  Tensor w{"out.weight", {outputs, inputs}, {}}, b{"out.bias", {outputs}, {}};
  for (int64_t i = 0; i < outputs * inputs; ++i)
    w.values.push_back(seed + 0.5f * static_cast<float>(i));
  for (int64_t i = 0; i < outputs; ++i)
    b.values.push_back(-seed - static_cast<float>(i));
  return {w, b};
}

std::string TorchSave(const std::vector<Tensor>& tensors) {
  std::string out;
  engine::TorchSaveWriter w(
      [&](const void* p, size_t n) { out.append(static_cast<const char*>(p), n); });
  for (const Tensor& t : tensors)
    w.Add(t.name, engine::StoredDtype::kF32, t.shape, t.values.data(), t.values.size() * 4);
  w.Finish();
  return out;
}

// groups.safetensors as this test reads it: name -> (dtype, shape, values).
struct Read {
  json header;
  std::map<std::string, std::vector<float>> values;
};

Read ReadSafetensors(const std::string& path) {
  std::string file = ReadFile(path);
  uint64_t length = 0;
  for (int i = 7; i >= 0; --i)
    length = (length << 8) | static_cast<unsigned char>(file[static_cast<size_t>(i)]);
  Read r;
  r.header = json::parse(file.substr(8, length));
  uint64_t end = 0;
  for (const auto& [name, entry] : r.header.items()) {
    if (name == "__metadata__") continue;
    uint64_t begin = entry["data_offsets"][0], stop = entry["data_offsets"][1];
    std::vector<float> v((stop - begin) / 4);
    std::memcpy(v.data(), file.data() + 8 + length + begin, stop - begin);
    r.values[name] = v;
    end = std::max(end, stop);
  }
  EXPECT_EQ(file.size(), 8 + length + end) << "bytes past the last tensor";
  return r;
}

class GroupModels : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/saturn_group_models_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    in_.run_dir = dir_;
    in_.tables["t.groups"] = {{"x0", "x1"}, "y", false, {}};
  }
  // A table task of `group` (sweep "st@<group>"), its model.pt written
  // when it has tensors.
  GroupTaskResult& Add(const std::string& task, const std::string& group, const std::string& status,
                       const std::vector<Tensor>& tensors,
                       std::optional<double> eval_loss = std::nullopt) {
    GroupTaskResult t;
    t.task = task;
    t.group = group;
    t.sweep = "st@" + group;
    t.status = status;
    t.table = "t.groups";
    t.model = {{"type", "mlp"}, {"layers", 0},  {"width", 1},
               {"inputs", 2},   {"outputs", 1}, {"loss", "mse"}};
    t.train_rows = 40;
    t.final_loss = 0.5;
    t.eval_loss = eval_loss;
    t.model_path = dir_ + "/tasks/" + task + "/model.pt";
    if (!tensors.empty()) WriteFileAtomic(t.model_path, TorchSave(tensors));
    in_.tasks.push_back(t);
    return in_.tasks.back();
  }
  json Index() const { return json::parse(ReadFile(dir_ + "/groups.json")); }

  std::string dir_;
  GroupModelsInput in_;
};

TEST_F(GroupModels, EveryGroupsModelUnderItsNameWithItsBytes) {
  Add("st-s0", "s0", "finished", Linear(2, 1, 1.0f), 0.25);
  Add("st-s_1", "s 1", "finished", Linear(2, 1, 2.0f), 0.75);
  GroupModelsSummary s = ExportGroupModels(in_);
  EXPECT_EQ(s.groups, 2);
  EXPECT_EQ(s.with_model, 2);
  EXPECT_EQ(s.bytes, fs::file_size(dir_ + "/groups.safetensors"));
  Read r = ReadSafetensors(dir_ + "/groups.safetensors");
  EXPECT_EQ(r.header["__metadata__"]["format"], "pt");
  // Group values, not task names, before each name as in model.pt.
  ASSERT_EQ(r.values.size(), 4u);
  EXPECT_EQ(r.header["s0/out.weight"]["dtype"], "F32");
  EXPECT_EQ(r.header["s0/out.weight"]["shape"], (json{1, 2}));
  EXPECT_EQ(r.header["s 1/out.bias"]["shape"], (json{1}));
  EXPECT_EQ(r.values["s0/out.weight"], (std::vector<float>{1.0f, 1.5f}));
  EXPECT_EQ(r.values["s0/out.bias"], (std::vector<float>{-1.0f}));
  EXPECT_EQ(r.values["s 1/out.weight"], (std::vector<float>{2.0f, 2.5f}));
  EXPECT_EQ(r.values["s 1/out.bias"], (std::vector<float>{-2.0f}));

  json index = Index();
  EXPECT_EQ(index["format"], "saturn-groups/1");
  EXPECT_EQ(index["safetensors"], "groups.safetensors");
  EXPECT_EQ(index["task"], "st");
  EXPECT_EQ(index["model"], (json{{"type", "mlp"},
                                  {"layers", 0},
                                  {"width", 1},
                                  {"inputs", 2},
                                  {"outputs", 1},
                                  {"loss", "mse"},
                                  {"activation", "relu"}}));
  EXPECT_EQ(index["features"], (json{"x0", "x1"}));
  EXPECT_EQ(index["label"], "y");
  EXPECT_EQ(index["kind"], "regression");
  EXPECT_FALSE(index.contains("classes"));
  EXPECT_EQ(index["counts"], (json{{"groups", 2}, {"with_model", 2}, {"without_model", 0}}));
  const json& g = index["groups"]["s 1"];
  EXPECT_EQ(g["task"], "st-s_1");
  EXPECT_EQ(g["keys"], (json{"s 1/out.weight", "s 1/out.bias"}));
  EXPECT_EQ(g["tasks"], (json{"st-s_1"}));
  EXPECT_EQ(g["train_rows"], 40);
  EXPECT_EQ(g["final_loss"], 0.5);
  EXPECT_EQ(g["eval_loss"], 0.75);
  EXPECT_FALSE(g.contains("eval_accuracy"));
  EXPECT_FALSE(g.contains("reason"));
  EXPECT_FALSE(g.contains("model"));  // the index's own
}

TEST_F(GroupModels, ASweepKeepsTheReportsBestElseTheLowestHeldOutLoss) {
  // s0: the report's best is the second task, though its loss is higher
  // (a select: on accuracy, say); s1: no best (none in the report), the
  // lower held-out loss; s2: one of two failed, the other is kept.
  Add("st-lr1-s0", "s0", "finished", Linear(2, 1, 1.0f), 0.1);
  Add("st-lr2-s0", "s0", "finished", Linear(2, 1, 2.0f), 0.2);
  Add("st-lr1-s1", "s1", "finished", Linear(2, 1, 3.0f), 0.9);
  Add("st-lr2-s1", "s1", "finished", Linear(2, 1, 4.0f), 0.3);
  Add("st-lr1-s2", "s2", "failed", {}).error = "diverged";
  Add("st-lr2-s2", "s2", "finished", Linear(2, 1, 6.0f), 0.4);
  in_.best_of["st@s0"] = "st-lr2-s0";
  ExportGroupModels(in_);
  json index = Index();
  EXPECT_EQ(index["groups"]["s0"]["task"], "st-lr2-s0");
  EXPECT_EQ(index["groups"]["s0"]["eval_loss"], 0.2);
  EXPECT_EQ(index["groups"]["s0"]["tasks"], (json{"st-lr1-s0", "st-lr2-s0"}));
  EXPECT_EQ(index["groups"]["s1"]["task"], "st-lr2-s1");
  EXPECT_EQ(index["groups"]["s2"]["task"], "st-lr2-s2");
  Read r = ReadSafetensors(dir_ + "/groups.safetensors");
  EXPECT_EQ(r.values["s0/out.weight"], (std::vector<float>{2.0f, 2.5f}));
  EXPECT_EQ(r.values["s1/out.weight"], (std::vector<float>{4.0f, 4.5f}));
  EXPECT_EQ(r.values["s2/out.bias"], (std::vector<float>{-6.0f}));
}

TEST_F(GroupModels, GroupsWithoutAModelAreListedWithAReasonAndNoKeys) {
  Add("st-s0", "s0", "finished", Linear(2, 1, 1.0f), 0.1);
  Add("st-s1", "s1", "failed", {}).error = "diverged: its training loss is nan at step 3";
  Add("st-lr1-s2", "s2", "cancelled", {});
  Add("st-lr2-s2", "s2", "running", {});
  Add("st-s3", "s3", "finished", {}, 0.2);                  // no model.pt
  Add("st-s4", "s4", "finished", Linear(3, 1, 1.0f), 0.2);  // 3 inputs, not 2
  GroupModelsSummary s = ExportGroupModels(in_);
  EXPECT_EQ(s.groups, 5);
  EXPECT_EQ(s.with_model, 1);
  json index = Index();
  EXPECT_EQ(index["counts"]["without_model"], 4);
  const json& groups = index["groups"];
  for (const char* g : {"s1", "s2", "s3", "s4"}) {
    EXPECT_TRUE(groups[g]["task"].is_null()) << g;
    EXPECT_EQ(groups[g]["keys"], json::array()) << g;
    EXPECT_TRUE(groups[g]["eval_loss"].is_null()) << g;
  }
  EXPECT_EQ(groups["s1"]["reason"], "st-s1 failed: diverged: its training loss is nan at step 3");
  EXPECT_EQ(groups["s2"]["reason"],
            "none of its 2 tasks finished: st-lr1-s2 was cancelled; st-lr2-s2 did not finish "
            "(running)");
  EXPECT_THAT(groups["s3"]["reason"].get<std::string>(),
              HasSubstr("st-s3 finished, but its model.pt cannot be read"));
  EXPECT_THAT(groups["s4"]["reason"].get<std::string>(),
              HasSubstr("tensor out.weight is [1, 3], the model's is [1, 2]"));
  Read r = ReadSafetensors(dir_ + "/groups.safetensors");
  EXPECT_EQ(r.values.size(), 2u);
  EXPECT_TRUE(r.values.count("s0/out.weight"));
}

TEST_F(GroupModels, AnMlpClassifierItsLayersAndClasses) {
  in_.tables["t.groups"] = {{"a", "b"}, "kind", true, {"cat", "dog", "eel"}};
  // layers 1, width 4: layers.0.weight [4, 2], layers.0.bias [4],
  // out.weight [3, 4], out.bias [3].
  std::vector<Tensor> mlp = {{"layers.0.weight", {4, 2}, std::vector<float>(8, 0.5f)},
                             {"layers.0.bias", {4}, {1, 2, 3, 4}},
                             {"out.weight", {3, 4}, std::vector<float>(12, -1.0f)},
                             {"out.bias", {3}, {7, 8, 9}}};
  GroupTaskResult& t = Add("st-g", "g", "finished", mlp, 0.6);
  t.model = {{"type", "mlp"}, {"layers", 1},  {"width", 4},
             {"inputs", 2},   {"outputs", 3}, {"loss", "cross_entropy"}};
  t.eval_accuracy = 0.75;
  ExportGroupModels(in_);
  json index = Index();
  EXPECT_EQ(index["kind"], "classification");
  EXPECT_EQ(index["classes"], (json{"cat", "dog", "eel"}));
  EXPECT_EQ(index["model"]["layers"], 1);
  EXPECT_EQ(index["model"]["width"], 4);
  EXPECT_EQ(index["model"]["outputs"], 3);
  EXPECT_EQ(index["model"]["loss"], "cross_entropy");
  EXPECT_EQ(index["groups"]["g"]["eval_accuracy"], 0.75);
  EXPECT_EQ(index["groups"]["g"]["keys"],
            (json{"g/layers.0.weight", "g/layers.0.bias", "g/out.weight", "g/out.bias"}));
  Read r = ReadSafetensors(dir_ + "/groups.safetensors");
  EXPECT_EQ(r.header["g/layers.0.weight"]["shape"], (json{4, 2}));
  EXPECT_EQ(r.values["g/layers.0.bias"], (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(r.values["g/out.bias"], (std::vector<float>{7, 8, 9}));
}

TEST_F(GroupModels, SeveralTablesKeyTheirGroupsByTaskAtGroup) {
  Add("st-s0", "s0", "finished", Linear(2, 1, 1.0f), 0.1);
  GroupTaskResult& other = Add("rg-s0", "s0", "finished", Linear(3, 1, 2.0f), 0.2);
  other.sweep = "rg@s0";
  other.table = "r.groups";
  other.model["inputs"] = 3;
  in_.tables["r.groups"] = {{"x0", "x1", "x2"}, "z", false, {}};
  ExportGroupModels(in_);
  json index = Index();
  EXPECT_TRUE(index["task"].is_null());
  const json& rg = index["groups"]["rg@s0"];
  EXPECT_EQ(rg["group"], "s0");
  EXPECT_EQ(rg["keys"], (json{"rg@s0/out.weight", "rg@s0/out.bias"}));
  // What differs from the index's own (the first group's) is in the entry.
  EXPECT_EQ(rg["model"]["inputs"], 3);
  EXPECT_EQ(rg["features"], (json{"x0", "x1", "x2"}));
  EXPECT_EQ(rg["label"], "z");
  EXPECT_FALSE(index["groups"]["st@s0"].contains("features"));
  Read r = ReadSafetensors(dir_ + "/groups.safetensors");
  EXPECT_EQ(r.values["rg@s0/out.weight"], (std::vector<float>{2.0f, 2.5f, 3.0f}));
}

TEST_F(GroupModels, NoTableTasksWriteNothing) {
  EXPECT_EQ(ExportGroupModels(in_).groups, 0);
  EXPECT_FALSE(fs::exists(dir_ + "/groups.safetensors"));
  EXPECT_FALSE(fs::exists(dir_ + "/groups.json"));
}

// Many groups export quickly: 1,000 here (SATURN_GROUPS_BENCH=10000 for
// more; the time is printed).
TEST_F(GroupModels, ManyGroupsExportQuickly) {
  const char* env = std::getenv("SATURN_GROUPS_BENCH");
  const int n = env ? std::atoi(env) : 1000;
  for (int g = 0; g < n; ++g) {
    std::string task = "st-g" + std::to_string(g);
    fs::create_directories(dir_ + "/tasks/" + task);
    std::ofstream(dir_ + "/tasks/" + task + "/model.pt", std::ios::binary)
        << TorchSave(Linear(2, 1, static_cast<float>(g)));
    Add(task, "g" + std::to_string(g), "finished", {}, 0.1);
  }
  auto start = std::chrono::steady_clock::now();
  GroupModelsSummary s = ExportGroupModels(in_);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("exported %d groups in %.3f s\n", n, seconds);
  EXPECT_EQ(s.with_model, n);
  EXPECT_LT(seconds, 30.0);
  Read r = ReadSafetensors(dir_ + "/groups.safetensors");
  EXPECT_EQ(r.values.size(), static_cast<size_t>(2 * n));
  EXPECT_EQ(r.values["g" + std::to_string(n - 1) + "/out.bias"],
            (std::vector<float>{-static_cast<float>(n - 1)}));
}

}  // namespace
}  // namespace saturn
