#!/usr/bin/python3
"""Loads the dashboard in headless Chromium and checks what it renders against
the API it reads. Standard library only: Chromium is driven over the DevTools
protocol on a pipe (--remote-debugging-pipe), because `--dump-dom` with
`--virtual-time-budget` never returns while the page holds the open
/v1/events stream.

  browser_check.py --server http://127.0.0.1:PORT --artifacts DIR
                   [--token T [--token-in-query]] [--expect-tasks a,b] [--wait-status TASK=STATUS ...]
                   [--expect-empty] [--expect-text SELECTOR REGEX ...]
                   [--reject-text SELECTOR REGEX ...] [--timeout 60]

Checks, polling until they hold or --timeout passes:
  - the page loaded its data (body[data-ready=1]) and follows /v1/events
    (#conn[data-state=live]), and threw no JavaScript exception;
  - one row per task of GET /v1/tasks (tr[data-task]), with the API's status
    (data-status) and step count, and a progress bar whose data-steps-done is
    the API's steps_done within what a second of training moves it;
  - each --wait-status holds (the page follows live changes), the page has
    opened /v1/events at least --min-streams times (reconnected), and a running
    task's progress moves on the page without a reload;
  - the Gantt chart has a planned bar per GPU of each plan entry (a faint one
    for a task that ended without running), an actual
    bar for every running task and no bar twice (a replayed stream's events
    are not counted again); a loss curve for each task with steps done, an
    ended task's with every point GET /v1/tasks/{id} has;
  - model selection, as the tasks reply has it (a reply without its fields
    counts as empty): a column per hyper-parameter path (th[data-path], named
    by its last field unless another path ends the same) with each task's
    value as the report writes it (%.6g, strings bare, "–" where it has
    none); an "Eval loss" column when any task evaluated (its latest eval_loss
    and "@step"), an "Eval acc" one when any has an accuracy, "(best)" on
    each sweep's best in its metric's column and nowhere else; a dashed
    evaluation curve per evaluated task (an ended task's with every point of
    its "evals"); the "Best so far" list in the report's words, hidden
    without "best"; the report link exactly when the reply has "report";
  - with --expect-empty: the empty state, no rows;
  - each --expect-text: the first element SELECTOR matches has text that
    REGEX matches (re.search); each --reject-text: no element SELECTOR
    matches has text that REGEX matches.
Writes DIR/dashboard.png (screenshot at the end), DIR/dashboard-live.png (when
progress was first seen moving), DIR/dashboard.html (the rendered DOM) and
DIR/check.log. Exit 0 when all hold, 1 with the failed checks otherwise.
"""
import argparse
import base64
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

SUMMARY_JS = r"""
(() => {
  if (!document.body || !document.getElementById('last-event')) return JSON.stringify({ready: null});
  const q = s => [...document.querySelectorAll(s)];
  const rows = q('#task-rows tr[data-task]').map(r => {
    const p = r.querySelector('.progress');
    return {id: r.dataset.task, status: r.dataset.status,
            steps_done: p ? Number(p.dataset.stepsDone) : null,
            steps: p ? Number(p.dataset.steps) : null,
            text: r.innerText,
            cells: [...r.children].map(td => td.textContent.trim()),
            best: [...r.querySelectorAll('td.eval[data-best]')].map(td => td.dataset.metric)};
  });
  const link = document.getElementById('report-link');
  return JSON.stringify({
    ready: document.body.dataset.ready, conn: document.body.dataset.conn || null,
    streams: Number(document.body.dataset.streams || 0),
    rows, empty: !!document.getElementById('empty-state'),
    planned: q('#gantt rect[data-kind=planned]:not([data-stale])').map(e => e.dataset.task),
    stale: q('#gantt rect[data-kind=planned][data-stale]').map(e => e.dataset.task),
    actual: q('#gantt rect[data-kind=actual]').map(e => [e.dataset.task, e.dataset.how,
      e.getAttribute('x') + ',' + e.getAttribute('y')]),
    curves: q('#loss path[data-kind=train]').map(e => [e.dataset.task, Number(e.dataset.points)]),
    evalCurves: q('#loss path[data-kind=eval]').map(e => [e.dataset.task, Number(e.dataset.points),
      e.getAttribute('stroke-dasharray'), e.getAttribute('stroke')]),
    trainColours: q('#loss path[data-kind=train]').map(e => [e.dataset.task, e.getAttribute('stroke')]),
    heads: q('#task-head th').map(th => ({path: th.dataset.path || null, text: th.textContent})),
    bestHidden: document.getElementById('best-panel').hidden,
    best: q('#best li').map(li => ({sweep: li.dataset.sweep, text: li.textContent})),
    report: link.hidden ? null : link.getAttribute('href'),
    lastEvent: document.getElementById('last-event').dataset.seconds,
  });
})()
"""


