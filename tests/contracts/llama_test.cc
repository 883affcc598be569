// `model: {type: llama}` in a workload: presets, a Hugging Face folder's
// config.json (llama, qwen2, mistral), contradictions, rope scaling, LoRA's
// PEFT target names, and vocabularies past uint16. The expected values are
// the published configurations (the models' config.json on the Hugging Face
// hub), written out here independently of common/model_presets.h.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "common/error.h"
#include "common/fs.h"
#include "contracts/workload.h"
#include "tokenizer/token_file.h"

namespace saturn {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

class LlamaWorkloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = (fs::temp_directory_path() / ("saturn-llama-workload-" + std::to_string(getpid())))
               .string();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    WriteFileAtomic(dir_ + "/cluster.yaml", "nodes:\n  - {name: n0, gpus: 4}\n");
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::string Task(const std::string& model, const std::string& extra = "") {
    return "  - name: l\n    model: " + model +
           "\n    data: {type: synthetic}\n    batch_size: 2\n"
           "    optimizer: {type: adamw, lr: 1.0e-4}\n    steps: 10\n" +
           extra;
  }
  json Model(const std::string& model) {
    Workload w = ParseWorkload("cluster: cluster.yaml\ntasks:\n" + Task(model), "w.yaml", dir_);
    return w.tasks.at(0).spec["model"];
  }
  std::string ErrorOf(const std::string& model, const std::string& extra = "") {
    try {
      ParseWorkload("cluster: cluster.yaml\ntasks:\n" + Task(model, extra), "w.yaml", dir_);
    } catch (const InputError& e) {
      return e.what();
    }
    return "no error";
  }
  // A model folder with this config.json (and a weights file).
  void Folder(const std::string& name, const json& config) {
    fs::create_directories(dir_ + "/" + name);
    WriteFileAtomic(dir_ + "/" + name + "/model.safetensors", "x");
    WriteFileAtomic(dir_ + "/" + name + "/config.json", config.dump(2));
  }
  std::string dir_;
};

// meta-llama/Llama-3.2-1B's config.json (the keys that matter).
json Llama32Config() {
  return json::parse(R"({
    "architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "hidden_size": 2048, "intermediate_size": 8192, "num_attention_heads": 32,
    "num_hidden_layers": 16, "num_key_value_heads": 8, "head_dim": 64,
    "max_position_embeddings": 131072, "vocab_size": 128256, "rms_norm_eps": 1e-05,
    "rope_theta": 500000.0, "tie_word_embeddings": true, "attention_bias": false,
    "mlp_bias": false, "hidden_act": "silu", "torch_dtype": "bfloat16",
    "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                     "original_max_position_embeddings": 8192, "rope_type": "llama3"}})");
}

// Qwen/Qwen2.5-0.5B's: no attention_bias key (Qwen2 always has q/k/v biases).
json Qwen25Config() {
  return json::parse(R"({
    "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
    "intermediate_size": 4864, "num_attention_heads": 14, "num_hidden_layers": 24,
    "num_key_value_heads": 2, "max_position_embeddings": 32768, "vocab_size": 151936,
    "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "tie_word_embeddings": true,
    "use_sliding_window": false, "sliding_window": 32768, "max_window_layers": 24,
    "rope_scaling": null})");
}

// mistralai/Mistral-7B-v0.1's: a sliding window of 4096.
json Mistral7bConfig() {
  return json::parse(R"({
    "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "max_position_embeddings": 32768, "vocab_size": 32000,
    "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "sliding_window": 4096,
    "tie_word_embeddings": false})");
}

const std::set<std::string> kWrittenKeys = {
    "type",         "flavor",   "layers",         "d_model",       "heads",   "kv_heads",
    "head_dim",     "ffn",      "vocab",          "positions",     "seq_len", "rope_theta",
    "rope_scaling", "norm_eps", "tie_embeddings", "attention_bias"};

std::set<std::string> KeysOf(const json& j) {
  std::set<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it)
    keys.insert(it.key());
  return keys;
}

