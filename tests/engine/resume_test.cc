// Introspective re-planning moves a running task to another technique and
// device count: a checkpoint written by any technique resumes under any
// other, and the final weights equal an uninterrupted run's. A LoRA task's
// checkpoints hold its adapters and their state only and name their frozen
// base, which a resume reads from the task's init again.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <filesystem>
#include <map>

#include "common/fs.h"
#include "engine/checkpoint.h"
#include "tests/engine/worker_process.h"

namespace saturn::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

struct Leg {
  std::string technique;
  int gpus;
  int from, to;
};

// Runs the legs one after another in one checkpoint directory; returns the
// losses of all steps.
std::vector<double> RunLegs(const TestDir& dir, const std::string& task, const std::string& name,
                            const std::vector<Leg>& legs) {
  std::vector<double> losses;
  for (const Leg& leg : legs) {
    std::string out = dir.Path(name + "-" + std::to_string(leg.to) + ".json");
    WorkerRun run =
        RunWorker({"execute", "--task", task, "--technique", leg.technique, "--gpus",
                   std::to_string(leg.gpus), "--out", out, "--from-step", std::to_string(leg.from),
                   "--to-step", std::to_string(leg.to), "--checkpoint-dir", dir.Path(name)},
                  dir.Path(name + "-" + std::to_string(leg.to)));
    EXPECT_EQ(run.status, 0) << leg.technique << ": " << run.err;
    if (run.status != 0) return {};
    // Progress lines continue the task's step numbering.
    EXPECT_THAT(run.out, ::testing::HasSubstr("saturn: step=" + std::to_string(leg.from) + " "));
    nlohmann::json result = ReadJson(out);
    for (double loss : result["losses"])
      losses.push_back(loss);
  }
  return losses;
}

void ExpectSameCheckpoint(const std::string& expected_path, const std::string& got_path) {
  engine::CheckpointReader expected(expected_path), got(got_path);
  ASSERT_EQ(expected.Meta().blocks, got.Meta().blocks);
  EXPECT_EQ(expected.Meta().step, got.Meta().step);
  EXPECT_EQ(expected.Meta().data_cursor, got.Meta().data_cursor);
  for (int block = 0; block < expected.Meta().blocks; ++block) {
    engine::NamedTensors want = expected.ReadBlock(block), have = got.ReadBlock(block);
    ASSERT_EQ(want.size(), have.size());
    for (const auto& [name, tensor] : want) {
      const at::Tensor& other = engine::Lookup(have, name, got_path);
      // Adam turns the rounding noise of gradients that are zero in exact
      // arithmetic (a key bias under softmax) into steps of size lr, so
      // weights get an absolute tolerance and state one relative to its scale.
      bool weight = name.rfind("param/", 0) == 0;
      double atol = weight ? 1e-4 : 1e-3 * tensor.abs().max().item<double>() + 1e-12;
      EXPECT_TRUE(at::allclose(other, tensor, 1e-4, atol))
          << "block " << block << " " << name << ": max difference "
          << (other - tensor).abs().max().item<double>();
    }
  }
}

// Through tp and both hybrids: their checkpoints are whole blocks too.
TEST(Resume, FsdpThenTpThenHybridsThenPipelineThenSingleEqualsOneRun) {
  TestDir dir("resume_fsdp_tp_hybrids_pipeline_single");
  std::string task = dir.Write("task.json", TinyTask("gpt").dump());
  std::vector<double> whole = RunLegs(dir, task, "whole", {{"single", 1, 0, 15}});
  std::vector<double> moved = RunLegs(dir, task, "moved",
                                      {{"fsdp", 4, 0, 3},
                                       {"tp", 2, 3, 6},
                                       {"tp-ddp", 4, 6, 9},
                                       {"pipeline-tp", 4, 9, 12},
                                       {"pipeline", 2, 12, 14},
                                       {"single", 1, 14, 15}});
  ASSERT_EQ(whole.size(), 15u);
  ASSERT_EQ(moved.size(), 15u);
  for (size_t step = 0; step < whole.size(); ++step) {
    EXPECT_NEAR(moved[step], whole[step], 1e-4 * whole[step]) << "step " << step;
  }
  ExpectSameCheckpoint(dir.Path("whole/checkpoint-15"), dir.Path("moved/checkpoint-15"));
}

TEST(Resume, SpillThenDdpOnThreeThenFsdpOnTwoEqualsOneRun) {
  TestDir dir("resume_spill_ddp_fsdp");
  nlohmann::json json = TinyTask("resnet");
  json["optimizer"] = {{"type", "sgd"}, {"lr", 0.05}, {"momentum", 0.9}};
  std::string task = dir.Write("task.json", json.dump());
  RunLegs(dir, task, "whole", {{"single", 1, 0, 9}});
  RunLegs(dir, task, "moved", {{"spill", 1, 0, 3}, {"ddp", 3, 3, 6}, {"fsdp", 2, 6, 9}});
  ExpectSameCheckpoint(dir.Path("whole/checkpoint-9"), dir.Path("moved/checkpoint-9"));
}

