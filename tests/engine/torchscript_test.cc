// TorchScript models and the tokens / tensors data types, in process: how a
// module is cut into blocks, that blocks reproduce the module and read their
// slots, the loss, the datasets' determinism, and clear errors for bad input.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/csrc/jit/serialization/import.h>

#include <fstream>

#include "common/error.h"
#include "engine/data.h"
#include "engine/model.h"
#include "engine/technique.h"
#include "tests/engine/torchscript_fixtures.h"
#include "tests/engine/worker_process.h"

namespace saturn::engine {
namespace {

using ::saturn::testing::TorchScriptFixture;
using ::testing::HasSubstr;

nlohmann::json Task(const std::string& model, const nlohmann::json& data,
                    const std::string& loss = "cross_entropy") {
  return {{"name", "ts"},
          {"model", {{"type", "torchscript"}, {"path", TorchScriptFixture(model)}, {"loss", loss}}},
          {"data", data},
          {"batch_size", 8},
          {"optimizer", {{"type", "sgd"}, {"lr", 0.1}}},
          {"seed", 3}};
}

nlohmann::json Tensors(const std::string& file) {
  return {{"type", "tensors"}, {"path", TorchScriptFixture(file)}};
}

nlohmann::json Tokens(const std::string& file, int64_t seq_len = 16, int64_t vocab = 40) {
  return {{"type", "tokens"},
          {"path", TorchScriptFixture(file)},
          {"seq_len", seq_len},
          {"vocab", vocab}};
}

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e.what();
  }
  return "no InputError";
}

at::Tensor RunBlocks(const Model& model, at::Tensor x) {
  for (int i = 0; i < model.NumBlocks(); ++i)
    x = model.BuildBlock(i, true)->Forward(x);
  return x;
}

TEST(TorchScriptModel, SequencesSplitIntoBlocksWithParameterFreeChildrenJoined) {
  TaskSpec seq = ParseTask(Task("seq_mlp.pt", Tensors("vectors.pt")), "task.json");
  std::unique_ptr<Model> model = BuildModel(seq);
  // Linear+ReLU, Linear+Tanh, Linear.
  ASSERT_EQ(model->NumBlocks(), 3);
  EXPECT_EQ(model->WhyNotSplittable(), "");
  EXPECT_EQ(model->BlockParamCounts(),
            (std::vector<int64_t>{8 * 16 + 16, 16 * 16 + 16, 16 * 4 + 4}));
  std::vector<std::string> names;
  std::unique_ptr<Block> second = model->BuildBlock(1, false);
  for (const ParamSlot& slot : second->Params())
    names.push_back(slot.name);
  EXPECT_EQ(names, (std::vector<std::string>{"2.weight", "2.bias"}));
  EXPECT_EQ(model->Input().kind, InputShape::Kind::kAny);
  EXPECT_EQ(model->LossItemsPerSample(), 1);
  EXPECT_DOUBLE_EQ(model->ForwardFlopsPerSample(), 2.0 * (144 + 272 + 68));

  // A plain module whose (traced) forward calls its children in order.
  TaskSpec chain = ParseTask(Task("chain_mlp.pt", Tensors("vectors.pt")), "task.json");
  EXPECT_EQ(BuildModel(chain)->NumBlocks(), 2);
  TaskSpec lm = ParseTask(Task("seq_lm.pt", Tokens("tokens.bin")), "task.json");
  EXPECT_EQ(BuildModel(lm)->NumBlocks(), 3);
}

TEST(TorchScriptModel, BlocksInOrderReproduceTheModuleAndReadTheirSlots) {
  for (const std::string file : {"seq_mlp.pt", "chain_mlp.pt", "residual.pt"}) {
    TaskSpec task = ParseTask(Task(file, Tensors("vectors.pt")), "task.json");
    std::unique_ptr<Model> model = BuildModel(task);
    torch::jit::Module module = torch::jit::load(TorchScriptFixture(file));
    at::Tensor x = at::randn({5, 8});
    at::Tensor expected = module.forward({x}).toTensor();
    EXPECT_TRUE(at::allclose(RunBlocks(*model, x), expected, 1e-6, 1e-6)) << file;
  }
  // Repointing the slots (as fsdp and device copies do) changes what runs:
  // all-zero parameters give zero logits.
  TaskSpec task = ParseTask(Task("seq_mlp.pt", Tensors("vectors.pt")), "task.json");
  std::unique_ptr<Block> last = BuildModel(task)->BuildBlock(2, true);
  for (const ParamSlot& slot : last->Params())
    *slot.tensor = at::zeros_like(*slot.tensor).requires_grad_(true);
  at::Tensor out = last->Forward(at::randn({3, 16}));
  EXPECT_EQ(out.abs().sum().item<double>(), 0.0);
  // Gradients reach the slots.
  out.sum().backward();
  for (const ParamSlot& slot : last->Params())
    EXPECT_TRUE(slot.tensor->grad().defined()) << slot.name;
  // Shape-only blocks.
  std::unique_ptr<Model> again = BuildModel(task);
  std::unique_ptr<Block> shapes = again->BuildBlock(0, false);
  for (const ParamSlot& slot : shapes->Params())
    EXPECT_TRUE(slot.tensor->is_meta()) << slot.name;
}

