#!/usr/bin/python3
"""A stand-in for `saturn serve`'s HTTP API (docs: /v1 in docs/contracts.md,
Contract 6) with canned data, for developing and testing the dashboard without
the server. Standard library only.

  mock_api.py --port 8470 [--dashboard-dir src/service/dashboard]
              [--scenario busy|ended|sweep|empty] [--token T] [--speed 1.0]
              [--drop-streams-after S] [--token-for-page]

The `busy` scenario is a run at 620 s on two 4-GPU nodes: tasks running,
finished, pre-empted and resumed, failed, cancelled, profiling and queued, and
the plans made so far. Its clock stands still until the first API request
(the page loading), then runs on (times --speed): progress events stream about
once a second per running task, 3.5 s later a new plan drops vit-small (failed)
and places the arrivals, and at 4 s t5-small starts, so a page that follows
/v1/events sees the plan and a task change live. `ended` is a run at 3400 s
whose tasks have all ended (the last at 1630 s): finished, failed, and one
cancelled before it started that its plan, stopped at its time limit, still
places; the plan carries the baselines (current practice 4250 s). `ended`
answers as a server from before model selection did: no "hyperparameters",
"eval", "best", "evals" or "report". `sweep` is a run at 1500 s whose tasks
have all ended: a search of the learning rate and seed ("gpt": its best and
runner-up within the evaluations' noise, two tasks stopped early by ASHA), a
sweep of LoRA's base model and optimizer ranked by evaluation accuracy on one
batch (no standard error), and a task of neither; its service has written
report.html. In `busy` the "gpt2" sweep varies the learning rate and
evaluates, and t5-small evaluates every 10 steps (live, from 9 s after the
page loads). `empty` is a server that has been given nothing yet.

With --token the API needs the token (Authorization: Bearer, or
?access_token= on GETs); with --token-for-page too the page itself does.
With --drop-streams-after S every /v1/events stream ends after S seconds, and
a reconnecting client gets the whole log again (Last-Event-ID ignored): the
page must neither lose nor double anything.

Prints "listening on PORT" once it accepts connections (--port 0 picks one).
"""
import argparse
import json
import math
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

START_S = 620.0  # the run clock when the mock starts


def smooth_loss(task, step):
    seed = sum(ord(c) for c in task)
    return 1.4 + (seed % 7) * 0.15 + 5.0 * math.exp(-step / (180 + seed % 5 * 60))


def loss_at(task, step):
    """A deterministic, plausible training loss."""
    seed = sum(ord(c) for c in task)
    return round(smooth_loss(task, step) + 0.04 * math.sin(step * 0.37 + seed), 4)


def eval_at(task, step):
    """A task's evaluation at `step` (the API's "eval"): its training curve's
    shape, ending at task.evaluate["final"] on its last step; a standard error
    with 2 or more batches; an accuracy where it has "accuracy" (its ceiling)."""
    ev = task.evaluate
    out = {"step": step, "eval_loss": round(
        ev["final"] + smooth_loss(task.id, step) - smooth_loss(task.id, task.steps), 4)}
    if ev.get("batches", 1) >= 2:
        out["eval_loss_se"] = round(0.012 / math.sqrt(ev["batches"]), 4)
    if "accuracy" in ev:
        out["eval_accuracy"] = round(ev["accuracy"] - 0.3 * math.exp(-step / 250), 4)
    return out


def evaluations(task):
    """(time, step) of each of the task's evaluations: every `every` steps it
    trains, and after its last step when it finished."""
    if not task.evaluate:
        return []
    every, out = task.evaluate["every"], []
    for seg in task.segments:
        last = seg.step_at(seg.end, task.steps) if seg.end is not None else task.steps
        steps = [s for s in range(every, last + 1, every) if s > seg.from_step]
        if seg.how == "task_finished" and last % every:
            steps.append(last)
        out += [(round(seg.start + (s - seg.from_step) * seg.step_s, 3), s) for s in steps]
    return out


def eval_events(task):
    return [{"t": t, "event": "task_evaluated", "task": task.id, "eval_s": 0.4,
             **eval_at(task, s)} for (t, s) in evaluations(task)]