TEST(Resume, ResumingAWrongTaskIsAnInputError) {
  TestDir dir("resume_wrong_task");
  std::string task = dir.Write("task.json", TinyTask("mlp").dump());
  RunLegs(dir, task, "run", {{"single", 1, 0, 2}});
  nlohmann::json other = TinyTask("mlp");
  other["model"]["width"] = 16;
  std::string other_task = dir.Write("other.json", other.dump());
  WorkerRun run = RunWorker({"execute", "--task", other_task, "--technique", "single", "--gpus",
                             "1", "--out", dir.Path("o.json"), "--from-step", "2", "--to-step", "3",
                             "--checkpoint-dir", dir.Path("run")},
                            dir.Path("other"));
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.err, ::testing::HasSubstr(
                           "checkpoint-2: model: the checkpoint was written for a different task"));
}

// LoRA. The base: a gpt of d_model 64 trained fully for 2 steps (model.pt);
// the LoRA task fine-tunes it with rank-8 adapters on attention (qkv: 64 ->
// 192, proj: 64 -> 64) in each of its 2 layers.
constexpr int64_t kDModel = 64, kLayers = 2, kRank = 8;

nlohmann::json BaseTask(uint64_t seed) {
  nlohmann::json task = TinyTask("gpt");
  task["model"]["d_model"] = kDModel;
  task["seed"] = seed;
  return task;
}

// Trains a base (2 steps of full training from `seed`) and returns its
// model.pt, written at `name`/model.pt.
std::string MakeBase(const TestDir& dir, const std::string& name, uint64_t seed) {
  std::string task = dir.Write(name + ".json", BaseTask(seed).dump());
  fs::create_directories(dir.Path(name));
  std::string model = dir.Path(name + "/model.pt");
  WorkerRun run =
      RunWorker({"execute", "--task", task, "--technique", "single", "--gpus", "1", "--out",
                 dir.Path(name + "/result.json"), "--from-step", "0", "--to-step", "2",
                 "--checkpoint-dir", dir.Path(name + "/ck"), "--save-model", model},
                dir.Path(name + "/run"));
  EXPECT_EQ(run.status, 0) << run.err;
  return model;
}

nlohmann::json LoraTask(const std::string& base) {
  nlohmann::json task = BaseTask(7);
  task["model"]["init"] = base;
  task["finetune"] = {{"lora", {{"rank", kRank}, {"alpha", 16}}}};
  task["optimizer"] = {{"type", "adamw"}, {"lr", 1e-2}};
  return task;
}

// Bytes of the task's adapters and their AdamW state (2 slots), from the
// model's sizes: A [rank, in] and B [out, rank] for qkv and proj per layer.
int64_t AdapterAndStateBytes() {
  int64_t per_layer = kRank * (kDModel + 3 * kDModel) + kRank * (kDModel + kDModel);
  return kLayers * per_layer * 4 /*float*/ * 3 /*param, exp_avg, exp_avg_sq*/;
}

int64_t FolderBytes(const std::string& folder) {
  int64_t bytes = 0;
  for (const auto& entry : fs::recursive_directory_iterator(folder))
    if (entry.is_regular_file()) bytes += static_cast<int64_t>(entry.file_size());
  return bytes;
}

// A torch.save'd dict of tensors (model.pt, adapters.pt).
std::map<std::string, at::Tensor> ReadPt(const std::string& path) {
  std::string bytes = ReadFile(path);
  c10::IValue value = torch::jit::pickle_load(std::vector<char>(bytes.begin(), bytes.end()));
  std::map<std::string, at::Tensor> tensors;
  for (const auto& entry : value.toGenericDict())
    tensors[entry.key().toStringRef()] = entry.value().toTensor();
  return tensors;
}

TEST(LoraCheckpoints, HoldOnlyTheAdaptersAndTheirStateAndNameTheBase) {
  TestDir dir("lora_checkpoint_size");
  std::string base = MakeBase(dir, "base", 3);
  std::string task = dir.Write("task.json", LoraTask(base).dump());
  RunLegs(dir, task, "run", {{"single", 1, 0, 3}});
  std::string checkpoint = dir.Path("run/checkpoint-3");
  int64_t bytes = FolderBytes(checkpoint), adapters = AdapterAndStateBytes();
  int64_t full = FolderBytes(dir.Path("base/ck/checkpoint-2"));  // the same model, every weight
  std::printf("LoRA checkpoint %lld bytes; adapters and their state %lld; a full checkpoint %lld\n",
              static_cast<long long>(bytes), static_cast<long long>(adapters),
              static_cast<long long>(full));
  EXPECT_LE(bytes, 2 * adapters);
  // Every parameter in it is an adapter, each with its state.
  engine::CheckpointReader reader(checkpoint);
  int params = 0;
  for (int b = 0; b < reader.Meta().blocks; ++b) {
    for (const auto& [name, tensor] : reader.ReadBlock(b)) {
      if (name.rfind("param/", 0) != 0) continue;
      ++params;
      EXPECT_THAT(name,
                  ::testing::AnyOf(::testing::EndsWith(".lora_A"), ::testing::EndsWith(".lora_B")));
    }
  }
  EXPECT_EQ(params, kLayers * 2 * 2);  // qkv and proj, A and B
  // meta.json names the base: init and the file's size.
  const nlohmann::json& named = reader.Meta().base;
  ASSERT_TRUE(named.is_object()) << named.dump();
  EXPECT_EQ(named["init"], base);
  ASSERT_EQ(named["files"].size(), 1u);
  EXPECT_EQ(named["files"][0]["file"], base);
  EXPECT_EQ(named["files"][0]["bytes"], fs::file_size(base));
  // A full checkpoint names no base and holds every parameter.
  engine::CheckpointReader whole(dir.Path("base/ck/checkpoint-2"));
  EXPECT_TRUE(whole.Meta().base.is_null());
}