TEST(TorchScriptModel, NonSequenceIsOneBlockThatOnlyWholeModelTechniquesTake) {
  TaskSpec task = ParseTask(Task("residual.pt", Tensors("vectors.pt")), "task.json");
  std::unique_ptr<Model> model = BuildModel(task);
  EXPECT_EQ(model->NumBlocks(), 1);
  EXPECT_THAT(model->WhyNotSplittable(),
              HasSubstr("torchscript module is not a sequence of blocks: forward computes aten::"));
  for (const std::string name : {"pipeline", "fsdp", "spill"}) {
    int gpus = name == "spill" ? 1 : 2;
    EXPECT_THAT(BuiltinTechniques().Get(name).Unsupported(task, *model, gpus),
                HasSubstr("not a sequence of blocks"))
        << name;
  }
  EXPECT_EQ(BuiltinTechniques().Get("single").Unsupported(task, *model, 1), "");
  EXPECT_EQ(BuiltinTechniques().Get("ddp").Unsupported(task, *model, 2), "");
  // A sequential model is splittable.
  TaskSpec seq = ParseTask(Task("seq_mlp.pt", Tensors("vectors.pt")), "task.json");
  EXPECT_EQ(BuiltinTechniques().Get("fsdp").Unsupported(seq, *BuildModel(seq), 2), "");
}

TEST(TorchScriptModel, LossSumOverSamplesGivesTheMeanLoss) {
  // Token model: cross-entropy over [B, T, V] logits; LossItemsPerSample is
  // 1, so the sum over samples of each sample's mean is the mean over B.
  TaskSpec lm = ParseTask(Task("seq_lm.pt", Tokens("tokens.bin")), "task.json");
  std::unique_ptr<Model> model = BuildModel(lm);
  std::unique_ptr<Dataset> data = MakeDataset(lm, *model);
  Batch b = data->Samples(0, 4);
  at::Tensor logits = RunBlocks(*model, b.inputs);
  at::Tensor mean = at::cross_entropy_loss(logits.reshape({-1, 40}), b.targets.reshape({-1}));
  EXPECT_NEAR((model->LossSum(logits, b.targets) / 4).item<double>(), mean.item<double>(), 1e-5);

  TaskSpec reg = ParseTask(Task("seq_mlp.pt", Tensors("regression.pt"), "mse"), "task.json");
  std::unique_ptr<Model> mse = BuildModel(reg);
  EXPECT_EQ(mse->Loss(), LossKind::kMse);
  Batch r = MakeDataset(reg, *mse)->Samples(0, 6);
  at::Tensor out = RunBlocks(*mse, r.inputs);
  EXPECT_NEAR((mse->LossSum(out, r.targets) / 6).item<double>(),
              at::mse_loss(out, r.targets).item<double>(), 1e-5);
}

TEST(TokensData, WindowsAreAPureFunctionOfSeedAndIndex) {
  TaskSpec task = ParseTask(Task("seq_lm.pt", Tokens("tokens.bin", 12)), "task.json");
  std::unique_ptr<Model> model = BuildModel(task);
  std::unique_ptr<Dataset> data = MakeDataset(task, *model);
  Batch all = data->Samples(0, 10);
  EXPECT_EQ(all.inputs.sizes(), (std::vector<int64_t>{10, 12}));
  EXPECT_EQ(all.inputs.scalar_type(), at::kLong);
  // Resuming at sample 6 gives the same samples (the cursor is an index).
  Batch resumed = MakeDataset(task, *model)->Samples(6, 4);
  EXPECT_TRUE(at::equal(resumed.inputs, all.inputs.narrow(0, 6, 4)));
  EXPECT_TRUE(at::equal(resumed.targets, all.targets.narrow(0, 6, 4)));
  // Targets are the next tokens; the file's rule is t+1 = 3t+1 mod 40.
  EXPECT_TRUE(at::equal(all.inputs.narrow(1, 1, 11), all.targets.narrow(1, 0, 11)));
  EXPECT_TRUE(at::equal(all.targets, (all.inputs * 3 + 1).remainder(40)));
  EXPECT_LT(all.inputs.max().item<int64_t>(), 40);
  // Another seed, other windows.
  TaskSpec other = task;
  other.seed = 4;
  EXPECT_FALSE(at::equal(MakeDataset(other, *model)->Samples(0, 10).inputs, all.inputs));
}

