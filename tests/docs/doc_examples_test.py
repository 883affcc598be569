"""Tests of doc_examples.py on small made-up documentation trees."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import doc_examples  # noqa: E402


MADE = []


def tearDownModule():
    for d in MADE:
        shutil.rmtree(d, ignore_errors=True)


def tree(files):
    root = tempfile.mkdtemp(prefix="doc-examples-test-")
    MADE.append(root)
    os.makedirs(os.path.join(root, "docs"))
    os.makedirs(os.path.join(root, "build"))
    for name, text in files.items():
        with open(os.path.join(root, name), "w", encoding="utf-8") as f:
            f.write(text)
    return root


def run(root, *extra):
    r = subprocess.run([sys.executable, os.path.join(HERE, "doc_examples.py"), "--source", root,
                        "--build", os.path.join(root, "build"), *extra],
                       capture_output=True, text=True)
    if "scratch folder kept: " in r.stderr:
        MADE.append(r.stderr.strip().split("scratch folder kept: ")[-1].strip())
    return r


README = """# A project

```sh
echo one > first.txt
export FROM_README=yes
```

Synopsis, not run:

```text
tool --flag X
```

<!-- doc-test: skip needs a cluster -->

```bash
exit 3
```

```yaml
key: value
```
"""

DOC = """# Guide

```sh
test "$FROM_README" = yes     # blocks share one shell, in order
test -f first.txt             # and one folder
echo two > second.txt
```

