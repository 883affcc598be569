#include "contracts/workload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "common/error.h"
#include "common/fs.h"
#include "tests/testing/test_dir.h"

namespace saturn {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace fs = std::filesystem;

class WorkloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::OwnTestDir("workload_test");
    fs::create_directories(dir_ + "/data");
    WriteFileAtomic(dir_ + "/data/corpus.txt", std::string(1601, 'a'));
    WriteFileAtomic(dir_ + "/cluster.yaml", "nodes:\n  - {name: n0, gpus: 4}\n");
  }
  Workload Parse(const std::string& tasks, const std::string& cluster = "cluster.yaml") {
    return ParseWorkload("cluster: " + cluster + "\ntasks:\n" + tasks, "w.yaml", dir_);
  }
  std::string ErrorOf(const std::string& tasks) {
    try {
      Parse(tasks);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  std::string dir_;
};

const std::string kTask =
    "  - name: gpt\n"
    "    model: {type: gpt, layers: 2, d_model: 32, heads: 2, seq_len: 16}\n"
    "    data: {type: text, path: data/corpus.txt}\n"
    "    batch_size: 8\n"
    "    optimizer: {type: adamw, lr: 1.0e-4}\n";

TEST_F(WorkloadTest, ReadsATaskAndItsWorkerSpec) {
  Workload w = Parse(kTask + "    steps: 50\n");
  ASSERT_EQ(w.tasks.size(), 1u);
  const WorkloadTask& t = w.tasks[0];
  EXPECT_EQ(t.steps, 50);
  EXPECT_EQ(t.spec["model"]["layers"], 2);
  EXPECT_EQ(t.spec["optimizer"]["lr"], 1.0e-4);
  EXPECT_EQ(t.spec["seed"], 0);
  EXPECT_TRUE(fs::path(t.spec["data"]["path"].get<std::string>()).is_absolute());
  EXPECT_EQ(w.cluster.TotalGpus(), 4);
}

TEST_F(WorkloadTest, EpochsBecomeSteps) {
  // 1601 bytes -> (1601 - 1) / 16 = 100 samples; batch 8 -> 13 batches per epoch.
  Workload w = Parse(kTask + "    epochs: 3\n");
  EXPECT_EQ(w.tasks[0].steps, 39);
}

TEST_F(WorkloadTest, SweepsExpandWithReadableNamesAndShareTrialKeys) {
  Workload w = Parse(
      kTask + "    steps: 10\n    sweep: {optimizer.lr: [1.0e-5, 3.0e-3], batch_size: [8, 16]}\n");
  ASSERT_EQ(w.tasks.size(), 4u);
  EXPECT_EQ(w.tasks[0].name, "gpt-lr1.0e-5-bs8");
  EXPECT_EQ(w.tasks[3].name, "gpt-lr3.0e-3-bs16");
  EXPECT_EQ(w.tasks[3].spec["batch_size"], 16);
  EXPECT_EQ(w.tasks[3].spec["optimizer"]["lr"], 3.0e-3);
  EXPECT_EQ(w.tasks[0].trial_key, w.tasks[2].trial_key);  // lr only
  EXPECT_NE(w.tasks[0].trial_key, w.tasks[1].trial_key);  // batch size differs
}

// A sweep's variants are copies without lines: their errors point at the
// sweep (line 9 here), and their tasks at the task as written (line 3).
TEST_F(WorkloadTest, ErrorsOfSweptTasksNameTheSweepsLine) {
  EXPECT_EQ(ErrorOf(kTask + "    steps: 10\n    sweep: {optimizer.foo: [0.1, 0.2]}\n"),
            "w.yaml:9: tasks[0] (sweep gpt-foo0.1).optimizer.foo: unknown field; expected one "
            "of: type, lr, weight_decay, schedule, clip_grad_norm");
  EXPECT_EQ(ErrorOf(kTask + "    steps: 10\n    sweep: {batch_size: [8, 8]}\n"),
            "w.yaml:9: tasks[0].sweep: makes the duplicate task name 'gpt-bs8' (also at line 3)");
  EXPECT_THAT(ErrorOf(kTask + "    steps: 10\n    sweep: {batch_size: [8, 0]}\n"),
              HasSubstr("w.yaml:9: tasks[0] (sweep gpt-bs0).batch_size"));
  Workload w = Parse(kTask + "    steps: 10\n    sweep: {batch_size: [8, 16]}\n");
  EXPECT_EQ(w.tasks[1].line, 3);
}

TEST_F(WorkloadTest, StepsAndEpochsAreNotPartOfTheTrialKey) {
  Workload a = Parse(kTask + "    steps: 10\n");
  Workload b = Parse(kTask + "    steps: 400\n");
  Workload c = Parse(kTask + "    epochs: 3\n");
  EXPECT_EQ(a.tasks[0].trial_key, b.tasks[0].trial_key);
  EXPECT_EQ(a.tasks[0].trial_key, c.tasks[0].trial_key);
  EXPECT_EQ(b.tasks[0].spec["steps"], 400);  // the worker still gets them
}

TEST_F(WorkloadTest, EvalReachesTheWorkerAndOnlyItsBatchesChangeTrials) {
  Workload w = Parse(kTask + "    steps: 10\n    eval: {every: 5, batches: 3}\n");
  EXPECT_EQ(w.tasks[0].spec["eval"], (nlohmann::json{{"every", 5}, {"batches", 3}}));
  Workload often = Parse(kTask + "    steps: 10\n    eval: {every: 2, batches: 3}\n");
  Workload more = Parse(kTask + "    steps: 10\n    eval: {every: 5, batches: 6}\n");
  Workload none = Parse(kTask + "    steps: 10\n");
  EXPECT_EQ(w.tasks[0].trial_key, often.tasks[0].trial_key);
  EXPECT_NE(w.tasks[0].trial_key, more.tasks[0].trial_key);
  EXPECT_NE(w.tasks[0].trial_key, none.tasks[0].trial_key);
  EXPECT_EQ(Parse(kTask + "    steps: 10\n    eval: {every: 5}\n").tasks[0].spec["eval"]["batches"],
            1);
  // Epochs count the samples a task trains on: 1601 bytes less the held-out
  // tenth (160) -> (1441 - 1) / 16 = 90 samples, 12 batches of 8.
  EXPECT_EQ(Parse(kTask + "    epochs: 1\n    eval: {every: 5}\n").tasks[0].steps, 12);
  EXPECT_THAT(ErrorOf(kTask + "    steps: 10\n    eval: {every: 0}\n"),
              HasSubstr("tasks[0].eval.every"));
  EXPECT_THAT(ErrorOf(kTask + "    steps: 10\n    eval: {each: 5}\n"), HasSubstr("tasks[0].eval"));
}

TEST_F(WorkloadTest, TokensAndTensorsDataMayNameAHeldOutFile) {
  WriteFileAtomic(dir_ + "/data/train.bin", std::string(400, '\0'));
  WriteFileAtomic(dir_ + "/data/val.bin", std::string(100, '\0'));
  WriteFileAtomic(dir_ + "/model.pt", "x");
  std::string task =
      "  - name: lm\n    model: {type: torchscript, path: model.pt, loss: cross_entropy}\n"
      "    data: {type: tokens, path: data/train.bin, eval_path: data/val.bin, seq_len: 8, "
      "vocab: 16}\n    batch_size: 4\n    optimizer: {type: adam, lr: 1.0e-3}\n"
      "    steps: 10\n    eval: {every: 5}\n";
  Workload w = Parse(task);
  EXPECT_EQ(w.tasks[0].spec["data"]["eval_path"],
            fs::absolute(dir_ + "/data/val.bin").lexically_normal().string());
  std::string missing = task;
  missing.replace(missing.find("data/val.bin"), 12, "data/nope.bin");
  EXPECT_THAT(ErrorOf(missing), HasSubstr("tasks[0].data.eval_path: no such file"));
}

const std::string kGpt2 =
    "  - name: ft\n"
    "    data: {type: synthetic}\n"
    "    batch_size: 8\n"
    "    optimizer: {type: adamw, lr: 1.0e-4}\n"
    "    steps: 10\n";

TEST_F(WorkloadTest, Gpt2IsWrittenOutInFullFromItsPreset) {
  Workload w = Parse(kGpt2 + "    model: {type: gpt2, preset: xl, seq_len: 256}\n");
  const nlohmann::json& m = w.tasks[0].spec["model"];
  EXPECT_EQ(m["layers"], 48);
  EXPECT_EQ(m["d_model"], 1600);
  EXPECT_EQ(m["heads"], 25);
  EXPECT_EQ(m["vocab"], 50257);
  EXPECT_EQ(m["positions"], 1024);
  EXPECT_EQ(m["seq_len"], 256);
  Workload small = Parse(kGpt2 + "    model: {type: gpt2}\n");
  EXPECT_EQ(small.tasks[0].spec["model"]["layers"], 12);
  EXPECT_EQ(small.tasks[0].spec["model"]["seq_len"], 1024);

  EXPECT_THAT(ErrorOf(kGpt2 + "    model: {type: gpt2, preset: huge}\n"),
              HasSubstr("tasks[0].model.preset: expected small, medium, large or xl, got 'huge'"));
  EXPECT_THAT(ErrorOf(kGpt2 + "    model: {type: gpt2, seq_len: 2048}\n"),
              HasSubstr("tasks[0].model.seq_len: at most positions (1024"));
  EXPECT_THAT(ErrorOf(kGpt2 + "    model: {type: gpt2, heads: 7}\n"),
              HasSubstr("tasks[0].model.heads: must divide d_model (768)"));
  EXPECT_THAT(ErrorOf("  - name: ft\n    model: {type: gpt2}\n"
                      "    data: {type: text, path: data/corpus.txt}\n"),
              HasSubstr("gpt2 takes token ids: add tokenizer: DIR"));
}

TEST_F(WorkloadTest, InitAndLoraReachTheWorkerAndInitIsNotPartOfTheTrialKey) {
  fs::create_directories(dir_ + "/gpt2");
  WriteFileAtomic(dir_ + "/gpt2/model.safetensors", "x");
  std::string task = kGpt2 + "    model: {type: gpt2, init: gpt2}\n";
  Workload w = Parse(task + "    finetune: {lora: {rank: 8, alpha: 16, targets: [attn, mlp]}}\n");
  const nlohmann::json& spec = w.tasks[0].spec;
  EXPECT_EQ(spec["model"]["init"], fs::absolute(dir_ + "/gpt2").lexically_normal().string());
  EXPECT_EQ(spec["finetune"]["lora"]["rank"], 8);
  EXPECT_EQ(spec["finetune"]["lora"]["alpha"], 16.0);
  EXPECT_EQ(spec["finetune"]["lora"]["targets"], nlohmann::json::array({"attn", "mlp"}));
  EXPECT_EQ(w.tasks[0].trial_key.find("init"), std::string::npos);
  // A LoRA rank changes memory and speed: another trial.
  Workload swept = Parse(task +
                         "    finetune: {lora: {rank: 4}}\n    sweep: "
                         "{finetune.lora.rank: [4, 8]}\n");
  ASSERT_EQ(swept.tasks.size(), 2u);
  EXPECT_NE(swept.tasks[0].trial_key, swept.tasks[1].trial_key);

  // A Hugging Face folder's config.json gives the sizes; fields override it.
  fs::create_directories(dir_ + "/medium");
  WriteFileAtomic(dir_ + "/medium/pytorch_model.bin", "x");
  WriteFileAtomic(dir_ + "/medium/config.json",
                  R"({"n_layer": 24, "n_embd": 1024, "n_head": 16, "n_positions": 1024,
                      "vocab_size": 50257, "model_type": "gpt2"})");
  Workload medium = Parse(kGpt2 + "    model: {type: gpt2, init: medium, seq_len: 128}\n");
  EXPECT_EQ(medium.tasks[0].spec["model"]["layers"], 24);
  EXPECT_EQ(medium.tasks[0].spec["model"]["d_model"], 1024);
  EXPECT_EQ(medium.tasks[0].spec["model"]["heads"], 16);
  EXPECT_EQ(medium.tasks[0].spec["model"]["seq_len"], 128);
  // A field or preset that contradicts it is refused before anything runs.
  EXPECT_THAT(
      ErrorOf(kGpt2 + "    model: {type: gpt2, init: medium/pytorch_model.bin, layers: 6}\n"),
      HasSubstr("tasks[0].model.layers: layers 6 does not fit the init checkpoint, whose "));
  EXPECT_THAT(
      ErrorOf(kGpt2 + "    model: {type: gpt2, init: medium/pytorch_model.bin, layers: 6}\n"),
      HasSubstr("/medium/config.json says n_layer 24 (leave the field out"));
  EXPECT_THAT(ErrorOf(kGpt2 + "    model: {type: gpt2, init: medium, preset: small}\n"),
              HasSubstr("tasks[0].model.preset: layers 12 does not fit"));
  // A finished task's folder: the task.json beside its model.pt.
  fs::create_directories(dir_ + "/runs/t");
  WriteFileAtomic(dir_ + "/runs/t/model.pt", "x");
  WriteFileAtomic(dir_ + "/runs/t/task.json",
                  R"({"model": {"type": "gpt2", "layers": 4, "d_model": 256, "heads": 4,
                                "vocab": 4096, "positions": 64, "seq_len": 32}})");
  Workload again = Parse(kGpt2 + "    model: {type: gpt2, init: runs/t/model.pt}\n");
  EXPECT_EQ(again.tasks[0].spec["model"]["layers"], 4);
  EXPECT_EQ(again.tasks[0].spec["model"]["vocab"], 4096);
  EXPECT_EQ(again.tasks[0].spec["model"]["seq_len"], 64);

  EXPECT_THAT(ErrorOf(kGpt2 + "    model: {type: gpt2, init: nowhere}\n"),
              HasSubstr("tasks[0].model.init: no such file or folder"));
  EXPECT_THAT(ErrorOf(task + "    finetune: {lora: {rank: 0}}\n"),
              HasSubstr("tasks[0].finetune.lora.rank"));
  EXPECT_THAT(ErrorOf(task + "    finetune: {lora: {rank: 2, targets: [ffn]}}\n"),
              HasSubstr("tasks[0].finetune.lora.targets[0]: expected attn or mlp, got 'ffn'"));
  EXPECT_THAT(ErrorOf("  - name: m\n    model: {type: mlp, layers: 2, width: 8}\n"
                      "    data: {type: synthetic}\n    batch_size: 8\n"
                      "    optimizer: {type: sgd, lr: 0.1}\n    steps: 5\n"
                      "    finetune: {lora: {rank: 2}}\n"),
              HasSubstr("LoRA adapts transformer models (gpt, gpt2, llama, vit), not mlp"));
}

