#!/usr/bin/python3
"""Fault-injection soak: does every run survive faults with nothing lost?

    /usr/bin/python3 bench/soak/soak.py [--faults N] [--seed S] [--build DIR] [--work DIR]
                                        [--kinds K,K,...] [--quick]

Runs a small multi-task workload (an mlp on one device, a gpt on one, an mlp
under ddp/fsdp on two: the real engine on CPU devices) once uninterrupted
(the baseline), then N times, each with one fault at a random point of its
training (once a random share of its steps is done; for profiling, a random
time within the baseline's profiling), round-robin over the kinds:

  orchestrator  SIGKILL of `saturn run`, then `saturn run --resume`
  rank          SIGKILL of one rank of a multi-rank worker
  group         SIGKILL of a whole worker's process group
  checkpoint    SIGKILL during a checkpoint write (a checkpoint-*.partial
                folder exists): of the worker's group, or of the
                orchestrator (then --resume), alternately
  profiling     the run profiles (fresh cache); SIGKILL of a trial worker or
                of the orchestrator (then --resume) while trials run
  fsize         RLIMIT_FSIZE (4 KiB) set on a running process that writes
                checkpoints (a rank or a one-process worker), standing in
                for a full disk: its next write fails (counted only if the
                task's worker then failed; a ddp rank > 0 writes nothing)
  corrupt       (only with --kinds) SIGKILL of the orchestrator, a byte of a
                task's newest checkpoint flipped, then --resume: the run must
                log it as skipped and resume from the one before

It reports faults injected (a fault whose moment found nothing to hit is
not counted), runs completed after resume, finished steps lost beyond the
last checkpoint (a task restarting before the newest checkpoint that
existed when the fault hit, or a finished task run again), and runs whose
final weights (tasks/<task>/model.pt, every tensor) differ from the
baseline's beyond floating-point tolerance (design: same seed and settings
train to the same weights within tolerance whatever technique runs them;
bit-identical runs are counted too). Targets: >= 100 faults, 100% complete,
0 lost, 0 wrong. Timings are ratios against the baseline run.

Runs keep `saturn run`'s default retention (the newest 2 checkpoints): the
last checkpoint is the newest one published when the fault hit, and the
fallback past a damaged one is the one before, which retention keeps. Only
a run whose orchestrator died is resumed; one that fails with its
orchestrator alive is not completed, nor is one that hangs (killed at 20x
the baseline's wall time).
"""
import argparse
import json
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KINDS = ["orchestrator", "rank", "group", "checkpoint", "profiling", "fsize"]
# Not in the default round: a damaged checkpoint is no fault a run meets by
# itself, but it checks the fallback past one end to end.
EXTRA_KINDS = ["corrupt"]

WORKLOAD = """\
cluster: {nodes: [{name: n0, gpus: 3, gpu_memory_gib: 1}]}
tasks:
  - name: mlp
    model: {type: mlp, layers: 3, width: 96}
    data: {type: synthetic, seed: 3}
    batch_size: 16
    optimizer: {type: adamw, lr: 3.0e-3}
    steps: 120
    seed: 1
    techniques: [single, spill]
  - name: gpt
    model: {type: gpt, layers: 2, d_model: 32, heads: 2, seq_len: 16}
    data: {type: text, path: CORPUS}
    batch_size: 8
    optimizer: {type: adamw, lr: 1.0e-3}
    steps: 60
    seed: 2
    techniques: [single]
  - name: mlp-ranks
    model: {type: mlp, layers: 2, width: 96}
    data: {type: synthetic, seed: 4}
    batch_size: 16
    optimizer: {type: sgd, lr: 0.05, momentum: 0.9}
    steps: 100
    seed: 3
    techniques: [ddp, fsdp]
    gpu_range: [2, 2]
"""


