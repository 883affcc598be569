// The slurm launch backend with Slurm's answers injected: reading an
// allocation, checking a cluster and a shared folder against it, the srun
// command line, and pre-emption through scancel. slurm_test.sh runs the same
// backend against a real Slurm.
#include "launch/slurm_backend.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "common/error.h"
#include "common/fs.h"
#include "contracts/cluster.h"

namespace saturn {
namespace {

namespace fs = std::filesystem;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

// What `scontrol --details show job 15` says of two nodes with 4 and 2 GPUs
// (trimmed), and of three nodes where two share a detail line.
const char* const kTwoNodes =
    "JobId=15 JobName=saturn\n"
    "   ReqNodeList=n[1-2] ExcNodeList=(null)\n"
    "   NodeList=n[1-2]\n"
    "   BatchHost=n1\n"
    "   NumNodes=2 NumCPUs=16 NumTasks=2 CPUs/Task=1 ReqB:S:C:T=0:0:*:*\n"
    "   JOB_GRES=gpu:6\n"
    "     Nodes=n1 CPU_IDs=0-7 Mem=0 GRES=gpu:4(IDX:0-3)\n"
    "     Nodes=n2 CPU_IDs=0-7 Mem=0 GRES=gpu:2(IDX:0-1)\n"
    "   MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0\n";
const char* const kThreeNodes =
    "JobId=16 JobName=saturn\n"
    "   NodeList=g[1-3]\n"
    "     Nodes=g1 CPU_IDs=0-63 Mem=0 GRES=gpu:a100:8(IDX:0-7)\n"
    "     Nodes=g[2-3] CPU_IDs=0-31 Mem=0 GRES=gpu:v100:2(IDX:0-1),gpu:t4:2(IDX:2-3)\n";
const char* const kNoGpus =
    "JobId=17 JobName=saturn\n"
    "   NodeList=n1\n"
    "     Nodes=n1 CPU_IDs=0 Mem=0 GRES=\n";

class Slurm : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/saturn_slurm_" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }

  // Answers the backend's commands the way Slurm would, and records them.
  CommandOutput Answer(const std::vector<std::string>& argv) {
    calls_.push_back(argv);
    if (argv[0] == "scontrol" && argv[1] == "--details") return {0, show_job_, ""};
    if (argv[0] == "scontrol" && argv[2] == "hostnames") {
      std::map<std::string, std::string> lists = {
          {"n[1-2]", "n1\nn2\n"},     {"n1", "n1\n"}, {"n2", "n2\n"},
          {"g[1-3]", "g1\ng2\ng3\n"}, {"g1", "g1\n"}, {"g[2-3]", "g2\ng3\n"}};
      return {0, lists.at(argv[3]), ""};
    }
    if (argv[0] == "scontrol" && argv[1] == "--oneliner") return {0, steps_, ""};
    if (argv[0] == "scancel") return {225 << 8, "", "scancel: error: Invalid job id specified\n"};
    auto srun = std::find(argv.begin(), argv.end(), "srun");
    if (srun != argv.end() && shared_check_) return shared_check_(argv);
    ADD_FAILURE() << "unexpected command " << argv[0];
    return {1 << 8, "", ""};
  }

  SlurmBackend Backend(const std::string& show_job = kTwoNodes) {
    show_job_ = show_job;
    SlurmOptions o;
    o.job_id = "15";
    o.host = "login1.example.org";
    o.run = [this](const std::vector<std::string>& argv) { return Answer(argv); };
    o.kill_escalation_s = 0.2;
    return SlurmBackend(o);
  }

  static Cluster TwoNodes(int gpus1, int gpus2, const std::string& device = "cpu") {
    Cluster c;
    c.nodes = {{"n1", gpus1, std::nullopt, device, 1, ""},
               {"n2", gpus2, std::nullopt, device, 1, ""}};
    return c;
  }

  // A step line of `scontrol --oneliner show step` for an srun on `host`.
  static std::string StepLine(const std::string& id, pid_t pid,
                              const std::string& host = "login1") {
    return "StepId=" + id + " UserId=0 StartTime=2026-11-30T11:24:58 TimeLimit=UNLIMITED " +
           "State=RUNNING Partition=test NodeList=n1 Nodes=1 CPUs=2 Tasks=2 Name=saturn " +
           "SrunHost:Pid=" + host + ":" + std::to_string(pid) + " TresPerStep=cpu:2,gres:gpu:2\n";
  }

