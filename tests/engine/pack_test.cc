// Packs (engine/pack.h): several LoRA tasks over one frozen base trained as
// one. The property that makes packing safe to choose automatically: each
// member's loss, step by step, equals its twin's trained alone (fp32,
// relative difference <= 1e-4), under every technique that takes packs.
// Real worker processes, as the executor runs them.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>

#include "tests/engine/worker_process.h"

namespace saturn::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kSteps = 6;

struct Outcome {
  int status = -1;
  std::string err;
  nlohmann::json result;
};

Outcome Execute(const TestDir& dir, const std::string& task, const std::string& name,
                const std::string& technique, int gpus, const std::string& extra_flag = "",
                const std::string& knobs = "") {
  std::vector<std::string> args = ExecuteArgs(dir, task, technique, gpus, name, kSteps);
  args.insert(args.end(), {"--timeout-s", "120"});
  if (!knobs.empty()) args.insert(args.end(), {"--knobs", knobs});
  if (!extra_flag.empty()) {
    args.push_back(extra_flag);
    args.push_back(dir.Path(name + "/model.pt"));
  }
  WorkerRun r = RunWorker(args, dir.Path(name));
  Outcome out{r.status, r.err, nullptr};
  if (r.status == 0) out.result = ReadJson(dir.Path(name + ".json"));
  return out;
}

// A LoRA task over the base `init` (a Saturn model.pt).
nlohmann::json Member(const std::string& name, const std::string& init, uint64_t seed,
                      int64_t batch, nlohmann::json optimizer, nlohmann::json lora) {
  nlohmann::json task = TinyTask("gpt");
  task["name"] = name;
  task["model"]["init"] = init;
  task["seed"] = seed;
  task["batch_size"] = batch;
  task["optimizer"] = std::move(optimizer);
  task["finetune"] = {{"lora", std::move(lora)}};
  return task;
}

void ExpectSameLosses(const std::vector<double>& got, const std::vector<double>& alone,
                      const std::string& what) {
  ASSERT_EQ(got.size(), alone.size()) << what;
  for (size_t s = 0; s < got.size(); ++s) {
    EXPECT_LE(std::fabs(got[s] - alone[s]), 1e-4 * std::fabs(alone[s]))
        << what << ", step " << s << ": " << got[s] << " alone " << alone[s];
  }
}

class Packs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    // One folder per process: ctest runs this suite's tests side by side.
    dir_ = new TestDir("packs_" + std::to_string(::getpid()));
    setup_error_ = new std::string;
    // The shared base: a tiny GPT trained a few steps, saved as model.pt.
    nlohmann::json base = TinyTask("gpt");
    base["name"] = "base";
    Outcome made =
        Execute(*dir_, dir_->Write("base.json", base.dump()), "base", "single", 1, "--save-model");
    if (made.status != 0) {
      *setup_error_ = "the base: " + made.err;
      return;
    }
    std::string init = dir_->Path("base/model.pt");
    // Members differing in everything a member may: learning rate,
    // optimizer hyper-parameters, rank, alpha, targets, batch size, data and
    // adapters (seed).
    members_ = new std::vector<nlohmann::json>{
        Member("a", init, 1, 4, {{"type", "adamw"}, {"lr", 3e-3}},
               {{"rank", 4}, {"alpha", 8}, {"targets", {"attn"}}}),
        Member("b", init, 2, 2, {{"type", "adamw"}, {"lr", 5e-2}, {"weight_decay", 0.0}},
               {{"rank", 2}, {"targets", {"mlp"}}}),
        Member("c", init, 3, 6,
               {{"type", "adamw"}, {"lr", 5e-3}, {"beta1", 0.8}, {"weight_decay", 0.1}},
               {{"rank", 8}, {"alpha", 4}, {"targets", {"attn", "mlp"}}})};
    alone_ = new std::vector<std::vector<double>>;
    for (const nlohmann::json& m : *members_) {
      std::string name = "alone-" + m["name"].get<std::string>();
      Outcome r = Execute(*dir_, dir_->Write(name + ".json.task", m.dump()), name, "single", 1);
      if (r.status != 0) {
        *setup_error_ = name + ": " + r.err;
        return;
      }
      alone_->push_back(r.result["losses"].get<std::vector<double>>());
    }
  }
  // `task` alone under single from step `from` to 9 (checkpoints in
  // `checkpoints`): its losses.
  static std::vector<double> AloneTo9(const std::string& task, const std::string& name,
                                      int64_t from, const std::string& checkpoints) {
    WorkerRun r =
        RunWorker({"execute", "--task", task, "--technique", "single", "--gpus", "1", "--out",
                   dir_->Path(name + ".json"), "--from-step", std::to_string(from), "--to-step",
                   "9", "--checkpoint-dir", checkpoints},
                  dir_->Path(name));
    EXPECT_EQ(r.status, 0) << name << ": " << r.err;
    return r.status == 0 ? ReadJson(dir_->Path(name + ".json"))["losses"].get<std::vector<double>>()
                         : std::vector<double>{};
  }
  // A failure in SetUpTestSuite would skip the tests; this fails them.
  void SetUp() override { ASSERT_TRUE(setup_error_->empty()) << *setup_error_; }
  static void TearDownTestSuite() {
    delete dir_;
    delete members_;
    delete alone_;
    delete setup_error_;
  }

  static TestDir* dir_;
  static std::vector<nlohmann::json>* members_;
  static std::vector<std::vector<double>>* alone_;
  static std::string* setup_error_;
};