TEST_F(WorkloadTest, InlineClusterAndCommandTasks) {
  Workload w = ParseWorkload(
      "cluster: {nodes: [{name: a, gpus: 2}]}\ntasks:\n"
      "  - name: mine\n    type: command\n    steps: 100\n"
      "    commands: {ddp: \"run --gpus={gpus} --from={start_step} --to={steps} "
      "--ckpt={checkpoint_dir}\"}\n",
      "w.yaml", dir_);
  EXPECT_TRUE(w.tasks[0].is_command);
  EXPECT_EQ(w.tasks[0].techniques, (std::vector<std::string>{"ddp"}));
  EXPECT_EQ(w.tasks[0].steps, 100);
}

TEST_F(WorkloadTest, AClusterFromTheSlurmAllocationIsFilledInWhenKnown) {
  Workload w =
      Parse(kTask + "    steps: 5\n    gpu_range: [2, 4]\n", "{from: slurm, gpu_memory_gib: 80}");
  ASSERT_TRUE(w.from_allocation.has_value());
  EXPECT_TRUE(w.cluster.nodes.empty());
  // Nodes in Slurm's order with the GPUs the job holds; one without any is left out.
  UseAllocation(w, {{"gpu-a", 4}, {"login", 0}, {"gpu-b", 2}});
  ASSERT_EQ(w.cluster.nodes.size(), 2u);
  EXPECT_EQ(w.cluster.nodes[0].name, "gpu-a");
  EXPECT_EQ(w.cluster.nodes[0].gpus, 4);
  EXPECT_EQ(w.cluster.nodes[1].name, "gpu-b");
  EXPECT_EQ(w.cluster.nodes[1].gpus, 2);
  EXPECT_EQ(w.cluster.nodes[1].device, "cuda");
  EXPECT_EQ(w.cluster.nodes[1].gpu_memory_gib, 80.0);

  // CPU device slots on nodes without GPUs: `gpus` says how many.
  Workload cpu =
      Parse(kTask + "    steps: 5\n", "{from: slurm, gpus: 2, device: cpu, threads_per_gpu: 3}");
  UseAllocation(cpu, {{"c1", 0}, {"c2", 0}});
  ASSERT_EQ(cpu.cluster.nodes.size(), 2u);
  EXPECT_EQ(cpu.cluster.nodes[1].gpus, 2);
  EXPECT_EQ(cpu.cluster.nodes[1].threads_per_gpu, 3);

  // Checked once known: a task needing more GPUs than any allocated node.
  Workload big = Parse(kTask + "    steps: 5\n    gpu_range: [4, 4]\n", "{from: slurm}");
  try {
    UseAllocation(big, {{"gpu-b", 2}});
    FAIL() << "a task larger than every node was accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tasks.gpt.gpu_range"));
    EXPECT_THAT(e.what(), HasSubstr("largest node has 2"));
  }
  try {
    UseAllocation(big, {{"login", 0}});
    FAIL() << "an allocation without GPUs was accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("holds no GPU"));
  }
  try {
    Parse(kTask + "    steps: 5\n", "{from: kubernetes}");
    FAIL() << "an unknown cluster source was accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("cluster.from"));
    EXPECT_THAT(e.what(), HasSubstr("expected slurm"));
  }
}

