// The defaults users see, each written once: the option structs start from
// them and the CLI's --help shows them (CLI11 capture_default_str), so the
// code, the help and the docs cannot disagree.
//
//   struct PlanOptions { double time_limit_s = defaults::kSolverTimeLimitS; };
//   cmd->add_option("--time-limit", o->time_limit_s, "...")->capture_default_str();
//
// `saturn run` adapts introspection to the plan: its interval and threshold
// are "auto" by default (see executor/run_options.h). `saturn simulate` and the re-planning
// policy (replan.h) default to the paper's fixed interval and threshold.
#pragma once

namespace saturn::defaults {

// Solver wall-clock limit per plan and re-plan (seconds): saturn plan, run
// and simulate, and the planner's and MILP's option structs.
inline constexpr double kSolverTimeLimitS = 10.0;

// Wall-clock limit of one re-plan inside the re-planning policy (seconds),
// where callers do not set one.
inline constexpr double kReplanTimeLimitS = 2.0;

// Limit of the re-plan that takes arrivals in (seconds): an arrival waits
// for it, so it is short; the background re-planner improves it later.
inline constexpr double kArrivalPlanTimeLimitS = 1.0;

// What pre-empting a task and resuming it elsewhere costs (seconds): its
// checkpoint plus a restart to its first step. The estimate `saturn run`
// has always used on this system; the simulator and the re-planning policy
// use the same.
inline constexpr double kSwitchCostS = 10.0;

// The paper's introspection settings (seconds): re-plan every interval,
// switch plans only if the new one finishes this much sooner.
inline constexpr double kPaperIntervalS = 1000.0;
inline constexpr double kPaperThresholdS = 500.0;

// `saturn run`'s first plan: when the run will take at least this long (its
// lower bound), planning is anytime: it uses the solver time limit while the
// plan is more than kFirstPlanGap above the bound (measured on Saturn-like
// and mixed workloads: up to 1.6% shorter plans for up to 8 s more planning;
// docs/planner.md). Shorter runs get the bounded effort (~2 s).
inline constexpr double kAnytimeFirstPlanFromS = 3600.0;
inline constexpr double kFirstPlanGap = 0.01;

// Re-planning: a check keeps the plan without searching when every node's
// re-timed end is within this fraction of its time left of its planned end
// (progress matched the plan within noise).
inline constexpr double kUnchangedTolerance = 0.02;

// `saturn run`: how long a pre-empted worker may take to checkpoint before
// it is killed (seconds), and retries of a failing task before it is marked
// failed.
inline constexpr double kStopGraceS = 60.0;
inline constexpr int kMaxRetries = 2;

// `saturn run`: checkpoints kept per task (the newest; 0 keeps every one).
// Two, so that a damaged newest checkpoint always has a good one before it.
inline constexpr int kKeepCheckpoints = 2;

// `saturn run`'s "auto" introspection: re-plan every tenth of the planned
// makespan, kept within [10 s, 1000 s]; switch plans only for a gain above
// 2% of it and above two switch costs (a switch must pay for its restarts).
inline constexpr double kAutoIntervalShare = 0.1;
inline constexpr double kAutoIntervalMinS = 10.0;
inline constexpr double kAutoIntervalMaxS = 1000.0;
inline constexpr double kAutoThresholdShare = 0.02;
inline constexpr double kThresholdSwitchCosts = 2.0;

// Re-planning: from this many nodes on, a re-plan searches around the nodes
// that changed rather than solving the whole remaining problem afresh.
inline constexpr int kIncrementalNodes = 8;

// `saturn serve`: seconds between re-planning checks (a service has no
// makespan to take a tenth of); its switch threshold is two switch costs.
inline constexpr double kServiceIntervalS = 60.0;

// The run loop of `saturn run` and `saturn serve` (executor/run_loop.h):
// seconds between turns (a worker's step line or an HTTP request waits at
// most this long), and between saves of the run clock to the state.
inline constexpr double kLoopPauseS = 0.02;
inline constexpr double kClockSaveS = 1.0;

// Profiling: wall seconds before a trial is killed.
inline constexpr double kTrialTimeoutS = 300.0;

// The most tasks a workload may expand to (sweeps included) unless it says
// `max_tasks:` or the command line --max-tasks.
inline constexpr long kMaxWorkloadTasks = 10000;

}  // namespace saturn::defaults
