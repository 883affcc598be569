#!/usr/bin/python3
"""Writes the report of a run of many table groups (report_sample --groups N,
each group trained alone), loads its report.html in headless Chromium and
checks what a reader of 10,000 groups gets, which the C++ tests cannot see:
  - the groups table has a row per group;
  - a click on its "held-out loss" header sorts it ascending (the first
    row's value is the least of the column's, the empty cells last), a
    second click descending (the first is the greatest), an arrow on the
    header each time, and the rows are the same rows;
  - the histogram of held-out losses lies inside the page, its bars inside
    it, as many bars as report.json's bins with a count, their counts adding
    up to the groups with a held-out loss;
  - no Gantt draws a bar per task: the run's bars are merged (a line says
    so), each chart has far fewer boxes than groups;
  - no more than a few loss charts, and no JavaScript exception.
It measures, and prints, the time from navigation to the load event and to
the first frame after it, and from the click on the header to the sorted
table's next frame (no assertion on time: these depend on the machine).
Uses tests/service/browser_check.py's Chromium (DevTools on a pipe).

  report_groups_browser_check.py --sample build/tests/report/report_sample --artifacts DIR
                                 [--groups 10000]

Writes DIR/report.html, DIR/report.json, DIR/report.png (the page's top, a
few screens high), DIR/sorted.png (the table after the second click),
DIR/timings.json and DIR/check.log. Exit 0 when all holds, 1 with the failed
checks, 77 (ctest skip) without Chromium.
"""
import argparse
import base64
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "service"))
from browser_check import Chromium  # noqa: E402
from report_browser_check import sample_report  # noqa: E402

# Before the page's own scripts: when the first frame after the load event
# is drawn (a timeout after the animation frame runs once it is painted).
TIMING_SCRIPT = r"""
addEventListener('load', () => requestAnimationFrame(() => setTimeout(() => {
  window.__framed_ms = performance.now();
})));
"""

PAGE_JS = r"""
(() => {
  if (document.readyState !== 'complete' || !window.__framed_ms)
    return JSON.stringify({ready: document.readyState});
  const nav = performance.getEntriesByType('navigation')[0];
  const table = document.getElementById('groups-table');
  const hist = [...document.querySelectorAll('svg')].find(s => s.querySelector('text') &&
      s.querySelector('text').textContent.startsWith('Held-out loss'));
  const inside = (inner, outer, slack) => inner.left >= outer.left - slack &&
      inner.right <= outer.right + slack && inner.top >= outer.top - slack &&
      inner.bottom <= outer.bottom + slack;
  const out = {ready: document.readyState,
               load_ms: nav ? nav.loadEventEnd : null,
               framed_ms: window.__framed_ms || null,
               rows: table ? table.tBodies[0].rows.length : null,
               page_width: document.documentElement.scrollWidth,
               gantt_boxes: [], merged_note: null, loss_charts: 0, bins: []};
  if (hist) {
    const box = hist.getBoundingClientRect();
    out.hist = {left: box.left, right: box.right, top: box.top, bottom: box.bottom,
                bars_inside: [...hist.querySelectorAll('rect.bin')].every(
                    r => inside(r.getBoundingClientRect(), box, 0.5))};
    out.bins = [...hist.querySelectorAll('rect.bin')].map(r => Number(r.dataset.count));
  }
  for (const svg of document.querySelectorAll('svg')) {
    const title = svg.querySelector('text');
    if (!title) continue;
    if (svg.querySelector('text.legend')) out.loss_charts++;
    else if (/Saturn run|Current practice/.test(title.textContent))
      out.gantt_boxes.push([title.textContent, svg.querySelectorAll('rect title').length]);
  }
  const note = [...document.querySelectorAll('p.note')].find(p => /merged/.test(p.textContent));
  out.merged_note = note ? note.textContent : null;
  return JSON.stringify(out);
})()
"""

# The groups table's column `name`: its values as the page shows them, in
# row order, the header's text and aria-sort, and the rows' identity (the
# group cells).
COLUMN_JS = r"""
((name) => {
  const table = document.getElementById('groups-table');
  const heads = [...table.tHead.rows[0].cells];
  const col = heads.findIndex(h => h.firstChild.textContent === name);
  const rows = [...table.tBodies[0].rows];
  const header = heads[col];
  const box = header.getBoundingClientRect();
  return JSON.stringify({
    col, header: header.textContent, sort: header.getAttribute('aria-sort'),
    values: rows.map(r => r.cells[col].textContent),
    groups: rows.map(r => r.cells[0].textContent).sort(),
    x: box.left + box.width / 2, y: box.top + box.height / 2});
})
"""


def number(text):
    """A cell's value as the page's sort reads it; None for an empty one."""
    text = text.strip()
    if text.startswith("inf"):
        return math.inf
    try:
        return float(text.split()[0])
    except (ValueError, IndexError):
        return None


def column(browser, name):
    return json.loads(browser.evaluate(COLUMN_JS + "(%s)" % json.dumps(name)))


def click_header(browser, name):
    """Scrolls the header into view, clicks it with the mouse; returns the
    seconds from the click to the next frame after it."""
    browser.evaluate("""[...document.querySelectorAll('#groups-table th')].find(
        h => h.firstChild.textContent === %s).scrollIntoView({block: 'center'})"""
                     % json.dumps(name))
    at = column(browser, name)
    start = time.monotonic()
    for kind in ("mousePressed", "mouseReleased"):
        browser.call("Input.dispatchMouseEvent", {"type": kind, "x": at["x"], "y": at["y"],
                                                  "button": "left", "clickCount": 1})
    next_frame(browser)
    return time.monotonic() - start