  static Process Sleeper(const std::string& script = "exec sleep 30") {
    ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", script};
    return Process::Spawn(spec);
  }

  std::string dir_;
  std::string show_job_;
  std::string steps_;
  std::function<CommandOutput(const std::vector<std::string>&)> shared_check_;
  std::vector<std::vector<std::string>> calls_;
};

TEST(GresGpus, CountsGpusOfEveryTypeAndNothingElse) {
  EXPECT_EQ(GresGpus("gpu:4(IDX:0-3)"), 4);
  EXPECT_EQ(GresGpus("gpu:a100:2(IDX:0-1),gpu:v100:1(IDX:2)"), 3);
  EXPECT_EQ(GresGpus("gpu:2(IDX:0,2)"), 2);
  EXPECT_EQ(GresGpus("mps:100(IDX:0),gpu:1(IDX:0)"), 1);
  EXPECT_EQ(GresGpus(""), 0);
  EXPECT_EQ(GresGpus("(null)"), 0);
}

TEST_F(Slurm, ReadsNodesAndGpusPerNodeOfTheAllocation) {
  show_job_ = kThreeNodes;
  SlurmAllocation a =
      ReadAllocation("16", [this](const std::vector<std::string>& argv) { return Answer(argv); });
  EXPECT_THAT(a.nodes, ElementsAre("g1", "g2", "g3"));
  EXPECT_EQ(a.gpus, (std::map<std::string, int>{{"g1", 8}, {"g2", 4}, {"g3", 4}}));
  show_job_ = kNoGpus;
  a = ReadAllocation("17", [this](const std::vector<std::string>& argv) { return Answer(argv); });
  EXPECT_EQ(a.gpus, (std::map<std::string, int>{{"n1", 0}}));
}

TEST_F(Slurm, ScontrolFailingIsAnError) {
  auto failing = [](const std::vector<std::string>&) {
    return CommandOutput{1 << 8, "", "slurm_load_jobs error: Invalid job id specified\n"};
  };
  try {
    ReadAllocation("99", failing);
    FAIL() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("Invalid job id specified"));
  }
}

TEST_F(Slurm, AcceptsAClusterTheAllocationHolds) {
  SlurmBackend b = Backend();
  b.CheckCluster(TwoNodes(4, 2));
  b.CheckCluster(TwoNodes(2, 1, "cuda"));
}

TEST_F(Slurm, RefusesANodeOutsideTheAllocation) {
  SlurmBackend b = Backend();
  Cluster c = TwoNodes(4, 2);
  c.nodes[1].name = "n3";
  try {
    b.CheckCluster(c);
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("'n3': is not a node of Slurm allocation 15 (n1, n2)"));
  }
}

TEST_F(Slurm, RefusesMoreGpusThanTheAllocationHoldsOnANode) {
  SlurmBackend b = Backend();
  try {
    b.CheckCluster(TwoNodes(4, 4));
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("'n2': has 2 GPUs in Slurm allocation 15 but the workload's "
                                    "cluster gives it 4"));
  }
}

TEST_F(Slurm, CpuDevicesNeedNoGpusButCudaDevicesDo) {
  SlurmBackend b = Backend(kNoGpus);
  Cluster c;
  c.nodes = {{"n1", 4, std::nullopt, "cpu", 1, ""}};
  b.CheckCluster(c);
  c.nodes[0].device = "cuda";
  EXPECT_THROW(b.CheckCluster(c), InputError);
}

TEST_F(Slurm, ASharedFolderPassesTheCheck) {
  SlurmBackend b = Backend();
  std::vector<std::string> seen;
  shared_check_ = [&](const std::vector<std::string>& argv) {
    seen = argv;
    std::string marker = ReadFile(argv.back());
    return CommandOutput{0, "n2 " + marker + "n1 " + marker, ""};
  };
  b.CheckSharedDir(dir_, TwoNodes(4, 2));
  EXPECT_THAT(seen, Contains("--nodelist=n1,n2"));
  EXPECT_THAT(seen, Contains("--ntasks-per-node=1"));
  EXPECT_THAT(seen, Contains("--overlap"));  // needs no GPUs, waits for none
  EXPECT_FALSE(fs::exists(seen.back())) << "the marker is left behind";
}

