// bench/paper: the paper's evaluation, reproduced on the simulator. Prints
// every table, writes SVG charts and summary.md into the output folder; see
// bench/paper/README.md for what each section means.
//
//   paper_bench                      # default: 5 seeds, 10 s solver limits (15-20 min)
//   paper_bench --quick              # smoke test: 1 seed, 1 s limits, one-node instances
//   paper_bench --full               # 10 seeds, 60 s solver limits, 3000 online jobs
//   paper_bench --only noise,ladder  # some sections only
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <sstream>
#include <string>
#include <vector>

#include "bench/paper/lab.h"
#include "bench/paper/sections.h"
#include "bench/paper/table.h"
#include "common/clock.h"
#include "common/fs.h"
#include "planner/planner.h"
#include "sim/simulator.h"

namespace saturn::bench {
namespace {

const char* const kSections[] = {"fig5",   "noise", "ladder", "sensitivity",
                                 "online", "types", "lora",   "scale"};

void Usage() {
  std::fprintf(stderr,
               "usage: paper_bench [--quick | --full] [--out DIR] [--seeds N] [--solve-limit S]\n"
               "                   [--replan-work W] [--interval S] [--jobs N] [--no-scale]\n"
               "                   [--only SECTION,...]   sections: fig5 noise ladder "
               "sensitivity online types lora scale\n");
}

// Parses argv into `c`; false on a bad argument. --quick and --full set
// several values at once, so they are applied before the finer options.
bool Parse(int argc, char** argv, Config* c, bool* scale_child) {
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) {
      c->mode = "quick";
      c->seeds = 1;
      c->sensitivity_seeds = 1;
      c->solve_limit_s = 1;
      c->replan_limit_s = 1;
      c->online_jobs = 200;
      c->scale = false;
    } else if (!std::strcmp(argv[i], "--full")) {
      c->mode = "full";
      c->seeds = 10;
      c->sensitivity_seeds = 10;
      c->solve_limit_s = 60;
      c->online_jobs = 3000;
    }
  }
  auto number = [&](int& i, double* out) {
    if (i + 1 >= argc) return false;
    char* end = nullptr;
    *out = std::strtod(argv[++i], &end);
    return *end == '\0';
  };
  for (int i = 1; i < argc; ++i) {
    double v = 0;
    std::string a = argv[i];
    if (a == "--quick" || a == "--full") continue;
    if (a == "--scale-child") {
      *scale_child = true;
    } else if (a == "--no-scale") {
      c->scale = false;
    } else if (a == "--out" && i + 1 < argc) {
      c->out_dir = argv[++i];
    } else if (a == "--seeds" && number(i, &v) && v >= 1) {
      c->seeds = static_cast<int>(v);
      c->sensitivity_seeds = std::min(c->sensitivity_seeds, c->seeds);
    } else if (a == "--solve-limit" && number(i, &v) && v > 0) {
      c->solve_limit_s = v;
    } else if (a == "--replan-work" && number(i, &v) && v > 0) {
      c->replan_work = v;
    } else if (a == "--interval" && number(i, &v) && v > 0) {
      c->interval_s = v;
    } else if (a == "--jobs" && number(i, &v) && v >= 1) {
      c->online_jobs = static_cast<int>(v);
    } else if (a == "--only" && i + 1 < argc) {
      std::stringstream list(argv[++i]);
      std::string name;
      while (std::getline(list, name, ',')) {
        bool known = false;
        for (const char* s : kSections)
          known = known || name == s;
        if (!known) return false;
        c->only.insert(name);
      }
    } else {
      return false;
    }
  }
  return true;
}

struct ScaleResult {
  bool ok = false;
  double wall_s = 0, rss_mib = 0, makespan_s = 0, planned_s = 0, clairvoyant_s = 0;
  int replans = 0, switches = 0;
};