TEST_F(LlamaWorkloadTest, PresetsAreThePublishedConfigurationsWrittenOutInFull) {
  json m = Model("{type: llama, preset: llama-3.2-1b}");
  std::set<std::string> with_preset = kWrittenKeys;
  with_preset.insert("preset");
  EXPECT_EQ(KeysOf(m), with_preset);
  EXPECT_EQ(m["type"], "llama");
  EXPECT_EQ(m["preset"], "llama-3.2-1b");
  EXPECT_EQ(m["flavor"], "llama");
  EXPECT_EQ(m["layers"], 16);
  EXPECT_EQ(m["d_model"], 2048);
  EXPECT_EQ(m["heads"], 32);
  EXPECT_EQ(m["kv_heads"], 8);
  EXPECT_EQ(m["head_dim"], 64);
  EXPECT_EQ(m["ffn"], 8192);
  EXPECT_EQ(m["vocab"], 128256);
  EXPECT_EQ(m["positions"], 131072);
  EXPECT_EQ(m["seq_len"], 2048);  // min(positions, 2048)
  EXPECT_DOUBLE_EQ(m["rope_theta"].get<double>(), 500000.0);
  EXPECT_EQ(m["rope_scaling"], json::parse(R"({"type": "llama3", "factor": 32.0,
      "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192})"));
  EXPECT_DOUBLE_EQ(m["norm_eps"].get<double>(), 1e-5);
  EXPECT_EQ(m["tie_embeddings"], true);
  EXPECT_EQ(m["attention_bias"], false);

  // name: layers d_model heads kv_heads head_dim ffn vocab positions theta
  // eps tie flavor bias, from the contract's table.
  struct Row {
    const char* name;
    long layers, d_model, heads, kv, head_dim, ffn, vocab, positions;
    double theta, eps;
    bool tie;
    const char* flavor;
    bool bias;
    long seq_len;
  };
  const Row rows[] = {
      {"smollm-135m", 30, 576, 9, 3, 64, 1536, 49152, 2048, 1e4, 1e-5, true, "llama", false, 2048},
      {"tinyllama-1.1b", 22, 2048, 32, 4, 64, 5632, 32000, 2048, 1e4, 1e-5, false, "llama", false,
       2048},
      {"llama-3.2-3b", 28, 3072, 24, 8, 128, 8192, 128256, 131072, 5e5, 1e-5, true, "llama", false,
       2048},
      {"llama-3.1-8b", 32, 4096, 32, 8, 128, 14336, 128256, 131072, 5e5, 1e-5, false, "llama",
       false, 2048},
      {"qwen2.5-0.5b", 24, 896, 14, 2, 64, 4864, 151936, 32768, 1e6, 1e-6, true, "qwen2", true,
       2048},
      {"qwen2.5-7b", 28, 3584, 28, 4, 128, 18944, 152064, 131072, 1e6, 1e-6, false, "qwen2", true,
       2048},
      {"mistral-7b", 32, 4096, 32, 8, 128, 14336, 32000, 32768, 1e4, 1e-5, false, "mistral", false,
       2048}};
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    json p = Model(std::string("{type: llama, preset: ") + r.name + "}");
    EXPECT_EQ(p["layers"], r.layers);
    EXPECT_EQ(p["d_model"], r.d_model);
    EXPECT_EQ(p["heads"], r.heads);
    EXPECT_EQ(p["kv_heads"], r.kv);
    EXPECT_EQ(p["head_dim"], r.head_dim);
    EXPECT_EQ(p["ffn"], r.ffn);
    EXPECT_EQ(p["vocab"], r.vocab);
    EXPECT_EQ(p["positions"], r.positions);
    EXPECT_DOUBLE_EQ(p["rope_theta"].get<double>(), r.theta);
    EXPECT_DOUBLE_EQ(p["norm_eps"].get<double>(), r.eps);
    EXPECT_EQ(p["tie_embeddings"], r.tie);
    EXPECT_EQ(p["flavor"], r.flavor);
    EXPECT_EQ(p["attention_bias"], r.bias);
    EXPECT_EQ(p["seq_len"], r.seq_len);
  }
  EXPECT_EQ(Model("{type: llama, preset: llama-3.1-8b}")["rope_scaling"]["factor"], 8.0);
  EXPECT_TRUE(Model("{type: llama, preset: qwen2.5-7b}")["rope_scaling"].is_null());
  // Fields override a preset (no checkpoint to contradict).
  json small = Model("{type: llama, preset: smollm-135m, layers: 2, seq_len: 128}");
  EXPECT_EQ(small["layers"], 2);
  EXPECT_EQ(small["seq_len"], 128);
  EXPECT_EQ(small["d_model"], 576);

  EXPECT_THAT(ErrorOf("{type: llama, preset: llama-3.2-1B}"),
              HasSubstr("tasks[0].model.preset: expected one of smollm-135m, tinyllama-1.1b, "
                        "llama-3.2-1b, llama-3.2-3b, llama-3.1-8b, qwen2.5-0.5b, qwen2.5-7b, "
                        "mistral-7b, got 'llama-3.2-1B'; did you mean 'llama-3.2-1b'?"));
  EXPECT_THAT(ErrorOf("{type: llama, preset: mistral-7b, seq_len: 8192}"),
              HasSubstr("tasks[0].model.seq_len: at most the sliding window (4096)"));
  EXPECT_THAT(ErrorOf("{type: llama, preset: tinyllama-1.1b, seq_len: 4096}"),
              HasSubstr("tasks[0].model.seq_len: at most positions (2048"));
}

