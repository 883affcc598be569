#!/usr/bin/python3
"""Early stopping (ASHA) planned by Saturn, for real and simulated (issue 44).

    /usr/bin/python3 bench/executor/early_stop.py [--build build] [--out DIR] [--quick]

One 16-sample log-uniform learning-rate search of one GPT (bench/executor/
asha.yaml), three real `saturn run`s on this machine's emulated devices,
one after another (the same cores for each), sharing one profile cache:

  asha   Saturn's plan with ASHA (grace 50 steps, R = 2)
  full   Saturn's plan, the same search run to the end (no early_stop)
  fifo   ASHA first-in-first-out on whole nodes: current practice's plan
         (--solver current-practice --no-introspection), what Ray Tune does
         with a whole node per trial

and `saturn simulate` of asha and fifo on asha's profile, the metric each
task reports taken from the full run's evaluations (the mean of 8 seeds:
tasks reaching a rung at one moment are decided in a random order). Prints the GPU-seconds
of asha against full (devices held: every worker's wall time x its GPUs,
from the event logs), the best configuration of each (lowest final
evaluation loss) and, when they differ, the full run's losses of both;
makespans of asha against fifo, real and simulated; and each run's
actual / first-planned makespan.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def events(run_dir):
    with open(os.path.join(run_dir, "events.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


def gpu_seconds(evs):
    """Devices held: from each task_started to the event that ends that worker."""
    open_, total = {}, 0.0
    ends = {"task_stopped", "task_finished", "task_failed", "task_cancelled", "task_early_stopped"}
    for e in evs:
        if e["event"] == "task_started":
            open_[e["task"]] = e
        elif e["event"] in ends and e["task"] in open_:
            s = open_.pop(e["task"])
            total += (e["t"] - s["t"]) * s.get("gpus", 1)
    return total


def final_evals(evs):
    """Each task's last evaluation loss (the one after its last step)."""
    last = {}
    for e in evs:
        if e["event"] == "task_evaluated":
            last[e["task"]] = (e["step"], e["eval_loss"])
    return last


def best(run_dir):
    report = json.load(open(os.path.join(run_dir, "report.json")))
    entries = report.get("best") or []
    return entries[0]["task"] if entries else None, report


def run(saturn, workload, run_dir, cache, extra):
    argv = [saturn, "run", workload, "--run-dir", run_dir, "--fresh", "--cache", cache] + extra
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{p.stderr[-3000:]}")
    summary = [l for l in p.stderr.splitlines() if l.startswith("run complete")]
    print("   ", summary[-1] if summary else "(no summary)")
    b, report = best(run_dir)
    return {"events": events(run_dir), "best": b, "report": report,
            "makespan": report["makespan_s"], "planned": report["planned_makespan_s"]}


def simulate(saturn, run_dir, workload, evaluations, extra):
    argv = [saturn, "simulate", "--cluster", os.path.join(run_dir, "cluster.yaml"),
            "--profile", os.path.join(run_dir, "profile.csv"), "--workload", workload,
            "--evaluations", evaluations, "--interval", "10"] + extra
    p = subprocess.run(argv, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=None, help="keep the runs here (default: a temporary folder)")
    ap.add_argument("--quick", action="store_true", help="a smaller model (for a smoke test)")
    a = ap.parse_args()
    saturn = os.path.join(a.build, "src", "cli", "saturn")
    out = a.out or tempfile.mkdtemp(prefix="saturn_early_stop_bench_")
    os.makedirs(out, exist_ok=True)
    text = open(os.path.join(ROOT, "bench", "executor", "asha.yaml")).read()
    text = text.replace("../../examples/data/corpus.txt",
                        os.path.join(ROOT, "examples", "data", "corpus.txt"))
    if a.quick:
        text = text.replace("d_model: 128", "d_model: 32").replace("steps: 800", "steps: 400")
    asha_w = os.path.join(out, "asha.yaml")
    full_w = os.path.join(out, "full.yaml")
    open(asha_w, "w").write(text)
    open(full_w, "w").write(text[: text.index("early_stop:")])
    cache = os.path.join(out, "cache.sqlite")
    print(f"runs in {out}")
    print("asha: Saturn + ASHA")
    asha = run(saturn, asha_w, os.path.join(out, "asha"), cache, [])
    print("full: Saturn, every task to its end")
    full = run(saturn, full_w, os.path.join(out, "full"), cache, [])
    print("fifo: ASHA on whole nodes, first in first out")
    fifo = run(saturn, asha_w, os.path.join(out, "fifo"), cache,
               ["--solver", "current-practice", "--no-introspection"])
    full_events = os.path.join(out, "full", "events.jsonl")
    # Tasks reaching a rung at one moment are decided in a random order
    # (--seed): the mean over seeds.
    seeds = range(8)
    sims = [simulate(saturn, os.path.join(out, "asha"), asha_w, full_events, ["--seed", str(k)])
            for k in seeds]
    fifos = [simulate(saturn, os.path.join(out, "asha"), asha_w, full_events,
                      ["--seed", str(k), "--solver", "current-practice", "--no-introspection"])
             for k in seeds]
    mean = lambda v: sum(v) / len(v)
    sim = {"makespan_s": mean([r["makespan_s"] for r in sims]),
           "planned_makespan_s": mean([r["planned_makespan_s"] for r in sims]),
           "range": (min(r["makespan_s"] for r in sims), max(r["makespan_s"] for r in sims))}
    sim_fifo = {"makespan_s": mean([r["makespan_s"] for r in fifos])}

    ga, gf = gpu_seconds(asha["events"]), gpu_seconds(full["events"])
    print(f"\nGPU-seconds: asha {ga:.1f}, full {gf:.1f}: asha / full = {ga / gf:.3f} (target <= 0.5)")
    finals = final_evals(full["events"])
    print(f"best: asha {asha['best']}, full {full['best']}", end="")
    if asha["best"] == full["best"]:
        print(" (the same)")
    else:
        fa, ff = finals.get(asha["best"], (0, float("nan")))[1], finals[full["best"]][1]
        print(f" (differ: in the full run {fa:.4f} against {ff:.4f}, {fa - ff:+.4f})")
    stopped = sum(1 for t in asha["report"]["tasks"] if t["status"] == "stopped")
    print(f"asha stopped {stopped} of {len(asha['report']['tasks'])} tasks")
    print(f"makespan, real: asha {asha['makespan']:.1f} s, fifo {fifo['makespan']:.1f} s: "
          f"fifo / asha = {fifo['makespan'] / asha['makespan']:.2f}x")
    print(f"makespan, simulated (mean of {len(seeds)} seeds): asha {sim['makespan_s']:.1f} s "
          f"({sim['range'][0]:.1f}-{sim['range'][1]:.1f}), fifo {sim_fifo['makespan_s']:.1f} s: "
          f"fifo / asha = {sim_fifo['makespan_s'] / sim['makespan_s']:.2f}x")
    for name, r in (("asha", asha), ("full", full), ("fifo", fifo)):
        print(f"actual / planned, {name}: {r['makespan'] / r['planned']:.3f} "
              f"({r['makespan']:.1f} s / {r['planned']:.1f} s)")
    print(f"simulated / planned, asha (mean): {sim['makespan_s'] / sim['planned_makespan_s']:.3f}; "
          f"real / simulated: {asha['makespan'] / sim['makespan_s']:.3f}")


if __name__ == "__main__":
    main()
