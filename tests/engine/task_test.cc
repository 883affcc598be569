// The task reader: Contract 5 fields, defaults, and one clear error per
// problem naming the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/error.h"
#include "engine/task.h"
#include "tests/testing/error_of.h"

namespace saturn::engine {
namespace {

using ::testing::HasSubstr;

nlohmann::json Valid() {
  return nlohmann::json::parse(R"({
    "name": "gpt-small",
    "model": {"type": "gpt", "layers": 4, "d_model": 256, "heads": 4, "seq_len": 128},
    "data": {"type": "text", "path": "/data/corpus.txt"},
    "batch_size": 16,
    "optimizer": {"type": "adamw", "lr": 1.0e-4},
    "steps": 400
  })");
}

std::string ErrorOf(const nlohmann::json& task) {
  try {
    ParseTask(task, "task.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Task, ReadsContractFieldsWithDefaults) {
  TaskSpec task = ParseTask(Valid(), "task.json");
  EXPECT_EQ(task.name, "gpt-small");
  EXPECT_EQ(task.model_type, "gpt");
  EXPECT_EQ(task.model["d_model"], 256);
  EXPECT_EQ(task.data.type, "text");
  EXPECT_EQ(task.data.path, "/data/corpus.txt");
  EXPECT_EQ(task.batch_size, 16);
  EXPECT_EQ(task.steps, 400);
  EXPECT_EQ(task.seed, 0u);
  EXPECT_EQ(task.optimizer.type, "adamw");
  EXPECT_DOUBLE_EQ(task.optimizer.lr, 1e-4);
  EXPECT_DOUBLE_EQ(task.optimizer.weight_decay, 0.01);
  EXPECT_DOUBLE_EQ(task.optimizer.momentum, 0.0);
}

TEST(Task, SyntheticSeedDefaultsToTheTaskSeed) {
  nlohmann::json json = Valid();
  json["seed"] = 9;
  json["data"] = {{"type", "synthetic"}};
  EXPECT_EQ(ParseTask(json, "t").data.seed, 9u);
  json["data"]["seed"] = 3;
  EXPECT_EQ(ParseTask(json, "t").data.seed, 3u);
}

TEST(Task, EvalAndAHeldOutFile) {
  EXPECT_EQ(ParseTask(Valid(), "task.json").eval.every, 0);  // no evaluation
  nlohmann::json json = Valid();
  json["eval"] = {{"every", 50}, {"batches", 3}};
  TaskSpec task = ParseTask(json, "task.json");
  EXPECT_EQ(task.eval.every, 50);
  EXPECT_EQ(task.eval.batches, 3);
  json["eval"] = {{"every", 50}};
  EXPECT_EQ(ParseTask(json, "task.json").eval.batches, 1);
  json["eval"] = {{"every", 0}};
  EXPECT_THAT(ErrorOf(json), HasSubstr("eval.every: expected an integer >= 1"));
  json = Valid();
  json["data"]["eval_path"] = "/data/val.txt";  // text data has no separate file
  EXPECT_THAT(ErrorOf(json), HasSubstr("data.eval_path: only tokens and tensors"));
  json["data"] = {{"type", "tensors"}, {"path", "/d/train.pt"}, {"eval_path", "/d/val.pt"}};
  EXPECT_EQ(ParseTask(json, "task.json").data.eval_path, "/d/val.pt");
}

TEST(Task, OptimizerFields) {
  nlohmann::json json = Valid();
  json["optimizer"] = {{"type", "sgd"}, {"lr", 0.1}, {"momentum", 0.9}};
  TaskSpec task = ParseTask(json, "t");
  EXPECT_EQ(task.optimizer.type, "sgd");
  EXPECT_DOUBLE_EQ(task.optimizer.momentum, 0.9);
  json["optimizer"] = {{"type", "adamw"}, {"lr", 0.1}, {"weight_decay", 0.2}};
  EXPECT_DOUBLE_EQ(ParseTask(json, "t").optimizer.weight_decay, 0.2);
}

TEST(Task, ErrorsNameTheFileAndField) {
  nlohmann::json json = Valid();
  json["batch_size"] = 0;
  EXPECT_EQ(ErrorOf(json), "task.json: batch_size: expected an integer >= 1, got '0'");

  json = Valid();
  json["optimizer"]["type"] = "lamb";
  EXPECT_THAT(ErrorOf(json), HasSubstr("optimizer.type: expected one of sgd, adam, adamw"));

  json = Valid();
  json["optimizer"].erase("lr");
  EXPECT_EQ(ErrorOf(json), "task.json: optimizer.lr: missing (required)");

  json = Valid();
  json["optimizer"]["lr"] = -1;
  EXPECT_THAT(ErrorOf(json), HasSubstr("optimizer.lr: expected a number > 0"));

  json = Valid();
  json["data"] = {{"type", "text"}};
  EXPECT_EQ(ErrorOf(json), "task.json: data.path: missing (required)");

  json = Valid();
  json["data"]["type"] = "images";
  EXPECT_THAT(ErrorOf(json),
              HasSubstr("data.type: expected text, synthetic, tokens, tensors or table"));

  json = Valid();
  json["data"] = {{"type", "tokens"}, {"path", "t.bin"}, {"seq_len", 8}};
  EXPECT_EQ(ErrorOf(json), "task.json: data.vocab: missing (required)");

  json["data"]["vocab"] = 3000000000LL;
  EXPECT_THAT(ErrorOf(json), HasSubstr("data.vocab: at most 2147483647"));
  json["data"]["vocab"] = 128256;  // past uint16: token files hold uint32 ids
  EXPECT_EQ(ErrorOf(json), "no error");

  json = Valid();
  json["data"] = {{"type", "tensors"}};
  EXPECT_EQ(ErrorOf(json), "task.json: data.path: missing (required)");

  json = Valid();
  json["model"] = "gpt";
  EXPECT_THAT(ErrorOf(json), HasSubstr("model: expected an object"));

  json = Valid();
  json["seed"] = 1.5;
  EXPECT_THAT(ErrorOf(json), HasSubstr("seed: expected an integer >= 0"));

  EXPECT_THAT(ErrorOf(nlohmann::json::array()), HasSubstr("expected an object"));

  json = Valid();
  json["precision"] = "fp16";
  EXPECT_EQ(ErrorOf(json), "task.json: precision: expected fp32 or bf16, got 'fp16'");
  json["precision"] = "bf16";
  EXPECT_EQ(ParseTask(json, "task.json").precision, "bf16");
  EXPECT_EQ(ParseTask(Valid(), "task.json").precision, "fp32");
}

// LoRA targets: attn and mlp for every family; llama also PEFT's module
// names, each answering for itself and for the shorthand that covers it.
TEST(Task, LoraTargetsTakePeftNamesForLlama) {
  nlohmann::json json = Valid();
  json["finetune"] = {{"lora", {{"rank", 4}, {"targets", {"attn"}}}}};
  LoraSpec attn = ParseTask(json, "t").lora;
  for (const char* part : {"attn", "q_proj", "k_proj", "v_proj", "o_proj"})
    EXPECT_TRUE(attn.Targets(part)) << part;
  for (const char* part : {"mlp", "gate_proj", "up_proj", "down_proj", "lm_head"})
    EXPECT_FALSE(attn.Targets(part)) << part;

  LoraSpec mlp;
  mlp.targets = {"mlp"};
  for (const char* part : {"mlp", "gate_proj", "up_proj", "down_proj"})
    EXPECT_TRUE(mlp.Targets(part)) << part;
  EXPECT_FALSE(mlp.Targets("q_proj"));

  // A module name covers itself only: not its shorthand, not its siblings.
  LoraSpec qv;
  qv.targets = {"q_proj", "v_proj"};
  EXPECT_TRUE(qv.Targets("q_proj"));
  EXPECT_TRUE(qv.Targets("v_proj"));
  EXPECT_FALSE(qv.Targets("k_proj"));
  EXPECT_FALSE(qv.Targets("o_proj"));
  EXPECT_FALSE(qv.Targets("attn"));
  EXPECT_FALSE(qv.Targets("mlp"));

  json["finetune"]["lora"]["targets"] = {"q_proj"};
  EXPECT_THAT(ErrorOf(json), HasSubstr("finetune.lora.targets: expected attn or mlp, got "));
  json["model"] = {{"type", "llama"}};
  json["finetune"]["lora"]["targets"] = {"q_proj", "down_proj", "q_proj", "mlp"};
  EXPECT_EQ(ParseTask(json, "t").lora.targets,
            (std::vector<std::string>{"q_proj", "down_proj", "mlp"}));
  json["finetune"]["lora"]["targets"] = {"qkv"};
  EXPECT_THAT(ErrorOf(json),
              HasSubstr("expected attn, mlp, q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj "
                        "or down_proj, got '\"qkv\"'"));
}

TEST(Task, JsonFieldsChecksModelFields) {
  nlohmann::json model = {{"layers", 2}, {"width", "wide"}};
  JsonFields fields(model, "task.json", "model");
  EXPECT_EQ(fields.Int("layers", 1), 2);
  EXPECT_THAT(test::ErrorOf([&] { fields.Int("heads", 1); }),
              HasSubstr("task.json: model.heads: missing (required)"));
  EXPECT_EQ(fields.IntOr("heads", 4, 1), 4);
  try {
    fields.Int("width", 1);
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "task.json: model.width: expected an integer >= 1, got '\"wide\"'");
  }
}

TEST(Task, LoadTaskRejectsBrokenJson) {
  std::string path = ::testing::TempDir() + "saturn_broken_task.json";
  FILE* f = std::fopen(path.c_str(), "w");
  std::fputs("{\"model\": ", f);
  std::fclose(f);
  EXPECT_THAT(test::ErrorOf([&] { LoadTask(path); }),
              HasSubstr("saturn_broken_task.json: not valid JSON"));
  EXPECT_THAT(test::ErrorOf([&] { LoadTask(path + ".missing"); }),
              HasSubstr("saturn_broken_task.json.missing: cannot read file"));
}

TEST(Task, SchedulesFollowHuggingFacesDefinitions) {
  // Values that follow from the definitions (get_*_schedule_with_warmup):
  // warmup rises from 0, linear falls to 0 at the last step, a cosine is at
  // half height halfway through its decay.
  nlohmann::json json = Valid();
  json["steps"] = 10;
  json["optimizer"]["schedule"] = {{"type", "linear"}, {"warmup_ratio", 0.15}};
  json["optimizer"]["clip_grad_norm"] = 1.0;
  TaskSpec task = ParseTask(json, "task.json");
  const ScheduleSpec& linear = task.optimizer.schedule;
  EXPECT_EQ(linear.warmup_steps, 2);  // ceil(0.15 x 10), as the Trainer rounds
  EXPECT_EQ(linear.total_steps, 10);
  EXPECT_DOUBLE_EQ(task.optimizer.clip_grad_norm, 1.0);
  EXPECT_DOUBLE_EQ(linear.Multiplier(0), 0.0);
  EXPECT_DOUBLE_EQ(linear.Multiplier(1), 0.5);
  EXPECT_DOUBLE_EQ(linear.Multiplier(2), 1.0);
  EXPECT_DOUBLE_EQ(linear.Multiplier(6), 0.5);
  EXPECT_DOUBLE_EQ(linear.Multiplier(10), 0.0);
  ScheduleSpec cosine{"cosine", 2, 10};
  EXPECT_DOUBLE_EQ(cosine.Multiplier(2), 1.0);
  EXPECT_NEAR(cosine.Multiplier(6), 0.5, 1e-12);
  EXPECT_NEAR(cosine.Multiplier(10), 0.0, 1e-12);
  ScheduleSpec constant{"constant", 4, 10};
  EXPECT_DOUBLE_EQ(constant.Multiplier(3), 0.75);
  EXPECT_DOUBLE_EQ(constant.Multiplier(9), 1.0);
  EXPECT_DOUBLE_EQ(ScheduleSpec{}.Multiplier(0), 1.0);  // no schedule: the lr as given
  json["optimizer"]["schedule"] = {{"type", "step"}};
  EXPECT_THAT(ErrorOf(json), HasSubstr("optimizer.schedule.type: expected one of constant"));
}

}  // namespace
}  // namespace saturn::engine