TEST_F(LlamaWorkloadTest, AHandWrittenModelNeedsItsSizesAndKeepsTheRules) {
  json m = Model(
      "{type: llama, layers: 2, d_model: 64, heads: 4, ffn: 128, vocab: 300000, "
      "seq_len: 32}");
  EXPECT_EQ(KeysOf(m), kWrittenKeys);
  EXPECT_EQ(m["flavor"], "llama");
  EXPECT_EQ(m["kv_heads"], 4);    // heads
  EXPECT_EQ(m["head_dim"], 16);   // d_model / heads
  EXPECT_EQ(m["positions"], 32);  // seq_len
  EXPECT_EQ(m["vocab"], 300000);  // past uint16
  EXPECT_DOUBLE_EQ(m["rope_theta"].get<double>(), 10000.0);
  EXPECT_TRUE(m["rope_scaling"].is_null());
  EXPECT_DOUBLE_EQ(m["norm_eps"].get<double>(), 1e-6);
  EXPECT_EQ(m["tie_embeddings"], false);
  EXPECT_EQ(m["attention_bias"], false);
  json full = Model(
      "{type: llama, layers: 2, d_model: 64, heads: 4, kv_heads: 2, head_dim: 8, "
      "ffn: 96, vocab: 500, positions: 256, rope_theta: 1.0e+6, norm_eps: 1.0e-5, "
      "tie_embeddings: true, attention_bias: true, "
      "rope_scaling: {type: linear, factor: 2}}");
  EXPECT_EQ(full["seq_len"], 256);
  EXPECT_EQ(full["head_dim"], 8);
  EXPECT_EQ(full["rope_scaling"], json::parse(R"({"type": "linear", "factor": 2.0})"));
  EXPECT_EQ(full["attention_bias"], true);

  const std::string sizes = "type: llama, layers: 2, d_model: 64, ffn: 128, vocab: 500, ";
  EXPECT_THAT(ErrorOf("{" + sizes + "seq_len: 8}"),
              HasSubstr("tasks[0].model.heads: missing: give heads, a preset (smollm-135m, "));
  EXPECT_THAT(ErrorOf("{" + sizes + "heads: 4}"), HasSubstr("tasks[0].model.positions: missing"));
  EXPECT_THAT(ErrorOf("{" + sizes + "heads: 4, kv_heads: 3, seq_len: 8}"),
              HasSubstr("tasks[0].model.kv_heads: must divide heads (4), got 3"));
  EXPECT_THAT(ErrorOf("{" + sizes + "heads: 4, head_dim: 7, seq_len: 8}"),
              HasSubstr("tasks[0].model.head_dim: must be even"));
  EXPECT_THAT(ErrorOf("{" + sizes + "heads: 5, seq_len: 8}"),
              HasSubstr("tasks[0].model.heads: must divide d_model (64) unless head_dim is given"));
  EXPECT_THAT(ErrorOf("{type: llama, preset: smollm-135m, vocab: 1}"),
              HasSubstr("tasks[0].model.vocab: expected an integer >= 2"));
  EXPECT_THAT(ErrorOf("{type: llama, preset: smollm-135m, vocab: 2147483648}"),
              HasSubstr("tasks[0].model.vocab: "));
  EXPECT_THAT(ErrorOf("{type: llama, preset: smollm-135m, mlp_bias: true}"),
              HasSubstr("tasks[0].model.mlp_bias: unknown field"));
  EXPECT_THAT(ErrorOf("{type: llama, preset: smollm-135m, rope_scaling: {type: dynamic, "
                      "factor: 2}}"),
              HasSubstr("tasks[0].model.rope_scaling.type: unknown rope scaling 'dynamic'; "
                        "expected llama3 or linear"));
  EXPECT_THAT(ErrorOf("{type: llama, preset: smollm-135m, rope_scaling: {type: linear}}"),
              HasSubstr("tasks[0].model.rope_scaling.factor: missing"));
  EXPECT_EQ(Model("{type: llama, preset: llama-3.2-1b, rope_scaling: none}")["rope_scaling"],
            nullptr);
}

