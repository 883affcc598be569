#!/usr/bin/env python3
"""A pack of k LoRA tasks over one base against the same k tasks alone.

For k = 1, 2, 4, 8 members (LoRA rank 8 on attn and mlp, 4 samples each
(--batch),
learning rates differing) over one GPT base (pretrained weights written by
a first run), saturn-worker measures (search mode, the profiler's
measurement: median step after warm-up, peak device memory):
  - the pack's step time and peak memory on one device;
  - each member alone on one device; "alone" is the sum of their step times
    (the k tasks one after another on that device) and of their peaks (the
    k tasks side by side, each with its own copy of the base).
Both sides run in this process's machine, one after another, on the same
cores (--threads each). Prints a table and the ratios; no assertion.

  bench/engine/pack_bench.py [--build build] [--threads 1] [--sizes 1,2,4,8] [--quick]
                             [--device cpu|cuda] [--precision fp32|bf16] [--gpt2-small]
                             [--batch 4]

On a GPU (scripts/gpu-check.sh): --device cuda --precision bf16 --gpt2-small
measures GPT-2 small (sequence 1024) on device 0: the real pack step times
that planner/packing.h's pack_step_s and bench/paper's roofline model.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile


def worker(build):
    return os.path.join(build, "src", "worker", "saturn-worker")


def run(build, mode, task_path, out, threads, warmup, measure, extra=(), device="cpu"):
    args = [worker(build), mode, "--task", task_path, "--technique", "single", "--gpus", "1",
            "--out", out, "--threads", str(threads), "--device-kind", device, "--device-ids", "0"]
    if mode == "search":
        args += ["--warmup", str(warmup), "--measure", str(measure)]
    args += list(extra)
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"saturn-worker {mode} failed ({proc.returncode}): {proc.stderr.strip()}")
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--sizes", default="1,2,4,8")
    ap.add_argument("--quick", action="store_true", help="a smaller base, fewer steps")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    ap.add_argument("--gpt2-small", action="store_true", help="GPT-2 small as the base")
    ap.add_argument("--batch", type=int, default=4, help="samples per member and step")
    a = ap.parse_args()
    sizes = [int(k) for k in a.sizes.split(",")]
    model = ({"type": "gpt", "layers": 2, "d_model": 64, "heads": 2, "seq_len": 32} if a.quick
             else {"type": "gpt", "layers": 4, "d_model": 256, "heads": 4, "seq_len": 128})
    if a.gpt2_small:
        model = {"type": "gpt2", "preset": "small"}
    warmup, measure = (1, 3) if a.quick else (2, 5)
    tmp = tempfile.mkdtemp(prefix="saturn-pack-bench-")
    base = {"name": "base", "model": model, "data": {"type": "synthetic"}, "batch_size": a.batch,
            "optimizer": {"type": "adamw", "lr": 1e-3}, "steps": 1, "seed": 7,
            "precision": a.precision}
    base_path = os.path.join(tmp, "base.json")
    with open(base_path, "w", encoding="utf-8") as f:
        json.dump(base, f)
    init = os.path.join(tmp, "base", "model.pt")
    run(a.build, "execute", base_path, os.path.join(tmp, "base-result.json"), a.threads, 0, 0,
        ["--from-step", "0", "--to-step", "1", "--checkpoint-dir", os.path.join(tmp, "base"),
         "--save-model", init], a.device)

    def member(i):
        return {"name": f"lora-{i}", "model": dict(model, init=init),
                "data": {"type": "synthetic"}, "batch_size": a.batch,
                "optimizer": {"type": "adamw", "lr": 1e-3 * (1 + i)}, "steps": 100, "seed": 100 + i,
                "precision": a.precision,
                "finetune": {"lora": {"rank": 8, "targets": ["attn", "mlp"]}}}

    def measure_task(name, task):
        path = os.path.join(tmp, name + ".json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(task, f)
        r = run(a.build, "search", path, os.path.join(tmp, name + "-result.json"), a.threads,
                warmup, measure, device=a.device)
        return r["step_s"], max(r["peak_memory_bytes"])

    alone = [measure_task(f"alone-{i}", member(i)) for i in range(max(sizes))]
    print(f"base: {json.dumps(model)}; members: LoRA rank 8 on attn+mlp, {a.batch} samples each; "
          f"{a.precision}; {a.threads} thread(s), single {a.device} device")
    print(f"{'k':>3} {'pack step s':>12} {'alone step s':>13} {'time ratio':>11} "
          f"{'pack peak MiB':>14} {'alone peak MiB':>15} {'memory ratio':>13}")
    for k in sizes:
        if k == 1:
            step, peak = alone[0]
        else:
            step, peak = measure_task(f"pack-{k}", {"pack": [member(i) for i in range(k)]})
        alone_step = sum(s for s, _ in alone[:k])
        alone_peak = sum(p for _, p in alone[:k])
        print(f"{k:>3} {step:>12.4f} {alone_step:>13.4f} {step / alone_step:>10.2f}x "
              f"{peak / 2**20:>14.1f} {alone_peak / 2**20:>15.1f} {peak / alone_peak:>12.2f}x")
    print("time ratio: the pack's step over the members' steps alone, one after another "
          "(< 1: the pack is faster); memory ratio: the pack's peak over the members' peaks "
          "side by side (< 1: the pack holds less)")


if __name__ == "__main__":
    main()
