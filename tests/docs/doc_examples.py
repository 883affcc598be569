#!/usr/bin/env python3
"""Runs every example of README.md and docs/*.md as written, one after another.

An example is a fenced block of ```sh, ```bash or ```python. They run in
document order (README.md first, then docs/ by name) in ONE bash session, in
one scratch folder that looks like a fresh clone: every top-level entry of
the source tree is linked in, `build` is the real build folder, and HOME is
a folder of its own (so `~/.local` and `~/.saturn-token` stay inside). What
the examples write (out/, saturn-runs/, saturn-service/, venv/) lands there,
but for scripts/quickstart.sh, which works in the repository it is in (its
out/quickstart/), since CMake must configure `build` for the real source
folder: a configure from the linked folder would rebuild everything.

A block may be preceded by one HTML comment that tells this script more:
  <!-- doc-test: skip REASON -->        not run (needs a Slurm cluster, a GPU, ...)
  <!-- doc-test: background READY -->   started in the background (a server);
                                        READY is a command retried until it
                                        succeeds before the next block runs
Every skipped block is listed with its reason, so none goes unnoticed.
Synopses that are not meant to be run use ``` or ```text fences.

  doc_examples.py --source DIR --build DIR [--list] [--only FILE]
Exit 0 when every example ran, 1 naming the first that failed.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

RUN_LANGS = {"sh", "bash", "python"}
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
MARK = re.compile(r"<!--\s*doc-test:\s*(skip|background)\b\s*(.*?)\s*-->")


class Block:
    def __init__(self, path, line, lang, text, mark, arg):
        self.path, self.line, self.lang, self.text = path, line, lang, text
        self.mark, self.arg = mark, arg

    def where(self):
        return f"{self.path}:{self.line}"


def blocks_of(source, rel):
    """The fenced blocks of one markdown file, each with the mark just before
    it (only blank lines may stand between a mark and its block)."""
    out, pending = [], None
    with open(os.path.join(source, rel), encoding="utf-8") as f:
        lines = f.read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = re.match(r"^```(\w*)\s*$", line)
        mark = MARK.search(line)
        if fence:
            lang, start, body = fence.group(1), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if lang in RUN_LANGS:
                kind, arg = pending or (None, "")
                out.append(Block(rel, start, lang, "\n".join(body) + "\n", kind, arg))
            elif pending:
                raise SystemExit(f"{rel}:{start}: a doc-test mark before a {lang or 'plain'} block")
            pending = None
        elif mark:
            pending = (mark.group(1), mark.group(2))
        elif line.strip():
            pending = None
        i += 1
    return out


def documents(source):
    docs = sorted(f for f in os.listdir(os.path.join(source, "docs")) if f.endswith(".md"))
    return ["README.md"] + ["docs/" + f for f in docs]


def scratch_folder(source, build):
    """A folder that looks like a fresh clone with the build already made."""
    root = tempfile.mkdtemp(prefix="saturn-doc-examples-")
    for entry in sorted(os.listdir(source)):
        if entry.startswith(".git") or entry.startswith("build") or entry in (
                "out", "saturn-runs", "saturn-service", "venv"):
            continue
        os.symlink(os.path.join(source, entry), os.path.join(root, entry))
    os.symlink(os.path.abspath(build), os.path.join(root, "build"))
    os.makedirs(os.path.join(root, "home"))
    return root


def script_for(blocks, root):
    """One bash script: each block in turn, its place announced, stopping at
    the first failure; background blocks get their own process group."""
    parts = ["set -eo pipefail", "bg_pids=()",
             "cleanup() { for p in \"${bg_pids[@]}\"; do kill -TERM -- -$p 2>/dev/null || true; done;"
             " for p in \"${bg_pids[@]}\"; do wait $p 2>/dev/null || true; done; }",
             "trap cleanup EXIT"]
    for k, b in enumerate(blocks):
        if b.mark == "skip":
            continue
        parts.append(f"echo '=== {b.where()} ({b.lang})' >&2")
        parts.append(f"export DOC_BLOCK='{b.where()}'")
        body_file = os.path.join(root, f".doc-block-{k}.{ 'py' if b.lang == 'python' else 'sh'}")
        with open(body_file, "w", encoding="utf-8") as f:
            f.write(b.text)
        if b.mark == "background":
            log = os.path.join(root, f".doc-block-{k}.log")
            parts.append(f"set -m; bash {body_file} > {log} 2>&1 & bg_pids+=($!); set +m")
            parts.append(f"for i in $(seq 1 120); do ( {b.arg} ) >/dev/null 2>&1 && break; "
                         f"if ! kill -0 ${{bg_pids[-1]}} 2>/dev/null; then cat {log} >&2; "
                         f"echo 'background example exited' >&2; exit 1; fi; sleep 0.5; done")
        elif b.lang == "python":
            # Debian's interpreter, where scripts/setup.sh installs PyTorch.
            parts.append(f"{PYTHON} {body_file}")
        else:
            # The block's text itself, so that its exports and cd's carry on.
            parts.append(b.text)
    return "\n".join(parts) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--build", required=True)
    ap.add_argument("--list", action="store_true", help="list the examples, run nothing")
    ap.add_argument("--only", help="only this document (e.g. docs/byo.md)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch folder")
    a = ap.parse_args()
    source = os.path.abspath(a.source)
    blocks = []
    for rel in documents(source):
        if a.only and rel != a.only:
            continue
        blocks += blocks_of(source, rel)
    for b in blocks:
        if b.mark == "skip":
            print(f"skip {b.where()}: {b.arg or 'no reason given'}", file=sys.stderr)
            if not b.arg:
                print(f"{b.where()}: a skipped example must say why", file=sys.stderr)
                return 1
    runnable = [b for b in blocks if b.mark != "skip"]
    if a.list:
        for b in runnable:
            print(f"{b.where()} ({b.lang}{', background' if b.mark else ''})")
        return 0
    root = scratch_folder(source, a.build)
    env = dict(os.environ, HOME=os.path.join(root, "home"))
    env.pop("SATURN_WORKER", None)
    script = os.path.join(root, ".doc-examples.sh")
    with open(script, "w", encoding="utf-8") as f:
        f.write(script_for(blocks, root))
    print(f"running {len(runnable)} examples in {root}", file=sys.stderr)
    proc = subprocess.Popen(["bash", script], cwd=root, env=env, start_new_session=True)
    try:
        status = proc.wait()
    except KeyboardInterrupt:
        os.killpg(proc.pid, signal.SIGTERM)
        raise
    if status != 0:
        print(f"an example failed (exit {status}); the last '===' line above names it",
              file=sys.stderr)
    if not a.keep and status == 0:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"scratch folder kept: {root}", file=sys.stderr)
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
