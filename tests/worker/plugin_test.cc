// Technique plug-ins (engine/plugin.h) loaded by saturn-worker: the example
// local-sgd plug-in is listed, searched and executed like a built-in, and
// broken plug-ins are refused with a clear message (exit 2) before they run.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "tests/engine/worker_process.h"

namespace saturn::testing {
namespace {

using ::testing::HasSubstr;

class Plugin : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::make_unique<TestDir>(::testing::UnitTest::GetInstance()->current_test_info()->name());
    nlohmann::json task = TinyTask("mlp");
    // Plain SGD: with sync_every 1, local SGD on equal slices is exactly
    // data-parallel SGD, so it must match `single`.
    task["optimizer"] = {{"type", "sgd"}, {"lr", 0.05}};
    task_ = dir_->Write("task.json", task.dump());
  }
  std::string Path(const std::string& name) const { return dir_->Path(name); }

  WorkerRun Execute(const std::string& technique, int gpus, int from, int to,
                    const std::string& out, const std::string& knobs = "") const {
    std::vector<std::string> args = {"execute",
                                     "--task",
                                     task_,
                                     "--technique",
                                     technique,
                                     "--gpus",
                                     std::to_string(gpus),
                                     "--out",
                                     Path(out),
                                     "--from-step",
                                     std::to_string(from),
                                     "--to-step",
                                     std::to_string(to),
                                     "--checkpoint-dir",
                                     Path("ck-" + out),
                                     "--plugin",
                                     LOCAL_SGD_PLUGIN};
    if (!knobs.empty()) args.insert(args.end(), {"--knobs", knobs});
    return RunWorker(args, Path(out + ".log"));
  }

  std::unique_ptr<TestDir> dir_;
  std::string task_;
};

TEST_F(Plugin, TechniquesListsBuiltinsAndThePluginsOwn) {
  WorkerRun run = RunWorker({"techniques", "--plugin", LOCAL_SGD_PLUGIN}, Path("list"));
  ASSERT_EQ(run.status, 0) << run.err;
  nlohmann::json list = nlohmann::json::parse(run.out);
  EXPECT_EQ(list["protocol"], 1);
  std::map<std::string, nlohmann::json> by_name;
  for (const nlohmann::json& t : list["techniques"])
    by_name[t["name"]] = t;
  ASSERT_TRUE(by_name.count("local-sgd")) << run.out;
  EXPECT_EQ(by_name["local-sgd"]["plugin"], LOCAL_SGD_PLUGIN);
  EXPECT_EQ(by_name["local-sgd"]["layout"], "rank-per-device");
  ASSERT_TRUE(by_name.count("fsdp"));
  EXPECT_TRUE(by_name["fsdp"]["plugin"].is_null());
  EXPECT_EQ(by_name["single"]["layout"], "one-process");
}

TEST_F(Plugin, SearchMeasuresThePluginTechnique) {
  WorkerRun run =
      RunWorker({"search", "--task", task_, "--technique", "local-sgd", "--gpus", "2", "--out",
                 Path("r.json"), "--warmup", "1", "--measure", "2", "--plugin", LOCAL_SGD_PLUGIN},
                Path("search"));
  ASSERT_EQ(run.status, 0) << run.err;
  nlohmann::json r = ReadJson(Path("r.json"));
  EXPECT_TRUE(r["feasible"]) << r.dump();
  EXPECT_EQ(r["knobs"]["sync_every"], 4);
  EXPECT_GT(r["step_s"].get<double>(), 0.0);
  EXPECT_EQ(r["peak_memory_bytes"].size(), 2u);

  // Its own rule: not on one device.
  run = RunWorker({"search", "--task", task_, "--technique", "local-sgd", "--gpus", "1", "--out",
                   Path("r1.json"), "--plugin", LOCAL_SGD_PLUGIN},
                  Path("search1"));
  ASSERT_EQ(run.status, 0) << run.err;
  EXPECT_FALSE(ReadJson(Path("r1.json"))["feasible"]);
  EXPECT_THAT(ReadJson(Path("r1.json"))["reason"].get<std::string>(),
              HasSubstr("at least 2 devices"));
}

// A plug-in trains packs only when it says so (Technique::TakesPacks): the
// example does not, and a pack under it is refused before it runs.
TEST_F(Plugin, APackUnderAPluginThatTakesNoneIsRefused) {
  nlohmann::json a = TinyTask("gpt");
  a["finetune"] = {{"lora", {{"rank", 2}}}};
  nlohmann::json b = a;
  a["name"] = "a";
  b["name"] = "b";
  std::string pack = dir_->Write("pack.json", nlohmann::json{{"pack", {a, b}}}.dump());
  WorkerRun run = RunWorker({"execute", "--task", pack, "--technique", "local-sgd", "--gpus", "2",
                             "--out", Path("pack.json.out"), "--from-step", "0", "--to-step", "2",
                             "--checkpoint-dir", Path("ck-pack"), "--plugin", LOCAL_SGD_PLUGIN},
                            Path("pack.log"));
  EXPECT_EQ(run.status, 2) << run.err;
  EXPECT_THAT(run.err, HasSubstr("local-sgd does not train packs yet (single, ddp, fsdp, "
                                 "pipeline and spill do)"));
}

