"""A table's groups out of a run (docs/groups.md, "The models of every
group"): `saturn run` on a small table, then groups.safetensors and
groups.json against what else the run wrote (ctest python_group_models).

    /usr/bin/python3 tests/python/test_group_models.py

- Each group's tensors in groups.safetensors (read by saturn_models'
  read_safetensors, written here by the C++ writer) equal the model.pt of
  the task the index names, loaded independently with torch.load, and that
  task is report.json's best of the group's sweep (two learning rates).
- load_group's module computes what a forward pass written here from those
  weights computes (relu(x W0^T + b0) W^T + b for the mlp, x W^T + b for
  logistic regression), and the index says which class each output is.
- load_groups gives every group; a group not in the run, or one without a
  model, is a GroupError naming it.

Needs torch in this interpreter, the saturn binary (SATURN_BIN, default
build/src/cli/saturn) and saturn-worker (SATURN_WORKER); exits 77 (ctest:
skipped) without them.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

try:
    import torch
except ImportError:
    torch = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
SATURN = os.environ.get("SATURN_BIN", os.path.join(ROOT, "build", "src", "cli", "saturn"))
WORKER = os.environ.get("SATURN_WORKER",
                        os.path.join(ROOT, "build", "src", "worker", "saturn-worker"))
if torch is not None:
    import saturn_models  # noqa: E402

GROUPS = {"s0": 30, "s1": 50, "s 2": 70}  # rows; "s 2" is the task name part "s_2"
EPOCHS, BATCH = 3, 8


def lcg(seed):
    state = [seed]

    def uniform():
        state[0] = (state[0] * 6364136223846793005 + 1442695040888963407) % 2 ** 64
        return (state[0] >> 11) / 2.0 ** 53 * 2 - 1
    return uniform


def steps(rows):
    held = int(rows * 0.2 + 0.5)  # round(), half away from zero as the C++ does
    return EPOCHS * -(-(rows - held) // BATCH)


def run_saturn(folder, model, label_of, lrs):
    """`saturn run` of one table task over GROUPS with `model`, each label
    label_of(group index, x0, x1), a sweep of `lrs`; from a profile written
    here that packs them into arrays. Returns the run folder."""
    uniform = lcg(5)
    rows = ["store,x0,x1,y"]
    for g, (group, n) in enumerate(GROUPS.items()):
        for _ in range(n):
            x0, x1 = uniform(), uniform()
            rows.append("%s,%.6f,%.6f,%s" % (group, x0, x1, label_of(g, x0, x1)))
    with open(os.path.join(folder, "t.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")
    sweep = "[%s]" % ", ".join(lrs)
    with open(os.path.join(folder, "w.yaml"), "w") as f:
        f.write("cluster: {nodes: [{name: n0, gpus: 1, gpu_memory_gib: 2}]}\n"
                "tasks:\n  - name: st\n    model: %s\n"
                "    data: {type: table, path: t.csv, features: [x0, x1], label: y, "
                "group_by: store}\n"
                "    batch_size: %d\n    optimizer: {type: adam, lr: 1.0e-2}\n"
                "    sweep: {optimizer.lr: %s}\n    epochs: %d\n" % (model, BATCH, sweep, EPOCHS))
    profile = ["task,technique,gpus,runtime_s,step_s,steps,pack_class,pack_rows,pack_step_s"]
    for lr in lrs:
        for group, n in GROUPS.items():
            name = "st-lr%s-%s" % (lr, group.replace(" ", "_"))
            profile.append("%s,single,1,%d,1.0,%d,t,8,8:1.0 64:1.1" % (name, steps(n) + 2,
                                                                      steps(n)))
    with open(os.path.join(folder, "profile.csv"), "w") as f:
        f.write("\n".join(profile) + "\n")
    run = os.path.join(folder, "run")
    env = dict(os.environ, SATURN_WORKER=WORKER, XDG_CACHE_HOME=os.path.join(folder, "cache"))
    p = subprocess.run([SATURN, "run", os.path.join(folder, "w.yaml"), "--run-dir", run,
                        "--profile", os.path.join(folder, "profile.csv"), "--max-retries", "0"],
                       capture_output=True, text=True, env=env, timeout=600)
    if p.returncode != 0:
        raise AssertionError("saturn run failed:\n" + p.stdout + p.stderr)
    if "groups.safetensors" not in p.stderr:
        raise AssertionError("saturn run did not say where the models are:\n" + p.stderr)
    return run


def reference_forward(weights, x):
    """The mlp by hand from its weights: hidden layers relu(x W^T + b), then
    the head x W^T + b, in float64."""
    h = x.double()
    k = 0
    while "layers.%d.weight" % k in weights:
        w, b = weights["layers.%d.weight" % k].double(), weights["layers.%d.bias" % k].double()
        h = torch.clamp(h @ w.t() + b, min=0)
        k += 1
    return h @ weights["out.weight"].double().t() + weights["out.bias"].double()


class GroupModels(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="saturn_group_models_")

    def tearDown(self):
        if not os.environ.get("KEEP"):
            shutil.rmtree(self.dir, ignore_errors=True)

    def check_run(self, run, layers):
        with open(os.path.join(run, "report.json")) as f:
            report = json.load(f)
        best = {b["sweep"]: b["task"] for b in report["best"]}
        tasks = {t["task"]: t for t in report["tasks"]}
        index = saturn_models.group_index(run)
        self.assertEqual(sorted(index["groups"]), sorted(GROUPS))
        self.assertEqual(index["features"], ["x0", "x1"])
        self.assertEqual(index["label"], "y")
        self.assertEqual(index["model"]["layers"], layers)
        stored = saturn_models.read_safetensors(os.path.join(run, "groups.safetensors"))
        self.assertEqual(len(stored), 2 * (layers + 1) * len(GROUPS))
        x = torch.randn(16, 2, generator=torch.Generator().manual_seed(0))
        modules = saturn_models.load_groups(run)
        self.assertEqual(sorted(modules), sorted(GROUPS))
        for group in GROUPS:
            entry = saturn_models.group_index(run, group)
            task = entry["task"]
            # The report's best of the group's sweep, its held-out loss.
            self.assertEqual(task, best["st@" + group])
            self.assertAlmostEqual(entry["eval_loss"], tasks[task]["final_eval_loss"], places=12)
            self.assertEqual(entry["train_rows"], GROUPS[group] - int(GROUPS[group] * 0.2 + 0.5))
            own = torch.load(os.path.join(run, "tasks", task, "model.pt"))
            self.assertEqual(sorted(entry["keys"]), sorted(group + "/" + k for k in own))
            for name, tensor in own.items():
                mine = stored[group + "/" + name]
                self.assertEqual(mine.dtype, torch.float32)
                self.assertTrue(torch.equal(mine, tensor), "%s %s" % (group, name))
            model = saturn_models.load_group(run, group)
            self.assertFalse(model.training)
            with torch.no_grad():
                got = model(x).double()
                self.assertTrue(torch.allclose(got, reference_forward(own, x), atol=1e-5))
                self.assertTrue(torch.equal(modules[group](x), model(x)))
                # saturn_models.load of the task's own folder: the same model.
                self.assertTrue(torch.equal(saturn_models.load(
                    os.path.join(run, "tasks", task))(x), model(x)))
        return index

    def test_regression_mlp_with_a_sweep(self):
        run = run_saturn(self.dir, "{type: mlp, layers: 1, width: 4}",
                         lambda g, x0, x1: "%.6f" % ((g + 1) * x0 - g * x1 + 0.2 * g),
                         ["1.0e-2", "3.0e-2"])
        index = self.check_run(run, layers=1)
        self.assertEqual(index["kind"], "regression")
        self.assertNotIn("classes", index)
        self.assertEqual(index["model"]["outputs"], 1)

    def test_logistic_regression_classes_in_order(self):
        run = run_saturn(self.dir, "{type: mlp, layers: 0}",
                         lambda g, x0, x1: ["dog", "cat"][x0 + (g - 1) * x1 > 0],
                         ["3.0e-2", "1.0e-1"])
        index = self.check_run(run, layers=0)
        self.assertEqual(index["kind"], "classification")
        self.assertEqual(index["classes"], ["cat", "dog"])
        for group in GROUPS:
            self.assertGreaterEqual(index["groups"][group]["eval_accuracy"], 0.0)
        # The classes of a prediction, as the docs' example takes them.
        model = saturn_models.load_group(run, "s0")
        x = torch.tensor([[0.9, 0.1], [-0.9, 0.1]])
        predicted = [index["classes"][k] for k in model(x).argmax(-1)]
        self.assertEqual(predicted, ["cat", "dog"])

        # Errors name the group: one not in the run, one without a model.
        with self.assertRaisesRegex(saturn_models.GroupError,
                                    r"group 's00' is not in .*groups.json \(3 groups: "
                                    r"'.*'\); did you mean 's0'\?"):
            saturn_models.load_group(run, "s00")
        broken = os.path.join(self.dir, "broken")
        os.makedirs(broken)
        shutil.copy(os.path.join(run, "groups.safetensors"), broken)
        index["groups"]["s1"].update(task=None, keys=[], reason="st-lr3.0e-2-s1 failed: diverged")
        with open(os.path.join(broken, "groups.json"), "w") as f:
            json.dump(index, f)
        with self.assertRaisesRegex(saturn_models.GroupError,
                                    r"group 's1' has no model: st-lr3.0e-2-s1 failed: diverged"):
            saturn_models.load_group(broken, "s1")
        self.assertEqual(sorted(saturn_models.load_groups(broken)), ["s 2", "s0"])
        with self.assertRaisesRegex(saturn_models.GroupError, "no groups.json"):
            saturn_models.load_groups(self.dir)


if __name__ == "__main__":
    missing = ("no torch in this interpreter" if torch is None else
               "no saturn binary at %s (set SATURN_BIN)" % SATURN if not os.path.exists(SATURN)
               else "no saturn-worker at %s (set SATURN_WORKER)" % WORKER
               if not os.path.exists(WORKER) else None)
    if missing:
        print("skipped: " + missing)
        sys.exit(77)
    unittest.main()