class Segment:
    """One stretch of a task on devices: started at `start`, ended at `end`
    (None: still running) by `how` (task_stopped / task_finished /
    task_failed)."""

    def __init__(self, start, end, technique, gpus, node, gpu_ids, from_step,
                 step_s, how=None, **extra):
        self.start, self.end, self.how = start, end, how
        self.technique, self.gpus, self.node = technique, gpus, node
        self.gpu_ids, self.from_step, self.step_s = gpu_ids, from_step, step_s
        self.extra = extra

    def step_at(self, t, steps):
        return min(steps, self.from_step + int(max(0.0, t - self.start) / self.step_s))


class Task:
    """evaluate: {"every", "batches", "final" (its eval_loss on its last
    step), "accuracy" (optional)}; select: (metric, mode) ranking its sweep."""

    def __init__(self, id, steps, arrived, segments=(), cancelled=None,
                 profiling_until=None, sweep=None, hyperparameters=None, evaluate=None,
                 select=("eval_loss", "min")):
        self.id, self.steps, self.arrived = id, steps, arrived
        self.segments = list(segments)
        self.cancelled = cancelled
        self.profiling_until = profiling_until
        self.sweep, self.hyperparameters = sweep, hyperparameters or {}
        self.evaluate, self.select = evaluate, select


def segment_events(task):
    """The events of a task's segments: each start, and each end as it ended."""
    events = []
    for seg in task.segments:
        place = {"task": task.id, "technique": seg.technique, "gpus": seg.gpus,
                 "node": seg.node, "gpu_ids": seg.gpu_ids}
        events.append({"t": float(seg.start), "event": "task_started", **place,
                       "step": seg.from_step})
        if seg.end is None:
            continue
        end = {"t": float(seg.end), "event": seg.how, **place,
               "step": seg.step_at(seg.end, task.steps), **seg.extra}
        if seg.how == "task_finished":
            end["steps"] = task.steps
            end["loss"] = end["final_loss"] = loss_at(task.id, task.steps)
        events.append(end)
    return events


def busy_scenario():
    gpt2 = {"sweep": "gpt2", "select": ("eval_loss", "min")}
    tasks = [
        Task("gpt2-lr1e-4", 2000, 0.0, [
            Segment(32, None, "fsdp", 4, "node0", [0, 1, 2, 3], 0, 0.8)],
            hyperparameters={"optimizer.lr": 0.0001},
            evaluate={"every": 100, "batches": 4, "final": 1.52}, **gpt2),
        Task("gpt2-lr3e-4", 1000, 0.0, [
            Segment(32, 532, "ddp", 2, "node1", [0, 1], 0, 0.5, "task_finished")],
            hyperparameters={"optimizer.lr": 0.0003},
            evaluate={"every": 100, "batches": 4, "final": 1.7723}, **gpt2),
        Task("bert-base", 1500, 0.0, [
            Segment(32, 300, "pipeline", 2, "node1", [2, 3], 0, 1.0, "task_stopped",
                    reason="preempted"),
            Segment(540, None, "ddp", 2, "node1", [0, 1], 250, 0.6)]),
        Task("resnet50", 2400, 120.0, [
            Segment(300, None, "single", 1, "node1", [2], 0, 0.4)]),
        Task("vit-small", 900, 120.0, [
            Segment(540, 561, "spill", 1, "node1", [3], 0, 0.7, "task_failed",
                    error="worker exited with signal 9 (host out of memory)")]),
        Task("gpt2-lr1e-3", 2000, 0.0, cancelled=200.0,
             hyperparameters={"optimizer.lr": 0.001},
             evaluate={"every": 100, "batches": 4, "final": 1.9}, **gpt2),
        Task("t5-small", 600, 590.0, [
            Segment(START_S + 4, None, "single", 1, "node1", [3], 0, 0.5)],
            profiling_until=START_S + 4, evaluate={"every": 10, "batches": 2, "final": 2.1}),
        Task("llama-tiny", 3000, 600.0),
    ]
    plan_tasks = [
        ("gpt2-lr1e-4", "fsdp", 4, "node0", [0, 1, 2, 3], 32, 1580),
        ("bert-base", "ddp", 2, "node1", [0, 1], 540, 1300),
        ("resnet50", "single", 1, "node1", [2], 300, 1200),
        ("t5-small", "single", 1, "node1", [3], 624, 930),
        ("llama-tiny", "fsdp", 4, "node0", [0, 1, 2, 3], 1580, 2520),
    ]
    def plan(entries, makespan, bound, solve_s):
        return {"solver": "auto", "status": "optimal", "makespan_s": makespan,
                "lower_bound_s": bound, "solve_time_s": solve_s,
                "tasks": [{"task": t, "technique": q, "gpus": g, "node": n, "gpu_ids": ids,
                           "start_s": float(s), "end_s": float(e)}
                          for (t, q, g, n, ids, s, e) in entries]}
    # The plan of t=538 until the arrivals' re-plan 3.5 s after the mock starts,
    # which drops vit-small (failed) and places t5-small and llama-tiny.
    before = [e for e in plan_tasks if e[0] not in ("t5-small", "llama-tiny")]
    before.append(("vit-small", "spill", 1, "node1", [3], 540, 1100))
    plans = [(538.0, plan(before, 1580.0, 1490.0, 0.41)),
             (START_S + 3.5, plan(plan_tasks, 2520.0, 2395.0, 0.83))]
    events = [
        {"t": 0.0, "event": "task_arrived", "task": "gpt2-lr1e-4"},
        {"t": 0.0, "event": "task_arrived", "task": "gpt2-lr3e-4"},
        {"t": 0.0, "event": "task_arrived", "task": "bert-base"},
        {"t": 0.0, "event": "task_arrived", "task": "gpt2-lr1e-3"},
        {"t": 30.0, "event": "plan", "makespan_s": 1650.0, "solver": "auto",
         "status": "optimal"},
        {"t": 120.0, "event": "task_arrived", "task": "resnet50"},
        {"t": 120.0, "event": "task_arrived", "task": "vit-small"},
        {"t": 200.0, "event": "task_cancelled", "task": "gpt2-lr1e-3", "step": 0},
        {"t": 299.0, "event": "plan_switched", "why": "arrivals",
         "arrived": ["resnet50", "vit-small"], "new_end_s": 1900.0,
         "preempted": ["bert-base"]},
        {"t": 538.0, "event": "plan_switched", "new_end_s": 1700.0, "preempted": []},
        {"t": 590.0, "event": "task_arrived", "task": "t5-small"},
        {"t": 600.0, "event": "task_arrived", "task": "llama-tiny"},
        {"t": START_S + 3.5, "event": "plan_switched", "why": "arrivals",
         "arrived": ["t5-small", "llama-tiny"], "new_end_s": 2520.0, "preempted": []},
    ]
    for task in tasks:
        events += segment_events(task) + eval_events(task)
    events.sort(key=lambda e: e["t"])
    return tasks, plans, events