class Chromium:
    """Headless Chromium on a DevTools pipe: fd 3 to it, fd 4 from it, messages
    ending in NUL."""

    def __init__(self, binary, width, height):
        self.profile = tempfile.mkdtemp(prefix="saturn-chromium-")
        to_r, self.to_w = os.pipe()
        self.from_r, from_w = os.pipe()
        os.set_inheritable(to_r, True)
        os.set_inheritable(from_w, True)

        def fds():  # in the child, before exec: the pipe ends become fds 3 and 4
            r, w = os.dup(to_r), os.dup(from_w)  # (either end may itself be 3 or 4)
            os.dup2(r, 3)
            os.dup2(w, 4)

        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-extensions", "--disable-dev-shm-usage", "--hide-scrollbars",
             "--remote-debugging-pipe", "--user-data-dir=" + self.profile,
             "--window-size=%d,%d" % (width, height), "about:blank"],
            preexec_fn=fds, pass_fds=(3, 4), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        self.buf = b""
        self.next_id = 0
        self.session = None
        self.exceptions = []
        self.console_errors = []

    def _read_message(self, deadline):
        while b"\0" not in self.buf:
            if time.monotonic() > deadline:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self.from_r, 1 << 16)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe (it exited?)")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, session=True, timeout=30):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        os.write(self.to_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            self._note(reply)

    def _note(self, event):
        if event.get("method") == "Runtime.exceptionThrown":
            details = event["params"]["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            self.exceptions.append(text)
        elif event.get("method") == "Runtime.consoleAPICalled" and \
                event["params"].get("type") == "error":
            self.console_errors.append(" ".join(
                str(a.get("value", a.get("description", ""))) for a in event["params"]["args"]))

    def open(self, url, width, height, scripts=()):
        target = self.call("Target.createTarget", {"url": "about:blank"}, session=False)
        self.session = self.call("Target.attachToTarget",
                                 {"targetId": target["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        self.call("Runtime.enable")
        self.call("Page.enable")
        self.call("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        for source in scripts:  # run in the page before its own scripts
            self.call("Page.addScriptToEvaluateOnNewDocument", {"source": source})
        self.call("Page.navigate", {"url": url})

    def evaluate(self, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError("evaluate: %s" % result["exceptionDetails"])
        return result["result"].get("value")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        with open(path, "wb") as f:
            f.write(base64.b64decode(data["data"]))

    def close(self):
        try:
            self.call("Browser.close", session=False, timeout=5)
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.to_w)
        os.close(self.from_r)
        shutil.rmtree(self.profile, ignore_errors=True)


def api(server, path, token):
    req = urllib.request.Request(server + path)
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def format_loss(x):
    """FormatLoss (src/common/format.cc)."""
    if x == 0 or not math.isfinite(x) or abs(x) >= 0.001:
        return "%.4f" % x
    return "%.3g" % x


def hyper_text(v):
    """HyperParameterText (src/report/hyperparameters.cc)."""
    if isinstance(v, str):
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return json.dumps(v)
    return str(v) if isinstance(v, int) else "%.6g" % v


def margin_phrase(b):
    """MarginPhrase (src/report/best.cc)."""
    if not b.get("runner_up"):
        return ""
    out = "ahead of %s by %s" % (b["runner_up"]["task"], format_loss(b["margin"]))
    if b.get("margin_se") is not None:
        return out + " (standard error %s: %s)" % (format_loss(b["margin_se"]), (
            "within the evaluations' noise" if b["within_noise"] else "more than twice the noise"))
    return out + " (noise unknown: evaluate on 2 or more batches for a standard error)"


def best_text(b):
    """A "Best so far" line: "<sweep>: <task> — <metric> <value> at step <step>",
    the margin, how many tasks evaluated."""
    metric = "eval accuracy" if b["metric"] == "eval_accuracy" else "eval loss"
    value = "%.4f" % b["value"] if b["metric"] == "eval_accuracy" else format_loss(b["value"])
    margin = margin_phrase(b)
    return "%s: %s — %s %s at step %d%s · %d of %d task%s evaluated" % (
        b["sweep"], b["task"], metric, value, b["step"], "; " + margin if margin else "",
        b["evaluated"], b["tasks"], "" if b["tasks"] == 1 else "s")


def model_selection_problems(page, reply, details):
    """What the page's hyper-parameters, evaluations, best so far and report
    link get wrong against the tasks reply (an older server's, without them,
    counts as empty). details: GET /v1/tasks/{id} of each ended task."""
    out, tasks, rows = [], reply["tasks"], {r["id"]: r for r in page["rows"]}
    paths = []
    for t in tasks:
        paths += [p for p in t.get("hyperparameters") or {} if p not in paths]
    heads = page["heads"]
    if sorted(h["path"] for h in heads if h["path"]) != sorted(paths):
        out.append("hyper-parameter columns %s, the API's paths %s" % (
            [h["path"] for h in heads if h["path"]], paths))
        return out
    # The short key of the task names and the report: batch_size is "bs".
    last = lambda p: {"batch_size": "bs"}.get(p.rsplit(".", 1)[-1], p.rsplit(".", 1)[-1])
    for h in heads:
        if h["path"]:
            want = h["path"] if [last(p) for p in paths].count(last(h["path"])) > 1 else last(h["path"])
            if h["text"] != want:
                out.append("column %s is headed %r, not %r" % (h["path"], h["text"], want))
    texts = [h["text"] for h in heads]
    evaluated = [t for t in tasks if t.get("eval")]
    want_cols = (["Eval loss"] if evaluated else []) + (
        ["Eval acc"] if any("eval_accuracy" in t["eval"] for t in evaluated) else [])
    have_cols = [x for x in texts if x in ("Eval loss", "Eval acc")]
    if have_cols != want_cols:
        out.append("evaluation columns %s, expected %s" % (have_cols, want_cols))
    best = reply.get("best") or []
    best_metric = {b["task"]: b["metric"] for b in best}
    for t in tasks:
        r = rows.get(t["id"])
        if r is None:
            continue
        cell = dict(zip(texts, r["cells"]))
        for h, text in zip(heads, r["cells"]):
            if h["path"]:
                hp = t.get("hyperparameters") or {}
                want = hyper_text(hp[h["path"]]) if h["path"] in hp else "–"
                if text != want:
                    out.append("%s: %s shows %r, the API %r" % (t["id"], h["path"], text, want))
        for col, metric in (("Eval loss", "eval_loss"), ("Eval acc", "eval_accuracy")):
            if col not in cell:
                continue
            e = t.get("eval") or {}
            if metric in e:
                value = format_loss(e[metric]) if metric == "eval_loss" else "%.4f" % e[metric]
                want = ("(best) " if best_metric.get(t["id"]) == metric else "") + value + \
                    (" @%d" % e["step"] if metric == "eval_loss" else "")
            else:
                want = "–"
            if cell[col] != want:
                out.append("%s: %s shows %r, the API %r" % (t["id"], col, cell[col], want))
        want_best = [best_metric[t["id"]]] if t["id"] in best_metric else []
        if r["best"] != want_best:
            out.append("%s: marked best in %s, expected %s" % (t["id"], r["best"], want_best))
        drawn = [c for c in page["evalCurves"] if c[0] == t["id"]]
        if t.get("eval") and not drawn:
            out.append("%s evaluated but has no evaluation curve" % t["id"])
        for (_, points, dash, colour) in drawn:
            if not dash:
                out.append("%s: its evaluation curve is not dashed" % t["id"])
            if [colour] != [c[1] for c in page["trainColours"] if c[0] == t["id"]]:
                out.append("%s: its evaluation curve is not in its loss curve's colour" % t["id"])
            if points < len(details.get(t["id"], {}).get("evals", [])):
                out.append("%s: the evaluation curve has %d points, the API %d" % (
                    t["id"], points, len(details[t["id"]]["evals"])))
    if page["bestHidden"] != (not best):
        out.append("the best-so-far panel is %s, the API has %d entries" % (
            "hidden" if page["bestHidden"] else "shown", len(best)))
    shown = [" ".join(b["text"].split()) for b in page["best"]]
    if shown != [best_text(b) for b in best]:
        out.append("best so far says %s, expected %s" % (shown, [best_text(b) for b in best]))
    report = reply.get("report")
    if (page["report"] or "").split("?")[0] != ("/" + report if report else ""):
        out.append("the report link is %r, the API's report %r" % (page["report"], report))
    return out


def problems(page, tasks, plan, args, first, moved, losses):
    """What the rendered page gets wrong against the API's answer (empty: all
    holds). losses: each ended task's curve as GET /v1/tasks/{id} gives it."""
    out = []
    if page.get("ready") != "1":
        return ["the page never loaded its data (body[data-ready] is %r)" % page.get("ready")]
    if page["conn"] != "live":
        out.append("the page does not follow /v1/events (connection %r)" % page["conn"])
    rows = {r["id"]: r for r in page["rows"]}
    if args.expect_empty:
        if rows or not page["empty"]:
            out.append("expected the empty state, got %d rows" % len(rows))
        return out
    api_ids = [t["id"] for t in tasks]
    for want in args.expect_tasks:
        if want not in api_ids:
            out.append("the API has no task %s" % want)
    if sorted(rows) != sorted(api_ids):
        out.append("rows %s, API tasks %s" % (sorted(rows), sorted(api_ids)))
    for t in tasks:
        r = rows.get(t["id"])
        if r is None:
            continue
        if r["status"] != t["status"]:
            out.append("%s: page says %s, API says %s" % (t["id"], r["status"], t["status"]))
        if r["steps"] != (t["steps"] or 0):  # null before a task is planned
            out.append("%s: page shows %s steps, API %s" % (t["id"], r["steps"], t["steps"]))
        # The API is asked after the page is read, so the page may be behind;
        # a progress event may also be a moment ahead of the API's task view.
        if not (t["steps_done"] - args.step_slack <= r["steps_done"] <= t["steps_done"] + 10):
            out.append("%s: page shows %s steps done, API %s" % (
                t["id"], r["steps_done"], t["steps_done"]))
        if t["status"] == "running" and t["id"] not in {a[0] for a in page["actual"]
                                                       if a[1] == "running"}:
            out.append("%s is running but has no open bar in the Gantt chart" % t["id"])
        if t["steps_done"] > 0 and t["id"] not in {c[0] for c in page["curves"]}:
            out.append("%s has %d steps done but no loss curve" % (t["id"], t["steps_done"]))
        # An ended task's curve is the API's whole: a fresh load draws what a
        # page open all along drew (replayed progress never cuts it short).
        drawn = dict((c[0], c[1]) for c in page["curves"]).get(t["id"], 0)
        if len(losses.get(t["id"], [])) > drawn:
            out.append("%s: the loss curve has %d points, the API %d" % (
                t["id"], drawn, len(losses[t["id"]])))
    places = [(a[0], a[2]) for a in page["actual"]]
    doubled = sorted({p[0] for p in places if places.count(p) > 1})
    if doubled:
        out.append("actual bars drawn twice (events counted twice?) for %s" % ", ".join(doubled))
    ran = {a[0] for a in page["actual"]}
    ended = {t["id"] for t in tasks if t["status"] in ("finished", "failed", "cancelled")}
    for p in plan.get("tasks", []):
        n = page["planned"].count(p["task"])
        if p["task"] in ended and p["task"] not in ran:
            # It ended without running: only a faint trace of the plan's place.
            if n or page["stale"].count(p["task"]) != len(p.get("gpu_ids", [])):
                out.append("plan entry %s ended without running but is drawn as planned" %
                           p["task"])
        elif n != len(p.get("gpu_ids", [])):
            out.append("plan entry %s: %d planned bars for %d GPUs" % (
                p["task"], n, len(p.get("gpu_ids", []))))
    if page["streams"] < args.min_streams:
        out.append("waiting for the page to open /v1/events %d times (it has %d)" % (
            args.min_streams, page["streams"]))
    for cond in args.wait_status:
        task, status = cond.split("=", 1)
        if rows.get(task, {}).get("status") != status:
            out.append("waiting for %s to be %s on the page (it is %s)" % (
                task, status, rows.get(task, {}).get("status")))
    if args.expect_moving:
        # Seen once is enough: the task may have finished since.
        moved.update(i for i, r in rows.items() if i in first and r["status"] == "running" and
                     r["steps_done"] > first[i])
        if not moved:
            out.append("no running task's progress moved on the page since it loaded")
    return out


WATCH_JS = r"""
(() => {
  // When (wall clock, ms) the row of %(task)s first showed %(status)s.
  const seen = () => document.querySelector('tr[data-task="%(task)s"][data-status="%(status)s"]');
  const note = () => { if (!window.__shownAt && seen()) window.__shownAt = Date.now(); };
  const start = () => {
    note();
    new MutationObserver(note).observe(document.body, {subtree: true, childList: true, attributes: true});
  };
  if (document.body) start(); else document.addEventListener('DOMContentLoaded', start);
})()
"""


TEXTS_JS = r"""
(sel => JSON.stringify([...document.querySelectorAll(sel)].map(e => e.textContent)))(%s)
"""


def text_problems(browser, args):
    """What the page's text gets wrong against --expect-text and --reject-text."""
    out = []
    for sel, regex in args.expect_text:
        texts = json.loads(browser.evaluate(TEXTS_JS % json.dumps(sel)))
        if not texts:
            out.append("no element %s on the page" % sel)
        elif not re.search(regex, texts[0]):
            out.append("%s says %r, expected /%s/" % (sel, texts[0], regex))
    for sel, regex in args.reject_text:
        for text in json.loads(browser.evaluate(TEXTS_JS % json.dumps(sel))):
            if re.search(regex, text):
                out.append("%s says %r, which must not match /%s/" % (sel, text, regex))
    return out


def say_delay(browser, spec, say):
    cond, pattern, log = spec.split(":", 2)
    shown = browser.evaluate("window.__shownAt || 0") / 1000.0
    emitted = None
    with open(log) as f:
        for line in f:
            m = re.search(pattern + r".* at ([0-9.]+)$", line.strip())
            if m:
                emitted = float(m.group(1))
                break
    if emitted and shown:
        say("delay: %s shown %.0f ms after the API emitted the event" % (
            cond, (shown - emitted) * 1000))
    else:
        say("delay: %s not measured (emitted %s, shown %s)" % (cond, emitted, shown))


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--server", required=True)
    p.add_argument("--artifacts", required=True)
    p.add_argument("--token", default="")
    p.add_argument("--token-in-query", action="store_true",
                   help="open /?access_token=TOKEN rather than /#token=TOKEN")
    p.add_argument("--chromium", default=shutil.which("chromium") or "chromium")
    p.add_argument("--expect-tasks", default="", type=lambda s: [x for x in s.split(",") if x])
    p.add_argument("--wait-status", action="append", default=[])
    p.add_argument("--expect-empty", action="store_true")
    p.add_argument("--expect-text", nargs=2, action="append", default=[],
                   metavar=("SELECTOR", "REGEX"))
    p.add_argument("--reject-text", nargs=2, action="append", default=[],
                   metavar=("SELECTOR", "REGEX"))
    p.add_argument("--min-streams", type=int, default=1,
                   help="hold only once the page has (re)opened /v1/events this often")
    p.add_argument("--expect-moving", action="store_true",
                   help="a running task's progress must move on the page")
    p.add_argument("--step-slack", type=int, default=50,
                   help="how many steps the page may be behind the API")
    p.add_argument("--delay-of", default="",
                   help="TASK=STATUS:EVENT_LINE_REGEX:LOG — print how long after the API logged "
                        "the event (a line 'emitted ... at UNIX_TIME' in LOG) the row showed STATUS")
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--width", type=int, default=1440)
    p.add_argument("--height", type=int, default=1500)
    return p.parse_args()


def say_summary(browser, page, say):
    """What the page showed, in the log."""
    say("page:", json.dumps({k: page.get(k) for k in ("ready", "conn", "streams", "lastEvent")}))
    for r in page["rows"]:
        say("  row %-16s %-10s %s/%s" % (r["id"], r["status"], r["steps_done"], r["steps"]))
    say("  gantt: %d planned bars, %d actual bars; %d loss curves" % (
        len(page["planned"]), len(page["actual"]), len(page["curves"])))
    for card in json.loads(browser.evaluate(TEXTS_JS % json.dumps("#c-plan-card"))):
        say("  plan card: %s" % " ".join(card.split()))
    say("  hyper-parameter columns: %s; %d evaluation curves; report link %s" % (
        [h["text"] for h in page.get("heads", []) if h["path"]],
        len(page.get("evalCurves", [])), page.get("report")))
    for b in page.get("best", []):
        say("  best so far: %s" % " ".join(b["text"].split()))


def main():
    args = parse_args()
    os.makedirs(args.artifacts, exist_ok=True)
    log = open(os.path.join(args.artifacts, "check.log"), "w")

    def say(*a):
        print(*a, file=log, flush=True)
        print("browser_check:", *a, file=sys.stderr, flush=True)

    if not args.token:
        url = args.server + "/"
    elif args.token_in_query:
        url = args.server + "/?access_token=" + urllib.parse.quote(args.token)
    else:
        url = args.server + "/#token=" + urllib.parse.quote(args.token)
    browser = Chromium(args.chromium, args.width, args.height)
    failures = ["the page was never read"]
    try:
        scripts = []
        if args.delay_of:
            task, status = args.delay_of.split(":")[0].split("=", 1)
            scripts.append(WATCH_JS % {"task": task, "status": status})
        browser.open(url, args.width, args.height, scripts)
        deadline = time.monotonic() + args.timeout
        first, moved, losses, details = {}, set(), {}, {}
        while True:
            page = json.loads(browser.evaluate(SUMMARY_JS) or "{}")
            reply = api(args.server, "/v1/tasks", args.token)
            tasks = reply["tasks"]
            plan = api(args.server, "/v1/plan", args.token)
            for r in page.get("rows", []):  # each task's progress when the page first showed it
                first.setdefault(r["id"], r["steps_done"])
            had_moved = bool(moved)
            for t in tasks:  # an ended task's curves no longer change
                if t["status"] in ("finished", "failed", "cancelled", "stopped") and \
                        t["id"] not in losses:
                    details[t["id"]] = api(args.server, "/v1/tasks/" + urllib.parse.quote(t["id"]),
                                           args.token)
                    losses[t["id"]] = details[t["id"]].get("losses", [])
            failures = problems(page, tasks, plan, args, first, moved, losses)
            if page.get("ready") == "1" and not args.expect_empty:
                failures += model_selection_problems(page, reply, details)
            if not failures or time.monotonic() > deadline:  # now the page's words
                failures += text_problems(browser, args)
            if moved and not had_moved:  # a picture of the run in progress
                browser.screenshot(os.path.join(args.artifacts, "dashboard-live.png"))
            failures += ["JavaScript exception: %s" % e for e in browser.exceptions]
            if not failures or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        # The screenshot after the last check, with the page at rest.
        browser.screenshot(os.path.join(args.artifacts, "dashboard.png"))
        with open(os.path.join(args.artifacts, "dashboard.html"), "w") as f:
            f.write(browser.evaluate("document.documentElement.outerHTML"))
        if args.delay_of:
            say_delay(browser, args.delay_of, say)
        say_summary(browser, page, say)
        for e in browser.console_errors:
            say("  console error:", e)
    finally:
        browser.close()
    if failures:
        for f in failures:
            say("FAILED:", f)
        return 1
    say("ok: the page shows what the API says; artifacts in", args.artifacts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
