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

    def test_home_is_the_scratch_folders_own(self):
        root = tree({"README.md": "```sh\ntouch ~/mine\ntest -f home/mine\n```\n"})
        r = run(root)
        self.assertEqual(r.returncode, 0, r.stderr)


if __name__ == "__main__":
    unittest.main()
