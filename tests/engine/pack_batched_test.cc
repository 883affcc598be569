// Packs whose members bring equal batches: the layers then take every
// member of one rank in one batched product (models/layers.cc,
// Linear::AddPackDeltas) instead of a loop over the members. The members
// here mix ranks and targets, so that on a map some ranks' members are not
// every member of the step (the batched rows are then picked and added
// back by position); each member's loss, step by step, must equal its
// twin's trained alone, as in pack_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "tests/engine/worker_process.h"

namespace saturn::testing {
namespace {

constexpr int kSteps = 5;

nlohmann::json Train(const TestDir& dir, const std::string& task, const std::string& name,
                     const std::string& technique, int gpus, const std::string& extra = "") {
  std::vector<std::string> args = ExecuteArgs(dir, task, technique, gpus, name, kSteps);
  args.insert(args.end(), {"--timeout-s", "120"});
  if (!extra.empty()) args.insert(args.end(), {extra, dir.Path(name + "/model.pt")});
  WorkerRun r = RunWorker(args, dir.Path(name));
  EXPECT_EQ(r.status, 0) << name << ": " << r.err;
  return r.status == 0 ? ReadJson(dir.Path(name + ".json")) : nlohmann::json();
}

TEST(PackedProduct, MembersOfEqualBatchesTrainAsTheirTwinsAloneWhateverTheirRanksAndTargets) {
  TestDir dir("pack_batched_" + std::to_string(::getpid()));
  nlohmann::json base = TinyTask("gpt");
  base["name"] = "base";
  ASSERT_FALSE(Train(dir, dir.Write("base.json", base.dump()), "base", "single", 1, "--save-model")
                   .is_null());
  // attn: a and b rank 4 (positions 0 and 1 of 4), c rank 8; mlp: a, b and
  // d rank 4 (positions 0, 1, 3). Every member 2 samples a step.
  struct Spec {
    std::string name;
    double lr;
    nlohmann::json lora;
  };
  std::vector<Spec> specs = {
      {"a", 3e-3, {{"rank", 4}, {"targets", {"attn", "mlp"}}}},
      {"b", 2e-2, {{"rank", 4}, {"alpha", 16}, {"targets", {"attn", "mlp"}}}},
      {"c", 1e-2, {{"rank", 8}, {"targets", {"attn"}}}},
      {"d", 5e-3, {{"rank", 4}, {"alpha", 2}, {"targets", {"mlp"}}}}};
  // fp32 under the techniques that take packs; bf16 (autocast, the
  // adapters fp32) under single, within a bf16 tolerance: another rounding
  // order than alone, not another model. (On CUDA autocast also makes the
  // batched product bf16 where y may not be: Linear casts it; CPU
  // autocast does not reach that case.)
  for (const std::string precision : {"fp32", "bf16"}) {
    std::vector<nlohmann::json> members;
    std::vector<std::vector<double>> alone;
    for (size_t i = 0; i < specs.size(); ++i) {
      nlohmann::json task = TinyTask("gpt");
      task["name"] = specs[i].name;
      task["model"]["init"] = dir.Path("base/model.pt");
      task["seed"] = 11 + i;
      task["batch_size"] = 2;
      task["precision"] = precision;
      task["optimizer"] = {{"type", "adamw"}, {"lr", specs[i].lr}};
      task["finetune"] = {{"lora", specs[i].lora}};
      members.push_back(task);
      std::string name = "alone-" + specs[i].name + "-" + precision;
      nlohmann::json r = Train(dir, dir.Write(name + ".task", task.dump()), name, "single", 1);
      ASSERT_FALSE(r.is_null());
      alone.push_back(r["losses"].get<std::vector<double>>());
    }
    // Not vacuous: the members' curves are apart, so a member trained with
    // another's rows or adapters would leave the tolerance.
    EXPECT_GT(std::fabs(alone[0].back() - alone[1].back()), 1e-3 * std::fabs(alone[0].back()));
    const double tolerance = precision == "fp32" ? 1e-4 : 1e-2;
    std::string pack =
        dir.Write("pack-" + precision + ".json", nlohmann::json{{"pack", members}}.dump());
    // single: the whole step batched; ddp on 2: each rank's share is two
    // whole members; pipeline on 2 (4 micro-batches): one member at a time.
    std::vector<std::pair<std::string, int>> configs = {{"single", 1}};
    if (precision == "fp32") configs = {{"single", 1}, {"ddp", 2}, {"fsdp", 2}, {"pipeline", 2}};
    for (auto [technique, gpus] : configs) {
      std::string name = "pack-" + technique + "-" + precision;
      nlohmann::json r = Train(dir, pack, name, technique, gpus);
      ASSERT_FALSE(r.is_null());
      ASSERT_EQ(r["members"].size(), specs.size()) << r.dump();
      for (size_t m = 0; m < specs.size(); ++m) {
        std::vector<double> losses = r["members"][m]["losses"].get<std::vector<double>>();
        ASSERT_EQ(losses.size(), alone[m].size()) << name;
        for (size_t s = 0; s < losses.size(); ++s) {
          EXPECT_LE(std::fabs(losses[s] - alone[m][s]), tolerance * std::fabs(alone[m][s]))
              << name << ", member " << specs[m].name << ", step " << s << ": " << losses[s]
              << " alone " << alone[m][s];
        }
      }
    }
  }
}

// Members of different step counts in one worker run to the longest's end:
// each leaves at its own last step (worker/pack_job.h), handing over its
// checkpoint, model and result entry, and those still in train on with
// fewer rows, each as its twin alone, under every technique that takes
// packs, with gradient accumulation too. Where the rest would have fewer
// rows than a technique splits a step into, the run ends there instead
// (the executor starts them again).
TEST(PackedProduct, MembersLeaveAtTheirOwnEndsAndTheRestTrainOnAsTheirTwins) {
  TestDir dir("pack_leave_" + std::to_string(::getpid()));
  nlohmann::json base = TinyTask("gpt");
  base["name"] = "base";
  ASSERT_FALSE(Train(dir, dir.Write("base.json", base.dump()), "base", "single", 1, "--save-model")
                   .is_null());
  const std::vector<int64_t> steps = {2, 4, 5, 5}, batches = {2, 1, 2, 3};
  const std::vector<double> lrs = {2e-2, 1e-2, 5e-3, 3e-3};
  std::vector<nlohmann::json> members;
  std::vector<std::vector<double>> alone;
  for (size_t i = 0; i < steps.size(); ++i) {
    nlohmann::json task = TinyTask("gpt");
    task["name"] = std::string(1, static_cast<char>('a' + i));
    task["model"]["init"] = dir.Path("base/model.pt");
    task["seed"] = 21 + i;
    task["batch_size"] = batches[i];
    task["steps"] = steps[i];
    task["optimizer"] = {{"type", "adamw"}, {"lr", lrs[i]}};
    task["finetune"] = {{"lora", {{"rank", 2 + 2 * static_cast<int>(i % 2)}}}};
    members.push_back(task);
    std::string name = "alone-" + task["name"].get<std::string>();
    std::vector<std::string> args =
        ExecuteArgs(dir, dir.Write(name + ".task", task.dump()), "single", 1, name, steps[i]);
    WorkerRun r = RunWorker(args, dir.Path(name));
    ASSERT_EQ(r.status, 0) << name << ": " << r.err;
    alone.push_back(ReadJson(dir.Path(name + ".json"))["losses"].get<std::vector<double>>());
  }
  std::string pack = dir.Write("pack.json", nlohmann::json{{"pack", members}}.dump());
  // With gradient accumulation in as many chunks as the rows at the start
  // (single: 8; ddp: 4 of a rank's 4), the chunks shrink with the rows.
  struct Config {
    std::string technique;
    int gpus;
    std::string knobs;
  };
  for (const Config& c : std::vector<Config>{{"single", 1, ""},
                                             {"ddp", 2, ""},
                                             {"fsdp", 2, ""},
                                             {"pipeline", 2, ""},
                                             {"single", 1, R"({"accumulation":8})"},
                                             {"ddp", 2, R"({"accumulation":4})"}}) {
    const std::string name = "pack-" + c.technique + (c.knobs.empty() ? "" : "-accumulating");
    std::vector<std::string> args = ExecuteArgs(dir, pack, c.technique, c.gpus, name, 5);
    args.insert(args.end(), {"--save-model", dir.Path(name + "/model.pt")});
    if (!c.knobs.empty()) args.insert(args.end(), {"--knobs", c.knobs});
    WorkerRun r = RunWorker(args, dir.Path(name));
    ASSERT_EQ(r.status, 0) << name << ": " << r.err;
    nlohmann::json result = ReadJson(dir.Path(name + ".json"));
    EXPECT_EQ(result["completed_steps"], 5) << name;
    // The pack's loss at a step is the sum of the mean losses of the
    // members still in: those that left sent no rows.
    std::vector<double> pack_losses = result["losses"].get<std::vector<double>>();
    ASSERT_EQ(pack_losses.size(), 5u) << name;
    for (size_t s = 0; s < pack_losses.size(); ++s) {
      double in = 0.0;
      for (size_t m = 0; m < members.size(); ++m)
        if (static_cast<int64_t>(s) < steps[m]) in += alone[m][s];
      EXPECT_NEAR(pack_losses[s], in, 1e-4 * in) << name << ", step " << s;
    }
    for (size_t m = 0; m < members.size(); ++m) {
      const std::string who = members[m]["name"];
      std::vector<double> losses = result["members"][m]["losses"].get<std::vector<double>>();
      ASSERT_EQ(losses.size(), alone[m].size()) << name << ", " << who;
      for (size_t s = 0; s < losses.size(); ++s) {
        EXPECT_LE(std::fabs(losses[s] - alone[m][s]), 1e-4 * std::fabs(alone[m][s]))
            << name << ", member " << who << ", step " << s;
      }
      // Its own files at its own end; the two that left before the run's
      // end said so on a line of their own and in left.json.
      const std::string own = dir.Path(name + "/" + who);
      EXPECT_TRUE(
          std::filesystem::exists(own + "/checkpoint-" + std::to_string(steps[m]) + "/meta.json"))
          << name << ", " << who;
      EXPECT_TRUE(std::filesystem::exists(dir.Path(name + "/" + who + "/adapters.pt")))
          << name << ", " << who;
      const bool left = steps[m] < 5;
      EXPECT_EQ(std::filesystem::exists(own + "/left.json"), left) << name << ", " << who;
      EXPECT_EQ(r.out.find("saturn: left_member=" + std::to_string(m) +
                           " left_step=" + std::to_string(steps[m])) != std::string::npos,
                left)
          << name << ": " << r.out;
      if (left) {
        EXPECT_EQ(result["members"][m]["completed_steps"], steps[m]) << name;
      }
    }
  }
  // ddp on 2 splits each step's rows over its ranks: a (2 rows, 2 steps)
  // with b (1 row) would leave b one row for two ranks, so the run ends
  // at step 2 with both there.
  std::string two =
      dir.Write("two.json", nlohmann::json{{"pack", {members[0], members[1]}}}.dump());
  WorkerRun r = RunWorker(ExecuteArgs(dir, two, "ddp", 2, "two-ddp", 4), dir.Path("two-ddp"));
  ASSERT_EQ(r.status, 0) << r.err;
  nlohmann::json result = ReadJson(dir.Path("two-ddp.json"));
  EXPECT_EQ(result["completed_steps"], 2);
  EXPECT_EQ(result["members"][1]["losses"].size(), 2u);
  EXPECT_EQ(r.out.find("left_member="), std::string::npos) << r.out;

  // The executor asks b to leave (its rule stopped it) at the step a ends
  // anyway: under ddp 2 that would leave c one row for two ranks, so the
  // run ends there with all three, and a's final evaluation (due at its
  // last step) is still made.
  nlohmann::json a = members[1], b = members[1], c = members[1];
  a["name"] = "a";
  a["steps"] = 1;
  b["name"] = "b";
  c["name"] = "c";
  for (nlohmann::json* m : {&a, &b, &c}) {
    (*m)["batch_size"] = 1;
    (*m)["eval"] = {{"every", 3}, {"batches", 1}};
  }
  std::string three = dir.Write("three.json", nlohmann::json{{"pack", {a, b, c}}}.dump());
  std::filesystem::create_directories(dir.Path("three-ddp/b"));
  dir.Write("three-ddp/b/leave", "");
  r = RunWorker(ExecuteArgs(dir, three, "ddp", 2, "three-ddp", 4), dir.Path("three-ddp"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(ReadJson(dir.Path("three-ddp.json"))["completed_steps"], 1);
  EXPECT_NE(r.out.find("saturn: eval_step=1 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("eval_member=0"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("eval_member=1"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace saturn::testing
