// The engine in one process: models, data, metering and checkpoints
// (optimizers: optimizer_test.cc). Multi-process behaviour is tested through the worker
// (equivalence_test, resume_test, memory_test, tests/worker).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <cmath>
#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "engine/blocks.h"
#include "engine/errors.h"
#include "engine/technique.h"
#include "tests/engine/worker_process.h"
#include "tests/testing/error_of.h"

namespace saturn::engine {
namespace {

using ::testing::HasSubstr;

TaskSpec Task(const nlohmann::json& model, const std::string& optimizer = "adamw") {
  nlohmann::json json = {{"model", model},
                         {"data", {{"type", "synthetic"}}},
                         {"batch_size", 6},
                         {"optimizer", {{"type", optimizer}, {"lr", 0.01}, {"momentum", 0.9}}},
                         {"seed", 3}};
  return ParseTask(json, "test");
}

const nlohmann::json kGpt = {
    {"type", "gpt"}, {"layers", 2}, {"d_model", 16}, {"heads", 2}, {"seq_len", 8}};
const nlohmann::json kVit = {{"type", "vit"}, {"layers", 1},     {"d_model", 16},
                             {"heads", 4},    {"image_size", 8}, {"patch", 4}};
const nlohmann::json kResnet = {{"type", "resnet"}, {"blocks", 2}, {"width", 8}, {"image_size", 6}};
const nlohmann::json kMlp = {{"type", "mlp"}, {"layers", 2}, {"width", 12}};

// One device for the whole test program: Device installs process-wide metering.
const Device& TestDevice() {
  static Device device(DeviceSpec{DeviceKind::kCpu, 0, 1, 0});
  return device;
}

at::Tensor RunModel(const Model& model, const at::Tensor& inputs) {
  at::Tensor x = inputs;
  for (int i = 0; i < model.NumBlocks(); ++i)
    x = model.BuildBlock(i, true)->Forward(x);
  return x;
}

TEST(Models, EveryFamilyMapsItsDataToLogits) {
  TestDevice();
  struct Case {
    nlohmann::json model;
    std::vector<int64_t> logits;
  };
  for (const Case& c : {Case{kGpt, {4, 8, 256}}, Case{kVit, {4, 10}}, Case{kResnet, {4, 10}},
                        Case{kMlp, {4, 10}}}) {
    TaskSpec task = Task(c.model);
    std::unique_ptr<Model> model = BuildModel(task);
    std::unique_ptr<Dataset> data = MakeDataset(task, *model);
    Batch batch = data->Samples(0, 4);
    at::Tensor logits = RunModel(*model, batch.inputs);
    EXPECT_EQ(logits.sizes().vec(), c.logits) << c.model.dump();
    at::Tensor loss = model->LossSum(logits, batch.targets);
    EXPECT_TRUE(std::isfinite(loss.item<double>()));
    EXPECT_EQ(batch.targets.numel() * 1, 4 * model->LossItemsPerSample());
  }
}

TEST(Models, BlocksAreAPureFunctionOfSeedAndIndex) {
  std::unique_ptr<Model> a = BuildModel(Task(kGpt));
  std::unique_ptr<Model> b = BuildModel(Task(kGpt));
  TaskSpec other = Task(kGpt);
  other.seed = 4;
  std::unique_ptr<Model> c = BuildModel(other);
  for (int i = 0; i < a->NumBlocks(); ++i) {
    std::unique_ptr<Block> x = a->BuildBlock(i, true), y = b->BuildBlock(i, true),
                           z = c->BuildBlock(i, true);
    ASSERT_EQ(x->Params().size(), y->Params().size());
    bool seed_matters = false;
    for (size_t p = 0; p < x->Params().size(); ++p) {
      EXPECT_TRUE(x->Params()[p].tensor->equal(*y->Params()[p].tensor));
      seed_matters |= !x->Params()[p].tensor->equal(*z->Params()[p].tensor);
    }
    EXPECT_TRUE(seed_matters) << "block " << i;
  }
  // Different blocks of the same shape differ too.
  EXPECT_FALSE(a->BuildBlock(1, true)->Params()[2].tensor->equal(
      *a->BuildBlock(2, true)->Params()[2].tensor));
}

TEST(Models, ShapeOnlyBlocksCountParametersWithoutMemory) {
  std::unique_ptr<Model> model = BuildModel(Task(kGpt));
  std::vector<int64_t> counts = model->BlockParamCounts();
  ASSERT_EQ(counts.size(), 4u);
  // Embedding: 256 x 16 tokens + 8 x 16 positions; a layer: 12 d^2 + 13 d.
  EXPECT_EQ(counts[0], 256 * 16 + 8 * 16);
  EXPECT_EQ(counts[1], 12 * 16 * 16 + 13 * 16);
  EXPECT_EQ(counts[3], 2 * 16 + 16 * 256 + 256);
  for (int i = 0; i < model->NumBlocks(); ++i) {
    EXPECT_EQ(model->BuildBlock(i, false)->ParamCount(), model->BuildBlock(i, true)->ParamCount());
    EXPECT_TRUE(model->BuildBlock(i, false)->Params()[0].tensor->is_meta());
  }
}

TEST(Models, BadFieldsAreInputErrors) {
  nlohmann::json gpt = kGpt;
  gpt["d_model"] = 15;
  EXPECT_THAT(test::ErrorOf([&] { BuildModel(Task(gpt)); }),
              HasSubstr("model.d_model: must be a multiple of heads (2)"));
  nlohmann::json vit = kVit;
  vit["patch"] = 3;
  try {
    BuildModel(Task(vit));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("model.patch: must divide image_size"));
  }
  try {
    BuildModel(Task({{"type", "bert"}}));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("unknown model type 'bert'; expected one of: gpt, gpt2, llama, "
                                    "vit, resnet, mlp, torchscript"));
  }
}

