"""GPT-2 in Saturn's engine against an independent GPT-2 (ctest engine_gpt2).

A small checkpoint in Hugging Face's GPT-2 layout (random weights, GPT-2's key
names, Conv1D weights stored [in, out]) is written here in every format the
engine reads; saturn-worker trains it with each technique, and its losses must
equal those of GPT-2's forward pass written below from the architecture's
definition (not from Saturn's code, nor saturn_models), before and after a
step of training, within 1e-4. LoRA must change only its adapters; a trained
task's model.pt must load back (saturn_models) and give the engine's loss.

Needs torch (Debian's python3-torch) and SATURN_WORKER (the saturn-worker
binary); exits 77 (skipped) without torch.
"""
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import saturn_models  # noqa: E402

WORKER = os.environ.get("SATURN_WORKER", "saturn-worker")
LAYERS, WIDTH, HEADS, VOCAB, POSITIONS, SEQ = 2, 32, 4, 96, 16, 12
BATCH, ROWS = 4, 8
TOLERANCE = 1e-4


def hf_weights(seed=0):
    """GPT-2's parameters, keyed as Hugging Face's GPT2Model keys them."""
    g = torch.Generator().manual_seed(seed)
    w = {"wte.weight": torch.randn(VOCAB, WIDTH, generator=g) * 0.2,
         "wpe.weight": torch.randn(POSITIONS, WIDTH, generator=g) * 0.1,
         "ln_f.weight": 1 + 0.1 * torch.randn(WIDTH, generator=g),
         "ln_f.bias": 0.1 * torch.randn(WIDTH, generator=g)}
    for i in range(LAYERS):
        p = "h.%d." % i
        for name, shape in [("ln_1.weight", [WIDTH]), ("ln_1.bias", [WIDTH]),
                            ("attn.c_attn.weight", [WIDTH, 3 * WIDTH]),
                            ("attn.c_attn.bias", [3 * WIDTH]),
                            ("attn.c_proj.weight", [WIDTH, WIDTH]), ("attn.c_proj.bias", [WIDTH]),
                            ("ln_2.weight", [WIDTH]), ("ln_2.bias", [WIDTH]),
                            ("mlp.c_fc.weight", [WIDTH, 4 * WIDTH]),
                            ("mlp.c_fc.bias", [4 * WIDTH]),
                            ("mlp.c_proj.weight", [4 * WIDTH, WIDTH]),
                            ("mlp.c_proj.bias", [WIDTH])]:
            scale = 0.15 if name.endswith("weight") else 0.05
            base = 1.0 if name.startswith("ln") and name.endswith("weight") else 0.0
            w[p + name] = base + scale * torch.randn(*shape, generator=g)
    return w


def layer_norm(x, weight, bias):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * weight + bias


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def reference_loss(w, tokens, targets):
    """GPT-2's forward pass from its definition; mean next-token cross-entropy."""
    b, t = tokens.shape
    h = w["wte.weight"][tokens] + w["wpe.weight"][:t]
    head = WIDTH // HEADS
    causal = torch.tril(torch.ones(t, t, dtype=torch.bool))
    for i in range(LAYERS):
        p = "h.%d." % i
        a = layer_norm(h, w[p + "ln_1.weight"], w[p + "ln_1.bias"])
        qkv = a @ w[p + "attn.c_attn.weight"] + w[p + "attn.c_attn.bias"]  # Conv1D: x W + b
        q, k, v = (z.reshape(b, t, HEADS, head).transpose(1, 2) for z in qkv.split(WIDTH, -1))
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(head)
        scores = scores.masked_fill(~causal, float("-inf"))
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, WIDTH)
        h = h + y @ w[p + "attn.c_proj.weight"] + w[p + "attn.c_proj.bias"]
        m = layer_norm(h, w[p + "ln_2.weight"], w[p + "ln_2.bias"])
        m = gelu_new(m @ w[p + "mlp.c_fc.weight"] + w[p + "mlp.c_fc.bias"])
        h = h + m @ w[p + "mlp.c_proj.weight"] + w[p + "mlp.c_proj.bias"]
    logits = layer_norm(h, w["ln_f.weight"], w["ln_f.bias"]) @ w["wte.weight"].t()  # tied head
    return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def reference_losses(w, batches, optimizer):
    """Losses of steps 0 and 1: one optimizer step between them (torch.optim)."""
    params = {k: v.clone().requires_grad_(True) for k, v in w.items()}
    opt = (torch.optim.AdamW(params.values(), lr=optimizer["lr"]) if optimizer["type"] == "adamw"
           else torch.optim.SGD(params.values(), lr=optimizer["lr"]))
    loss0 = reference_loss(params, *batches[0])
    opt.zero_grad()
    loss0.backward()
    opt.step()
    with torch.no_grad():
        loss1 = reference_loss(params, *batches[1])
    return [loss0.item(), loss1.item()]