// The scale run itself, in a process of its own (--scale-child) so that its
// peak RSS is its own and not the harness's. Prints one line for the parent.
int ScaleChild(const Config& cfg) {
  SteadyClock clock;
  double t0 = clock.Now();
  Instance inst = GavelInstance(LoadGavelThroughputs(SourceDir() + "/bench/data/gavel_v100.csv"),
                                10000, 128, 8, 1);
  Problem problem = ProblemFromProfile(inst.profile, inst.cluster);
  SimOptions o;
  o.policy.solver = "auto";
  o.policy.time_limit_s = cfg.replan_limit_s;
  o.policy.work_scale = cfg.replan_work;
  o.policy.seed = 1;
  o.policy.threshold_s = cfg.threshold_s;
  o.policy.switch_cost_s = cfg.switch_cost_s;
  o.introspection = true;
  o.interval_s = cfg.interval_s;
  o.record_events = false;
  std::vector<std::vector<double>> truth = TruthWithNoise(problem, cfg.noise, 0.0, 1);
  SimResult r = Simulate(problem, truth, {}, o);
  double wall = clock.Now() - t0;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  // The clairvoyant plan: the same tasks planned with their true runtimes.
  Problem known = problem;
  for (int j = 0; j < known.NumTasks(); ++j) {
    for (size_t k = 0; k < known.tasks[j].options.size(); ++k)
      known.tasks[j].options[k].runtime_s = truth[j][k];
  }
  PlanRequest request;
  request.seed = 1;
  request.work_scale = cfg.replan_work;
  request.time_limit_s = 600;
  double clairvoyant = RunPlanner(known, request).plan.makespan_s;
  std::printf("scale %.3f %.1f %.1f %.1f %.1f %d %d\n", wall, usage.ru_maxrss / 1024.0,
              r.makespan_s, r.initial_plan.makespan_s, clairvoyant, r.replans, r.plan_switches);
  return 0;
}