TEST_F(Slurm, AFolderOneNodeCannotSeeIsRefusedNamingTheNode) {
  SlurmBackend b = Backend();
  shared_check_ = [&](const std::vector<std::string>& argv) {
    // n2 has its own, empty, folder at that path.
    return CommandOutput{0, "n1 " + ReadFile(argv.back()) + "n2 \n", ""};
  };
  try {
    b.CheckSharedDir(dir_, TwoNodes(4, 2));
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr(dir_ + ": not visible from Slurm node n2 "));
    EXPECT_THAT(e.what(), Not(HasSubstr("n1,")));
  }
}

TEST_F(Slurm, AFailedCheckStepIsNotBlamedOnTheFolder) {
  SlurmBackend b = Backend();
  shared_check_ = [&](const std::vector<std::string>&) {
    return CommandOutput{1 << 8, "", "srun: error: Unable to create step for job 15\n"};
  };
  try {
    b.CheckSharedDir(dir_, TwoNodes(4, 2));
    FAIL() << "accepted";
  } catch (const InputError& e) {
    FAIL() << "an input error: " << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("Unable to create step"));
  }
}

TEST_F(Slurm, AStepPerTaskOnThePlannedNodeWithThePlannedGpuCount) {
  SlurmBackend b = Backend();
  WorkerJob job;
  job.argv = {"saturn-worker", "execute", "--gpus", "2", "--rank-from-env"};
  job.node = "n2";
  job.gpu_ids = {0, 1};
  job.ranks = 2;
  job.cwd = "/shared/w";
  std::vector<std::string> argv = b.SrunArgv(job);
  auto srun = std::find(argv.begin(), argv.end(), "srun");
  ASSERT_NE(srun, argv.end());
  std::vector<std::string> options(srun + 1, std::find(argv.begin(), argv.end(), "--"));
  EXPECT_THAT(options, Contains("--jobid=15"));
  EXPECT_THAT(options, Contains("--exact"));
  EXPECT_THAT(options, Contains("--nodes=1"));
  EXPECT_THAT(options, Contains("--nodelist=n2"));
  EXPECT_THAT(options, Contains("--ntasks=2"));
  EXPECT_THAT(options, Contains("--gpus=2"));
  EXPECT_THAT(options, Contains("--kill-on-bad-exit=1"));
  EXPECT_THAT(options, Contains("--chdir=/shared/w"));
  // The worker's command line comes last, untouched.
  EXPECT_EQ(std::vector<std::string>(argv.end() - 5, argv.end()), job.argv);
  // An sbatch --gpus-per-node must not reshape the step, nor the batch
  // step's devices leak into it.
  std::vector<std::string> env(argv.begin(), srun);
  EXPECT_THAT(env, Contains("SLURM_GPUS_PER_NODE"));
  EXPECT_THAT(env, Contains("CUDA_VISIBLE_DEVICES"));
}

TEST_F(Slurm, OneTaskWhenTheWorkerLaunchesItsOwnRanks) {
  SlurmBackend b = Backend();
  WorkerJob trial;  // a profiling trial: any node
  trial.argv = {"saturn-worker", "search", "--gpus", "4"};
  trial.gpu_ids = {0, 1, 2, 3};
  trial.ranks = 4;
  std::vector<std::string> argv = b.SrunArgv(trial);
  EXPECT_THAT(argv, Contains("--ntasks=1"));
  EXPECT_THAT(argv, Contains("--gpus=4"));
  for (const std::string& a : argv)
    EXPECT_THAT(a, Not(HasSubstr("--nodelist")));
}

TEST_F(Slurm, ExtraSrunOptionsGoBeforeTheCommand) {
  show_job_ = kTwoNodes;
  SlurmOptions o;
  o.job_id = "15";
  o.srun_args = {"--cpus-per-gpu=8", "--mem-per-gpu=40G"};
  o.run = [this](const std::vector<std::string>& argv) { return Answer(argv); };
  SlurmBackend b(o);
  WorkerJob job;
  job.argv = {"w"};
  job.node = "n1";
  job.gpu_ids = {0};
  std::vector<std::string> argv = b.SrunArgv(job);
  ASSERT_GE(argv.size(), 4u);
  EXPECT_THAT(std::vector<std::string>(argv.end() - 4, argv.end()),
              ElementsAre("--cpus-per-gpu=8", "--mem-per-gpu=40G", "--", "w"));
}