def write_checkpoints(folder, w):
    """The checkpoint in each layout the engine reads."""
    prefixed = {"transformer." + k: v for k, v in w.items()}
    paths = {}
    # model.safetensors as save_pretrained writes it: prefixed, no lm_head.
    paths["safetensors"] = os.path.join(folder, "hf", "model.safetensors")
    os.makedirs(os.path.dirname(paths["safetensors"]))
    saturn_models.write_safetensors(prefixed, paths["safetensors"], {"format": "pt"})
    # pytorch_model.bin (torch.save's zip format): prefixed, with the tied
    # lm_head.weight sharing wte's storage, and attention-mask buffers.
    state = dict(prefixed)
    state["lm_head.weight"] = state["transformer.wte.weight"]
    for i in range(LAYERS):
        state["transformer.h.%d.attn.bias" % i] = torch.tril(torch.ones(1, 1, POSITIONS,
                                                                          POSITIONS))
        state["transformer.h.%d.attn.masked_bias" % i] = torch.tensor(-1e4)
    paths["bin"] = os.path.join(folder, "pytorch_model.bin")
    torch.save(state, paths["bin"])
    # The original GPT-2 files: keys without a prefix, the pre-1.6 format.
    paths["legacy"] = os.path.join(folder, "gpt2-legacy.bin")
    torch.save(dict(w), paths["legacy"], _use_new_zipfile_serialization=False)
    return paths