ENDED_START_S = 3400.0  # the `ended` scenario's run clock


def ended_scenario():
    tasks = [
        Task("gpt2-lr1e-4", 2000, 0.0, [
            Segment(30, 1630, "fsdp", 4, "node0", [0, 1, 2, 3], 0, 0.8, "task_finished")]),
        Task("gpt2-lr3e-4", 1000, 0.0, [
            Segment(30, 530, "ddp", 2, "node1", [0, 1], 0, 0.5, "task_finished")]),
        Task("resnet50", 2400, 0.0, [
            Segment(300, 1260, "single", 1, "node1", [2], 0, 0.4, "task_finished")]),
        Task("vit-small", 900, 0.0, [
            Segment(540, 561, "spill", 1, "node1", [3], 0, 0.7, "task_failed",
                    error="worker exited with signal 9 (host out of memory)", gave_up=True)]),
        Task("bert-base", 1500, 0.0, cancelled=200.0),
    ]
    entries = [("gpt2-lr1e-4", "fsdp", 4, "node0", [0, 1, 2, 3], 30, 1630),
               ("gpt2-lr3e-4", "ddp", 2, "node1", [0, 1], 30, 530),
               ("resnet50", "single", 1, "node1", [2], 300, 1260),
               ("vit-small", "spill", 1, "node1", [3], 540, 1170),
               # Cancelled at 200 s, before it started; the plan still has it.
               ("bert-base", "ddp", 2, "node1", [0, 1], 540, 1700)]
    plan = {"solver": "auto", "status": "time_limit", "makespan_s": 1700.0,
            "lower_bound_s": 1520.0, "solve_time_s": 30.0,
            "baselines": {"current-practice": {"makespan_s": 4250.0},
                          "max": {"makespan_s": 2980.0}},
            "tasks": [{"task": t, "technique": q, "gpus": g, "node": n, "gpu_ids": ids,
                       "start_s": float(a), "end_s": float(b)}
                      for (t, q, g, n, ids, a, b) in entries]}
    events = [{"t": 0.0, "event": "task_arrived", "task": t.id} for t in tasks]
    events.append({"t": 28.0, "event": "plan", "makespan_s": 1700.0, "solver": "auto",
                   "status": "time_limit"})
    events.append({"t": 200.0, "event": "task_cancelled", "task": "bert-base", "step": 0})
    for task in tasks:
        events += segment_events(task)
    events.sort(key=lambda e: e["t"])
    return tasks, [(28.0, plan)], events