TEST_F(Slurm, CpuDevicesWithoutAllocatedGpusAskForNone) {
  SlurmBackend b = Backend(kNoGpus);
  WorkerJob job;
  job.argv = {"w"};
  job.node = "n1";
  job.gpu_ids = {0, 1};
  for (const std::string& a : b.SrunArgv(job))
    EXPECT_THAT(a, Not(HasSubstr("--gpus")));
}

TEST_F(Slurm, StopSignalsTheRunningStepThroughTheController) {
  SlurmBackend b = Backend();
  Process p = Sleeper();
  // Another host's srun may have the same pid.
  steps_ = StepLine("15.4", p.pid(), "login2") + StepLine("15.2", p.pid() + 1) +
           StepLine("15.3", p.pid());
  b.Stop(p);
  EXPECT_THAT(calls_.back(), ElementsAre("scancel", "--signal=TERM", "15.3"));
  // srun itself is left alone: a SIGTERM would make it SIGKILL the tasks.
  EXPECT_FALSE(p.WaitFor(0.3).has_value());
  p.KillGroup();
  p.Wait();
}

TEST_F(Slurm, StopWithdrawsAStepNotCreatedYet) {
  SlurmBackend b = Backend();
  Process p = Sleeper();
  steps_ = "StepId=15.TDB UserId=0 StartTime=Unknown State=PENDING SrunHost:Pid=login1:" +
           std::to_string(p.pid()) + "\n";
  b.Stop(p);
  EXPECT_NE(calls_.back()[0], "scancel");
  std::optional<int> status = p.WaitFor(5.0);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGTERM);
}

TEST_F(Slurm, KillCancelsTheStepAndEndsSrun) {
  SlurmBackend b = Backend();
  Process p = Sleeper();
  steps_ = StepLine("15.3", p.pid());
  b.Kill(p);
  EXPECT_THAT(calls_.back(), ElementsAre("scancel", "15.3"));
  EXPECT_TRUE(p.WaitFor(5.0).has_value());
}

TEST_F(Slurm, KillForcesAnSrunThatDoesNotEnd) {
  SlurmBackend b = Backend();
  std::string ready = dir_ + "/ignoring";
  Process p = Sleeper("trap '' TERM; touch " + ready + "; exec sleep 30");
  for (int i = 0; i < 500 && !fs::exists(ready); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  steps_ = StepLine("15.3", p.pid());
  b.Kill(p);
  size_t calls = calls_.size();
  b.Kill(p);  // within the escalation time: nothing new
  EXPECT_EQ(calls_.size(), calls);
  EXPECT_FALSE(p.WaitFor(0.3).has_value());
  b.Kill(p);
  std::optional<int> status = p.WaitFor(5.0);
  ASSERT_TRUE(status.has_value());
  EXPECT_TRUE(WIFSIGNALED(*status) && WTERMSIG(*status) == SIGKILL);
}

TEST(MakeSlurmBackend, RefusesToRunOutsideAnAllocation) {
  std::map<std::string, std::string> saved;
  for (const char* name : {"SLURM_JOB_ID", "SLURM_JOBID"}) {
    if (const char* v = std::getenv(name)) saved[name] = v;
    ::unsetenv(name);
  }
  try {
    MakeSlurmBackend();
    ADD_FAILURE() << "accepted";
  } catch (const InputError& e) {
    EXPECT_THAT(e.what(), HasSubstr("must run inside a Slurm allocation"));
  }
  for (const auto& [name, value] : saved)
    ::setenv(name.c_str(), value.c_str(), 1);
}

TEST(RunCommand, CapturesOutputErrorsAndStatus) {
  CommandOutput r = RunCommand({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"});
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(ExitCode(r.status), 3);
  r = RunCommand({"sleep", "30"}, 0.3);
  EXPECT_TRUE(WIFSIGNALED(r.status));
}

}  // namespace
}  // namespace saturn