TEST(Data, AnySliceOfAStepIsTheSameSamples) {
  for (const nlohmann::json& family : {kGpt, kVit, kMlp}) {
    TaskSpec task = Task(family);
    std::unique_ptr<Model> model = BuildModel(task);
    std::unique_ptr<Dataset> data = MakeDataset(task, *model);
    Batch whole = data->Samples(12, 6);
    Batch head = data->Samples(12, 2), tail = data->Samples(14, 4);
    EXPECT_TRUE(whole.inputs.equal(at::cat({head.inputs, tail.inputs})));
    EXPECT_TRUE(whole.targets.equal(at::cat({head.targets, tail.targets})));
    EXPECT_FALSE(whole.inputs.equal(data->Samples(18, 6).inputs));
    EXPECT_TRUE(whole.inputs.equal(MakeDataset(task, *model)->Samples(12, 6).inputs));
  }
}

TEST(Data, TextWindowsPredictTheNextByte) {
  std::string path = ::testing::TempDir() + "saturn_text.txt";
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += "the quick brown fox " + std::to_string(i) + "\n";
  WriteFileAtomic(path, text);
  TaskSpec task = Task(kGpt);
  task.data.type = "text";
  task.data.path = path;
  std::unique_ptr<Model> model = BuildModel(task);
  Batch batch = MakeDataset(task, *model)->Samples(0, 5);
  ASSERT_EQ(batch.inputs.sizes().vec(), (std::vector<int64_t>{5, 8}));
  EXPECT_TRUE(batch.inputs.narrow(1, 1, 7).equal(batch.targets.narrow(1, 0, 7)));
  std::string window;
  for (int t = 0; t < 8; ++t)
    window += static_cast<char>(batch.inputs[2][t].item<int64_t>());
  EXPECT_NE(text.find(window), std::string::npos);

  WriteFileAtomic(path, "short");
  EXPECT_THAT(test::ErrorOf([&] { MakeDataset(task, *model); }),
              HasSubstr("saturn_text.txt has 5 bytes; seq_len 8 needs at least 10"));
  TaskSpec vit = Task(kVit);
  vit.data = task.data;
  EXPECT_THAT(test::ErrorOf([&] { MakeDataset(vit, *BuildModel(vit)); }),
              HasSubstr("data.type: text data needs a gpt model"));
}