```python
import os
assert os.path.exists("second.txt")
```
"""


class Blocks(unittest.TestCase):
    def test_only_shell_and_python_blocks_run_and_marks_apply_to_the_next_block(self):
        root = tree({"README.md": README, "docs/guide.md": DOC})
        blocks = doc_examples.blocks_of(root, "README.md")
        self.assertEqual([(b.line, b.lang, b.mark) for b in blocks],
                         [(3, "sh", None), (16, "bash", "skip")])
        self.assertEqual(blocks[1].arg, "needs a cluster")
        self.assertEqual(doc_examples.documents(root), ["README.md", "docs/guide.md"])

    def test_a_mark_before_a_block_that_never_runs_is_an_error(self):
        root = tree({"README.md": "<!-- doc-test: skip why -->\n```yaml\na: 1\n```\n"})
        with self.assertRaises(SystemExit) as e:
            doc_examples.blocks_of(root, "README.md")
        self.assertIn("README.md:2: a doc-test mark before a yaml block", str(e.exception))

    def test_a_mark_separated_by_text_does_not_apply(self):
        root = tree({"README.md": "<!-- doc-test: skip why -->\nSome text.\n```sh\ntrue\n```\n"})
        self.assertIsNone(doc_examples.blocks_of(root, "README.md")[0].mark)


class Running(unittest.TestCase):
    def test_every_example_runs_in_order_in_one_folder(self):
        root = tree({"README.md": README, "docs/guide.md": DOC})
        r = run(root)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("skip README.md:16: needs a cluster", r.stderr)
        self.assertIn("running 3 examples", r.stderr)

    def test_a_failing_example_fails_the_run_and_is_named(self):
        root = tree({"README.md": README,
                     "docs/guide.md": "```sh\necho fine\n```\n\n```sh\nfalse\necho never\n```\n"})
        r = run(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("=== docs/guide.md:5 (sh)", r.stderr)
        self.assertNotIn("never", r.stdout)

    def test_a_skip_without_a_reason_is_refused(self):
        root = tree({"README.md": "<!-- doc-test: skip -->\n```sh\ntrue\n```\n"})
        r = run(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("a skipped example must say why", r.stderr)

    def test_a_background_example_is_ready_before_the_next_and_stopped_at_the_end(self):
        doc = ("<!-- doc-test: background test -f ready -->\n"
               "```sh\nsleep 1; touch ready; trap 'touch stopped; exit 0' TERM; "
               "while true; do sleep 0.1; done\n```\n\n"
               "```sh\ntest -f ready\n```\n")
        root = tree({"README.md": doc})
        r = run(root, "--keep")
        self.assertEqual(r.returncode, 0, r.stderr)
        kept = r.stderr.strip().split("scratch folder kept: ")[-1].strip()
        MADE.append(kept)
        self.assertTrue(os.path.exists(os.path.join(kept, "stopped")), r.stderr)

    def test_one_document_runs_alone_after_the_other_documents_setup(self):
        readme = ("```sh\ntouch readme-ran\n```\n\n"
                  "<!-- doc-test: setup the docs use it -->\n"
                  "```sh\nexport TOOL=installed\n```\n")
        doc = "```sh\ntest \"$TOOL\" = installed\n! test -f readme-ran\n```\n"
        root = tree({"README.md": readme, "docs/guide.md": doc, "docs/other.md": "```sh\nfalse\n```\n"})
        self.assertEqual(doc_examples.blocks_of(root, "README.md")[1].mark, "setup")
        r = run(root, "--only", "docs/guide.md")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("running 2 examples", r.stderr)
        self.assertIn("=== README.md:6 (sh) at ", r.stderr)
        self.assertIn("=== docs/guide.md:1 (sh) at ", r.stderr)
        self.assertNotIn("docs/other.md", r.stderr)
        listed = run(root, "--only", "docs/guide.md", "--list")
        self.assertEqual(listed.stdout.split("\n")[:2],
                         ["README.md:6 (sh, setup)", "docs/guide.md:1 (sh)"])

    def test_a_document_runs_its_own_setup_in_place(self):
        readme = ("```sh\nexport STEP=one\n```\n\n"
                  "<!-- doc-test: setup the docs use it -->\n"
                  "```sh\ntest \"$STEP\" = one\n```\n")
        r = run(tree({"README.md": readme}), "--only", "README.md")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("running 2 examples", r.stderr)

    def test_a_document_without_examples_passes_without_a_scratch_folder(self):
        root = tree({"README.md": "<!-- doc-test: setup why -->\n```sh\ntrue\n```\n",
                     "docs/guide.md": "Text.\n\n```text\nnot run\n```\n"})
        r = run(root, "--only", "docs/guide.md")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("docs/guide.md has no examples to run", r.stderr)
        self.assertNotIn("running", r.stderr)

    def test_only_names_a_document(self):
        r = run(tree({"README.md": "```sh\ntrue\n```\n"}), "--only", "docs/missing.md")
        self.assertEqual(r.returncode, 1)
        self.assertIn("--only docs/missing.md: not one of README.md", r.stderr)

    def test_each_example_says_when_it_started(self):
        r = run(tree({"README.md": "```sh\nsleep 1\n```\n\n```sh\ntrue\n```\n"}))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stderr, r"=== README.md:1 \(sh\) at 0s\n")
        # Not how long (a loaded machine sleeps longer): that it says so.
        self.assertRegex(r.stderr, r"=== README.md:5 \(sh\) at [1-9][0-9]*s\n")
        self.assertRegex(r.stderr, r"=== all ran in [1-9][0-9]*s\n")

    def test_home_is_the_scratch_folders_own(self):
        root = tree({"README.md": "```sh\ntouch ~/mine\ntest -f home/mine\n```\n"})
        r = run(root)
        self.assertEqual(r.returncode, 0, r.stderr)


def has_torch(python):
    return subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0


class PythonInTheExamples(unittest.TestCase):
    """One rule (doc_examples.py's docstring): what needs PyTorch names
    /usr/bin/python3, since a user's `python3` may lack it; the examples run
    with such a `python3` first on PATH."""

    def test_python3_on_the_path_cannot_import_torch(self):
        lacks = "```sh\n! python3 -c 'import importlib; importlib.import_module(\"torch\")'\n" \
                "python3 -c 'import json'\n```\n"
        r = run(tree({"README.md": lacks}))
        self.assertEqual(r.returncode, 0, r.stderr)
        needs = "```sh\npython3 -c 'import importlib; importlib.import_module(\"torch\")'\n```\n"
        self.assertEqual(run(tree({"README.md": needs})).returncode, 1)

    def test_a_python_block_runs_under_the_python3_on_the_path(self):
        block = "```python\nimport importlib, sys\nprint(sys.executable)\n" \
                "importlib.import_module('torch')\n```\n"
        r = run(tree({"README.md": block}))
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("No module named 'torch'", r.stderr)

    @unittest.skipUnless(has_torch(doc_examples.PYTHON), "no torch in " + doc_examples.PYTHON)
    def test_the_interpreter_with_torch_named_in_full_has_it(self):
        named = f"```sh\n{doc_examples.PYTHON} -c 'import torch'\n```\n"
        r = run(tree({"README.md": named}))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_a_bare_python3_that_needs_torch_is_refused_before_anything_runs(self):
        root = tree({"README.md": "```sh\ntouch ran\n```\n\n"
                                  "Load it with `python3 -c 'import saturn_models'`.\n",
                     "docs/guide.md": "```sh\nPYTHONPATH=python python3 - <<'EOF'\n"
                                      "import torch\nEOF\n/usr/bin/python3 -c 'import torch'\n"
                                      "python3 -c 'import json'\n```\n\n"
                                      "```python\nimport torch\n```\n"})
        os.makedirs(os.path.join(root, "examples"))
        with open(os.path.join(root, "examples", "w.yaml"), "w") as f:
            f.write("#   python3 -m saturn_task launch train.py\n")
        with open(os.path.join(root, "examples", "make.py"), "w") as f:
            f.write("#!/usr/bin/env python3\nimport torch\n")
        found = doc_examples.python_rule_violations(root)
        self.assertEqual([v.split(": ")[0] for v in found],
                         ["docs/guide.md:9", "README.md:5", "docs/guide.md:2",
                          "examples/make.py:1", "examples/w.yaml:1"])
        r = run(root)
        self.assertEqual(r.returncode, 1)
        self.assertIn("README.md:5: `Load it with", r.stderr)
        self.assertNotIn("running", r.stderr)
        # One document's run (ctest's doc_examples:FILE) leaves the rule to
        # doc_examples_harness, which is this test and the next.
        r = run(root, "--only", "README.md")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_the_repositorys_examples_follow_the_rule(self):
        source = os.path.dirname(os.path.dirname(HERE))
        self.assertEqual(doc_examples.python_rule_violations(source), [])


if __name__ == "__main__":
    unittest.main()
