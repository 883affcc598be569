#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "common/error.h"
#include "contracts/event_kinds.h"
#include "contracts/events.h"
#include "contracts/profile.h"

namespace saturn {
namespace {

TEST(EventKinds, EveryKindHasOneNameThatReadsBack) {
  for (EventKind kind : AllEventKinds()) {
    std::string name(ToString(kind));
    ASSERT_EQ(EventKindFromString(name), kind) << name;
  }
  EXPECT_EQ(EventKindFromString("task_teleported"), std::nullopt);
}

// A log from a newer build may hold kinds this one does not know: they are
// kept by name and written back unchanged.
TEST(EventKinds, AnUnknownKindIsKeptByName) {
  std::vector<Event> events =
      ParseEventLines("{\"t\":1.0,\"event\":\"task_teleported\",\"task\":\"a\"}\n", "e.jsonl");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].kind, EventKind::kUnknown);
  EXPECT_EQ(EventToJsonLine(events[0]),
            "{\"event\":\"task_teleported\",\"t\":1.0,\"task\":\"a\"}\n");
}

TEST(EventKinds, HelpersWriteTheLinesOfTheEventLog) {
  events::TaskPlace at{"a", "ddp", 2, "n0", {0, 1}};
  events::TaskPlace unplaced;
  unplaced.task = "b";
  EXPECT_EQ(EventToJsonLine(events::TaskStarted(1.5, at, {0.25, 10})),
            "{\"done\":0.25,\"event\":\"task_started\",\"gpu_ids\":[0,1],\"gpus\":2,"
            "\"node\":\"n0\",\"step\":10,\"t\":1.5,\"task\":\"a\",\"technique\":\"ddp\"}\n");
  EXPECT_EQ(EventToJsonLine(events::TaskPreempted(2.0, unplaced, {0.5, 5})),
            "{\"done\":0.5,\"event\":\"task_stopped\",\"reason\":\"preempted\",\"step\":5,"
            "\"t\":2.0,\"task\":\"b\"}\n");
  // The simulator's tasks count no steps: the same kinds without them.
  EXPECT_EQ(EventToJsonLine(events::TaskPreempted(2.0, unplaced, {0.5})),
            "{\"done\":0.5,\"event\":\"task_stopped\",\"reason\":\"preempted\",\"t\":2.0,"
            "\"task\":\"b\"}\n");
  EXPECT_EQ(EventToJsonLine(events::TaskFailed(3.0, at, "exit 1", 2, true, 4)),
            "{\"attempt\":2,\"error\":\"exit 1\",\"event\":\"task_failed\",\"gave_up\":true,"
            "\"gpu_ids\":[0,1],\"gpus\":2,\"node\":\"n0\",\"step\":4,\"t\":3.0,\"task\":\"a\","
            "\"technique\":\"ddp\"}\n");
  EXPECT_EQ(
      EventToJsonLine(events::PlanSwitched(4.0, events::SwitchWhy::kOtherNodes, 12.0, 9.0, {})),
      "{\"arrived\":[],\"event\":\"plan_switched\",\"new_end_s\":9.0,\"old_end_s\":12.0,"
      "\"preempted\":[],\"t\":4.0,\"why\":\"other nodes\"}\n");
  EXPECT_EQ(EventToJsonLine(events::RunFinished(5.0, 2, 1, 4.5)),
            "{\"event\":\"run_finished\",\"failed\":1,\"finished\":2,\"makespan_s\":4.5,"
            "\"t\":5.0}\n");
  EXPECT_EQ(EventToJsonLine(events::CheckpointSkipped(6.0, "a", 40, "meta.json: torn", 30)),
            "{\"event\":\"checkpoint_skipped\",\"from_step\":30,\"problem\":\"meta.json: "
            "torn\",\"step\":40,\"t\":6.0,\"task\":\"a\"}\n");
}

// The profile's arrival_s column (saturn simulate, the benches): the latest
// of a task's rows; a value that is not seconds is named by line and column.
TEST(ArrivalTimes, ReadsEachTasksLatestArrivalAndNamesABadValue) {
  Cluster cluster;
  cluster.nodes.push_back({});
  cluster.nodes[0].name = "n0";
  cluster.nodes[0].gpus = 2;
  ProfileTable p = ParseProfileCsv(
      "task,technique,gpus,runtime_s,arrival_s\na,single,1,5,10\na,ddp,2,3,12\nb,single,1,4,\n",
      "p.csv", cluster);
  std::map<std::string, double> arrival = ArrivalTimes(p, "p.csv");
  EXPECT_EQ(arrival, (std::map<std::string, double>{{"a", 12.0}}));
  ProfileTable bad = ParseProfileCsv("task,technique,gpus,runtime_s,arrival_s\na,single,1,5,soon\n",
                                     "p.csv", cluster);
  try {
    ArrivalTimes(bad, "p.csv");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "p.csv:2: arrival_s: expected a number of seconds >= 0, got 'soon'");
  }
}

// Bug: a running task cancelled got only task_cancelled, which did not end
// its bar, so the report's Gantt drew it running to the end of the trace.
TEST(BusyIntervals, ACancelledTaskStopsWhereItWasCancelled) {
  events::TaskPlace at{"a", "ddp", 2, "n0", {0, 1}};
  std::vector<Event> trace = {events::TaskStarted(1.0, at, {0.0, 0}),
                              events::TaskCancelled(4.0, at, 30),
                              events::RunFinished(9.0, 0, 0, 9.0)};
  std::vector<BusyInterval> busy = BusyIntervals(trace, 9.0);
  ASSERT_EQ(busy.size(), 1u);
  EXPECT_EQ(busy[0].start, 1.0);
  EXPECT_EQ(busy[0].end, 4.0);
  EXPECT_EQ(busy[0].how_it_ended, "task_cancelled");
}

// Logs written before the vocabulary had `done`, `why` and `arrived` still
// load (a resume of an older run reads them).
TEST(EventKinds, OlderLogsStillLoad) {
  std::string old =
      "{\"event\":\"plan\",\"makespan_s\":9.0,\"solver\":\"auto\",\"t\":0.0}\n"
      "{\"event\":\"task_started\",\"gpu_ids\":[0],\"gpus\":1,\"node\":\"n0\",\"step\":0,"
      "\"t\":0.5,\"task\":\"a\",\"technique\":\"single\"}\n"
      "{\"event\":\"plan_switched\",\"new_end_s\":8.0,\"old_end_s\":9.0,\"preempted\":[\"a\"],"
      "\"t\":2.0}\n"
      "{\"event\":\"task_stopped\",\"reason\":\"preempted\",\"step\":4,\"t\":2.0,\"task\":\"a\"}\n";
  std::vector<Event> events = ParseEventLines(old, "events.jsonl");
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[2].kind, EventKind::kPlanSwitched);
  std::vector<BusyInterval> busy = BusyIntervals(events, 9.0);
  ASSERT_EQ(busy.size(), 1u);
  EXPECT_EQ(busy[0].end, 2.0);
}

}  // namespace
}  // namespace saturn