TestDir* Packs::dir_ = nullptr;
std::vector<nlohmann::json>* Packs::members_ = nullptr;
std::vector<std::vector<double>>* Packs::alone_ = nullptr;
std::string* Packs::setup_error_ = nullptr;

TEST_F(Packs, EachMemberTrainsAsItsTwinAloneUnderEveryTechniqueThatTakesPacks) {
  ASSERT_EQ(alone_->size(), 3u);
  // Not vacuous: b trained with a's learning rate leaves the tolerance, so a
  // pack stepping every member with one optimizer would fail.
  nlohmann::json wrong = (*members_)[1];
  wrong["optimizer"]["lr"] = (*members_)[0]["optimizer"]["lr"];
  Outcome w = Execute(*dir_, dir_->Write("wrong.task", wrong.dump()), "wrong", "single", 1);
  ASSERT_EQ(w.status, 0) << w.err;
  double apart = 0.0;
  std::vector<double> wrong_losses = w.result["losses"].get<std::vector<double>>();
  for (size_t s = 0; s < wrong_losses.size(); ++s)
    apart = std::max(apart, std::fabs(wrong_losses[s] - alone_->at(1)[s]) / alone_->at(1)[s]);
  EXPECT_GT(apart, 1e-3);
  std::string pack = dir_->Write("pack.json", nlohmann::json{{"pack", *members_}}.dump());
  struct Config {
    std::string technique;
    int gpus;
    std::string knobs;
  };
  // Pipeline on 3 devices has a stage between the first and the last (it
  // fetches no samples), and with checkpointing its blocks run again during
  // the backward pass, micro-batches in reverse: each must see its own rows.
  for (const Config& c :
       std::vector<Config>{{"single", 1, ""},
                           {"ddp", 2, ""},
                           {"fsdp", 2, ""},
                           {"spill", 1, ""},
                           {"pipeline", 2, ""},
                           {"pipeline", 3, R"({"micro_batches": 4, "checkpointing": true})"}}) {
    std::string name = "pack-" + c.technique + "-" + std::to_string(c.gpus);
    Outcome r = Execute(*dir_, pack, name, c.technique, c.gpus, "", c.knobs);
    ASSERT_EQ(r.status, 0) << name << ": " << r.err;
    const nlohmann::json& members = r.result["members"];
    ASSERT_EQ(members.size(), 3u) << r.result.dump();
    double sum_of_means = 0.0;
    for (size_t m = 0; m < 3; ++m) {
      EXPECT_EQ(members[m]["name"], (*members_)[m]["name"]);
      std::vector<double> losses = members[m]["losses"].get<std::vector<double>>();
      ExpectSameLosses(losses, alone_->at(m), name + ", member " + members[m]["name"].dump());
      sum_of_means += losses.back();
    }
    // The pack's own loss is the sum of its members' means.
    double last = r.result["losses"].back().get<double>();
    EXPECT_NEAR(last, sum_of_means, 1e-4 * sum_of_means) << name;
  }
}