TEST_F(LlamaWorkloadTest, AHuggingFaceFolderGivesEverySize) {
  Folder("llama", Llama32Config());
  json m = Model("{type: llama, init: llama, seq_len: 512}");
  EXPECT_EQ(m["init"], fs::absolute(dir_ + "/llama").lexically_normal().string());
  EXPECT_EQ(m["flavor"], "llama");
  EXPECT_EQ(m["layers"], 16);
  EXPECT_EQ(m["kv_heads"], 8);
  EXPECT_EQ(m["head_dim"], 64);
  EXPECT_EQ(m["vocab"], 128256);
  EXPECT_EQ(m["seq_len"], 512);
  EXPECT_EQ(m["rope_scaling"]["type"], "llama3");
  EXPECT_EQ(m["rope_scaling"]["original_max_position_embeddings"], 8192);
  EXPECT_EQ(m["tie_embeddings"], true);
  // The matching preset and fields agree with it; the file may also be named.
  json same = Model(
      "{type: llama, init: llama/model.safetensors, preset: llama-3.2-1b, "
      "layers: 16, norm_eps: 1.0e-5}");
  EXPECT_EQ(same["preset"], "llama-3.2-1b");
  EXPECT_EQ(same["seq_len"], 2048);

  Folder("qwen", Qwen25Config());
  json q = Model("{type: llama, init: qwen}");
  EXPECT_EQ(q["flavor"], "qwen2");
  EXPECT_EQ(q["attention_bias"], true);
  EXPECT_EQ(q["tie_embeddings"], true);
  EXPECT_EQ(q["kv_heads"], 2);
  EXPECT_EQ(q["head_dim"], 64);  // 896 / 14
  EXPECT_DOUBLE_EQ(q["rope_theta"].get<double>(), 1e6);
  EXPECT_DOUBLE_EQ(q["norm_eps"].get<double>(), 1e-6);
  EXPECT_TRUE(q["rope_scaling"].is_null());
  EXPECT_EQ(q["seq_len"], 2048);
  EXPECT_EQ(Model("{type: llama, init: qwen, preset: qwen2.5-0.5b}")["layers"], 24);

  Folder("mistral", Mistral7bConfig());
  json mi = Model("{type: llama, init: mistral, seq_len: 4096}");
  EXPECT_EQ(mi["flavor"], "mistral");
  EXPECT_EQ(mi["seq_len"], 4096);
  EXPECT_EQ(mi["head_dim"], 128);
  EXPECT_EQ(mi.contains("sliding_window"), false);
  EXPECT_EQ(Model("{type: llama, init: mistral, preset: mistral-7b}")["layers"], 32);
  EXPECT_THAT(ErrorOf("{type: llama, init: mistral, seq_len: 8192}"),
              HasSubstr("tasks[0].model.seq_len: at most the sliding window (4096): Mistral "
                        "attends over the last 4096 positions, and training with full attention "
                        "is exact only up to the window"));
  // Mistral v0.2 and later: no window, the whole context.
  json v2 = Mistral7bConfig();
  v2["sliding_window"] = nullptr;
  Folder("mistral-v2", v2);
  EXPECT_EQ(Model("{type: llama, init: mistral-v2, seq_len: 8192}")["seq_len"], 8192);
  EXPECT_THAT(ErrorOf("{type: llama, init: mistral-v2, preset: mistral-7b}"),
              HasSubstr("tasks[0].model.preset: sliding_window 4096 does not fit the init "
                        "checkpoint, whose "));

  // A finished llama task's folder: the task.json beside its model.pt.
  fs::create_directories(dir_ + "/runs/t");
  WriteFileAtomic(dir_ + "/runs/t/model.pt", "x");
  json done = Model("{type: llama, preset: smollm-135m, layers: 2, seq_len: 64}");
  WriteFileAtomic(dir_ + "/runs/t/task.json", json{{"model", done}}.dump());
  json again = Model("{type: llama, init: runs/t/model.pt}");
  EXPECT_EQ(again["layers"], 2);
  EXPECT_EQ(again["d_model"], 576);
  EXPECT_EQ(again["positions"], 2048);
  EXPECT_EQ(again["seq_len"], 2048);
  EXPECT_THAT(ErrorOf("{type: llama, init: runs/t/model.pt, layers: 30}"),
              HasSubstr("whose " + dir_ + "/runs/t/task.json says layers 2"));
}