SWEEP_START_S = 1500.0  # the `sweep` scenario's run clock


def sweep_scenario():
    def gpt(name, lr, seed, gpu, final, stop=None):
        # stop: (the deciding evaluation's step, the checkpoint's step) of ASHA
        node, ids = ("node0", [gpu]) if gpu < 4 else ("node1", [gpu - 4])
        end = 20 + (stop[1] if stop else 1000) * 1.0
        seg = Segment(20, end, "single", 1, node, ids, 0, 1.0,
                      "task_early_stopped" if stop else "task_finished")
        task = Task(name, 1000, 0.0, [seg], sweep="gpt",
                    hyperparameters={"optimizer.lr": lr, "seed": seed},
                    evaluate={"every": 100, "batches": 4, "final": final})
        if stop:
            seg.extra = {"rule": "asha", "metric": "eval_loss", "eval_step": stop[0],
                         "value": eval_at(task, stop[0])["eval_loss"]}
        return task

    def lora(name, model, optimizer, gpu, accuracy, final):
        seg = Segment(20, 20 + 600 * 1.5, "single", 1, "node1", [gpu], 0, 1.5, "task_finished")
        return Task(name, 600, 0.0, [seg], sweep="lora",
                    hyperparameters={"model.type": model, "optimizer.type": optimizer,
                                     "batch_size": 8},
                    evaluate={"every": 100, "batches": 1, "final": final, "accuracy": accuracy},
                    select=("eval_accuracy", "max"))

    tasks = [
        gpt("gpt-lr3.162e-5-seed1", 3.1622776601683795e-05, 1, 0, 2.7651),
        gpt("gpt-lr3.162e-4-seed1", 0.00031622776601683794, 1, 1, 2.3915),
        gpt("gpt-lr3.162e-4-seed2", 0.00031622776601683794, 2, 2, 2.3975),
        gpt("gpt-lr1e-3-seed1", 0.001, 1, 3, 2.45, stop=(400, 410)),
        gpt("gpt-lr3.162e-3-seed1", 0.0031622776601683794, 1, 4, 2.9, stop=(200, 210)),
        lora("lora-gpt2-adamw", "gpt2", "adamw", 1, 0.471, 2.31),
        lora("lora-gpt2-sgd", "gpt2", "sgd", 2, 0.452, 2.42),
        lora("lora-llama-adamw", "llama", "adamw", 3, 0.482, 2.26),
        Task("resnet50", 2400, 0.0, [
            Segment(240, 1440, "single", 1, "node1", [0], 0, 0.5, "task_finished")]),
    ]
    entries = [(t.id, s.technique, s.gpus, s.node, s.gpu_ids, s.start,
                s.end if s.how == "task_finished" else s.start + t.steps * s.step_s)
               for t in tasks for s in t.segments]
    plan = {"solver": "auto", "status": "optimal", "makespan_s": 1440.0,
            "lower_bound_s": 1400.0, "solve_time_s": 0.52,
            "tasks": [{"task": t, "technique": q, "gpus": g, "node": n, "gpu_ids": ids,
                       "start_s": float(a), "end_s": float(b)}
                      for (t, q, g, n, ids, a, b) in entries]}
    events = [{"t": 0.0, "event": "task_arrived", "task": t.id} for t in tasks]
    events.append({"t": 18.0, "event": "plan", "makespan_s": 1440.0, "solver": "auto",
                   "status": "optimal"})
    for task in tasks:
        events += segment_events(task) + eval_events(task)
    events.sort(key=lambda e: e["t"])
    return tasks, [(18.0, plan)], events