TEST_F(WorkloadTest, PrecisionReachesTheWorkerAndItsOwnTrials) {
  Workload fp32 = Parse(kTask + "    steps: 10\n");
  Workload bf16 = Parse(kTask + "    steps: 10\n    precision: bf16\n");
  EXPECT_FALSE(fp32.tasks[0].spec.contains("precision"));  // fp32 trials keep their cache keys
  EXPECT_EQ(bf16.tasks[0].spec["precision"], "bf16");
  EXPECT_NE(fp32.tasks[0].trial_key, bf16.tasks[0].trial_key);
  EXPECT_THAT(ErrorOf(kTask + "    steps: 10\n    precision: half\n"),
              HasSubstr("tasks[0].precision: expected fp32 or bf16, got 'half'"));
}

TEST_F(WorkloadTest, EveryBadFieldGetsOneClearMessage) {
  EXPECT_THAT(ErrorOf("  - name: x\n    model: {type: transformer}\n"),
              HasSubstr("w.yaml:4: tasks[0].model.type: unknown model type 'transformer'"));
  EXPECT_THAT(ErrorOf(kTask + "    steps: 10\n" + "    gpu_range: [2, 1]\n"),
              HasSubstr("tasks[0].gpu_range: expected min <= max"));
  std::string missing = kTask;
  missing.replace(missing.find("data/corpus.txt"), 15, "data/none.txt");
  EXPECT_THAT(ErrorOf(missing + "    steps: 10\n"), HasSubstr("tasks[0].data.path: no such file"));
  std::string zero_lr = kTask;
  zero_lr.replace(zero_lr.find("lr: 1.0e-4"), 10, "lr: 0");
  EXPECT_THAT(ErrorOf(zero_lr + "    steps: 10\n"),
              HasSubstr("tasks[0].optimizer.lr: expected a number > 0, got '0'"));
  EXPECT_THAT(ErrorOf(kTask + "    steps: 10\n    techniques: [ddp]\n    gpu_range: [16, 16]\n"),
              HasSubstr("gpu_range: asks for at least 16 GPUs but the largest node has 4"));
  // Technique names and batch splits are checked against the worker's
  // catalogue (tests/launch/techniques_test.cc).
  EXPECT_THAT(ErrorOf(kTask + "    steps: 10\n    epochs: 2\n"),
              HasSubstr("give steps or epochs, not both"));
  EXPECT_THAT(ErrorOf(kTask), HasSubstr("missing: give steps or epochs"));
  EXPECT_THAT(ErrorOf(kTask + "    steps: 10\n    batchsize: 4\n"),
              HasSubstr("tasks[0].batchsize: unknown field"));
  EXPECT_THAT(ErrorOf(kTask + "    steps: 10\n" + kTask + "    steps: 10\n"),
              HasSubstr("duplicate task name 'gpt'"));
  EXPECT_THAT(
      ErrorOf("  - name: c\n    type: command\n    steps: 5\n    commands: {ddp: \"x {gpu}\"}\n"),
      HasSubstr("unknown placeholder {gpu}"));
  EXPECT_THAT(ErrorOf("  - name: bad/name\n"), HasSubstr("it names files"));
  std::string heads = kTask;
  heads.replace(heads.find("heads: 2"), 8, "heads: 5");
  EXPECT_THAT(ErrorOf(heads + "    steps: 10\n"),
              HasSubstr("model.heads: must divide d_model (32)"));
  EXPECT_THAT(ErrorOf("  - name: s\n    model: {type: mlp, layers: 2, width: 8}\n"
                      "    data: {type: synthetic}\n    batch_size: 4\n"
                      "    optimizer: {type: sgd, lr: 0.1}\n    epochs: 2\n"),
              HasSubstr("cannot count the samples of this data; give steps, or data.size"));
  WriteFileAtomic(dir_ + "/model.pt", "not checked here");
  const std::string ts =
      "  - name: ts\n    model: {type: torchscript, path: model.pt, loss: mse}\n";
  EXPECT_THAT(ErrorOf(ts + "    data: {type: text, path: data/corpus.txt}\n"),
              HasSubstr("data.type: a torchscript model takes tokens or tensors data"));
  EXPECT_THAT(ErrorOf(ts + "    data: {type: synthetic}\n"),
              HasSubstr("data.type: synthetic data is shaped for the zoo's models"));
  EXPECT_THAT(ErrorOf("  - name: ts\n    model: {type: torchscript, path: model.pt, loss: l1}\n"),
              HasSubstr("model.loss: expected cross_entropy or mse, got 'l1'"));
  try {
    Parse(kTask + "    steps: 10\n", "missing-cluster.yaml");
    FAIL();
  } catch (const InputError& e) {
    // The workload's file, line and field, as every other input error.
    EXPECT_THAT(e.what(), HasSubstr("w.yaml:1: cluster: no such cluster file: "));
    EXPECT_THAT(e.what(),
                HasSubstr("missing-cluster.yaml (a path relative to the workload's folder"));
  }
}