TEST(Data, ShippedCorpusFeedsGpt) {
  TaskSpec task = Task(kGpt);
  task.data.type = "text";
  task.data.path = std::string(SATURN_SOURCE_DIR) + "/examples/data/corpus.txt";
  std::unique_ptr<Model> model = BuildModel(task);
  Batch batch = MakeDataset(task, *model)->Samples(0, 3);
  EXPECT_EQ(batch.inputs.sizes().vec(), (std::vector<int64_t>{3, 8}));
  EXPECT_LT(batch.inputs.max().item<int64_t>(), 128) << "plain ASCII text";
}

TEST(Metering, CountsDeviceBytesButNotHostBytes) {
  const Device& device = TestDevice();
  int64_t before = device.LiveBytes();
  at::Tensor on_device = at::empty({1000}, at::kFloat);
  EXPECT_EQ(device.LiveBytes() - before, 4000);
  at::Tensor on_host;
  {
    HostMemoryScope host;
    on_host = at::empty({5000}, at::kFloat);
  }
  EXPECT_EQ(device.LiveBytes() - before, 4000);
  at::Tensor copy = device.ToDevice(on_host);
  EXPECT_EQ(device.LiveBytes() - before, 24000);
  device.ResetPeak();
  copy.reset();
  on_device.reset();
  EXPECT_EQ(device.LiveBytes(), before);
  EXPECT_EQ(device.PeakBytes(), before + 24000);
  at::Tensor host_copy = device.ToHost(at::ones({100}));
  EXPECT_EQ(device.LiveBytes(), before);
}

TEST(Metering, HardLimitThrowsOutOfMemory) {
  Device small(DeviceSpec{DeviceKind::kCpu, 0, 1, 1 << 20});
  EXPECT_EQ(small.CapacityBytes(), 1 << 20);
  try {
    at::Tensor huge = at::empty({int64_t{1} << 28}, at::kFloat);
    FAIL() << "allocated past the hard limit";
  } catch (const std::exception& e) {
    EXPECT_TRUE(IsOutOfMemory(e)) << e.what();
  }
  at::Tensor fits = at::empty({1000}, at::kFloat);
  {
    HostMemoryScope host;
    at::Tensor host_memory_is_not_limited = at::empty({int64_t{1} << 24}, at::kFloat);
  }
  // Back to an unlimited device for the other tests.
  Device unlimited(DeviceSpec{DeviceKind::kCpu, 0, 1, 0});
}

struct InProcess {
  explicit InProcess(const TaskSpec& t)
      : task(t),
        model(BuildModel(task)),
        data(MakeDataset(task, *model)),
        optimizer(MakeOptimizer(task.optimizer)),
        comm(Communicator::Solo()),
        ctx{task, *model, *data, *optimizer, TestDevice(), *comm, 1} {}
  TaskSpec task;
  std::unique_ptr<Model> model;
  std::unique_ptr<Dataset> data;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<Communicator> comm;
  TrainContext ctx;
};

std::vector<double> Train(const Technique& technique, InProcess& run, const Knobs& knobs,
                          int steps) {
  std::unique_ptr<Trainer> trainer = technique.MakeTrainer(run.ctx, knobs);
  std::vector<double> losses;
  for (int step = 0; step < steps; ++step)
    losses.push_back(trainer->Step(step));
  return losses;
}