def best_entries(tasks, now):
    """The tasks reply's "best": per sweep, its tasks ranked by their latest
    evaluation by `now` (the service's rule, docs/contracts.md)."""
    sweeps = {}
    for task in tasks:
        if task.evaluate:
            sweeps.setdefault(task.sweep or task.id, []).append(task)
    out = []
    for sweep, members in sweeps.items():
        metric, mode = members[0].select
        latest = [(eval_at(t, done[-1]), t) for t in members
                  for done in [[s for (at, s) in evaluations(t) if at <= now]] if done]
        if not latest:
            continue
        latest.sort(key=lambda p: p[0][metric], reverse=(mode == "max"))
        (e, task), up = latest[0], latest[1] if len(latest) > 1 else None
        entry = {"sweep": sweep, "task": task.id, "metric": metric, "mode": mode,
                 "value": e[metric], "step": e["step"], "evaluated": len(latest),
                 "tasks": len(members), "runner_up": None, "margin": None,
                 "margin_se": None, "within_noise": None}
        if up:
            entry["runner_up"] = {"task": up[1].id, "value": up[0][metric]}
            entry["margin"] = round(abs(e[metric] - up[0][metric]), 6)
            if metric == "eval_loss" and "eval_loss_se" in e and "eval_loss_se" in up[0]:
                entry["margin_se"] = round(math.hypot(e["eval_loss_se"], up[0]["eval_loss_se"]), 6)
                entry["within_noise"] = entry["margin"] < 2 * entry["margin_se"]
        out.append(entry)
    return out


REPORT_HTML = b"<!doctype html><title>Saturn report</title><h1>Saturn report (mock)</h1>\n"