def sort_problems(before, after, descending):
    out = []
    way = "descending" if descending else "ascending"
    values = [number(v) for v in after["values"]]
    present = [v for v in values if v is not None]
    if not present:
        return ["no held-out loss in the table"]
    want = max(present) if descending else min(present)
    if values[0] != want:
        out.append("sorted %s, the first row's held-out loss is %r, not %r" %
                   (way, after["values"][0], want))
    if present != sorted(present, reverse=descending):
        out.append("the held-out losses are not %s" % way)
    first_empty = values.index(None) if None in values else len(values)
    if any(v is not None for v in values[first_empty:]):
        out.append("sorted %s, rows without a held-out loss are not last" % way)
    if after["sort"] != way or ("\u25bc" if descending else "\u25b2") not in after["header"]:
        out.append("the header does not mark the sort %s: %r, aria-sort %r" %
                   (way, after["header"], after["sort"]))
    if after["groups"] != before["groups"]:
        out.append("sorting changed which rows the table has")
    return out


def page_problems(page, report, groups):
    if page.get("ready") != "complete":
        return ["the page had not loaded and drawn its first frame in 60 s"]
    out = []
    if page["rows"] != groups:
        out.append("the groups table has %s rows, not %d" % (page["rows"], groups))
    g = report["groups"]
    want_bins = [c for c in g["eval_loss_histogram"]["counts"] if c > 0]
    if "hist" not in page:
        out.append("no histogram of held-out losses")
    else:
        h = page["hist"]
        if h["left"] < 0 or h["right"] > page["page_width"] + 0.5 or h["top"] < 0:
            out.append("the histogram is not inside the page: %s" % h)
        if not h["bars_inside"]:
            out.append("histogram bars outside the histogram")
        if page["bins"] != want_bins:
            out.append("the histogram draws %d bars %s, report.json has %d bins with a count %s"
                       % (len(page["bins"]), page["bins"], len(want_bins), want_bins))
        if sum(page["bins"]) != g["with_eval_loss"]:
            out.append("the histogram's bars count %d groups, %d have a held-out loss" %
                       (sum(page["bins"]), g["with_eval_loss"]))
    if not page["gantt_boxes"]:
        out.append("no Gantt chart")
    for title, boxes in page["gantt_boxes"]:
        if boxes > groups / 10:
            out.append("the Gantt %r draws %d boxes for %d groups" % (title, boxes, groups))
    if groups > 1000 and not page["merged_note"]:
        out.append("no line says the Gantt's bars are merged")
    if page["loss_charts"] > 10:
        out.append("%d loss charts for a run of %d groups" % (page["loss_charts"], groups))
    return out


def next_frame(browser):
    browser.call("Runtime.evaluate", {
        "expression": "new Promise(r => requestAnimationFrame(() => setTimeout(r)))",
        "awaitPromise": True})


def screenshot(browser, path, width, height):
    """The page's top, `height` high: the window made that high first, so
    that rows drawn only in view (content-visibility) are drawn."""
    def metrics(h):
        browser.call("Emulation.setDeviceMetricsOverride", {
            "width": width, "height": h, "deviceScaleFactor": 1, "mobile": False})
    metrics(height)
    next_frame(browser)
    next_frame(browser)
    data = browser.call("Page.captureScreenshot", {"format": "png"})
    with open(path, "wb") as f:
        f.write(base64.b64decode(data["data"]))
    metrics(1000)
    next_frame(browser)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--groups", type=int, default=10000)
    args = sample_report(p, lambda a: ["--groups", str(a.groups)])
    if args is None:
        return 77
    with open(os.path.join(args.artifacts, "report.json")) as f:
        report = json.load(f)
    log = open(os.path.join(args.artifacts, "check.log"), "w")

    def say(*a):
        print(*a, file=log, flush=True)
        print("report_groups_browser_check:", *a, file=sys.stderr, flush=True)

    failures = []
    browser = Chromium(args.chromium, args.width, 1000)
    try:
        browser.open("file://" + os.path.abspath(os.path.join(args.artifacts, "report.html")),
                     args.width, 1000, scripts=[TIMING_SCRIPT])
        page = {}
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            page = json.loads(browser.evaluate(PAGE_JS) or "{}")
            if page.get("ready") == "complete" and page.get("framed_ms"):
                break
            time.sleep(0.05)
        failures += page_problems(page, report, args.groups)
        screenshot(browser, os.path.join(args.artifacts, "report.png"), args.width,
                   min(4000, browser.evaluate("document.documentElement.scrollHeight")))
        before = column(browser, "held-out loss")
        asc_s = click_header(browser, "held-out loss")
        ascending = column(browser, "held-out loss")
        failures += sort_problems(before, ascending, descending=False)
        desc_s = click_header(browser, "held-out loss")
        descending = column(browser, "held-out loss")
        failures += sort_problems(before, descending, descending=True)
        screenshot(browser, os.path.join(args.artifacts, "sorted.png"), args.width, 1000)
    finally:
        browser.close()
    failures += ["JavaScript exception: %s" % e for e in browser.exceptions]
    timings = {"groups": args.groups,
               "html_bytes": os.path.getsize(os.path.join(args.artifacts, "report.html")),
               "navigation_to_load_event_s": page.get("load_ms", 0) / 1000,
               "navigation_to_first_frame_after_load_s": (page.get("framed_ms") or 0) / 1000,
               "sort_ascending_click_to_frame_s": asc_s,
               "sort_descending_click_to_frame_s": desc_s}
    with open(os.path.join(args.artifacts, "timings.json"), "w") as f:
        json.dump(timings, f, indent=2)
    say("timings:", json.dumps(timings))
    say("gantt boxes:", json.dumps(page.get("gantt_boxes")),
        "loss charts:", page.get("loss_charts"))
    for f in failures:
        say("FAILED:", f)
    if not failures:
        say("ok: screenshots in", args.artifacts)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
