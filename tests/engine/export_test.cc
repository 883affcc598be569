// What users take away from a trained task: model.pt loads into
// python/saturn_models.py's modules (and a torchscript task's own module,
// trained.pt) and gives Saturn's loss; and evaluation on held-out data: the
// split never trains, and the worker evaluates at the steps asked for.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <torch/csrc/jit/serialization/pickle.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <regex>

#include "common/fs.h"
#include "engine/eval.h"
#include "tests/engine/torchscript_fixtures.h"
#include "tests/engine/worker_process.h"

namespace saturn::testing {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

const engine::Device& TestDevice() {
  static engine::Device device(engine::DeviceSpec{engine::DeviceKind::kCpu, 0, 1, 0});
  return device;
}

bool PythonHasTorch() {
  return std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}

// Saturn's evaluation of the checkpoint on `batches` of the task's held-out data.
engine::EvalResult EngineEval(const engine::TaskSpec& task,
                              const std::vector<engine::Batch>& batches,
                              const std::string& checkpoint) {
  std::unique_ptr<engine::Model> model = engine::BuildModel(task);
  std::unique_ptr<engine::Dataset> data = engine::MakeDataset(task, *model);
  std::unique_ptr<engine::Optimizer> optimizer = engine::MakeOptimizer(task.optimizer);
  std::unique_ptr<engine::Communicator> comm =
      engine::Communicator::Create(engine::CommOptions{}, TestDevice());
  engine::TrainContext ctx{task, *model, *data, *optimizer, TestDevice(), *comm, 1};
  return engine::EvaluateBatches(ctx, batches, engine::CheckpointParams(checkpoint, *model));
}

std::vector<engine::Batch> HeldOutBatches(const engine::TaskSpec& task, int count) {
  std::unique_ptr<engine::Model> model = engine::BuildModel(task);
  std::unique_ptr<engine::Dataset> held_out = engine::MakeEvalDataset(task, *model);
  std::vector<engine::Batch> batches;
  for (int j = 0; j < count; ++j)
    batches.push_back(held_out->Samples(j * task.batch_size, task.batch_size));
  return batches;
}

void SaveBatch(const engine::Batch& batch, const std::string& path) {
  c10::impl::GenericList list(c10::TensorType::get());
  list.push_back(batch.inputs);
  list.push_back(batch.targets);
  std::vector<char> bytes = torch::jit::pickle_save(c10::IValue(list));
  WriteFileAtomic(path, std::string(bytes.begin(), bytes.end()));
}

// The eval lines of a worker's stdout: steps -> loss.
std::map<long, double> EvalLines(const std::string& out) {
  std::map<long, double> evals;
  static const std::regex kLine("saturn: eval_step=(\\d+) eval_loss=(\\S+)");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), kLine); it != std::sregex_iterator();
       ++it) {
    evals[std::stol((*it)[1])] = std::stod((*it)[2]);
  }
  return evals;
}