TEST(Techniques, SpillMatchesSingleInOneProcess) {
  for (const nlohmann::json& family : {kGpt, kResnet}) {
    InProcess single(Task(family, "sgd")), spill(Task(family, "sgd"));
    std::vector<double> expected = Train(BuiltinTechniques().Get("single"), single, {}, 4);
    std::vector<double> got =
        Train(BuiltinTechniques().Get("spill"), spill, {{"blocks_per_shard", 2}}, 4);
    for (size_t i = 0; i < expected.size(); ++i)
      EXPECT_NEAR(got[i], expected[i], 1e-5);
    // Without recomputation: graphs kept, parameter memory released and
    // refilled between the passes.
    for (int per_shard : {1, 2}) {
      InProcess kept(Task(family, "sgd"));
      got = Train(BuiltinTechniques().Get("spill"), kept,
                  {{"blocks_per_shard", per_shard}, {"recompute", false}}, 4);
      for (size_t i = 0; i < expected.size(); ++i)
        EXPECT_NEAR(got[i], expected[i], 1e-5) << "blocks_per_shard " << per_shard;
    }
  }
}

// bf16 autocast with fp32 master weights trains like fp32 within a few per
// cent on every family, and really computes in bf16 (the losses differ).
TEST(Precision, Bf16TrainsLikeFp32OnEveryFamily) {
  for (const nlohmann::json& family : {kGpt, kVit, kResnet, kMlp}) {
    TaskSpec fp32 = Task(family), bf16 = Task(family);
    bf16.precision = "bf16";
    InProcess a(fp32), b(bf16);
    std::vector<double> expected = Train(BuiltinTechniques().Get("single"), a, {}, 6);
    std::vector<double> got = Train(BuiltinTechniques().Get("single"), b, {}, 6);
    double largest = 0.0;
    for (size_t i = 0; i < expected.size(); ++i) {
      ASSERT_TRUE(std::isfinite(got[i])) << family.dump();
      EXPECT_NEAR(got[i], expected[i], 0.03 * std::fabs(expected[i])) << family.dump() << i;
      largest = std::max(largest, std::fabs(got[i] - expected[i]));
    }
    EXPECT_GT(largest, 0.0) << family.dump() << ": bf16 gave fp32's losses bit for bit";
  }
}

// Search reports where a step's time goes; the phases of a step partition
// it, so their sum is the step's wall time (the mean of the measured steps).
TEST(Phases, SearchReportsAPartitionOfTheStep) {
  InProcess run(Task(kGpt));
  SearchOptions options;
  options.warmup = 1;
  options.measure = 3;
  SearchResult found = BuiltinTechniques().Get("single").Search(run.ctx, options);
  ASSERT_TRUE(found.feasible);
  const nlohmann::json& phases = found.stats.at("phases");
  double sum = 0.0;
  for (const char* name :
       {"data", "forward", "backward", "optimizer", "communication", "bookkeeping"}) {
    ASSERT_TRUE(phases.contains(name)) << name;
    sum += phases[name].get<double>();
  }
  EXPECT_GT(phases["forward"].get<double>(), 0.0);
  EXPECT_GT(phases["backward"].get<double>(), 0.0);
  EXPECT_GT(phases["optimizer"].get<double>(), 0.0);
  double mean = 0.0;
  for (double s : found.step_samples_s)
    mean += s / static_cast<double>(found.step_samples_s.size());
  EXPECT_NEAR(sum, mean, 0.05 * mean + 1e-3);
}

TEST(Techniques, MemorySaversComeInOrderOfWhatTheySave) {
  std::vector<Knobs> space = WithMemorySavers({Knobs{{"tp", 2}}}, 5, /*accumulation=*/true);
  std::vector<std::pair<bool, int64_t>> got;
  for (const Knobs& knobs : space) {
    EXPECT_EQ(knobs["tp"], 2) << knobs.dump();
    got.push_back({knobs["checkpointing"].get<bool>(), knobs.value("accumulation", int64_t{1})});
  }
  EXPECT_EQ(got, (std::vector<std::pair<bool, int64_t>>{
                     {true, 1}, {false, 2}, {true, 2}, {false, 4}, {true, 4}}));
  EXPECT_EQ(WithMemorySavers({Knobs::object()}, 8, /*accumulation=*/false).size(), 1u);
  EXPECT_THROW(MemorySavers::FromKnobs({{"accumulation", 6}}, 5), InputError);
  EXPECT_EQ(MemorySavers::FromKnobs({{"accumulation", 5}}, 5).accumulation, 5);
}