// An unknown name in a workload gets the closest valid one, whatever its
// place: a model or data type, an optimizer, a field, a placeholder.
TEST_F(WorkloadTest, AnUnknownNameSuggestsTheClosestValidOne) {
  std::string mlp = kTask;
  mlp.replace(mlp.find("{type: gpt, layers: 2, d_model: 32, heads: 2, seq_len: 16}"), 58,
              "{type: MLP, layers: 3, width: 8}");
  EXPECT_THAT(ErrorOf(mlp + "    steps: 10\n"),
              HasSubstr("w.yaml:4: tasks[0].model.type: unknown model type 'MLP'; expected gpt, "
                        "gpt2, llama, vit, resnet, mlp or torchscript; did you mean 'mlp'?"));
  EXPECT_THAT(
      ErrorOf(kTask + "    steps: 10\n    gpu_rnage: [1, 2]\n"),
      HasSubstr("tasks[0].gpu_rnage: unknown field; expected one of: name, type, model, "
                "data, batch_size, optimizer, steps, epochs, seed, sweep, search, techniques, "
                "gpu_range, precision, eval, finetune; did you mean 'gpu_range'?"));
  EXPECT_THAT(ErrorOf(kTask + "    steps: 10\n    batchsize: 4\n"),
              HasSubstr("did you mean 'batch_size'?"));
  std::string adam = kTask;
  adam.replace(adam.find("type: adamw"), 11, "type: Adam_W");
  EXPECT_THAT(ErrorOf(adam + "    steps: 10\n"),
              HasSubstr("unknown optimizer 'Adam_W'; expected sgd, adam or adamw; did you mean "
                        "'adamw'?"));
  EXPECT_THAT(
      ErrorOf("  - name: c\n    type: command\n    steps: 5\n    commands: {ddp: \"x {gpu}\"}\n"),
      HasSubstr("unknown placeholder {gpu}; expected {gpus}, {gpu_ids}, {steps}, {start_step}, "
                "{checkpoint_dir} or {node}; did you mean 'gpus'?"));
  // Nothing close: the list alone, no guess.
  EXPECT_THAT(ErrorOf(kTask + "    steps: 10\n    colour: red\n"), Not(HasSubstr("did you mean")));
}