// Each member is a model of its own for its schedule and for gradient
// clipping: its norm is over its own adapters, against its own max_norm.
TEST_F(Packs, EachMemberClipsAndSchedulesAsItsTwinAlone) {
  std::vector<nlohmann::json> members = *members_;
  members[0]["optimizer"]["lr"] = 5e-2;
  members[0]["optimizer"]["clip_grad_norm"] = 1e-3;
  members[0]["optimizer"]["schedule"] = {{"type", "linear"}, {"warmup_steps", 2}};
  members[1]["optimizer"]["clip_grad_norm"] = 2e-3;
  members[1]["optimizer"]["schedule"] = {{"type", "cosine"}, {"warmup_ratio", 0.3}};
  std::vector<std::vector<double>> alone;
  for (const nlohmann::json& m : members) {
    std::string name = "clip-alone-" + m["name"].get<std::string>();
    Outcome r = Execute(*dir_, dir_->Write(name + ".task", m.dump()), name, "single", 1);
    ASSERT_EQ(r.status, 0) << name << ": " << r.err;
    alone.push_back(r.result["losses"].get<std::vector<double>>());
  }
  // Not vacuous: each leaves the curve of its twin without a schedule and
  // clipping (AdamW hardly feels a clip that scales every step alike:
  // test_gpt2.py shows clipping itself matters).
  for (size_t m = 0; m < 2; ++m) {
    nlohmann::json plain = members[m];
    plain["optimizer"].erase("clip_grad_norm");
    plain["optimizer"].erase("schedule");
    std::string name = "plain-alone-" + std::to_string(m);
    Outcome r = Execute(*dir_, dir_->Write(name + ".task", plain.dump()), name, "single", 1);
    ASSERT_EQ(r.status, 0) << name << ": " << r.err;
    std::vector<double> losses = r.result["losses"].get<std::vector<double>>();
    double apart = 0.0;
    for (size_t s = 0; s < alone[m].size(); ++s)
      apart = std::max(apart, std::fabs(alone[m][s] - losses[s]) / losses[s]);
    EXPECT_GT(apart, 1e-3) << "member " << m;
  }
  std::string pack = dir_->Write("clip-pack.json", nlohmann::json{{"pack", members}}.dump());
  for (const auto& [technique, gpus] :
       std::vector<std::pair<std::string, int>>{{"single", 1}, {"fsdp", 2}, {"spill", 1}}) {
    std::string name = "clip-pack-" + technique;
    Outcome r = Execute(*dir_, pack, name, technique, gpus);
    ASSERT_EQ(r.status, 0) << name << ": " << r.err;
    ASSERT_EQ(r.result["members"].size(), 3u);
    for (size_t m = 0; m < 3; ++m) {
      ExpectSameLosses(r.result["members"][m]["losses"].get<std::vector<double>>(), alone[m],
                       name + ", member " + std::to_string(m));
    }
  }
}