// Trains `json` for 6 steps evaluating every 4 (so at 4 and at the end, 6),
// then checks the worker's evaluation against Saturn's own on the same
// held-out batches, and the Python side against both.
void TrainAndCheck(const std::string& name, nlohmann::json json) {
  SCOPED_TRACE(name);
  TestDir dir("export_" + name);
  json["steps"] = 6;
  json["eval"] = {{"every", 4}, {"batches", 2}};
  std::string task_path = dir.Write("task.json", json.dump());
  WorkerRun run =
      RunWorker({"execute", "--task", task_path, "--technique", "single", "--gpus", "1", "--out",
                 dir.Path("result.json"), "--from-step", "0", "--to-step", "6", "--checkpoint-dir",
                 dir.Path("checkpoints"), "--save-model", dir.Path("model.pt")},
                dir.Path("worker"));
  ASSERT_EQ(run.status, 0) << run.err;
  std::map<long, double> evals = EvalLines(run.out);
  ASSERT_EQ(evals.size(), 2u) << run.out;
  ASSERT_TRUE(evals.count(4) && evals.count(6)) << run.out;

  engine::TaskSpec task = engine::ParseTask(json, task_path);
  std::vector<engine::Batch> batches = HeldOutBatches(task, 2);
  engine::EvalResult mine = EngineEval(task, batches, dir.Path("checkpoints/checkpoint-6"));
  EXPECT_NEAR(evals[6], mine.loss, 1e-6 * std::max(1.0, mine.loss));
  EXPECT_NE(evals[4], evals[6]);                           // the model changed in between
  EXPECT_FALSE(fs::exists(dir.Path("checkpoints.eval")));  // the scratch checkpoint is gone
  // The standard error over the two batches, from each batch's loss alone:
  // the sample standard deviation of two values over sqrt(2) is half their gap.
  engine::EvalResult one = EngineEval(task, {batches[0]}, dir.Path("checkpoints/checkpoint-6"));
  engine::EvalResult two = EngineEval(task, {batches[1]}, dir.Path("checkpoints/checkpoint-6"));
  EXPECT_LT(one.loss_se, 0);  // one batch: none
  EXPECT_NEAR(mine.loss_se, std::fabs(one.loss - two.loss) / 2, 1e-6 * std::max(1.0, mine.loss));
  EXPECT_THAT(run.out, HasSubstr("eval_loss_se="));
  // The accuracy's likewise, where the model has one (cross-entropy).
  if (one.accuracy >= 0) {
    EXPECT_LT(one.accuracy_se, 0);
    EXPECT_NEAR(mine.accuracy_se, std::fabs(one.accuracy - two.accuracy) / 2, 1e-9);
  }

  if (!PythonHasTorch()) GTEST_SKIP() << "/usr/bin/python3 has no torch";
  SaveBatch(batches[0], dir.Path("batch.pt"));
  char expected[64];
  std::snprintf(expected, sizeof expected, "%.9g", one.loss);
  std::string command =
      "/usr/bin/python3 " SATURN_SOURCE_DIR "/tests/engine/check_saturn_models.py " + dir.Path("") +
      " " + dir.Path("batch.pt") + " " + expected + " > " + dir.Path("python.log") + " 2>&1";
  int status = std::system(command.c_str());
  EXPECT_EQ(status, 0) << ReadFile(dir.Path("python.log"));
}

TEST(Export, ZooModelsLoadIntoSaturnModelsAndGiveSaturnsLoss) {
  TestDevice();
  for (const std::string family : {"gpt", "vit", "resnet", "mlp"})
    TrainAndCheck(family, TinyTask(family));
}

TEST(Export, ATorchScriptTaskLeavesItsOwnModuleTrained) {
  TestDevice();
  for (const std::string file : {"seq_mlp.pt", "residual.pt"}) {
    nlohmann::json json = {
        {"name", "ts"},
        {"model",
         {{"type", "torchscript"}, {"path", TorchScriptFixture(file)}, {"loss", "cross_entropy"}}},
        {"data", {{"type", "tensors"}, {"path", TorchScriptFixture("vectors.pt")}}},
        {"batch_size", 8},
        {"optimizer", {{"type", "adamw"}, {"lr", 1e-2}}},
        {"seed", 5}};
    TrainAndCheck(file.substr(0, file.find('.')), json);
  }
}