// A command template may say which GPU counts it serves; the string form
// serves every count.
TEST_F(WorkloadTest, ACommandTemplateMaySayWhichGpuCountsItServes) {
  const std::string task =
      "  - name: py\n    type: command\n    steps: 10\n    commands:\n"
      "      single: {run: \"exec python3 train.py\", gpus: [1]}\n"
      "      ddp: {run: \"launch --n={gpus}\", gpus: [4, 2]}\n"
      "      fsdp: \"launch --fsdp --n={gpus}\"\n";
  Workload w = Parse(task);
  const WorkloadTask& t = w.tasks[0];
  EXPECT_EQ(t.techniques, (std::vector<std::string>{"single", "ddp", "fsdp"}));
  EXPECT_EQ(t.command_gpus.at("single"), std::vector<int>{1});
  EXPECT_EQ(t.command_gpus.at("ddp"), (std::vector<int>{2, 4}));
  EXPECT_EQ(t.command_gpus.count("fsdp"), 0u);
  // The worker's side sees templates only; the counts change no trial.
  EXPECT_EQ(t.spec["commands"]["single"], "exec python3 train.py");
  EXPECT_EQ(t.spec["commands"]["fsdp"], "launch --fsdp --n={gpus}");
  std::string other = task;
  other.replace(other.find("gpus: [4, 2]"), 12, "gpus: [2]");
  EXPECT_EQ(Parse(other).tasks[0].trial_key, t.trial_key);

  const std::string head = "  - name: py\n    type: command\n    steps: 10\n    commands:\n";
  EXPECT_THAT(ErrorOf(head + "      single: {run: \"x\", gpu: [1]}\n"),
              HasSubstr("w.yaml:7: tasks[0].commands.single.gpu: unknown field; expected one of: "
                        "run, gpus; did you mean 'gpus'?"));
  EXPECT_THAT(ErrorOf(head + "      single: {gpus: [1]}\n"),
              HasSubstr("tasks[0].commands.single.run: missing required field"));
  EXPECT_THAT(ErrorOf(head + "      single: {run: \"x\", gpus: []}\n"),
              HasSubstr("tasks[0].commands.single.gpus: expected the GPU counts this template "
                        "serves, e.g. [1] or [2, 4]"));
  EXPECT_THAT(ErrorOf(head + "      single: {run: \"x\", gpus: [0]}\n"),
              HasSubstr("tasks[0].commands.single.gpus[0]: expected an integer >= 1, got '0'"));
  EXPECT_THAT(ErrorOf(head + "      ddp: {run: \"x\", gpus: [2, 2]}\n"),
              HasSubstr("tasks[0].commands.ddp.gpus[1]: 2 is listed twice"));
  EXPECT_THAT(ErrorOf(head + "      ddp: [\"x\"]\n"),
              HasSubstr("tasks[0].commands.ddp: expected a command template, or {run: TEMPLATE, "
                        "gpus: [COUNTS]}"));
  EXPECT_THAT(ErrorOf(head + "      single: {run: \"x {gpu}\", gpus: 1}\n"),
              HasSubstr("tasks[0].commands.single: unknown placeholder {gpu}"));
  // Counts the task can never use leave it nothing to profile: said now.
  EXPECT_THAT(ErrorOf(head + "      ddp: {run: \"x\", gpus: [8]}\n"),
              HasSubstr("w.yaml:7: tasks[0].commands: its templates serve 8 GPUs, but this task "
                        "may use 1 to 4 (gpu_range and the largest node): no configuration to "
                        "profile"));
  EXPECT_THAT(ErrorOf(head + "      ddp: {run: \"x\", gpus: [2]}\n    gpu_range: [3, 4]\n"),
              HasSubstr("its templates serve 2 GPUs, but this task may use 3 to 4"));
}

}  // namespace
}  // namespace saturn