class Soak:
    def __init__(self, args, kinds):
        self.args = args
        self.kinds = kinds
        build = os.path.abspath(args.build)  # runs start in the work folder
        self.saturn = os.path.join(build, "src", "cli", "saturn")
        self.worker = os.path.join(build, "src", "worker", "saturn-worker")
        for binary in (self.saturn, self.worker):
            if not os.access(binary, os.X_OK):
                sys.exit(f"soak: {binary} is missing; build saturn and saturn-worker first")
        self.work = os.path.abspath(args.work)
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.workload = os.path.join(self.work, "workload.yaml")
        with open(self.workload, "w") as f:
            f.write(WORKLOAD.replace("CORPUS", os.path.join(ROOT, "examples/data/corpus.txt")))
        self.profile = os.path.join(self.work, "profile.csv")
        self.env = dict(os.environ, SATURN_WORKER=self.worker)
        global WORKER
        WORKER = os.path.realpath(self.worker)

    # -- running saturn -------------------------------------------------------

    def command(self, run_dir, resume=False, profile=True):
        argv = [self.saturn, "run", self.workload, "--run-dir", run_dir]
        if profile:
            argv += ["--profile", self.profile]
        else:  # profiles for real, into a cache of its own
            argv += ["--cache", run_dir + ".cache.sqlite"]
        return argv + (["--resume"] if resume else [])

    def start(self, run_dir, log, resume=False, profile=True):
        out = open(log, "a")
        return subprocess.Popen(self.command(run_dir, resume, profile), stdout=out,
                                stderr=subprocess.STDOUT, env=self.env, cwd=self.work)

    def wait(self, proc):
        """The exit status, or "hung" (killed) past 20x the baseline run."""
        try:
            return proc.wait(timeout=max(120.0, 20 * self.base_s))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return "hung"

    def finish(self, run_dir, log, profile=True):
        """Runs `saturn run --resume` to its end (a plain `saturn run` if it
        was killed before it had a state to resume); its exit status."""
        resume = os.path.exists(os.path.join(run_dir, "state.sqlite"))
        return self.wait(self.start(run_dir, log, resume=resume, profile=profile))

    def prepare(self):
        """The profile every run plans with, and the uninterrupted baseline."""
        t0 = time.monotonic()
        p = subprocess.run([self.saturn, "profile", self.workload, "--output", self.profile,
                            "--cache", os.path.join(self.work, "cache.sqlite")],
                           env=self.env, cwd=self.work, capture_output=True, text=True)
        self.profile_s = time.monotonic() - t0
        if p.returncode != 0:
            sys.exit(f"soak: profiling failed:\n{p.stderr[-3000:]}")
        self.base = os.path.join(self.work, "baseline")
        t0 = time.monotonic()
        status = self.start(self.base, self.base + ".log").wait()
        self.base_s = time.monotonic() - t0
        if status != 0 or not completed(self.base):
            sys.exit(f"soak: the baseline run failed; see {self.base}.log")
        self.tasks = [t["task"] for t in report(self.base)["tasks"]]
        self.steps = {t["task"]: t["steps_done"] for t in report(self.base)["tasks"]}
        print(f"baseline: {len(self.tasks)} tasks in {self.base_s:.1f} s "
              f"({', '.join(f'{t} {self.steps[t]} steps' for t in self.tasks)})", flush=True)

    # -- one faulted run ------------------------------------------------------

    def moment(self, kind, rng, run_dir, t0):
        """When the fault hits: a predicate true from a random point of the
        run's training on (a share of all its steps done, of the multi-rank
        task's for `rank`), so that load on the machine does not move it
        past the end; for `profiling`, a random time within the baseline
        profiling's duration."""
        if kind == "profiling":
            at = t0 + rng.uniform(0.2, self.profile_s)
            return lambda: time.monotonic() >= at
        share = rng.uniform(0.0 if kind == "orchestrator" else 0.02, 0.95)
        if kind == "rank":
            need = share * self.steps["mlp-ranks"]
            return lambda: steps_done(run_dir).get("mlp-ranks", 0) >= need
        need = share * sum(self.steps.values())
        return lambda: sum(steps_done(run_dir).values()) >= need

    def faulted_run(self, index, kind, rng):
        run_dir = os.path.join(self.work, f"run-{index:03d}")
        log = run_dir + ".log"
        profile = kind != "profiling"
        t0 = time.monotonic()
        proc = self.start(run_dir, log, profile=profile)
        ready = self.moment(kind, rng, run_dir, t0)
        # Kinds with two variants take turns (orchestrator or worker).
        hit = inject(kind, proc, run_dir, ready, rng, index // len(self.kinds))
        status = self.wait(proc)
        missed = "nothing to hit"
        if hit and "fsize_task" in hit:
            failure = write_failure(run_dir, hit["snapshot"], hit["fsize_task"])
            if failure is None:  # it wrote no file after (a ddp rank > 0, or at its end)
                hit = None
                missed = "file-size limit set, but that worker wrote no file after it"
            else:
                hit["detail"] += f" ({failure})"
        resumed, hung = False, status == "hung"
        # Only a run whose orchestrator died is resumed: one that failed
        # with its orchestrator alive counts as not completed.
        if hit and hit["orchestrator_killed"]:
            time.sleep(0.3)  # the old workers are stopping; the resume kills what is left
            status = self.finish(run_dir, log, profile=profile)
            resumed = True
        result = {"index": index, "kind": kind, "injected": hit is not None,
                  "detail": hit["detail"] if hit else missed,
                  "resumed": resumed, "status": status, "wall_s": time.monotonic() - t0,
                  "completed": status == 0 and completed(run_dir), "log": log}
        if hung:  # a run that hangs is no run completed, whatever --resume did after
            result["completed"], result["status"] = False, "hung"
        if hit:
            result["lost"] = lost_steps(run_dir, hit["snapshot"], self.steps)
            if "damaged" in hit and not skipped(run_dir, *hit["damaged"]):
                result["completed"] = False
                result["detail"] += " (NOT skipped)"
        if result["completed"]:
            result.update(compare_weights(self.base, run_dir, self.tasks))
            result["redone"] = redone_steps(run_dir)
        return result


# -- what the soak reads of a run folder ---------------------------------------

def report(run_dir):
    with open(os.path.join(run_dir, "report.json")) as f:
        return json.load(f)


def completed(run_dir):
    try:
        return all(t["status"] == "finished" for t in report(run_dir)["tasks"])
    except (OSError, ValueError, KeyError):
        return False


def events(run_dir):
    out = []
    try:
        with open(os.path.join(run_dir, "events.jsonl")) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # a torn last line
    except OSError:
        pass
    return out


def listing(folder):
    """The names in a folder, none when it does not exist (yet)."""
    return os.listdir(folder) if os.path.isdir(folder) else []


def steps_done(run_dir):
    """Per task, the step lines its workers have printed so far."""
    done = {}
    root = os.path.join(run_dir, "tasks")
    for task in listing(root):
        try:
            with open(os.path.join(root, task, "worker.out"), "rb") as f:
                done[task] = f.read().count(b"saturn: step=")
        except OSError:
            pass
    return done


def checkpoint_steps(run_dir):
    """Per task, the newest published checkpoint-<step> (no suffix)."""
    newest = {}
    root = os.path.join(run_dir, "tasks")
    for task in listing(root):
        steps = [0]
        for name in listing(os.path.join(root, task, "checkpoints")):
            if name.startswith("checkpoint-") and name[11:].isdigit():
                steps.append(int(name[11:]))
        newest[task] = max(steps)
    return newest


def snapshot(run_dir):
    """What must not be lost: checkpoints and finished tasks as the fault hits."""
    ev = events(run_dir)
    return {"events": len(ev), "checkpoints": checkpoint_steps(run_dir),
            "finished": sorted({e["task"] for e in ev if e.get("event") == "task_finished"})}


def lost_steps(run_dir, snap, steps):
    """Steps finished before the fault that had to be trained again."""
    lost = 0
    first_start = {}
    for e in events(run_dir)[snap["events"]:]:
        if e.get("event") == "task_started" and e["task"] not in first_start:
            first_start[e["task"]] = e.get("step", 0)
    for task, step in first_start.items():
        if task in snap["finished"]:
            lost += steps.get(task, 0) - step
        else:
            lost += max(0, snap["checkpoints"].get(task, 0) - step)
    return lost


def write_failure(run_dir, snap, task):
    """How the task's worker failed after the fault (its task_failed error,
    shortened), or None if it did not fail."""
    for e in events(run_dir)[snap["events"]:]:
        if e.get("event") == "task_failed" and e.get("task") == task:
            error = e.get("error", "")
            return "File too large" if "File too large" in error else error[:80]
    return None


def redone_steps(run_dir):
    """Steps trained more than once (progress past the last checkpoint)."""
    redone = 0
    root = os.path.join(run_dir, "tasks")
    for task in os.listdir(root):
        path = os.path.join(root, task, "worker.out")
        if os.path.exists(path):
            with open(path) as f:
                steps = [line.split()[1] for line in f if line.startswith("saturn: step=")]
            redone += len(steps) - len(set(steps))
    return redone


def compare_weights(base, run_dir, tasks):
    import torch
    worst, identical, wrong = 0.0, True, []
    for task in tasks:
        a = torch.load(os.path.join(base, "tasks", task, "model.pt"))
        b = torch.load(os.path.join(run_dir, "tasks", task, "model.pt"))
        if a.keys() != b.keys():
            wrong.append(f"{task}: other tensors")
            continue
        for name in a:
            if a[name].shape != b[name].shape:
                wrong.append(f"{task}/{name}: shape")
                continue
            diff = (a[name] - b[name]).abs().max().item() if a[name].numel() else 0.0
            worst = max(worst, diff)
            identical = identical and torch.equal(a[name], b[name])
            if not torch.allclose(a[name], b[name], rtol=1e-4, atol=1e-5):
                wrong.append(f"{task}/{name}: max difference {diff:.3g}")
    return {"weights_identical": identical, "max_weight_diff": worst, "wrong_weights": wrong}


# -- faults ---------------------------------------------------------------------

WORKER = None  # the saturn-worker binary, resolved


def workers(run_dir):
    """saturn-worker processes of this run (ranks run as /proc/self/exe): (pid, argv)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.readlink(f"/proc/{pid}/exe") != WORKER:
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = [a.decode() for a in f.read().split(b"\0") if a]
        except OSError:
            continue
        if any(run_dir in a for a in argv):
            found.append((int(pid), argv))
    return found


def pick(run_dir, rng, want):
    """A worker process matching want(argv), or None."""
    matches = [(pid, argv) for pid, argv in workers(run_dir + "/") if want(argv)]
    return rng.choice(matches) if matches else None


def execute(argv):
    return len(argv) > 1 and argv[1] == "execute"


def launcher(argv):
    return execute(argv) and "--rank" not in argv and "--rank-from-env" not in argv


def parent(pid):
    """The parent's pid (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return 0


def task_of(argv):
    """The task a worker runs (--task .../tasks/<task>/task.json)."""
    return os.path.basename(os.path.dirname(argv[argv.index("--task") + 1])) \
        if "--task" in argv else "?"


def kill_group(pid):
    try:
        os.killpg(os.getpgid(pid), signal.SIGKILL)
        return True
    except ProcessLookupError:
        return False


def partial_checkpoint(run_dir):
    root = os.path.join(run_dir, "tasks")
    for task in listing(root):
        ck = os.path.join(root, task, "checkpoints")
        for name in listing(ck):
            if name.endswith(".partial"):
                return task, ck
    return None


def inject(kind, proc, run_dir, ready, rng, turn):
    """Waits for the moment, then delivers the fault; None if it found nothing."""
    give_up = time.monotonic() + 600
    while not ready():
        if proc.poll() is not None or time.monotonic() > give_up:
            return None
        time.sleep(0.005)
    deadline = time.monotonic() + 60
    while proc.poll() is None and time.monotonic() < deadline:
        hit = try_fault(kind, proc, run_dir, rng, turn)
        if hit:
            return hit
        time.sleep(0.001 if kind == "checkpoint" else 0.02)
    return None


def try_fault(kind, proc, run_dir, rng, turn):
    """One attempt at the fault; (detail, orchestrator killed) or None."""
    def done(detail, orchestrator_killed=False, snap=None):
        return {"detail": detail, "orchestrator_killed": orchestrator_killed,
                "snapshot": snap or snapshot(run_dir)}

    if kind == "orchestrator":
        snap = snapshot(run_dir)
        proc.send_signal(signal.SIGKILL)
        return done("orchestrator killed", True, snap)
    if kind == "profiling":
        if os.path.exists(os.path.join(run_dir, "plan-0.json")):
            return None  # profiling is over
        trial = pick(run_dir, rng, lambda a: len(a) > 1 and a[1] == "search")
        if trial is None:
            return None
        snap = snapshot(run_dir)
        if turn % 2 == 0:
            proc.send_signal(signal.SIGKILL)
            return done("orchestrator killed while profiling", True, snap)
        return done("trial killed", False, snap) if kill_group(trial[0]) else None
    if kind == "checkpoint":
        partial = partial_checkpoint(run_dir)
        if partial is None:
            return None
        task, ck = partial
        snap = snapshot(run_dir)
        if turn % 2 == 0:
            proc.send_signal(signal.SIGKILL)
            return done(f"orchestrator killed while {task} checkpointed", True, snap)
        target = pick(run_dir, rng, lambda a: launcher(a) and ck in " ".join(a))
        if target and kill_group(target[0]):
            return done(f"{task}'s worker killed while checkpointing", False, snap)
        return None
    if kind == "rank":
        target = pick(run_dir, rng, lambda a: execute(a) and "--rank" in a)
        if target is None:
            return None
        snap = snapshot(run_dir)
        os.kill(target[0], signal.SIGKILL)
        return done(f"rank {target[1][target[1].index('--rank') + 1]} killed", False, snap)
    if kind == "group":
        target = pick(run_dir, rng, launcher)
        if target is None:
            return None
        snap = snapshot(run_dir)
        return done("worker group killed", False, snap) if kill_group(target[0]) else None
    if kind == "fsize":
        # A process that writes checkpoints: a rank, or a one-process
        # worker (a multi-rank launcher only waits for its ranks).
        parents = {parent(pid) for pid, _ in workers(run_dir + "/")}
        leaves = [(pid, a) for pid, a in workers(run_dir + "/")
                  if execute(a) and pid not in parents]
        if not leaves:
            return None
        pid, argv = rng.choice(leaves)
        snap = snapshot(run_dir)
        try:
            resource.prlimit(pid, resource.RLIMIT_FSIZE, (4096, 4096))
        except (ProcessLookupError, PermissionError):
            return None
        who = task_of(argv) + (f" rank {argv[argv.index('--rank') + 1]}" if "--rank" in argv else "")
        hit = done(f"file-size limit of 4 KiB on {who}", False, snap)
        hit["fsize_task"] = task_of(argv)
        return hit
    if kind == "corrupt":
        return corrupt(proc, run_dir, rng, done)
    raise ValueError(kind)


def corrupt(proc, run_dir, rng, done):
    """Kills the orchestrator, waits for its workers to stop, damages a
    task's newest checkpoint; what must not be lost is the one before."""
    snap = snapshot(run_dir)
    candidates = [t for t, step in snap["checkpoints"].items()
                  if step > 0 and t not in snap["finished"]]
    if not candidates:
        return None
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    for _ in range(500):  # orphaned workers checkpoint on SIGTERM, then exit
        if not workers(run_dir + "/"):
            break
        time.sleep(0.02)
    task = rng.choice(candidates)
    ck = os.path.join(run_dir, "tasks", task, "checkpoints")
    steps = sorted(int(n[11:]) for n in os.listdir(ck)
                   if n.startswith("checkpoint-") and n[11:].isdigit())
    newest = os.path.join(ck, f"checkpoint-{steps[-1]}")
    block = max((os.path.join(newest, n) for n in os.listdir(newest) if n.endswith(".pt")),
                key=os.path.getsize)
    with open(block, "r+b") as f:
        f.seek(os.path.getsize(block) // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x20]))
    snap = snapshot(run_dir)
    snap["checkpoints"][task] = steps[-2] if len(steps) > 1 else 0
    hit = done(f"{task}'s checkpoint-{steps[-1]} damaged", True, snap)
    hit["damaged"] = (task, steps[-1])
    return hit


def skipped(run_dir, task, step):
    return any(e.get("event") == "checkpoint_skipped" and e.get("task") == task
               and e.get("step") == step for e in events(run_dir))


# -- the soak ---------------------------------------------------------------------

def mean_wall(results, kind):
    walls = [r["wall_s"] for r in results if r["kind"] == kind]
    return sum(walls) / len(walls) if walls else 0.0


def summarise(results, soak):
    injected = [r for r in results if r["injected"]]
    done = [r for r in results if r["completed"]]
    wrong = [r for r in done if r["wrong_weights"]]
    lost = sum(r.get("lost", 0) for r in injected)
    identical = sum(1 for r in done if r["weights_identical"])
    per_kind = {k: sum(1 for r in injected if r["kind"] == k) for k in soak.kinds}
    print("\n== soak ==")
    print(f"faults injected: {len(injected)} in {len(results)} runs ("
          + ", ".join(f"{k} {n}" for k, n in per_kind.items() if n) + ")")
    print(f"runs completed (after --resume where the orchestrator died): {len(done)}/"
          f"{len(results)} ({100.0 * len(done) / max(1, len(results)):.0f}%); "
          f"resumed {sum(1 for r in results if r['resumed'])}")
    print(f"finished steps lost beyond the last checkpoint: {lost}")
    print(f"runs with wrong final weights: {len(wrong)}; bit-identical to the baseline: "
          f"{identical}/{len(done)}; largest difference "
          f"{max([r['max_weight_diff'] for r in done] or [0.0]):.3g}")
    redone = sum(r.get("redone", 0) for r in done)
    print(f"steps trained twice (progress past the last checkpoint, expected): {redone} "
          f"({redone / max(1, len(injected)):.1f} per fault)")
    walls = [r["wall_s"] / soak.base_s for r in results]
    print(f"wall per faulted run / baseline run ({soak.base_s:.1f} s): "
          f"mean {sum(walls) / max(1, len(walls)):.2f}, max {max(walls or [0]):.2f}; by kind "
          + ", ".join(f"{k} {mean_wall(results, k) / soak.base_s:.2f}" for k in soak.kinds
                      if mean_wall(results, k)))
    for r in results:
        problems = [] if r["completed"] else [f"incomplete (exit {r['status']})"]
        problems += r.get("wrong_weights", [])[:3]
        if r.get("lost"):
            problems.append(f"lost {r['lost']} steps")
        if problems:
            print(f"  run {r['index']} ({r['kind']}: {r['detail']}): {'; '.join(problems)}"
                  f" -> {r['log']}")
    ok = (len(injected) >= soak.args.faults and len(done) == len(results) and lost == 0
          and not wrong)
    return ok


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--faults", type=int, default=108)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--work", default="/tmp/saturn-soak")
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--quick", action="store_true", help="one fault of each kind")
    args = parser.parse_args()
    kinds = args.kinds.split(",")
    if any(k not in KINDS + EXTRA_KINDS for k in kinds):
        sys.exit(f"soak: --kinds: expected some of {','.join(KINDS + EXTRA_KINDS)}")
    if args.quick:
        args.faults = len(kinds)
    try:
        import torch  # noqa: F401  (to compare the final weights)
    except ImportError:
        print("soak: skipped: this python has no torch to compare weights with", flush=True)
        sys.exit(77)
    rng = random.Random(args.seed)
    soak = Soak(args, kinds)
    soak.prepare()
    results = []
    index = 0
    # Runs until N faults hit (a moment may find nothing to hit), at most 2N runs.
    while sum(1 for r in results if r["injected"]) < args.faults and index < 2 * args.faults:
        kind = kinds[index % len(kinds)]
        r = soak.faulted_run(index, kind, rng)
        results.append(r)
        print(f"run {index:3d} {kind:12s} {r['detail']:45s} "
              f"{'completed' if r['completed'] else 'INCOMPLETE'}"
              f"{' (resumed)' if r['resumed'] else ''} lost {r.get('lost', 0)} "
              f"{'identical' if r.get('weights_identical') else 'diff %.2g' % r.get('max_weight_diff', -1)}"
              f" {r['wall_s']:.1f}s", flush=True)
        index += 1
    sys.exit(0 if summarise(results, soak) else 1)


if __name__ == "__main__":
    main()