TEST_F(LlamaWorkloadTest, WhatContradictsTheCheckpointIsRefusedNamingBoth) {
  Folder("llama", Llama32Config());
  EXPECT_THAT(ErrorOf("{type: llama, init: llama, layers: 12}"),
              HasSubstr("w.yaml:4: tasks[0].model.layers: layers 12 does not fit the init "
                        "checkpoint, whose " +
                        dir_ +
                        "/llama/config.json says num_hidden_layers 16 (leave the field out "
                        "to take the checkpoint's)"));
  EXPECT_THAT(ErrorOf("{type: llama, init: llama, preset: llama-3.2-3b}"),
              HasSubstr("tasks[0].model.preset: layers 28 does not fit the init checkpoint, "
                        "whose " +
                        dir_ +
                        "/llama/config.json says num_hidden_layers 16 (leave the preset "
                        "out"));
  EXPECT_THAT(ErrorOf("{type: llama, init: llama, preset: tinyllama-1.1b}"),
              HasSubstr("tasks[0].model.preset: layers 22 does not fit"));
  EXPECT_THAT(ErrorOf("{type: llama, init: llama, rope_theta: 10000}"),
              HasSubstr("rope_theta 10000.0 does not fit the init checkpoint, whose " + dir_ +
                        "/llama/config.json says rope_theta 500000.0"));
  EXPECT_THAT(ErrorOf("{type: llama, init: llama, rope_scaling: none}"),
              HasSubstr("tasks[0].model.rope_scaling: rope_scaling none does not fit"));
  EXPECT_THAT(ErrorOf("{type: llama, init: llama, tie_embeddings: false}"),
              HasSubstr("says tie_word_embeddings true"));
  // A key the file leaves out has Hugging Face's default, which counts too.
  json no_kv = Llama32Config();
  no_kv.erase("num_key_value_heads");
  no_kv.erase("head_dim");
  Folder("no-kv", no_kv);
  json m = Model("{type: llama, init: no-kv}");
  EXPECT_EQ(m["kv_heads"], 32);
  EXPECT_EQ(m["head_dim"], 64);
  EXPECT_THAT(ErrorOf("{type: llama, init: no-kv, kv_heads: 8}"),
              HasSubstr("kv_heads 8 does not fit the init checkpoint, whose " + dir_ +
                        "/no-kv/config.json leaves num_key_value_heads out, which means 32"));
  Folder("qwen", Qwen25Config());
  EXPECT_THAT(ErrorOf("{type: llama, init: qwen, attention_bias: false}"),
              HasSubstr("attention_bias false does not fit"));
}