TEST(Communicator, ASubgroupOfOneIsSoloAndMustHoldThisRank) {
  std::unique_ptr<Communicator> solo = Communicator::Solo();
  std::unique_ptr<Communicator> sub = solo->Subgroup({0});
  EXPECT_EQ(sub->Size(), 1);
  EXPECT_EQ(sub->Rank(), 0);
  EXPECT_THROW(solo->Subgroup({1}), std::invalid_argument);
  EXPECT_THROW(solo->Subgroup({}), std::invalid_argument);
}

TEST(Techniques, RegistryListsTheBuiltins) {
  EXPECT_EQ(BuiltinTechniques().Names(),
            (std::vector<std::string>{"single", "ddp", "fsdp", "pipeline", "spill", "tp", "tp-ddp",
                                      "pipeline-tp"}));
  try {
    BuiltinTechniques().Get("zero");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(),
                HasSubstr("unknown technique 'zero'; expected one of: single, ddp, fsdp"));
  }
  InProcess run(Task(kMlp));
  EXPECT_THAT(BuiltinTechniques().Get("single").Unsupported(run.task, *run.model, 2),
              HasSubstr("exactly 1 device"));
  EXPECT_THAT(BuiltinTechniques().Get("pipeline").Unsupported(run.task, *run.model, 4),
              HasSubstr("at least one block per device"));
  EXPECT_EQ(BuiltinTechniques().Get("fsdp").Unsupported(run.task, *run.model, 3), "");
  // tp splits transformer layers only, by whole heads, over 2 or more devices.
  const Technique& tp = BuiltinTechniques().Get("tp");
  EXPECT_THAT(tp.Unsupported(run.task, *run.model, 2), HasSubstr("no transformer layers"));
  InProcess vit(Task(kVit));
  EXPECT_EQ(tp.Unsupported(vit.task, *vit.model, 2), "");
  EXPECT_THAT(tp.Unsupported(vit.task, *vit.model, 1), HasSubstr("at least 2"));
  EXPECT_THAT(tp.Unsupported(vit.task, *vit.model, 3), HasSubstr("do not split evenly"));
}

TEST(Checkpoints, ResumeInProcessEqualsAnUninterruptedRun) {
  saturn::testing::TestDir dir("checkpoint_in_process");
  const Technique& single = BuiltinTechniques().Get("single");
  InProcess whole(Task(kVit));
  std::vector<double> expected = Train(single, whole, {}, 6);

  InProcess first(Task(kVit));
  std::unique_ptr<Trainer> trainer = single.MakeTrainer(first.ctx, {});
  for (int step = 0; step < 3; ++step)
    trainer->Step(step);
  CheckpointWriter out(dir.Path(""), 3, *first.comm);
  trainer->Save(out);
  CheckpointMeta meta;
  meta.step = 3;
  meta.blocks = first.model->NumBlocks();
  std::string path = out.Commit(meta);
  EXPECT_TRUE(std::filesystem::exists(path + "/meta.json"));
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));

  InProcess second(Task(kVit));
  std::unique_ptr<Trainer> resumed = single.MakeTrainer(second.ctx, {});
  CheckpointReader in(path);
  EXPECT_EQ(in.Meta().step, 3);
  resumed->Load(in);
  for (int step = 3; step < 6; ++step) {
    EXPECT_NEAR(resumed->Step(step), expected[step], 1e-6) << "step " << step;
  }
  EXPECT_THAT(test::ErrorOf([&] { CheckpointReader(dir.Path("checkpoint-4")); }),
              HasSubstr("checkpoint-4: no checkpoint here (meta.json is missing)"));
}

}  // namespace
}  // namespace saturn::engine
