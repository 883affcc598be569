// Early stopping in a pack (executor/dispatcher.h): `saturn run` packs LoRA
// tasks under an `early_stop:` rule; the rule judges each member on its own
// evaluations; a member it stops leaves the pack, stopped, and the pack goes
// on without it from the step it stood at. What the rule stops is what an
// independent ASHA (tests/testing/reference_asha.h) stops fed the logged
// evaluations, and the members that finish end as the same tasks trained
// alone (`--no-pack`, beside it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "common/fs.h"
#include "contracts/events.h"
#include "tests/e2e/saturn_test_base.h"
#include "tests/testing/reference_asha.h"

namespace saturn {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

class PackEarlyStop : public SaturnTestBase {
 protected:
  // Four LoRA tasks over one random base, 40 steps each, evaluating every
  // 10 under ASHA (rungs at 10 and 20); two learning rates far too low to
  // keep up. Profiled so that a pack of four steps in 1.3 s where each
  // alone takes 1 s: the plan packs.
  void Write() {
    std::string corpus;
    for (int i = 0; i < 400; ++i)
      corpus += "the rule stops members of a pack " + std::to_string(i % 11) + "\n";
    WriteFileAtomic(dir_ + "/corpus.txt", corpus);
    std::string text = "cluster: {nodes: [{name: n0, gpus: 1, gpu_memory_gib: 2}]}\ntasks:\n";
    std::string profile =
        "task,technique,gpus,runtime_s,step_s,steps,pack_class,pack_rows,pack_step_s\n";
    const char* lrs[] = {"0.01", "0.0001", "0.03", "0.00003"};
    for (int i = 0; i < 4; ++i) {
      std::string name = "m" + std::to_string(i);
      text += "  - name: " + name +
              "\n    model: {type: gpt, layers: 1, d_model: 16, heads: 2, seq_len: 8}"
              "\n    data: {type: text, path: corpus.txt}\n    batch_size: 4\n    seed: 7"
              "\n    optimizer: {type: adamw, lr: " +
              lrs[i] +
              "}\n    finetune: {lora: {rank: 2}}\n    steps: 40"
              "\n    eval: {every: 10, batches: 1}\n";
      profile += name + ",single,1,42,1.0,40,gpt-lora,4,4:1.0 8:1.1 12:1.2 16:1.3\n";
    }
    text += "early_stop: {asha: {metric: eval_loss, grace_steps: 10, reduction_factor: 2}}\n";
    WriteFileAtomic(dir_ + "/w.yaml", text);
    WriteFileAtomic(dir_ + "/profile.csv", profile);
  }

  // The tasks the reference ASHA stops, fed `run`'s logged evaluations in
  // order; the tasks the run says its rule stopped in `*stopped`, each with
  // its task_early_stopped event.
  std::set<std::string> ReferenceStops(const std::string& run,
                                       std::map<std::string, Event>* stopped) {
    test::ReferenceAsha asha(10, 2, 40);
    std::set<std::string> expected;
    std::set<std::pair<std::string, long>> seen;
    for (const Event& e : ParseEventLines(ReadFile(dir_ + "/" + run + "/events.jsonl"), "e")) {
      if (e.kind == EventKind::kTaskEarlyStopped) (*stopped)[e.task] = e;
      if (e.kind != EventKind::kTaskEvaluated || expected.count(e.task)) continue;
      long step = e.extra["step"].get<long>();
      if (seen.emplace(e.task, step).second &&
          asha.Stops(e.task, step, e.extra["eval_loss"].get<double>()))
        expected.insert(e.task);
    }
    return expected;
  }
};

TEST_F(PackEarlyStop, TheRuleStopsMembersOneByOneAndThePackGoesOnWithoutThem) {
  Write();
  int code = 0;
  std::map<std::string, json> p = TasksByName(RunReport("packed", "", &code));
  ASSERT_EQ(code, 0) << Log();
  EXPECT_THAT(Log(), HasSubstr("pack-1: 4 tasks train together from step 0"));
  std::map<std::string, Event> stopped;
  std::set<std::string> expected = ReferenceStops("packed", &stopped);
  ASSERT_FALSE(expected.empty()) << "the reference stops nothing: the test cannot fail";
  ASSERT_LT(expected.size(), 4u);
  std::set<std::string> names;
  for (const auto& [name, e] : stopped)
    names.insert(name);
  EXPECT_EQ(names, expected);
  // Each left the pack a step or two past the deciding evaluation (the
  // worker sees the executor's request after its next step; a step takes
  // milliseconds here), and the pack went on without it in the same worker.
  ASSERT_FALSE(stopped.empty());
  for (const auto& [name, e] : stopped) {
    const long stood = e.extra["step"].get<long>();
    EXPECT_GE(stood, 11) << name;
    EXPECT_LE(stood, 20) << name;
    EXPECT_THAT(Log(), HasSubstr("pack-1: " + name + " was stopped by its rule at step " +
                                 std::to_string(stood) + ";"))
        << Log();
  }
  EXPECT_THAT(Log(), Not(HasSubstr("train together from step 1"))) << Log();
  std::map<std::string, json> a = TasksByName(RunReport("alone", "--no-pack", &code));
  ASSERT_EQ(code, 0) << Log();
  int compared = 0;
  for (const auto& [name, t] : p) {
    EXPECT_EQ(t.value("pack", ""), "pack-1") << name;
    if (stopped.count(name)) {
      // Judged at the first rung; it left the pack where it stood, where
      // its own checkpoint is.
      const Event& e = stopped[name];
      const long stood = e.extra["step"].get<long>();
      EXPECT_EQ(t["status"], "stopped") << name;
      EXPECT_EQ(e.extra["eval_step"], 10) << name;
      EXPECT_EQ(t["steps_done"], stood) << name;
      EXPECT_TRUE(std::filesystem::exists(dir_ + "/packed/tasks/" + name +
                                          "/checkpoints/checkpoint-" + std::to_string(stood)))
          << name;
      continue;
    }
    EXPECT_EQ(t["status"], "finished") << name;
    EXPECT_EQ(t["attempts"], 1) << name;  // nothing started again
    if (a[name]["status"] != "finished") continue;
    // Its trajectory through the pack, with and without the stopped: the
    // same task's alone.
    EXPECT_NEAR(t["final_loss"].get<double>(), a[name]["final_loss"].get<double>(), 1e-4) << name;
    EXPECT_NEAR(t["final_eval_loss"].get<double>(), a[name]["final_eval_loss"].get<double>(), 1e-4)
        << name;
    ++compared;
  }
  EXPECT_GE(compared, 1);
}

}  // namespace
}  // namespace saturn