TEST_F(LlamaWorkloadTest, ConfigsOfOtherModelsAndUnsupportedFeaturesAreRefused) {
  Folder("gpt2", json::parse(R"({"model_type": "gpt2", "n_layer": 12, "n_embd": 768,
                                 "n_head": 12, "vocab_size": 50257, "n_positions": 1024})"));
  EXPECT_THAT(ErrorOf("{type: llama, init: gpt2}"),
              HasSubstr("tasks[0].model.init: " + dir_ +
                        "/gpt2/config.json: model_type \"gpt2\": a llama task loads model_type "
                        "llama, mistral or qwen2"));
  json bias = Llama32Config();
  bias["mlp_bias"] = true;
  Folder("bias", bias);
  EXPECT_THAT(ErrorOf("{type: llama, init: bias}"),
              HasSubstr("tasks[0].model.init: " + dir_ +
                        "/bias/config.json: mlp_bias: true is not supported"));
  json yarn = Llama32Config();
  yarn["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
  Folder("yarn", yarn);
  EXPECT_THAT(ErrorOf("{type: llama, init: yarn}"),
              HasSubstr("/yarn/config.json: rope_scaling.rope_type: the rope scaling 'yarn' is "
                        "not supported (llama3 and linear are)"));
  json old = Llama32Config();
  old["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};  // the older key
  Folder("old", old);
  EXPECT_EQ(Model("{type: llama, init: old}")["rope_scaling"],
            json::parse(R"({"type": "linear", "factor": 4.0})"));
  json partial = Llama32Config();
  partial["rope_scaling"].erase("low_freq_factor");
  Folder("partial", partial);
  EXPECT_THAT(ErrorOf("{type: llama, init: partial}"),
              HasSubstr("/partial/config.json: rope_scaling.low_freq_factor: missing"));
  json missing = Llama32Config();
  missing.erase("intermediate_size");
  Folder("missing", missing);
  EXPECT_THAT(ErrorOf("{type: llama, init: missing}"),
              HasSubstr("/missing/config.json: intermediate_size: missing"));
  json odd = Llama32Config();
  odd["num_key_value_heads"] = 5;
  Folder("odd", odd);
  EXPECT_THAT(ErrorOf("{type: llama, init: odd}"),
              HasSubstr("tasks[0].model.kv_heads: must divide heads (32), got 5"));
  WriteFileAtomic(dir_ + "/gpt2/config.json", "{not json");
  EXPECT_THAT(ErrorOf("{type: llama, init: gpt2}"),
              HasSubstr("/gpt2/config.json is not valid JSON"));
}

TEST_F(LlamaWorkloadTest, LoraTakesPeftModuleNamesForLlamaOnly) {
  const std::string llama = "{type: llama, preset: smollm-135m, seq_len: 64}";
  Workload w = ParseWorkload(
      "cluster: cluster.yaml\ntasks:\n" +
          Task(llama, "    finetune: {lora: {rank: 8, targets: [q_proj, v_proj, mlp]}}\n"),
      "w.yaml", dir_);
  EXPECT_EQ(w.tasks[0].spec["finetune"]["lora"]["targets"],
            json::array({"q_proj", "v_proj", "mlp"}));
  EXPECT_THAT(ErrorOf(llama, "    finetune: {lora: {rank: 8, targets: [qkv_proj]}}\n"),
              HasSubstr("tasks[0].finetune.lora.targets[0]: expected attn, mlp or a module name "
                        "(q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj), got "
                        "'qkv_proj'"));
  EXPECT_THAT(ErrorOf("{type: gpt2, preset: small}",
                      "    finetune: {lora: {rank: 8, targets: [attn, q_proj]}}\n"),
              HasSubstr("tasks[0].finetune.lora.targets[1]: expected attn or mlp, got 'q_proj' "
                        "(module names are for llama; gpt2 takes attn and mlp)"));
}

// Token files hold uint32 ids past 65,536: tokens data and the models'
// vocabularies go up to 2^31 - 1, and epochs count a file's ids whatever
// their size.
TEST_F(LlamaWorkloadTest, VocabulariesPastUint16) {
  std::vector<uint32_t> ids(1000);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<uint32_t>(i * 97 % 128256);
  std::string file = TokenFileHeader(4, 128256);
  AppendTokenIds(ids.data(), ids.size(), 4, &file);
  WriteFileAtomic(dir_ + "/train.bin", file);
  const std::string task =
      "  - name: l\n    model: {type: llama, preset: llama-3.2-1b, seq_len: 99}\n"
      "    data: {type: tokens, path: train.bin, seq_len: 99, vocab: 128256}\n"
      "    batch_size: 2\n    optimizer: {type: adamw, lr: 1.0e-4}\n    epochs: 1\n";
  Workload w = ParseWorkload("cluster: cluster.yaml\ntasks:\n" + task, "w.yaml", dir_);
  EXPECT_EQ(w.tasks[0].spec["data"]["vocab"], 128256);
  // 1000 ids: (1000 - 1) / 99 = 10 samples, 5 batches of 2.
  EXPECT_EQ(w.tasks[0].steps, 5);

  std::string too_big = task;
  too_big.replace(too_big.find("vocab: 128256"), 13, "vocab: 200000");
  try {
    ParseWorkload("cluster: cluster.yaml\ntasks:\n" + too_big, "w.yaml", dir_);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("tasks[0].data.vocab: at most the model's vocab (128256)"));
  }
  // gpt2's vocab had the cap for uint16 files only.
  json gpt2 = Model("{type: gpt2, layers: 2, d_model: 64, heads: 4, vocab: 100000, positions: 64}");
  EXPECT_EQ(gpt2["vocab"], 100000);
}

}  // namespace
}  // namespace saturn