// The evaluation lines of a worker's stdout: member -> step -> loss
// (member -1: the task's own).
std::map<long, std::map<long, double>> EvalLines(const std::string& out) {
  std::map<long, std::map<long, double>> evals;
  static const std::regex kLine(
      "saturn: eval_step=(\\d+) eval_loss=(\\S+)[^\\n]*?(?: eval_member=(\\d+))?\\n");
  for (auto it = std::sregex_iterator(out.begin(), out.end(), kLine); it != std::sregex_iterator();
       ++it) {
    long member = (*it)[3].matched ? std::stol((*it)[3]) : -1;
    bool fresh = evals[member].emplace(std::stol((*it)[1]), std::stod((*it)[2])).second;
    EXPECT_TRUE(fresh) << "member " << member << " evaluated twice at step " << (*it)[1];
  }
  return evals;
}

// Members evaluate in a pack as alone: at each step their own eval.every
// falls on, and after their last, on their own held-out data; their losses
// equal their twins' alone, and each keeps its best model in its own task
// folder (--best-dir: the folder of the members' folders). A member that
// does not evaluate gets no line.
TEST_F(Packs, EachMemberEvaluatesAsItsTwinAlone) {
  std::vector<nlohmann::json> members = *members_;
  members[0]["eval"] = {{"every", 2}, {"batches", 1}};
  members[1]["eval"] = {{"every", 3}, {"batches", 2}};
  std::map<long, std::map<long, double>> alone;
  std::map<long, long> best_step;
  for (long m = 0; m < 2; ++m) {
    std::string name = "eval-alone-" + std::to_string(m);
    std::string task = dir_->Write(name + ".task", members[m].dump());
    std::vector<std::string> args = ExecuteArgs(*dir_, task, "single", 1, name, kSteps);
    args.insert(args.end(),
                {"--best-dir", dir_->Path(name + "/best"), "--select", "eval_loss:min"});
    WorkerRun r = RunWorker(args, dir_->Path(name));
    ASSERT_EQ(r.status, 0) << name << ": " << r.err;
    alone[m] = EvalLines(r.out)[-1];
    best_step[m] = ReadJson(dir_->Path(name + "/best/best.json"))["step"].get<long>();
  }
  EXPECT_EQ(alone[0].size(), 3u);  // steps 2, 4, 6
  EXPECT_EQ(alone[1].size(), 2u);  // steps 3, 6
  std::string pack = dir_->Write("eval-pack.json", nlohmann::json{{"pack", members}}.dump());
  for (const auto& [technique, gpus] :
       std::vector<std::pair<std::string, int>>{{"single", 1}, {"ddp", 2}}) {
    std::string name = "eval-pack-" + technique;
    std::vector<std::string> args = ExecuteArgs(*dir_, pack, technique, gpus, name, kSteps);
    args.insert(args.end(),
                {"--best-dir", dir_->Path(name + "-tasks"), "--select", "eval_loss:min"});
    WorkerRun r = RunWorker(args, dir_->Path(name));
    ASSERT_EQ(r.status, 0) << name << ": " << r.err;
    std::map<long, std::map<long, double>> got = EvalLines(r.out);
    EXPECT_EQ(got.count(-1), 0u) << name << ": the pack itself evaluates nothing";
    EXPECT_EQ(got.count(2), 0u) << name << ": c does not evaluate";
    for (long m = 0; m < 2; ++m) {
      ASSERT_EQ(got[m].size(), alone[m].size()) << name << ", member " << m;
      for (const auto& [step, loss] : alone[m]) {
        ASSERT_EQ(got[m].count(step), 1u) << name << ", member " << m << ", step " << step;
        EXPECT_LE(std::fabs(got[m][step] - loss), 1e-4 * std::fabs(loss))
            << name << ", member " << m << ", step " << step << ": " << got[m][step] << " alone "
            << loss;
      }
      std::string own = members[m]["name"].get<std::string>();
      nlohmann::json best = ReadJson(dir_->Path(name + "-tasks/" + own + "/best/best.json"));
      EXPECT_EQ(best["step"].get<long>(), best_step[m]) << name << ", member " << m;
      EXPECT_TRUE(
          std::filesystem::exists(dir_->Path(name + "-tasks/" + own + "/best/adapters.pt")));
    }
  }
}