def run_worker(args):
    done = subprocess.run([WORKER] + args, capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout + done.stderr


class Gpt2Engine(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        cls.w = hf_weights()
        cls.paths = write_checkpoints(cls.dir, cls.w)
        g = torch.Generator().manual_seed(1)
        data = torch.randint(0, VOCAB, (ROWS, SEQ + 1), generator=g)
        cls.inputs, cls.targets = data[:, :-1].contiguous(), data[:, 1:].contiguous()
        cls.data = os.path.join(cls.dir, "rows.pt")
        torch.save([cls.inputs, cls.targets], cls.data)
        # Step s trains on rows [s*B, (s+1)*B) of the tensors file.
        cls.batches = [(cls.inputs[s * BATCH:(s + 1) * BATCH],
                        cls.targets[s * BATCH:(s + 1) * BATCH]) for s in range(2)]

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def task(self, name, init, optimizer, finetune=None, steps=2):
        task = {"name": name, "batch_size": BATCH, "steps": steps,
                "model": {"type": "gpt2", "layers": LAYERS, "d_model": WIDTH, "heads": HEADS,
                          "vocab": VOCAB, "positions": POSITIONS, "seq_len": SEQ, "init": init},
                "data": {"type": "tensors", "path": self.data}, "optimizer": optimizer}
        if finetune:
            task["finetune"] = finetune
        folder = os.path.join(self.dir, name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "task.json")
        with open(path, "w") as f:
            json.dump(task, f)
        return path, folder

    def execute(self, task_path, folder, technique, gpus, start=0, end=2, save=True, knobs=None):
        out = os.path.join(folder, "result-%s-%d.json" % (technique, start))
        args = ["execute", "--task", task_path, "--technique", technique, "--gpus", str(gpus),
                "--out", out, "--from-step", str(start), "--to-step", str(end),
                "--checkpoint-dir", os.path.join(folder, "checkpoints"), "--timeout-s", "120"]
        if knobs:
            args += ["--knobs", json.dumps(knobs)]
        if save:
            args += ["--save-model", os.path.join(folder, "model.pt")]
        status, log = run_worker(args)
        self.assertEqual(status, 0, log)
        with open(out) as f:
            return json.load(f)

    def test_every_format_and_technique_matches_gpt2(self):
        for optimizer in ({"type": "sgd", "lr": 0.3}, {"type": "adamw", "lr": 0.003}):
            expected = reference_losses(self.w, self.batches, optimizer)
            runs = [("safetensors", "single", 1), ("bin", "single", 1), ("legacy", "single", 1),
                    ("safetensors", "ddp", 2), ("bin", "fsdp", 2), ("safetensors", "pipeline", 2),
                    ("legacy", "spill", 1), ("bin", "tp", 2)]
            for layout, technique, gpus in runs:
                with self.subTest(optimizer=optimizer["type"], layout=layout, technique=technique):
                    name = "%s-%s-%s" % (optimizer["type"], layout, technique)
                    path, folder = self.task(name, self.paths[layout], optimizer)
                    losses = self.execute(path, folder, technique, gpus)["losses"]
                    print("%-28s engine %s reference %s" % (name, losses, expected))
                    for got, want in zip(losses, expected):
                        self.assertAlmostEqual(got, want, delta=TOLERANCE)

    def test_schedules_with_warmup_and_clipping_match_torch_under_every_technique(self):
        # Hugging Face's schedules (written out below from their definitions)
        # with warmup, and clip_grad_norm_ tight enough that every step clips:
        # every technique (tied wte/head counted once in the norm) follows
        # torch.optim.AdamW + LambdaLR + clip_grad_norm_, also resumed mid-way.
        steps, warmup, clip = 6, 2, 0.05
        g = torch.Generator().manual_seed(3)
        data = torch.randint(0, VOCAB, (steps * BATCH, SEQ + 1), generator=g)
        inputs, targets = data[:, :-1].contiguous(), data[:, 1:].contiguous()
        rows = os.path.join(self.dir, "rows-schedule.pt")
        torch.save([inputs, targets], rows)
        batches = [(inputs[s * BATCH:(s + 1) * BATCH], targets[s * BATCH:(s + 1) * BATCH])
                   for s in range(steps)]

        def multiplier(kind, step):
            if step < warmup:
                return step / max(1, warmup)
            progress = (step - warmup) / max(1, steps - warmup)
            if kind == "linear":
                return max(0.0, (steps - step) / max(1, steps - warmup))
            return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))

        def reference(kind, max_norm):
            params = {k: v.clone().requires_grad_(True) for k, v in self.w.items()}
            opt = torch.optim.AdamW(params.values(), lr=0.01)
            sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: multiplier(kind, s))
            losses = []
            for s in range(steps):
                loss = reference_loss(params, *batches[s])
                opt.zero_grad()
                loss.backward()
                if max_norm:
                    torch.nn.utils.clip_grad_norm_(params.values(), max_norm)
                opt.step()
                sched.step()
                losses.append(loss.item())
            return losses

        expected = {kind: reference(kind, clip) for kind in ("linear", "cosine")}
        unclipped = reference("linear", None)
        self.assertGreater(max(abs(a - b) for a, b in zip(expected["linear"], unclipped)), 1e-3,
                           "the clip should matter")
        runs = [("single", 1, {}), ("ddp", 2, {}), ("fsdp", 2, {}), ("pipeline", 2, {}),
                ("spill", 1, {"blocks_per_shard": 1}), ("tp", 2, {}),
                ("tp-ddp", 4, {"tp": 2}), ("pipeline-tp", 4, {"tp": 2})]
        for i, (technique, gpus, knobs) in enumerate(runs):
            kind = ("linear", "cosine")[i % 2]
            with self.subTest(technique=technique, schedule=kind):
                name = "schedule-%s-%s" % (technique, kind)
                optimizer = {"type": "adamw", "lr": 0.01, "clip_grad_norm": clip,
                             "schedule": {"type": kind, "warmup_steps": warmup}}
                path, folder = self.task(name, self.paths["safetensors"], optimizer, steps=steps)
                with open(path) as f:
                    task = json.load(f)
                task["data"]["path"] = rows
                with open(path, "w") as f:
                    json.dump(task, f)
                # Half the steps, then the rest from the checkpoint: exact on resume.
                first = self.execute(path, folder, technique, gpus, 0, steps // 2, False, knobs)
                rest = self.execute(path, folder, technique, gpus, steps // 2, steps, False, knobs)
                losses = first["losses"] + rest["losses"]
                print("%-36s engine %s reference %s" % (name, losses, expected[kind]))
                self.assertEqual(len(losses), steps)
                for got, want in zip(losses, expected[kind]):
                    self.assertAlmostEqual(got, want, delta=TOLERANCE)

    def test_half_precision_checkpoints_are_converted_as_they_load(self):
        # float16 and bfloat16 files (safetensors, mapped and converted; and
        # torch.save's zip): the model starts from their values in float32.
        optimizer = {"type": "sgd", "lr": 0.3}
        for dtype in (torch.float16, torch.bfloat16):
            half = {k: v.to(dtype) for k, v in self.w.items()}
            expected = reference_losses({k: v.float() for k, v in half.items()}, self.batches,
                                        optimizer)
            folder = os.path.join(self.dir, "half-%s" % str(dtype).split(".")[1])
            os.makedirs(folder, exist_ok=True)
            prefixed = {"transformer." + k: v for k, v in half.items()}
            st = os.path.join(folder, "model.safetensors")
            saturn_models.write_safetensors(prefixed, st, {"format": "pt"})
            zipped = os.path.join(folder, "pytorch_model.bin")
            torch.save(prefixed, zipped)
            for layout, path in (("safetensors", st), ("bin", zipped)):
                with self.subTest(dtype=str(dtype), layout=layout):
                    name = "half-%s-%s" % (str(dtype).split(".")[1], layout)
                    task, out = self.task(name, path, optimizer)
                    losses = self.execute(task, out, "single", 1)["losses"]
                    for got, want in zip(losses, expected):
                        self.assertAlmostEqual(got, want, delta=TOLERANCE)

    def test_lora_trains_only_adapters_and_model_pt_loads_back(self):
        optimizer = {"type": "adamw", "lr": 0.01}
        lora = {"lora": {"rank": 2, "alpha": 4, "targets": ["attn", "mlp"]}}
        for technique, gpus in (("single", 1), ("fsdp", 2), ("pipeline", 2), ("spill", 1),
                                ("ddp", 2)):
            with self.subTest(technique=technique):
                path, folder = self.task("lora-" + technique, self.paths["safetensors"], optimizer,
                                         lora, steps=3)
                first = self.execute(path, folder, technique, gpus, 0, 2)
                # Before any step the adapters are zero: the loss is GPT-2's.
                self.assertAlmostEqual(first["losses"][0],
                                       reference_loss(self.w, *self.batches[0]).item(),
                                       delta=TOLERANCE)
                ckpt = os.path.join(folder, "checkpoints", "checkpoint-2")
                trained = {}
                for block in range(LAYERS + 2):
                    blob = torch.load(os.path.join(ckpt, "block-%05d.pt" % block))
                    trained.update({"%d/%s" % (block, k[6:]): v for k, v in blob.items()
                                    if k.startswith("param/")})
                # Only what trains: the adapters (with their optimizer
                # state); meta.json names the frozen base they apply to.
                adapters = [k for k in trained if k.endswith((".lora_A", ".lora_B"))]
                self.assertEqual(len(adapters), LAYERS * 4 * 2)  # 4 adapted maps, A and B
                self.assertEqual(sorted(trained), sorted(adapters))
                with open(os.path.join(ckpt, "meta.json")) as f:
                    base = json.load(f)["base"]
                self.assertEqual(base["init"], self.paths["safetensors"])
                self.assertEqual([f["bytes"] for f in base["files"]],
                                 [os.path.getsize(self.paths["safetensors"])])
                for key in adapters:
                    if key.endswith(".lora_B"):
                        self.assertGreater(trained[key].abs().max().item(), 0, key)
                # adapters.pt holds exactly them; model.pt the merged weights.
                saved = torch.load(os.path.join(folder, "adapters.pt"))
                self.assertEqual(len(saved), len(adapters))
                self.assertTrue(all(".lora_" in k for k in saved))
                # Step 2 (on rows 0-3 again) reports the loss of the weights
                # model.pt holds; saturn_models gives the same.
                second = self.execute(path, folder, technique, gpus, 2, 3, save=False)
                with open(path) as f:
                    task = json.load(f)
                model = saturn_models.build(task["model"])
                model.load_state_dict(torch.load(os.path.join(folder, "model.pt")))
                with torch.no_grad():
                    mine = saturn_models.loss(model, *self.batches[0]).item()
                self.assertAlmostEqual(second["losses"][0], mine, delta=TOLERANCE)

    def test_a_trained_model_pt_is_an_init_and_saves_as_hugging_face(self):
        optimizer = {"type": "sgd", "lr": 0.3}
        path, folder = self.task("first", self.paths["bin"], optimizer)
        first = self.execute(path, folder, "single", 1)
        model = saturn_models.load(folder)
        with torch.no_grad():
            after = saturn_models.loss(model, *self.batches[0]).item()
        # Its model.pt starts another task where the first one ended.
        path2, folder2 = self.task("second", os.path.join(folder, "model.pt"), optimizer)
        second = self.execute(path2, folder2, "single", 1)
        self.assertAlmostEqual(second["losses"][0], after, delta=TOLERANCE)
        self.assertNotAlmostEqual(second["losses"][0], first["losses"][0], delta=1e-3)
        # Out in Hugging Face's layout, and in again through the engine.
        saturn_models.save_hf(model, os.path.join(self.dir, "out-hf"))
        with open(os.path.join(self.dir, "out-hf", "config.json")) as f:
            self.assertEqual(json.load(f)["n_layer"], LAYERS)
        path3, folder3 = self.task("third", os.path.join(self.dir, "out-hf"), optimizer)
        third = self.execute(path3, folder3, "single", 1)
        self.assertAlmostEqual(third["losses"][0], after, delta=TOLERANCE)

    def test_unfit_checkpoints_are_refused_naming_the_tensor(self):
        optimizer = {"type": "sgd", "lr": 0.1}
        cases = []
        wrong = dict(self.w)
        wrong["h.1.mlp.c_fc.weight"] = torch.zeros(WIDTH, 2 * WIDTH)
        cases.append((wrong, ["h.1.mlp.c_fc.weight", "[32, 64] F32", "[32, 128]"]))
        missing = {k: v for k, v in self.w.items() if k != "h.0.ln_2.bias"}
        cases.append((missing, ["lacks 1 tensor", "h.0.ln_2.bias"]))
        extra = dict(self.w)
        extra["h.2.ln_1.weight"] = torch.ones(WIDTH)
        cases.append((extra, ["does not have", "h.2.ln_1.weight"]))
        for i, (weights, words) in enumerate(cases):
            with self.subTest(words=words[0]):
                file = os.path.join(self.dir, "bad-%d.safetensors" % i)
                saturn_models.write_safetensors(weights, file)
                path, folder = self.task("bad-%d" % i, file, optimizer)
                status, log = run_worker(
                    ["execute", "--task", path, "--technique", "single", "--gpus", "1", "--out",
                     os.path.join(folder, "r.json"), "--from-step", "0", "--to-step", "1",
                     "--checkpoint-dir", os.path.join(folder, "c")])
                self.assertEqual(status, 2, log)
                for word in words + [file]:
                    self.assertIn(word, log)


if __name__ == "__main__":
    unittest.main(verbosity=2)