TEST(TensorsData, SampleIIsRowIModuloN) {
  TaskSpec task = ParseTask(Task("seq_mlp.pt", Tensors("vectors.pt")), "task.json");
  std::unique_ptr<Model> model = BuildModel(task);
  std::unique_ptr<Dataset> data = MakeDataset(task, *model);
  Batch rows = data->Samples(0, 64);
  EXPECT_EQ(rows.inputs.sizes(), (std::vector<int64_t>{64, 8}));
  EXPECT_EQ(rows.targets.scalar_type(), at::kLong);
  Batch wrapped = MakeDataset(task, *model)->Samples(62, 4);  // rows 62, 63, 0, 1
  EXPECT_TRUE(at::equal(wrapped.inputs.narrow(0, 0, 2), rows.inputs.narrow(0, 62, 2)));
  EXPECT_TRUE(at::equal(wrapped.inputs.narrow(0, 2, 2), rows.inputs.narrow(0, 0, 2)));
  EXPECT_TRUE(at::equal(wrapped.targets.narrow(0, 2, 2), rows.targets.narrow(0, 0, 2)));
  EXPECT_TRUE(at::equal(data->Samples(128, 64).inputs, rows.inputs));
}

TEST(TensorsData, FeedsZooModelsWhenShapesFit) {
  nlohmann::json json = Task("seq_mlp.pt", Tensors("vectors.pt"));
  json["model"] = {{"type", "mlp"}, {"layers", 1}, {"width", 8}};
  TaskSpec task = ParseTask(json, "task.json");
  EXPECT_EQ(MakeDataset(task, *BuildModel(task))->Samples(0, 3).inputs.size(1), 8);
  json["model"]["width"] = 9;
  task = ParseTask(json, "task.json");
  EXPECT_THAT(ErrorOf([&] { MakeDataset(task, *BuildModel(task)); }),
              HasSubstr("do not fit the model, which takes inputs [2, 9] Float"));
}

TEST(TorchScriptErrors, BadInputsAreInputErrorsNamingTheFile) {
  ::saturn::testing::TestDir dir("torchscript_errors");
  std::string garbage = dir.Write("garbage.pt", "this is not a zip archive");
  nlohmann::json json = Task("seq_mlp.pt", Tensors("vectors.pt"));
  json["model"]["path"] = garbage;
  EXPECT_THAT(ErrorOf([&] { BuildModel(ParseTask(json, "task.json")); }),
              HasSubstr("model.path: " + garbage + " is not a TorchScript module"));
  json["model"]["path"] = dir.Path("missing.pt");
  EXPECT_THAT(ErrorOf([&] { BuildModel(ParseTask(json, "task.json")); }),
              HasSubstr("missing.pt: no such file"));
  // A tensors file (not a module) as the model.
  json["model"]["path"] = TorchScriptFixture("vectors.pt");
  EXPECT_THAT(ErrorOf([&] { BuildModel(ParseTask(json, "task.json")); }),
              HasSubstr("is not a TorchScript module"));

  auto data_error = [](const nlohmann::json& task_json) {
    TaskSpec task = ParseTask(task_json, "task.json");
    std::unique_ptr<Model> model = BuildModel(task);
    return ErrorOf([&] { MakeDataset(task, *model); });
  };
  std::string error = data_error(Task("seq_mlp.pt", Tensors("bad_width.pt")));
  EXPECT_THAT(error, HasSubstr(TorchScriptFixture("bad_width.pt") +
                               ": samples do not fit the torchscript model"));
  EXPECT_THAT(error, HasSubstr("seq_mlp.pt"));
  EXPECT_THAT(data_error(Task("seq_mlp.pt", Tensors("bad_rows.pt"))),
              HasSubstr("need the same number of rows"));
  EXPECT_THAT(data_error(Task("seq_mlp.pt", Tensors("seq_mlp.pt"))),
              HasSubstr("not a file written by torch.save([inputs, targets], path)"));
  EXPECT_THAT(data_error(Task("seq_lm.pt", Tokens("bad_tokens.bin"))),
              HasSubstr(TorchScriptFixture("bad_tokens.bin") +
                        ": token id 40 at position 123 is not below data.vocab 40"));
  EXPECT_THAT(data_error(Task("seq_lm.pt", Tokens("tokens.bin", 700))),
              HasSubstr("has 600 token ids; data.seq_len 700 needs at least 702"));
  std::string odd = dir.Write("odd.bin", "abc");
  nlohmann::json odd_task = Task("seq_lm.pt", Tokens("tokens.bin"));
  odd_task["data"]["path"] = odd;
  EXPECT_THAT(data_error(odd_task), HasSubstr("not a whole number of uint16 token ids"));
  // Loss against the wrong kind of targets.
  EXPECT_THAT(data_error(Task("seq_mlp.pt", Tensors("vectors.pt"), "mse")),
              HasSubstr("mse needs float targets shaped like the model's outputs [2, 4] Float"));
  EXPECT_THAT(data_error(Task("seq_mlp.pt", Tensors("regression.pt"))),
              HasSubstr("cross_entropy needs logits [..., classes] and int64 targets"));
  // Data without a shape of its own.
  EXPECT_THAT(data_error(Task("seq_mlp.pt", {{"type", "synthetic"}})),
              HasSubstr("input shape comes from its data: use tokens"));
}

}  // namespace
}  // namespace saturn::engine
