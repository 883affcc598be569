#!/usr/bin/python3
"""Writes a sample run's report (report_sample), loads its report.html in
headless Chromium and checks what the browser lays out, which the C++ tests
cannot see: every loss chart's legend and every Gantt label inside its chart
or bar, a connector joining the parts of a task on GPUs apart, one chart per
sweep (a task without loss named in a line, not given an empty chart), and twelve different colours for the first twelve tasks' curves.
Uses tests/service/browser_check.py's Chromium (DevTools on a pipe).

  report_browser_check.py --sample build/tests/report/report_sample --artifacts DIR

Writes DIR/report.png (screenshot of the whole page; report-N.png, the same
in parts a screen high), DIR/report.html (the report) and DIR/check.log. Exit 0 when all holds, 1 with the failed checks,
77 (ctest skip) without Chromium.
"""
import argparse
import base64
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "service"))
from browser_check import Chromium  # noqa: E402

LAYOUT_JS = r"""
(() => {
  const inside = (inner, outer, slack) => inner.left >= outer.left - slack &&
      inner.right <= outer.right + slack && inner.top >= outer.top - slack &&
      inner.bottom <= outer.bottom + slack;
  const svgs = [...document.querySelectorAll('svg')];
  const out = {ready: document.readyState, charts: [], labels_outside: [], legends_outside: [],
               joins: [], strokes: []};
  for (const svg of svgs) {
    const box = svg.getBoundingClientRect();
    const legend = [...svg.querySelectorAll('text.legend')];
    if (legend.length) {
      out.charts.push({title: svg.querySelector('text').textContent,
                       tasks: legend.map(t => t.dataset.task)});
      for (const t of legend)
        if (!inside(t.getBoundingClientRect(), box, 0.5)) out.legends_outside.push(t.dataset.task);
    }
    // A Gantt label sits inside the bar drawn just before it.
    for (const t of svg.querySelectorAll('text')) {
      const bar = t.previousElementSibling;
      if (!bar || bar.tagName !== 'rect' || !bar.querySelector('title')) continue;
      if (!inside(t.getBoundingClientRect(), bar.getBoundingClientRect(), 1))
        out.labels_outside.push(t.textContent);
    }
    for (const g of svg.querySelectorAll('g.join')) {
      const line = g.querySelector('line').getBoundingClientRect();
      out.joins.push({title: g.querySelector('title').textContent, height: line.height});
    }
  }
  const silent = document.querySelector('p.no-loss');
  out.no_loss = silent ? silent.textContent : null;
  for (const p of document.querySelectorAll('polyline.train'))
    out.strokes.push([p.dataset.task, getComputedStyle(p).stroke, p.getAttribute('stroke-dasharray')]);
  return JSON.stringify(out);
})()
"""


def problems(page):
    out = []
    titles = [c["title"] for c in page["charts"]]
    for want in ("sweep gpt: 4 tasks", "sweep vit: 2 tasks", "sweep bert: 6 tasks", "mlp",
                 "resnet"):
        if want not in titles:
            out.append("no loss chart titled %r (charts: %s)" % (want, titles))
    if len(titles) != 5:
        out.append("%d loss charts, expected 5: %s" % (len(titles), titles))
    if page["no_loss"] != "No loss reported: late-arrival (cancelled).":
        out.append("the line for tasks without loss says %r" % page["no_loss"])
    if page["legends_outside"]:
        out.append("legend entries outside their chart: %s" % page["legends_outside"])
    if page["labels_outside"]:
        out.append("Gantt labels outside their bars: %s" % page["labels_outside"])
    joined = [j for j in page["joins"] if j["title"].startswith("gpt-lr1e-3")]
    if len(joined) != 1 or joined[0]["height"] < 50:  # the run's bar; outlines have no label
        out.append("gpt-lr1e-3 (GPUs 0, 1 and 7) is not joined across GPUs 2-6: %s" %
                   page["joins"])
    first = page["strokes"][:12]
    if len({s[1] for s in first}) != 12:
        out.append("the first twelve tasks' curves do not have twelve colours: %s" % first)
    later = page["strokes"][12:]
    if not later or any(not s[2] for s in later):
        out.append("tasks after the twelfth are not dashed: %s" % later)
    return out


def sample_report(p, sample_args=lambda args: []):
    """Adds the options both report checks take to parser `p` and parses
    them; writes report_sample's report (with `sample_args(args)`) into a
    fresh --artifacts folder. None (say 77) without Chromium."""
    p.add_argument("--sample", required=True, help="the report_sample program")
    p.add_argument("--artifacts", required=True)
    p.add_argument("--chromium", default=shutil.which("chromium") or
                   shutil.which("chromium-browser") or "")
    p.add_argument("--width", type=int, default=1400)
    args = p.parse_args()
    if not args.chromium:
        print("SKIP: chromium is not installed (Debian package 'chromium'; scripts/setup.sh)")
        return None
    shutil.rmtree(args.artifacts, ignore_errors=True)
    os.makedirs(args.artifacts)
    subprocess.run([args.sample, args.artifacts] + sample_args(args), check=True,
                   stdout=subprocess.DEVNULL)
    return args


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args = sample_report(p)
    if args is None:
        return 77
    log = open(os.path.join(args.artifacts, "check.log"), "w")

    def say(*a):
        print(*a, file=log, flush=True)
        print("report_browser_check:", *a, file=sys.stderr, flush=True)

    browser = Chromium(args.chromium, args.width, 1000)
    try:
        browser.open("file://" + os.path.abspath(os.path.join(args.artifacts, "report.html")),
                     args.width, 1000)
        page = {"ready": None}
        for _ in range(100):
            page = json.loads(browser.evaluate(LAYOUT_JS) or "{}")
            if page.get("ready") == "complete":
                break
            time.sleep(0.1)
        height = browser.evaluate("document.documentElement.scrollHeight")
        browser.call("Emulation.setDeviceMetricsOverride", {
            "width": args.width, "height": height, "deviceScaleFactor": 1, "mobile": False})
        browser.screenshot(os.path.join(args.artifacts, "report.png"))
        # The same in parts a screen high, for looking at in detail.
        for i, top in enumerate(range(0, height, 1000)):
            data = browser.call("Page.captureScreenshot", {"format": "png", "clip": {
                "x": 0, "y": top, "width": args.width, "height": min(1000, height - top),
                "scale": 1}})["data"]
            with open(os.path.join(args.artifacts, "report-%d.png" % (i + 1)), "wb") as f:
                f.write(base64.b64decode(data))
    finally:
        browser.close()
    failures = problems(page) + ["JavaScript exception: %s" % e for e in browser.exceptions]
    say("charts:", json.dumps([c["title"] for c in page["charts"]]))
    say("joins:", json.dumps(page["joins"]))
    for f in failures:
        say("FAILED:", f)
    if not failures:
        say("ok: screenshot in", os.path.join(args.artifacts, "report.png"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