// A member leaves the pack at its checkpoint and goes on alone: the
// worker writes each member's checkpoint as the task alone would have (and
// its model.pt and adapters.pt), and from it the member's steps 6..8 alone
// are those of its twin trained alone from the start.
TEST_F(Packs, AMemberLeavesThePackAtACheckpointAndGoesOnAloneWithNothingLost) {
  std::string pack = dir_->Write("leave.json", nlohmann::json{{"pack", *members_}}.dump());
  Outcome packed = Execute(*dir_, pack, "leave", "fsdp", 2, "--save-model");
  ASSERT_EQ(packed.status, 0) << packed.err;
  for (const std::string file : {"model.pt", "adapters.pt", "checkpoint-6/meta.json"}) {
    EXPECT_TRUE(std::filesystem::exists(dir_->Path("leave/c/" + file))) << file;
  }
  const nlohmann::json& c = (*members_)[2];
  std::string task = dir_->Write("c-alone.task", c.dump());
  auto run = [&](const std::string& name, int64_t from, const std::string& checkpoints) {
    return AloneTo9(task, name, from, checkpoints);
  };
  std::vector<double> twin = run("c-twin", 0, dir_->Path("c-twin"));
  std::vector<double> after = run("c-after", 6, dir_->Path("leave/c"));
  ASSERT_EQ(twin.size(), 9u);
  ExpectSameLosses(after, std::vector<double>(twin.begin() + 6, twin.end()),
                   "member c alone after the pack");
}

// At each of the pack's periodic checkpoints the worker writes every
// member's own beside it (what a member goes on from after a crash): from
// the one at step 4, member c's steps 4..8 alone are its twin's.
TEST_F(Packs, EachPeriodicCheckpointOfAPackHoldsEveryMembersOwn) {
  std::string pack = dir_->Write("periodic.json", nlohmann::json{{"pack", *members_}}.dump());
  std::vector<std::string> args = ExecuteArgs(*dir_, pack, "single", 1, "periodic", kSteps);
  args.insert(args.end(), {"--checkpoint-every", "2", "--keep-checkpoints", "2"});
  WorkerRun packed = RunWorker(args, dir_->Path("periodic"));
  ASSERT_EQ(packed.status, 0) << packed.err;
  for (const nlohmann::json& m : *members_) {
    std::string own = dir_->Path("periodic/" + m["name"].get<std::string>());
    // Kept as the pack's are: the newest two (4 and 6).
    EXPECT_FALSE(std::filesystem::exists(own + "/checkpoint-2")) << own;
    EXPECT_TRUE(std::filesystem::exists(own + "/checkpoint-4/meta.json")) << own;
    EXPECT_TRUE(std::filesystem::exists(own + "/checkpoint-6/meta.json")) << own;
  }
  const nlohmann::json& c = (*members_)[2];
  std::string task = dir_->Write("c-periodic.task", c.dump());
  auto run = [&](const std::string& name, int64_t from, const std::string& checkpoints) {
    return AloneTo9(task, name, from, checkpoints);
  };
  std::filesystem::remove_all(dir_->Path("periodic/c/checkpoint-6"));
  std::vector<double> twin = run("c-periodic-twin", 0, dir_->Path("c-periodic-twin"));
  std::vector<double> after = run("c-periodic-after", 4, dir_->Path("periodic/c"));
  ASSERT_EQ(twin.size(), 9u);
  ExpectSameLosses(after, std::vector<double>(twin.begin() + 4, twin.end()),
                   "member c alone from the pack's checkpoint at step 4");
}