class World:
    """The canned run and its clock; thread-safe."""

    def __init__(self, scenario, speed):
        self.lock = threading.Condition()
        self.speed = speed
        self.started = None  # the clock runs from the first API request
        self.legacy = scenario == "ended"  # a server from before model selection
        self.report = scenario == "sweep"  # it has written report.html
        if scenario == "busy":
            self.tasks, self.plans, self.pending = busy_scenario()
            self.start_s = START_S
        elif scenario == "ended":
            self.tasks, self.plans, self.pending = ended_scenario()
            self.start_s = ENDED_START_S
        elif scenario == "sweep":
            self.tasks, self.plans, self.pending = sweep_scenario()
            self.start_s = SWEEP_START_S
        else:
            self.tasks, self.plans, self.pending = [], [], []
            self.start_s = 0.0
        self.log = []  # (id, event) of every event due so far
        self.seq = 0
        self.progress = []  # (id, event): the latest progress events, stream only
        self.last_progress_s = {}
        threading.Thread(target=self._tick, daemon=True).start()

    def start_clock(self):
        with self.lock:
            if self.started is None:
                self.started = time.monotonic()

    def now(self):
        if self.started is None:
            return self.start_s
        return round(self.start_s + (time.monotonic() - self.started) * self.speed, 3)

    def _append(self, event, stored=True):
        self.seq += 1
        (self.log if stored else self.progress).append((self.seq, event))
        if not stored:
            del self.progress[:-200]
        self.lock.notify_all()

    def _tick(self):
        while True:
            with self.lock:
                now = self.now()
                while self.pending and self.pending[0]["t"] <= now:
                    event = self.pending.pop(0)
                    self._append(event)
                    if self.started is not None:  # for measuring the page's delay
                        sys.stderr.write("mock_api: emitted %s %s at %.3f\n" % (
                            event["event"], event.get("task", "-"), time.time()))
                        sys.stderr.flush()
                for task in self.tasks:
                    seg = self.current_segment(task, now)
                    if seg is None or now - self.last_progress_s.get(task.id, -1e9) < 1.0:
                        continue
                    self.last_progress_s[task.id] = now
                    step = seg.step_at(now, task.steps)
                    self._append({"t": now, "event": "progress", "task": task.id,
                                  "step": step, "steps": task.steps,
                                  "loss": loss_at(task.id, step)}, stored=False)
            time.sleep(0.1)

    def plan(self, now):
        """The latest plan made by `now`."""
        made = [p for (t, p) in self.plans if t <= now]
        return made[-1] if made else {"tasks": []}

    def current_segment(self, task, now):
        if task.cancelled is not None and task.cancelled <= now:
            return None
        for seg in task.segments:
            if seg.start <= now and (seg.end is None or now < seg.end):
                return seg
        return None

    def task_json(self, task, now, with_losses=False):
        status, seg_shown, steps_done, loss, final_loss, error = "queued", None, 0, None, None, ""
        for seg in task.segments:
            if seg.start > now:
                break
            seg_shown = seg
            if seg.end is not None and seg.end <= now:
                steps_done = seg.step_at(seg.end, task.steps)
                status = {"task_finished": "finished", "task_failed": "failed",
                          "task_stopped": "waiting", "task_early_stopped": "stopped"}[seg.how]
                error = seg.extra.get("error", "")
            else:
                steps_done = seg.step_at(now, task.steps)
                status = "running"
        if status == "waiting" or (status == "queued" and task.profiling_until is None):
            status = "queued" if steps_done == 0 else "waiting"
        if task.profiling_until is not None and task.arrived <= now < task.profiling_until:
            status = "profiling"
        if task.cancelled is not None and task.cancelled <= now:
            status = "cancelled"
        if steps_done:
            loss = loss_at(task.id, steps_done)
        if status == "finished":
            final_loss = loss_at(task.id, task.steps)
        planned = next((p for p in self.plan(now)["tasks"] if p["task"] == task.id), None)
        eta = planned["end_s"] if planned and status in (
            "queued", "waiting", "running", "profiling") else None
        placed = seg_shown if status in ("running", "finished", "failed", "stopped") else None
        out = {"id": task.id, "status": status,
               "technique": placed.technique if placed else None,
               "gpus": placed.gpus if placed else None,
               "node": placed.node if placed else None,
               "gpu_ids": placed.gpu_ids if placed else [],
               "steps_done": steps_done, "steps": task.steps, "eta_s": eta,
               "loss": loss, "final_loss": final_loss, "submitted_s": task.arrived,
               "error": error}
        if with_losses:
            every = max(1, steps_done // 150)
            steps = sorted(set(range(every, steps_done + 1, every)) | {steps_done} - {0})
            # As the service: a step's index and its loss (a progress event's
            # "step" counts the steps done, the last one's loss).
            out["losses"] = [[s - 1, loss_at(task.id, s)] for s in steps]
        if self.legacy:
            return out
        done = [s for (t, s) in evaluations(task) if t <= now]
        out["hyperparameters"] = dict(task.hyperparameters)
        out["eval"] = eval_at(task, done[-1]) if done else None
        if with_losses:
            out["evals"] = [[s, eval_at(task, s)["eval_loss"]] for s in done]
        return out

    def tasks_json(self, now):
        visible = self.visible_tasks(now)
        out = {"version": 1, "now_s": now, "tasks": [self.task_json(t, now) for t in visible]}
        if not self.legacy:
            out["best"] = best_entries(visible, now)
        if self.report:
            out["report"] = "report.html"
        return out

    def visible_tasks(self, now):
        return [t for t in self.tasks if t.arrived <= now]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "saturn-mock/1"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("mock_api: " + fmt % args + "\n")

    def _send(self, code, body, content_type="application/json"):
        if not isinstance(body, bytes):
            body = (json.dumps(body) + "\n").encode()
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _authorized(self, query):
        token = self.server.token
        if not token:
            return True
        if self.headers.get("Authorization", "") == "Bearer " + token:
            return True
        return self.command == "GET" and query.get("access_token", [""])[0] == token

    def do_GET(self):
        url = urlparse(self.path)
        query = parse_qs(url.query)
        world = self.server.world
        page = url.path in ("/", "/index.html") or url.path.startswith("/dashboard/")
        if url.path == "/report.html" and world.report:  # holds data: needs the token
            if not self._authorized(query):
                return self._send(401, {"error": "missing or wrong token"})
            return self._send(200, REPORT_HTML, "text/html; charset=utf-8")
        if page and self.server.token_for_page and not self._authorized(query):
            return self._send(401, {"error": "missing or wrong token"})
        if page:
            name = "index.html" if url.path in ("/", "/index.html") else url.path[11:]
            path = Path(self.server.dashboard_dir) / name
            if "/" in name or not path.is_file():
                return self._send(404, {"error": "no dashboard file " + name})
            types = {".html": "text/html; charset=utf-8", ".js": "text/javascript",
                     ".css": "text/css", ".svg": "image/svg+xml"}
            return self._send(200, path.read_bytes(),
                              types.get(path.suffix, "application/octet-stream"))
        if not self._authorized(query):
            return self._send(401, {"error": "missing or wrong token"})
        world.start_clock()
        with world.lock:
            now = world.now()
            if url.path == "/v1/tasks":
                return self._send(200, world.tasks_json(now))
            m = re.fullmatch(r"/v1/tasks/([^/]+)", url.path)
            if m:
                task = next((t for t in world.visible_tasks(now) if t.id == m.group(1)), None)
                if task is None:
                    return self._send(404, {"error": "no task " + m.group(1)})
                return self._send(200, world.task_json(task, now, with_losses=True))
            if url.path == "/v1/plan":
                return self._send(200, world.plan(now))
        if url.path == "/v1/events":
            since = self.headers.get("Last-Event-ID") or query.get("since", ["0"])[0]
            if self.server.drop_after:
                since = 0
            return self._stream(int(since or 0))
        return self._send(404, {"error": "no such endpoint " + url.path})

    def do_DELETE(self):
        url = urlparse(self.path)
        if not self._authorized(parse_qs(url.query)):
            return self._send(401, {"error": "missing or wrong token"})
        m = re.fullmatch(r"/v1/tasks/([^/]+)", url.path)
        world = self.server.world
        with world.lock:
            now = world.now()
            task = next((t for t in world.visible_tasks(now) if t.id == m.group(1)), None) \
                if m else None
            if task is None:
                return self._send(404, {"error": "no task " + url.path})
            seg = world.current_segment(task, now)
            if seg:
                seg.end, seg.how = now, "task_stopped"
                seg.extra = {"reason": "cancelled"}
            task.cancelled = now
            world._append({"t": now, "event": "task_cancelled", "task": task.id,
                           "step": seg.step_at(now, task.steps) if seg else 0})
        return self._send(200, {"task": task.id, "status": "cancelled"})

    def do_POST(self):
        url = urlparse(self.path)
        if not self._authorized(parse_qs(url.query)):
            return self._send(401, {"error": "missing or wrong token"})
        if url.path != "/v1/workloads":
            return self._send(404, {"error": "no such endpoint " + url.path})
        body = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode()
        try:
            text = json.loads(body)["workload"]
        except (ValueError, KeyError, TypeError):
            text = body
        names = re.findall(r"name:\s*([A-Za-z0-9_.-]+)", text)
        world = self.server.world
        with world.lock:
            now = world.now()
            known = {t.id for t in world.tasks}
            clash = [n for n in names if n in known]
            if not names or clash:
                return self._send(409 if clash else 400,
                                  {"error": "task already exists: " + ", ".join(clash)
                                   if clash else "workload: no tasks"})
            for name in names:
                world.tasks.append(Task(name, 1000, now))
                world._append({"t": now, "event": "task_arrived", "task": name})
        return self._send(201, {"tasks": names})

    def _stream(self, since):
        world = self.server.world
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        sent = since
        with world.lock:
            began = world.seq
        quiet_since = time.monotonic()
        ends = time.monotonic() + self.server.drop_after if self.server.drop_after else None
        try:
            if ends is not None:  # reconnect after 0.5 s, not the browser's default 3 s
                self.wfile.write(b"retry: 500\n\n")
            while ends is None or time.monotonic() < ends:
                with world.lock:
                    due = [(i, e) for (i, e) in world.log + world.progress if i > sent]
                    if not due:
                        world.lock.wait(timeout=1)
                        due = [(i, e) for (i, e) in world.log + world.progress if i > sent]
                due.sort(key=lambda p: p[0])
                # Progress is not replayed: only what happened after this stream began.
                chunk = "".join("id: %d\ndata: %s\n\n" % (i, json.dumps(e)) for (i, e) in due
                                if e["event"] != "progress" or i > began)
                if due:
                    sent = due[-1][0]
                elif time.monotonic() - quiet_since < 10:
                    continue
                else:
                    chunk = ": keep-alive\n\n"
                quiet_since = time.monotonic()
                self.wfile.write(chunk.encode())
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True


class Server(ThreadingHTTPServer):
    daemon_threads = True


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=8470)
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--dashboard-dir",
                   default=str(Path(__file__).resolve().parents[2] / "src/service/dashboard"))
    p.add_argument("--scenario", choices=["busy", "ended", "sweep", "empty"], default="busy")
    p.add_argument("--token", default="")
    p.add_argument("--speed", type=float, default=1.0)
    p.add_argument("--token-for-page", action="store_true")
    p.add_argument("--drop-streams-after", type=float, default=0)
    p.add_argument("--verbose", action="store_true")
    args = p.parse_args()
    server = Server((args.host, args.port), Handler)
    server.world = World(args.scenario, args.speed)
    server.dashboard_dir = args.dashboard_dir
    server.token = args.token
    server.verbose = args.verbose
    server.drop_after = args.drop_streams_after
    server.token_for_page = args.token_for_page
    print("listening on %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
