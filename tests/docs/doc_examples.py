#!/usr/bin/env python3
"""Runs every example of README.md and docs/*.md as written.

An example is a fenced block of ```sh, ```bash or ```python. The examples of
one document (`--only FILE`; ctest has one test per document,
doc_examples:README.md, doc_examples:docs/llama.md, ...) or of all of them
(README.md first, then docs/ by name) run in order in ONE bash session, in a
scratch folder of their own that looks like a fresh clone: every top-level
entry of the source tree is linked in, `build` is the real build folder, and
HOME is a folder of its own (so `~/.local` and `~/.saturn-token` stay
inside). What the examples write (out/, saturn-runs/, saturn-service/,
venv/) lands there, but for scripts/quickstart.sh, which works in the
repository it is in (its out/quickstart/), since CMake must configure
`build` for the real source folder: a configure from the linked folder would
rebuild everything; and for the example scripts that write next to
themselves in examples/ (make_base.py, make_checkpoint.py, export.py).
Each of these is run by one document only, so two documents' tests can run
at once.

A block may be preceded by one HTML comment that tells this script more:
  <!-- doc-test: skip REASON -->        not run (needs a Slurm cluster, a GPU, ...)
  <!-- doc-test: background READY -->   started in the background (a server);
                                        READY is a command retried until it
                                        succeeds before the next block runs
  <!-- doc-test: setup REASON -->       also run before another document's
                                        examples when that one runs alone
                                        (--only): README's install, which
                                        puts `saturn` on PATH for docs/; so
                                        it needs no earlier block, and it
                                        writes only in the scratch folder
                                        (every document's test runs it)
Every skipped block is listed with its reason, so none goes unnoticed.
Synopses that are not meant to be run use ``` or ```text fences.

Python in the examples, one rule (docs/byo.md, "Python in the examples"):
an example that needs PyTorch (directly, or through saturn_models or a
training script) is a shell command naming the interpreter that has it,
`/usr/bin/python3` (Debian's, where scripts/setup.sh installs python3-torch);
plain `python3` is for the standard library only; a ```python block is
what one would paste into `python3`, so it too needs no more than the
standard library (code with torch is a `/usr/bin/python3 - <<'EOF'` shell
block, or a sketch marked skip). The examples run as a user's shell may
have it: with a `python3` first on PATH that cannot import torch (a venv
without the system's site packages, as pyenv's or a fresh venv's), which
also runs the ```python blocks.

With --only, the setup blocks of the other documents run first, in
document order, then the document's own examples; the Python rule is left
to ctest doc_examples_harness (doc_examples_test.py), which checks it over
every document once. Each '===' line says when its block started (seconds
since the first), so the time of every block is in the log.

  doc_examples.py --source DIR --build DIR [--list] [--only FILE] [--keep]
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
# The interpreter with PyTorch (scripts/setup.sh installs python3-torch there).
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
MARK = re.compile(r"<!--\s*doc-test:\s*(skip|background|setup)\b\s*(.*?)\s*-->")


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


# What needs PyTorch in an example's command line (or in the script it runs).
TORCH_MARKERS = re.compile(r"import torch|from torch|torch\.|saturn_models|saturn_task launch|"
                           r"--system-site-packages")
# `python3` or `python` as a command of its own, not a path's last part.
BARE_PYTHON = re.compile(r"(?<![\w/.$=-])python3?(?=\s)")


def example_files(source):
    """README.md, docs/*.md and the text files under examples/."""
    files = documents(source)
    for folder, _, names in sorted(os.walk(os.path.join(source, "examples"))):
        for name in sorted(names):
            if name.endswith((".md", ".yaml", ".yml", ".sh", ".py", ".txt")):
                files.append(os.path.relpath(os.path.join(folder, name), source))
    return files


def imports_torch(path):
    try:
        with open(path, encoding="utf-8") as f:
            return bool(re.search(r"^\s*(import torch|from torch|import saturn_models)", f.read(),
                                  re.M))
    except OSError:
        return False


def python_rule_violations(source):
    """`file:line: ...` for each example that runs a bare `python3` where it
    needs PyTorch (the rule in this file's docstring), and each example
    script that imports torch behind `#!/usr/bin/env python3`."""
    out = []
    for rel in documents(source):
        for b in blocks_of(source, rel):
            if b.lang == "python" and b.mark != "skip" and TORCH_MARKERS.search(b.text):
                out.append(f"{b.where()}: a ```python block runs under the PATH's python3, which "
                           f"may lack PyTorch: make it `/usr/bin/python3 - <<'EOF'` in a sh block")
    for rel in example_files(source):
        with open(os.path.join(source, rel), encoding="utf-8") as f:
            lines = f.read().split("\n")
        here = os.path.dirname(os.path.join(source, rel))
        if rel.endswith(".py") and lines[0].startswith("#!") and "env python" in lines[0] \
                and imports_torch(os.path.join(source, rel)):
            out.append(f"{rel}:1: imports torch behind {lines[0]}; use #!/usr/bin/python3")
        for i, line in enumerate(lines):
            m = BARE_PYTHON.search(line)
            if not m:
                continue
            text = line[m.start():]
            heredoc = re.search(r"<<-?\s*'?(\w+)'?", text)
            if heredoc:  # the code fed to it, up to the terminator
                end = next((k for k in range(i + 1, len(lines))
                            if lines[k].strip() == heredoc.group(1)), len(lines))
                text += "\n" + "\n".join(lines[i + 1:end])
            scripts = [w for w in re.findall(r"[\w./-]+\.py\b", text.split("\n")[0])
                       if any(imports_torch(os.path.join(d, w)) for d in (source, here))]
            if TORCH_MARKERS.search(text) or scripts:
                out.append(f"{rel}:{i + 1}: `{line.strip()[:80]}` needs PyTorch: name its "
                           f"interpreter, /usr/bin/python3")
    return out


def python_without_torch(root):
    """A folder holding `python3` (and `python`): a wrapper that runs a venv
    of PYTHON without the system's site packages, so `import torch` fails
    in it as in a user's pyenv or fresh venv. Put first on PATH."""
    venv = os.path.join(root, ".python-without-torch")
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", venv], check=True)
    bindir = os.path.join(root, ".bin-without-torch")
    os.makedirs(bindir)
    for name in ("python3", "python"):
        path = os.path.join(bindir, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(f"#!/bin/sh\n# python3 without PyTorch, as a user's shell may have it\n"
                    f"exec {venv}/bin/python3 \"$@\"\n")
        os.chmod(path, 0o755)
    probe = subprocess.run([os.path.join(bindir, "python3"), "-c", "import torch"],
                           capture_output=True)
    if probe.returncode == 0:
        raise SystemExit(f"{bindir}/python3 imports torch; the examples need one that does not")
    return bindir


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
        parts.append(f"echo \"=== {b.where()} ({b.lang}) at ${{SECONDS}}s\" >&2")
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
            # What one would paste into `python3`: the PATH's, torch-less here.
            parts.append(f"python3 {body_file}")
        else:
            # The block's text itself, so that its exports and cd's carry on.
            parts.append(b.text)
    parts.append('echo "=== all ran in ${SECONDS}s" >&2')
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
    if a.only and a.only not in documents(source):
        print(f"--only {a.only}: not one of {', '.join(documents(source))}", file=sys.stderr)
        return 1
    blocks = []
    for rel in documents(source):
        if a.only and rel != a.only:
            # Another document's setup (README's install) comes first.
            blocks += [b for b in blocks_of(source, rel) if b.mark == "setup"]
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
            print(f"{b.where()} ({b.lang}{', ' + b.mark if b.mark else ''})")
        return 0
    if a.only and not any(b.path == a.only for b in runnable):
        print(f"{a.only} has no examples to run", file=sys.stderr)
        return 0
    if not a.only:  # one run of every document: the rule too (else doc_examples_harness)
        violations = python_rule_violations(source)
        if violations:
            print("\n".join(violations), file=sys.stderr)
            return 1
    root = scratch_folder(source, a.build)
    env = dict(os.environ, HOME=os.path.join(root, "home"))
    env["PATH"] = python_without_torch(root) + os.pathsep + env.get("PATH", "")
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