// Members that trained apart join a pack at a step they all stand at (a
// pack split, one whose shortest member ended): from their own checkpoints
// (here the ones pack a+b+c wrote at step 6, laid out as the executor lays
// them out) the worker makes the pack's, and a and c go on as a pack of two
// whose steps 6..8 are those of their twins alone, under single, ddp, fsdp
// and pipeline (each loads the pack's checkpoint its own way). A member's
// checkpoint of another task, or missing, is exit 2 naming it.
TEST_F(Packs, MembersThatTrainedApartJoinAPackFromTheirOwnCheckpoints) {
  namespace fs = std::filesystem;
  std::string three = dir_->Write("apart.json", nlohmann::json{{"pack", *members_}}.dump());
  Outcome packed = Execute(*dir_, three, "apart", "single", 1);
  ASSERT_EQ(packed.status, 0) << packed.err;
  const nlohmann::json& a = (*members_)[0];
  const nlohmann::json& c = (*members_)[2];
  std::string two = dir_->Write("join.json", nlohmann::json{{"pack", {a, c}}}.dump());
  auto join = [&](const std::string& name, const std::string& technique, int gpus) {
    for (const char* member : {"a", "c"}) {
      fs::create_directories(dir_->Path(name + "/" + member));
      std::error_code absent;  // copied when there is one
      fs::copy(dir_->Path(std::string("apart/") + member + "/checkpoint-6"),
               dir_->Path(name + "/" + member + "/checkpoint-6"), fs::copy_options::recursive,
               absent);
    }
    return RunWorker({"execute", "--task", two, "--technique", technique, "--gpus",
                      std::to_string(gpus), "--out", dir_->Path(name + ".json"), "--from-step", "6",
                      "--to-step", "9", "--checkpoint-dir", dir_->Path(name), "--timeout-s", "120"},
                     dir_->Path(name));
  };
  auto twin = [&](const nlohmann::json& member) {
    std::string name = "twin9-" + member["name"].get<std::string>();
    WorkerRun r =
        RunWorker({"execute", "--task", dir_->Write(name + ".task", member.dump()), "--technique",
                   "single", "--gpus", "1", "--out", dir_->Path(name + ".json"), "--from-step", "0",
                   "--to-step", "9", "--checkpoint-dir", dir_->Path(name)},
                  dir_->Path(name));
    EXPECT_EQ(r.status, 0) << r.err;
    std::vector<double> losses = ReadJson(dir_->Path(name + ".json"))["losses"];
    return std::vector<double>(losses.begin() + 6, losses.end());
  };
  const std::vector<double> twin_a = twin(a), twin_c = twin(c);
  for (const char* technique : {"single", "ddp", "fsdp", "pipeline"}) {
    const std::string name = std::string("join-") + technique;
    WorkerRun r = join(name, technique, technique == std::string("single") ? 1 : 2);
    ASSERT_EQ(r.status, 0) << technique << ": " << r.err;
    EXPECT_TRUE(fs::exists(dir_->Path(name + "/checkpoint-6/meta.json"))) << technique;
    nlohmann::json result = ReadJson(dir_->Path(name + ".json"));
    ASSERT_EQ(result["members"].size(), 2u);
    ExpectSameLosses(result["members"][0]["losses"], twin_a, std::string("a, ") + technique);
    ExpectSameLosses(result["members"][1]["losses"], twin_c, std::string("c, ") + technique);
  }
  // Under c's name, b's checkpoint (rank 2 on mlp; c has rank 8 on both):
  // refused, naming it.
  fs::remove_all(dir_->Path("apart/c/checkpoint-6"));
  fs::copy(dir_->Path("apart/b/checkpoint-6"), dir_->Path("apart/c/checkpoint-6"),
           fs::copy_options::recursive);
  WorkerRun other = join("join-other", "single", 1);
  EXPECT_EQ(other.status, 2) << other.err;
  EXPECT_THAT(other.err, HasSubstr("join-other/c/checkpoint-6/meta.json"));
  EXPECT_THAT(other.err, HasSubstr("member 'c' cannot join the pack from it: it was written for a "
                                   "different task"));
  // c's checkpoint is gone: nothing to join from.
  fs::remove_all(dir_->Path("apart/c/checkpoint-6"));
  WorkerRun missing = join("join-missing", "single", 1);
  EXPECT_EQ(missing.status, 2) << missing.err;
  EXPECT_THAT(missing.err, HasSubstr("join-missing/c/checkpoint-6"));
}