// Moved through every technique that trains LoRA: the same losses as one
// run, the same adapters and state, and model.pt (the base merged with the
// adapters) equal to the base plus alpha / rank * B A.
TEST(LoraCheckpoints, ResumingUnderEveryTechniqueEqualsOneRun) {
  TestDir dir("lora_resume");
  std::string base = MakeBase(dir, "base", 3);
  std::string task = dir.Write("task.json", LoraTask(base).dump());
  std::vector<double> whole = RunLegs(dir, task, "whole", {{"single", 1, 0, 10}});
  std::vector<double> moved = RunLegs(dir, task, "moved",
                                      {{"fsdp", 2, 0, 2},
                                       {"pipeline", 2, 2, 4},
                                       {"spill", 1, 4, 6},
                                       {"ddp", 3, 6, 8},
                                       {"single", 1, 8, 10}});
  ASSERT_EQ(whole.size(), 10u);
  ASSERT_EQ(moved.size(), 10u);
  for (size_t step = 0; step < whole.size(); ++step)
    EXPECT_NEAR(moved[step], whole[step], 1e-4 * whole[step]) << "step " << step;
  EXPECT_LT(whole.back(), whole.front());  // the adapters learn
  ExpectSameCheckpoint(dir.Path("whole/checkpoint-10"), dir.Path("moved/checkpoint-10"));

  // model.pt from the moved run's last checkpoint, against the base and the
  // adapters merged here.
  WorkerRun run =
      RunWorker({"execute", "--task", task, "--technique", "single", "--gpus", "1", "--out",
                 dir.Path("export.json"), "--from-step", "10", "--to-step", "10",
                 "--checkpoint-dir", dir.Path("moved"), "--save-model", dir.Path("model.pt")},
                dir.Path("export"));
  ASSERT_EQ(run.status, 0) << run.err;
  std::map<std::string, at::Tensor> merged = ReadPt(dir.Path("model.pt")),
                                    pretrained = ReadPt(base),
                                    adapters = ReadPt(dir.Path("adapters.pt"));
  ASSERT_EQ(merged.size(), pretrained.size());
  int adapted = 0;
  for (const auto& [name, weight] : pretrained) {
    ASSERT_TRUE(merged.count(name)) << name;
    std::string map = name.substr(0, name.size() - std::string(".weight").size());
    bool lora = name.size() > 7 && name.ends_with(".weight") && adapters.count(map + ".lora_A");
    at::Tensor want = weight;
    if (lora) {
      ++adapted;
      want = weight + 2.0 * at::mm(adapters[map + ".lora_B"], adapters[map + ".lora_A"]);
    }
    EXPECT_TRUE(at::allclose(merged[name], want, 1e-5, 1e-6)) << name;
  }
  EXPECT_EQ(adapted, kLayers * 2);
}

TEST(LoraCheckpoints, ACheckpointWhoseBaseChangedOrIsGoneIsRefusedNamingTheBase) {
  TestDir dir("lora_base_changed");
  std::string base = MakeBase(dir, "base", 3);
  std::string task = dir.Write("task.json", LoraTask(base).dump());
  RunLegs(dir, task, "run", {{"single", 1, 0, 2}});
  auto resume = [&](const std::string& name) {
    return RunWorker({"execute", "--task", task, "--technique", "single", "--gpus", "1", "--out",
                      dir.Path(name + ".json"), "--from-step", "2", "--to-step", "3",
                      "--checkpoint-dir", dir.Path("run")},
                     dir.Path(name));
  };
  // Another base of the same shapes in its place (trained from another seed).
  std::string other = MakeBase(dir, "other", 4);
  fs::copy_file(other, base, fs::copy_options::overwrite_existing);
  WorkerRun changed = resume("changed");
  EXPECT_EQ(changed.status, 2);
  EXPECT_THAT(changed.err, HasSubstr("checkpoint-2/meta.json: base:"));
  EXPECT_THAT(changed.err,
              HasSubstr("trained on the frozen base '" + base + "', which changed since"));
  // Gone: the task's init itself cannot be opened, and the error names it.
  fs::remove(base);
  WorkerRun gone = resume("gone");
  EXPECT_EQ(gone.status, 2);
  EXPECT_THAT(gone.err, HasSubstr(base));
}

}  // namespace
}  // namespace saturn::testing
