"""Unit tests of python/saturn_task.py (standard library; the torch cases run
when the interpreter has torch) and of its packaging (python/saturn_build.py).

    python3 -m unittest discover -s tests/python -p 'test_saturn_task.py'
"""
import difflib
import io
import os
import pickle
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYDIR = os.path.join(ROOT, "python")
sys.path.insert(0, PYDIR)

import saturn_task  # noqa: E402

try:
    import torch
except ImportError:
    torch = None


def env(**kw):
    e = {"SATURN_STEPS": "5", "SATURN_CHECKPOINT_DIR": kw.pop("ckpt", "/nonexistent")}
    e.update({k: str(v) for k, v in kw.items()})
    return e


def child_env(**kw):
    e = dict(os.environ)
    for k in list(e):
        if k.startswith("SATURN_") or k in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
            del e[k]
    e["PYTHONPATH"] = PYDIR
    e.update({k: str(v) for k, v in kw.items()})
    return e


class Settings(unittest.TestCase):
    def test_reads_every_saturn_variable_and_the_ranks(self):
        run = saturn_task.Run(env(SATURN_START_STEP=2, SATURN_GPUS=2, SATURN_GPU_IDS="3,5",
                                  SATURN_TECHNIQUE="ddp", SATURN_NODE="n1", SATURN_SEED=7,
                                  RANK=1, LOCAL_RANK=1, WORLD_SIZE=2, ckpt="/c"),
                              handle_sigterm=False)
        self.assertEqual((run.steps_total, run.start_step, run.step), (5, 2, 2))
        self.assertEqual((run.gpus, run.gpu_ids, run.technique, run.node, run.seed),
                         (2, [3, 5], "ddp", "n1", 7))
        self.assertEqual((run.rank, run.local_rank, run.world_size, run.is_main), (1, 1, 2, False))
        self.assertEqual(run.checkpoint_path, os.path.join("/c", saturn_task.CHECKPOINT_FILE))

    def test_defaults_outside_torchrun(self):
        run = saturn_task.Run(env(), handle_sigterm=False)
        self.assertEqual((run.start_step, run.gpus, run.gpu_ids, run.technique, run.seed),
                         (0, 1, [], "", 0))
        self.assertEqual((run.rank, run.world_size, run.is_main), (0, 1, True))

    def test_not_under_saturn_names_the_variable(self):
        with self.assertRaises(saturn_task.NotUnderSaturn) as e:
            saturn_task.Run({}, handle_sigterm=False)
        self.assertIn("SATURN_STEPS is not set", str(e.exception))
        self.assertIn("saturn run", str(e.exception))
        with self.assertRaises(saturn_task.NotUnderSaturn) as e:
            saturn_task.Run({"SATURN_STEPS": "5"}, handle_sigterm=False)
        self.assertIn("SATURN_CHECKPOINT_DIR is not set", str(e.exception))

    def test_bad_values_name_the_variable_and_what_was_expected(self):
        cases = [({"SATURN_STEPS": "ten"}, "SATURN_STEPS='ten': expected a whole number"),
                 ({"SATURN_GPUS": "0"}, "SATURN_GPUS=0: expected at least 1"),
                 ({"SATURN_START_STEP": "9"}, "SATURN_START_STEP=9 is past SATURN_STEPS=5"),
                 ({"SATURN_GPU_IDS": "0,x"}, "SATURN_GPU_IDS='0,x'"),
                 ({"RANK": "2", "WORLD_SIZE": "2"}, "RANK=2 is not below WORLD_SIZE=2")]
        for extra, message in cases:
            e = env()
            e.update(extra)
            with self.subTest(extra=extra):
                with self.assertRaises(saturn_task.NotUnderSaturn) as err:
                    saturn_task.Run(e, handle_sigterm=False)
                self.assertIn(message, str(err.exception))

    def test_check_command_exits_2_outside_saturn(self):
        p = subprocess.run([sys.executable, "-m", "saturn_task", "check"], env=child_env(),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("SATURN_STEPS is not set", p.stderr)
        p = subprocess.run([sys.executable, "-m", "saturn_task", "check"],
                           env=child_env(SATURN_STEPS=3, SATURN_CHECKPOINT_DIR="/c"),
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("steps 0..3", p.stdout)


class StepsAndReports(unittest.TestCase):
    def test_steps_run_from_the_start_step_and_report_one_line_each(self):
        out = io.StringIO()
        run = saturn_task.Run(env(SATURN_START_STEP=2), out=out, handle_sigterm=False)
        seen = []
        for step in run.steps():
            seen.append(step)
            run.report(loss=1.0 / (step + 1), extra_key="v")
        self.assertEqual(seen, [2, 3, 4])
        self.assertEqual(run.step, 5)
        self.assertFalse(run.preempted)
        lines = out.getvalue().splitlines()
        self.assertEqual(len(lines), 3)
        self.assertRegex(lines[0], r"^saturn: step=2 loss=0\.333333333 step_s=\d+\.\d{6} extra_key=v$")
        self.assertTrue(lines[2].startswith("saturn: step=4 loss=0.2 "))

    def test_step_s_is_the_time_since_the_step_began_unless_given(self):
        out = io.StringIO()
        run = saturn_task.Run(env(SATURN_STEPS=2), out=out, handle_sigterm=False)
        for step in run.steps():
            if step == 0:
                time.sleep(0.05)
                run.report(loss=1)
            else:
                run.report(loss=1, step_s=0.25, peak_mem_gib=1.5)
        first, second = out.getvalue().splitlines()
        self.assertGreaterEqual(float(first.split("step_s=")[1]), 0.05)
        self.assertTrue(second.endswith("step_s=0.250000 peak_mem_gib=1.5"), second)

    def test_only_rank_0_prints(self):
        out = io.StringIO()
        run = saturn_task.Run(env(RANK=1, WORLD_SIZE=2), out=out, handle_sigterm=False)
        for _ in run.steps():
            run.report(loss=1)
        self.assertEqual(out.getvalue(), "")

    def test_a_loss_that_is_not_a_number_is_a_clear_error(self):
        run = saturn_task.Run(env(), out=io.StringIO(), handle_sigterm=False)
        for _ in run.steps():
            with self.assertRaises(TypeError) as e:
                run.report(loss="high")
            self.assertIn("expected a number", str(e.exception))
            break

    def test_a_stop_request_ends_the_loop_after_the_step_in_flight_and_saves(self):
        with tempfile.TemporaryDirectory() as d:
            run = saturn_task.Run(env(SATURN_STEPS=10, ckpt=d), out=io.StringIO(),
                                  handle_sigterm=False)
            calls = []
            run.on_preempt(lambda: calls.append(run.step) or {"w": run.step})
            seen = []
            for step in run.steps():
                seen.append(step)
                if step == 3:
                    run.request_stop()
            self.assertEqual(seen, [0, 1, 2, 3])
            self.assertTrue(run.preempted)
            self.assertEqual(calls, [4])
            run.save({"w": "ignored: already saved at this step"})
            again = saturn_task.Run(env(SATURN_STEPS=10, SATURN_START_STEP=4, ckpt=d),
                                    handle_sigterm=False)
            self.assertEqual(again.load(), {"w": 4})
            self.assertEqual(list(again.steps()), list(range(4, 10)))


class Checkpoints(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def run_at(self, start=0, steps=10):
        return saturn_task.Run(env(SATURN_STEPS=steps, SATURN_START_STEP=start, ckpt=self.dir),
                               out=io.StringIO(), handle_sigterm=False)

    def test_no_checkpoint_at_step_0_gives_the_default(self):
        self.assertEqual(self.run_at().load(default="fresh"), "fresh")

    def test_no_checkpoint_when_saturn_resumes_is_an_error_naming_the_file(self):
        with self.assertRaises(saturn_task.CheckpointError) as e:
            self.run_at(start=4).load()
        self.assertIn(saturn_task.CHECKPOINT_FILE, str(e.exception))
        self.assertIn("resumes this task from step 4", str(e.exception))

    def test_save_is_atomic_and_load_resumes_at_the_saved_step(self):
        run = self.run_at()
        for step in run.steps():
            if step == 6:
                break
        run.step = 6
        run.save({"weights": [1, 2, 3]})
        self.assertEqual(os.listdir(self.dir), [saturn_task.CHECKPOINT_FILE])
        again = self.run_at(start=6)
        self.assertEqual(again.load(), {"weights": [1, 2, 3]})
        self.assertEqual(again.step, 6)

    def test_a_newer_checkpoint_than_saturns_start_step_wins(self):
        # After a crash Saturn resumes from the last pre-emption's step; the
        # program's own later checkpoint is newer.
        run = self.run_at()
        run.step = 8
        run.save("late")
        again = self.run_at(start=3)
        self.assertEqual(again.load(), "late")
        self.assertEqual(list(again.steps()), [8, 9])

    def test_only_rank_0_saves(self):
        run = saturn_task.Run(env(RANK=1, WORLD_SIZE=2, ckpt=self.dir), handle_sigterm=False)
        run.save("x")
        self.assertEqual(os.listdir(self.dir), [])

    def test_unreadable_and_foreign_files_are_clear_errors(self):
        path = os.path.join(self.dir, saturn_task.CHECKPOINT_FILE)
        with open(path, "wb") as f:
            f.write(b"\x80garbage")
        with self.assertRaises(saturn_task.CheckpointError) as e:
            self.run_at().load()
        self.assertIn("cannot be read", str(e.exception))
        with open(path, "wb") as f:
            pickle.dump({"weights": 1}, f)
        with self.assertRaises(saturn_task.CheckpointError) as e:
            self.run_at().load()
        self.assertIn("not a checkpoint written by saturn_task", str(e.exception))

    @unittest.skipIf(torch is None, "torch is not installed")
    def test_torch_programs_save_with_torch_and_report_tensor_losses(self):
        out = io.StringIO()
        run = saturn_task.Run(env(SATURN_STEPS=1, ckpt=self.dir), out=out, handle_sigterm=False)
        for _ in run.steps():
            run.report(loss=torch.tensor(0.5, requires_grad=True) * 2)
        run.save({"w": torch.arange(3.0)})
        with open(run.checkpoint_path, "rb") as f:
            self.assertEqual(f.read(2), b"PK")  # torch.save's zip format
        self.assertIn("loss=1 ", out.getvalue())
        again = self.run_at(start=1, steps=1)
        self.assertTrue(torch.equal(again.load()["w"], torch.arange(3.0)))


# A stdlib program following the contract through saturn_task.
PROGRAM = textwrap.dedent("""
    import sys, time, saturn_task
    run = saturn_task.Run()
    total = run.load(default=0)
    run.on_preempt(lambda: total)
    for step in run.steps():
        time.sleep(0.02)
        total += step
        run.report(loss=total)
    run.save(total)
    print("preempted" if run.preempted else "finished", flush=True)
""")


class Sigterm(unittest.TestCase):
    def test_sigterm_checkpoints_exits_0_and_the_restart_continues(self):
        with tempfile.TemporaryDirectory() as d:
            prog = os.path.join(d, "prog.py")
            with open(prog, "w") as f:
                f.write(PROGRAM)
            ckpt = os.path.join(d, "ckpt")
            p = subprocess.Popen([sys.executable, prog], stdout=subprocess.PIPE, text=True,
                                 env=child_env(SATURN_STEPS=400, SATURN_CHECKPOINT_DIR=ckpt))
            lines = []
            for line in p.stdout:
                lines.append(line.strip())
                if line.startswith("saturn: step=5 "):
                    p.send_signal(signal.SIGTERM)
            self.assertEqual(p.wait(timeout=60), 0)
            self.assertEqual(lines[-1], "preempted")
            last = int(lines[-2].split()[1].split("=")[1])
            self.assertGreaterEqual(last, 5)
            self.assertLess(last, 399)
            # Restarted where Saturn would: the step after the last one reported.
            p = subprocess.run([sys.executable, prog], capture_output=True, text=True, timeout=60,
                               env=child_env(SATURN_STEPS=last + 4, SATURN_START_STEP=last + 1,
                                             SATURN_CHECKPOINT_DIR=ckpt))
            self.assertEqual(p.returncode, 0, p.stderr)
            steps = [int(x.split()[1].split("=")[1]) for x in p.stdout.splitlines()
                     if x.startswith("saturn:")]
            self.assertEqual(steps, [last + 1, last + 2, last + 3])
            final = float(p.stdout.splitlines()[-2].split("loss=")[1].split()[0])
            self.assertEqual(final, sum(range(last + 4)))  # every step exactly once


RANK_PROGRAM = textwrap.dedent("""
    import os, sys, time
    rank = int(os.environ["RANK"])
    e = os.environ
    line = "rank %d of %s %s %s %s\\n" % (rank, e["WORLD_SIZE"], e["LOCAL_RANK"],
                                          e["MASTER_ADDR"], e["MASTER_PORT"])
    os.write(1, line.encode())
    if os.environ.get("FAIL_RANK") == str(rank):
        sys.exit(3)
    if os.environ.get("WAIT"):
        import signal
        signal.signal(signal.SIGTERM, lambda *a: (os.write(1, b"term %d\\n" % rank), sys.exit(0)))
        os.write(1, b"ready %d\\n" % rank)
        time.sleep(60)
        sys.exit(5)
""")


class Launch(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.prog = os.path.join(self.dir, "ranks.py")
        with open(self.prog, "w") as f:
            f.write(RANK_PROGRAM)

    def launch(self, n, **kw):
        return subprocess.Popen([sys.executable, "-m", "saturn_task", "launch",
                                 f"--nproc_per_node={n}", self.prog], env=child_env(**kw),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def test_starts_every_rank_with_torchruns_environment(self):
        p = self.launch(3)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0, err)
        lines = sorted(out.splitlines())
        self.assertEqual([line.split()[:5] for line in lines],
                         [["rank", str(r), "of", "3", str(r)] for r in range(3)])
        self.assertEqual(len({line.split()[6] for line in lines}), 1)  # one port for all

    def test_a_failing_rank_fails_the_launch(self):
        p = self.launch(2, FAIL_RANK=1, WAIT=1)
        out, err = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 3, err)

    def test_sigterm_reaches_every_rank_and_a_clean_stop_exits_0(self):
        p = self.launch(2, WAIT=1)
        ready = 0
        for line in p.stdout:
            ready += line.startswith("ready")
            if ready == 2:
                p.send_signal(signal.SIGTERM)
                break
        out, _ = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 0)
        self.assertEqual(sorted(out.split()), ["0", "1", "term", "term"])

    def test_bad_arguments_exit_2_with_the_usage(self):
        for args in (["launch", self.prog], ["launch", "--nproc_per_node=0", self.prog],
                     ["launch", "--nodes=2", self.prog], ["frobnicate"]):
            p = subprocess.run([sys.executable, "-m", "saturn_task"] + args, env=child_env(),
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, args)
            self.assertTrue(p.stderr.startswith("saturn_task"), p.stderr)


class Packaging(unittest.TestCase):
    def test_the_backend_builds_a_wheel_with_the_modules_that_exist(self):
        sys.path.insert(0, PYDIR)
        import saturn_build

        with tempfile.TemporaryDirectory() as d:
            name = saturn_build.build_wheel(d)
            self.assertTrue(name.endswith("-py3-none-any.whl"))
            with zipfile.ZipFile(os.path.join(d, name)) as z:
                names = z.namelist()
                self.assertIn("saturn_task.py", names)
                self.assertEqual("saturn_models.py" in names,
                                 os.path.exists(os.path.join(PYDIR, "saturn_models.py")))
                meta = [n for n in names if n.endswith("METADATA")][0]
                self.assertIn(b"Name: saturn-py", z.read(meta))
                record = z.read([n for n in names if n.endswith("RECORD")][0]).decode()
                self.assertIn("saturn_task.py,sha256=", record)

    def test_pip_installs_it_without_an_index(self):
        try:
            import pip  # noqa: F401
        except ImportError:
            self.skipTest("pip is not installed")
        with tempfile.TemporaryDirectory() as d:
            p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index",
                                "--no-cache-dir", "--disable-pip-version-check", "--target", d,
                                PYDIR], capture_output=True, text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertTrue(os.path.exists(os.path.join(d, "saturn_task.py")))


class Examples(unittest.TestCase):
    def test_the_single_process_loop_becomes_a_task_in_at_most_10_changed_lines(self):
        # docs/byo.md shows this diff: plain.py is a user's loop, train.py the task
        # (single process, and each rank of a DDP job).
        folder = os.path.join(ROOT, "examples", "pytorch-gpt")
        with open(os.path.join(folder, "plain.py")) as f:
            plain = f.read().splitlines()
        with open(os.path.join(folder, "train.py")) as f:
            task = f.read().splitlines()
        changed = [line for line in difflib.unified_diff(plain, task, n=0, lineterm="")
                   if line.startswith("+") and not line.startswith("+++")]
        code = [line for line in changed if line[1:].strip() and not line[1:].startswith("#")]
        self.assertLessEqual(len(code), 10, "\n".join(code))


if __name__ == "__main__":
    unittest.main()