// The llama family, adapters by peft's module names, a random base (no
// init: the members then share the seed) and an SGD-with-momentum pair.
TEST_F(Packs, LlamaMembersTargetedByPeftNamesTrainAsAlone) {
  TestDir dir("packs_llama_" + std::to_string(::getpid()));
  auto member = [](const std::string& name, double lr, int64_t batch, nlohmann::json lora) {
    nlohmann::json task = TinyTask("gpt");
    task["name"] = name;
    task["model"] = {{"type", "llama"}, {"layers", 2},     {"d_model", 32},
                     {"heads", 4},      {"kv_heads", 2},   {"ffn", 64},
                     {"vocab", 256},    {"positions", 32}, {"seq_len", 16}};
    task["batch_size"] = batch;
    task["optimizer"] = {{"type", "sgd"}, {"lr", lr}, {"momentum", 0.9}};
    task["finetune"] = {{"lora", std::move(lora)}};
    return task;
  };
  std::vector<nlohmann::json> members{
      member("qv", 0.5, 3, {{"rank", 4}, {"targets", {"q_proj", "v_proj"}}}),
      member("down", 0.2, 5, {{"rank", 2}, {"alpha", 4}, {"targets", {"down_proj"}}})};
  std::vector<std::vector<double>> alone;
  for (const nlohmann::json& m : members) {
    std::string name = "alone-" + m["name"].get<std::string>();
    Outcome r = Execute(dir, dir.Write(name + ".task", m.dump()), name, "single", 1);
    ASSERT_EQ(r.status, 0) << r.err;
    alone.push_back(r.result["losses"].get<std::vector<double>>());
  }
  std::string pack = dir.Write("pack.json", nlohmann::json{{"pack", members}}.dump());
  for (std::string technique : {"single", "fsdp"}) {
    int gpus = technique == "fsdp" ? 2 : 1;
    Outcome r = Execute(dir, pack, "pack-" + technique, technique, gpus);
    ASSERT_EQ(r.status, 0) << technique << ": " << r.err;
    for (size_t m = 0; m < members.size(); ++m) {
      ExpectSameLosses(r.result["members"][m]["losses"].get<std::vector<double>>(), alone[m],
                       technique + ", llama member " + members[m]["name"].dump());
    }
  }
}

TEST_F(Packs, WhatCannotShareABaseIsAnInputErrorNamingTheMember) {
  nlohmann::json full = (*members_)[1];
  full.erase("finetune");
  std::string bad =
      dir_->Write("bad.json", nlohmann::json{{"pack", {(*members_)[0], full}}}.dump());
  Outcome r = Execute(*dir_, bad, "bad", "single", 1);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("pack[1].finetune.lora: task 'b': only LoRA tasks pack"));

  nlohmann::json other = (*members_)[1];
  other["model"]["d_model"] = 64;
  std::string differs =
      dir_->Write("differs.json", nlohmann::json{{"pack", {(*members_)[0], other}}}.dump());
  r = Execute(*dir_, differs, "differs", "single", 1);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_THAT(r.err,
              HasSubstr("pack[1].model: task 'b': members share one base, so their models are "
                        "equal; this one differs from 'a' in d_model (32, here 64)"));

  nlohmann::json sgd = (*members_)[1];
  sgd["optimizer"] = {{"type", "sgd"}, {"lr", 0.1}};
  std::string mixed =
      dir_->Write("mixed.json", nlohmann::json{{"pack", {(*members_)[0], sgd}}}.dump());
  r = Execute(*dir_, mixed, "mixed", "single", 1);
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_THAT(r.err, HasSubstr("members' optimizers keep the same kind of state: 'a' has adamw, "
                               "this one sgd without momentum"));
}

}  // namespace
}  // namespace saturn::testing