TEST(Export, ModelPtKeysAreTheModulesOwnNames) {
  TestDevice();
  engine::TaskSpec gpt = engine::ParseTask(TinyTask("gpt"), "t");
  std::unique_ptr<engine::Model> model = engine::BuildModel(gpt);
  EXPECT_EQ(model->ExportName(0, "tokens"), "tokens.weight");
  EXPECT_EQ(model->ExportName(2, "attn.qkv.weight"), "layers.1.attn.qkv.weight");
  EXPECT_EQ(model->ExportName(model->NumBlocks() - 1, "out.bias"), "out.bias");
  engine::TaskSpec mlp = engine::ParseTask(TinyTask("mlp"), "t");
  EXPECT_EQ(engine::BuildModel(mlp)->ExportName(1, "fc.weight"), "layers.1.weight");
  engine::TaskSpec resnet = engine::ParseTask(TinyTask("resnet"), "t");
  EXPECT_EQ(engine::BuildModel(resnet)->ExportName(0, "norm.bias"), "stem.norm.bias");
  EXPECT_EQ(engine::BuildModel(resnet)->ExportName(1, "conv1.weight"), "blocks.0.conv1.weight");
}

// Held-out samples never train: with eval, text training windows lie in the
// first nine tenths of the file and held-out ones in the last tenth; tensors
// keep their last rows apart.
TEST(HeldOut, TheSplitIsDisjointAndDeterministic) {
  TestDevice();
  TestDir dir("held_out");
  std::string text = std::string(900, 'a') + std::string(100, 'b');
  nlohmann::json json = TinyTask("gpt");
  json["data"] = {{"type", "text"}, {"path", dir.Write("corpus.txt", text)}};
  json["eval"] = {{"every", 10}, {"batches", 2}};
  engine::TaskSpec task = engine::ParseTask(json, "t");
  std::unique_ptr<engine::Model> model = engine::BuildModel(task);
  at::Tensor train = engine::MakeDataset(task, *model)->Samples(0, 500).inputs;
  at::Tensor held = engine::MakeEvalDataset(task, *model)->Samples(0, 200).inputs;
  EXPECT_TRUE(train.eq('a').all().item<bool>());
  EXPECT_TRUE(held.eq('b').all().item<bool>());
  EXPECT_TRUE(held.equal(engine::MakeEvalDataset(task, *model)->Samples(0, 200).inputs));
  // Without eval, training sees the whole file (as before evaluation existed).
  json.erase("eval");
  engine::TaskSpec plain = engine::ParseTask(json, "t");
  EXPECT_TRUE(
      engine::MakeDataset(plain, *model)->Samples(0, 500).inputs.eq('b').any().item<bool>());

  // Tensors: 64 rows, the last 6 held out.
  nlohmann::json ts = {{"name", "ts"},
                       {"model",
                        {{"type", "torchscript"},
                         {"path", TorchScriptFixture("seq_mlp.pt")},
                         {"loss", "cross_entropy"}}},
                       {"data", {{"type", "tensors"}, {"path", TorchScriptFixture("vectors.pt")}}},
                       {"batch_size", 8},
                       {"optimizer", {{"type", "adam"}, {"lr", 1e-2}}}};
  engine::TaskSpec all = engine::ParseTask(ts, "t");
  ts["eval"] = {{"every", 1}};
  engine::TaskSpec split = engine::ParseTask(ts, "t");
  std::unique_ptr<engine::Model> mlp = engine::BuildModel(all);
  at::Tensor rows = engine::MakeDataset(all, *mlp)->Samples(0, 64).inputs;
  EXPECT_TRUE(
      engine::MakeEvalDataset(split, *mlp)->Samples(0, 6).inputs.equal(rows.narrow(0, 58, 6)));
  // Training wraps around after row 57.
  EXPECT_TRUE(engine::MakeDataset(split, *mlp)->Samples(58, 1).inputs.equal(rows.narrow(0, 0, 1)));
  // A separate held-out file is used whole, and training keeps every row.
  ts["data"]["eval_path"] = TorchScriptFixture("vectors.pt");
  engine::TaskSpec own = engine::ParseTask(ts, "t");
  EXPECT_TRUE(engine::MakeDataset(own, *mlp)->Samples(0, 64).inputs.equal(rows));
  EXPECT_TRUE(engine::MakeEvalDataset(own, *mlp)->Samples(0, 64).inputs.equal(rows));
}

}  // namespace
}  // namespace saturn::testing