// Runs this program again with --scale-child and the same arguments and
// reads its one line back.
ScaleResult RunScale(int argc, char** argv) {
  ScaleResult result;
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return result;
  self[n] = '\0';
  int fds[2];
  if (pipe(fds) != 0) return result;
  std::fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) return result;
  if (pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> args = {self, const_cast<char*>("--scale-child")};
    for (int i = 1; i < argc; ++i)
      args.push_back(argv[i]);
    args.push_back(nullptr);
    execv(self, args.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[512];
  for (ssize_t got; (got = read(fds[0], buf, sizeof buf)) > 0;)
    out.append(buf, static_cast<size_t>(got));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  result.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
              std::sscanf(out.c_str(), "scale %lf %lf %lf %lf %lf %d %d", &result.wall_s,
                          &result.rss_mib, &result.makespan_s, &result.planned_s,
                          &result.clairvoyant_s, &result.replans, &result.switches) == 7;
  return result;
}

void ScaleSection(const Config& cfg, int argc, char** argv, Report& report) {
  std::string intro =
      "GavelInstance(10,000 tasks, 128 nodes x 8 GPUs, seed 1), +-" + Fmt("%.0f", 100 * cfg.noise) +
      "% noise, auto planning and introspection every " + Fmt("%.0f", cfg.interval_s) +
      " simulated seconds, simulated to the end in a child process; wall time includes building "
      "the instance. Clairvoyant: the same tasks planned once with their true runtimes.";
  std::printf("\n== Scale ==\n%s\n", intro.c_str());
  report.markdown += "\n## Scale\n\n" + intro + "\n\n";
  ScaleResult r = RunScale(argc, argv);
  if (!r.ok) {
    std::printf("scale run failed\n");
    report.markdown += "The scale run failed.\n";
    report.targets.push_back({"scale: 10,000 tasks on 1,024 GPUs in <= 60 s", false, "run failed"});
    report.targets.push_back({"scale: <= 2 GiB memory", false, "run failed"});
    return;
  }
  Table t({"tasks", "GPUs", "wall s", "peak RSS MiB", "makespan h", "planned h", "clairvoyant h",
           "/ clairvoyant", "replans", "switches"});
  t.Add({"10000", "1024", Fmt("%.1f", r.wall_s), Fmt("%.0f", r.rss_mib),
         Fmt("%.1f", r.makespan_s / 3600), Fmt("%.1f", r.planned_s / 3600),
         Fmt("%.1f", r.clairvoyant_s / 3600), Fmt("%.4f", r.makespan_s / r.clairvoyant_s),
         std::to_string(r.replans), std::to_string(r.switches)});
  std::printf("%s", t.Text().c_str());
  report.markdown += t.Markdown() + "\n";
  report.targets.push_back(
      {"scale: 10,000 tasks on 1,024 GPUs simulated with introspection "
       "every " +
           Fmt("%.0f", cfg.interval_s) + " s in <= 60 s wall",
       r.wall_s <= 60, Fmt("%.1f s", r.wall_s)});
  report.targets.push_back({"scale: makespan <= 1.05x the clairvoyant plan's",
                            r.makespan_s <= 1.05 * r.clairvoyant_s,
                            Fmt("%.4fx", r.makespan_s / r.clairvoyant_s)});
  report.targets.push_back(
      {"scale: <= 2 GiB memory", r.rss_mib <= 2048, Fmt("peak RSS %.0f MiB", r.rss_mib)});
}

int Main(int argc, char** argv) {
  Config cfg;
  bool scale_child = false;
  if (!Parse(argc, argv, &cfg, &scale_child)) {
    Usage();
    return 2;
  }
  if (scale_child) return ScaleChild(cfg);

  SteadyClock clock;
  const double start = clock.Now();
  MakeDirectories(cfg.out_dir);
  Lab lab(cfg);
  Report report;
  std::printf(
      "bench/paper, mode %s: %d seeds, solver limit %g s, replans at work scale %g "
      "(limit %g s), noise +-%.0f%%, output %s\n",
      cfg.mode.c_str(), cfg.seeds, cfg.solve_limit_s, cfg.replan_work, cfg.replan_limit_s,
      100 * cfg.noise, cfg.out_dir.c_str());
  struct Step {
    const char* name;
    void (*run)(Lab&, Report&);
  };
  const Step steps[] = {{"fig5", Fig5Section},     {"noise", NoiseSection},
                        {"ladder", LadderSection}, {"sensitivity", SensitivitySection},
                        {"online", OnlineSection}, {"types", TypesSection},
                        {"lora", LoraSection}};
  std::string timings;
  for (const Step& step : steps) {
    if (!cfg.Wants(step.name)) continue;
    double t0 = clock.Now();
    step.run(lab, report);
    timings += Fmt("%s %.0f s, ", step.name, clock.Now() - t0);
    std::printf("(%s took %.0f s)\n", step.name, clock.Now() - t0);
  }
  if (cfg.scale && cfg.Wants("scale")) {
    double t0 = clock.Now();
    ScaleSection(cfg, argc, argv, report);
    timings += Fmt("scale %.0f s, ", clock.Now() - t0);
  }
  const double total = clock.Now() - start;

  std::string md = "# Saturn paper evaluation (bench/paper)\n\n";
  md +=
      Fmt("Mode `%s`: %d seeds, solver time limit %g s, (re)plans inside the simulator at "
          "work scale %g (limit %g s), estimation noise +-%.0f%%. Written by "
          "`paper_bench`; every figure below was measured in this run.\n\n",
          cfg.mode.c_str(), cfg.seeds, cfg.solve_limit_s, cfg.replan_work, cfg.replan_limit_s,
          100 * cfg.noise);
  std::string targets = "## Targets\n\n";
  for (const Target& t : report.targets) {
    targets += "- " + t.what + ": **" + (t.met ? "met" : "not met") + "** (" + t.measured + ")\n";
  }
  if (report.targets.empty()) targets += "No section that measures a target ran.\n";
  md += targets + report.markdown + "\n## Charts\n\n";
  for (const std::string& c : report.charts)
    md += "- [" + c + "](" + c + ")\n";
  if (timings.size() > 2) timings.resize(timings.size() - 2);
  md += Fmt("\nRun time: %.0f s (%s).\n", total, timings.c_str());
  WriteFileAtomic(cfg.out_dir + "/summary.md", md);
  std::printf("\n%s\nRun time %.0f s (%s). Wrote %s/summary.md and %zu charts.\n", targets.c_str(),
              total, timings.c_str(), cfg.out_dir.c_str(), report.charts.size());
  return 0;
}

}  // namespace
}  // namespace saturn::bench

int main(int argc, char** argv) {
  return saturn::bench::Main(argc, argv);
}
