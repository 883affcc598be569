#!/usr/bin/python3
"""What profiling a Python task's configuration costs beyond its measured steps.

    /usr/bin/python3 bench/python/overhead.py [--repeat N]

Runs examples/pytorch-gpt/train.py as Saturn's profiler does (2 warm-up + 10
measured steps, a fresh checkpoint folder) as one process, as 2 DDP ranks
under `python3 -m saturn_task launch`, and under torchrun; the overhead is the
wall time minus the steps' own step_s (what `saturn profile` records as
launch_s). Baselines in the same run: `python3 -c pass` and
`python3 -c 'import torch'`. Prints medians over N runs, wall and CPU
(user + sys of the processes, less the ranks' step time), and ratios against `import torch`. On a loaded
machine wall times stretch; CPU time is what an idle core would take.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "examples", "pytorch-gpt")
PY = "/usr/bin/python3"


def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(argv, env=None):
    """(wall, cpu, sum of step_s) of one run."""
    c0, t0 = cpu(), time.perf_counter()
    p = subprocess.run(argv, env=env, capture_output=True, text=True, cwd=EXAMPLE)
    wall, used = time.perf_counter() - t0, cpu() - c0
    if p.returncode != 0:
        sys.exit(f"{' '.join(argv)} failed:\n{p.stderr[-2000:]}")
    steps = sum(float(line.split("step_s=")[1].split()[0])
                for line in p.stdout.splitlines() if line.startswith("saturn:"))
    return wall, used, steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cases = {
        "python3 -c pass": [PY, "-c", "pass"],
        "import torch": [PY, "-c", "import torch"],
        "single x1": [PY, "train.py"],
        "ddp x2 (saturn_task launch)": [PY, "-m", "saturn_task", "launch",
                                        "--nproc_per_node=2", "train.py"],
        "ddp x2 (torchrun)": [PY, "-m", "torch.distributed.run", "--standalone",
                              "--nproc_per_node=2", "--redirects", "2", "--tee", "2", "train.py"],
    }
    results = {name: [] for name in cases}
    print(f"load average at start: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for _ in range(args.repeat):
        for name, argv in cases.items():
            with tempfile.TemporaryDirectory() as ckpt:
                env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"),
                           OMP_NUM_THREADS="1", SATURN_STEPS="12", SATURN_GPUS="2",
                           SATURN_CHECKPOINT_DIR=ckpt)
                results[name].append(timed(argv, env))
    torch_wall = statistics.median(w for w, _, _ in results["import torch"])
    torch_cpu = statistics.median(c for _, c, _ in results["import torch"])
    print(f"{'':30s} {'overhead wall':>14s} {'/ import torch':>15s} {'CPU':>8s} "
          f"{'/ import torch':>15s}  (median of {args.repeat}; CPU less ranks x steps)")
    for name, runs in results.items():
        ranks = 2 if name.startswith("ddp") else 1
        over = statistics.median(w - s for w, _, s in runs)
        used = statistics.median(c - ranks * s for _, c, s in runs)
        print(f"{name:30s} {over:12.2f} s {over / torch_wall:14.2f}x {used:6.2f} s "
              f"{used / torch_cpu:14.2f}x")
    print(f"load average at end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