TEST_F(Plugin, AveragingEveryStepTrainsLikeSingleWithSgd) {
  WorkerRun single = Execute("single", 1, 0, 6, "single.json");
  ASSERT_EQ(single.status, 0) << single.err;
  WorkerRun local = Execute("local-sgd", 2, 0, 6, "local.json", R"({"sync_every": 1})");
  ASSERT_EQ(local.status, 0) << local.err;
  double a = ReadJson(Path("single.json"))["final_loss"].get<double>();
  double b = ReadJson(Path("local.json"))["final_loss"].get<double>();
  EXPECT_TRUE(std::isfinite(a));
  EXPECT_NEAR(a, b, 1e-4);
}

TEST_F(Plugin, ResumingFromItsCheckpointContinuesExactly) {
  ASSERT_EQ(Execute("local-sgd", 2, 0, 8, "straight.json").status, 0);
  ASSERT_EQ(Execute("local-sgd", 2, 0, 3, "part.json").status, 0);
  // Resume the same checkpoint folder from step 3.
  std::vector<std::string> args = {"execute",
                                   "--task",
                                   task_,
                                   "--technique",
                                   "local-sgd",
                                   "--gpus",
                                   "2",
                                   "--out",
                                   Path("rest.json"),
                                   "--from-step",
                                   "3",
                                   "--to-step",
                                   "8",
                                   "--checkpoint-dir",
                                   Path("ck-part.json"),
                                   "--plugin",
                                   LOCAL_SGD_PLUGIN};
  WorkerRun rest = RunWorker(args, Path("rest"));
  ASSERT_EQ(rest.status, 0) << rest.err;
  // The straight run averaged at its step-8 checkpoint only; the split run
  // averaged at step 3 too, so the two differ slightly but both train.
  double straight = ReadJson(Path("straight.json"))["final_loss"].get<double>();
  double resumed = ReadJson(Path("rest.json"))["final_loss"].get<double>();
  EXPECT_EQ(ReadJson(Path("rest.json"))["completed_steps"], 8);
  EXPECT_NEAR(straight, resumed, 0.05 * std::abs(straight) + 1e-3);
  // Resuming is deterministic: the same split again gives the same loss.
  ASSERT_EQ(Execute("local-sgd", 2, 0, 3, "part2.json").status, 0);
  args[14] = Path("ck-part2.json");
  args[8] = Path("rest2.json");
  ASSERT_EQ(RunWorker(args, Path("rest2")).status, 0);
  EXPECT_NEAR(ReadJson(Path("rest2.json"))["final_loss"].get<double>(), resumed, 1e-6);
}

struct BadPlugin {
  const char* path;
  const char* message;
};

class BadPlugins : public Plugin, public ::testing::WithParamInterface<BadPlugin> {};

TEST_P(BadPlugins, AreRefusedWithExit2AndAClearMessage) {
  WorkerRun run = RunWorker({"techniques", "--plugin", GetParam().path}, Path("bad"));
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.err, HasSubstr(GetParam().path));
  EXPECT_THAT(run.err, HasSubstr(GetParam().message));
  // Also when training is asked for: nothing runs.
  run = RunWorker({"search", "--task", task_, "--technique", "single", "--gpus", "1", "--out",
                   Path("r.json"), "--plugin", GetParam().path},
                  Path("bad-search"));
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.err, HasSubstr(GetParam().message));
  EXPECT_FALSE(std::filesystem::exists(Path("r.json")));
}

INSTANTIATE_TEST_SUITE_P(
    Worker, BadPlugins,
    ::testing::Values(BadPlugin{"/nonexistent/libnothing.so", "plug-in not found"},
                      BadPlugin{NO_ENTRY_PLUGIN, "not a Saturn technique plug-in"},
                      BadPlugin{WRONG_VERSION_PLUGIN, "API version 999"},
                      BadPlugin{DUPLICATE_PLUGIN, "'ddp' is already registered"}));

TEST_F(Plugin, AnUnknownTechniqueNamesTheKnownOnes) {
  WorkerRun run = RunWorker({"search", "--task", task_, "--technique", "local-sgd", "--gpus", "2",
                             "--out", Path("r.json")},
                            Path("unknown"));
  EXPECT_EQ(run.status, 2);
  EXPECT_THAT(run.err, HasSubstr("unknown technique"));
  EXPECT_THAT(run.err, HasSubstr("fsdp"));
}

}  // namespace
}  // namespace saturn::testing
