"""The Llama family in Saturn's engine against an independent Llama (ctest engine_llama).

Two small random checkpoints in Hugging Face's Llama layout are written here:
a llama-type one (grouped-query attention, llama3 rope scaling, an untied
head, bf16 weights in two safetensors shards with model.safetensors.index.json)
and a qwen2-type one (q/k/v biases, one key/value head for four query heads,
a tied head, fp32, one file). saturn-worker trains each under every
technique, and its losses must equal those of the forward pass written below
from the architecture's definition (Hugging Face's LlamaForCausalLM and
Qwen2ForCausalLM: RMSNorm in fp32, rotate-half rotary embeddings, SwiGLU), not
from Saturn's code, before and after a step of training, within 1e-4. LoRA by
peft module names must adapt only those maps.

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
BATCH, ROWS, SEQ, VOCAB = 4, 8, 12, 96
TOLERANCE = 1e-4

# Two configurations as their config.json would say them.
LLAMA = {"model_type": "llama", "num_hidden_layers": 2, "hidden_size": 32,
         "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
         "intermediate_size": 48, "vocab_size": VOCAB, "max_position_embeddings": 64,
         "rope_theta": 10000.0, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
         "attention_bias": False,
         # With head_dim 8 the four wavelengths (6, 63, 628, 6283 positions)
         # fall below, inside and above [16, 64]: every branch of the scaling.
         "rope_scaling": {"rope_type": "llama3", "factor": 4.0, "low_freq_factor": 1.0,
                          "high_freq_factor": 4.0, "original_max_position_embeddings": 64}}
QWEN2 = {"model_type": "qwen2", "num_hidden_layers": 2, "hidden_size": 32,
         "num_attention_heads": 4, "num_key_value_heads": 1, "intermediate_size": 48,
         "vocab_size": VOCAB, "max_position_embeddings": 64, "rope_theta": 1000000.0,
         "rms_norm_eps": 1e-6, "tie_word_embeddings": True, "attention_bias": True}


def head_dim(c):
    return c.get("head_dim", c["hidden_size"] // c["num_attention_heads"])


def hf_weights(c, seed=0):
    """The model's parameters, keyed as LlamaForCausalLM / Qwen2ForCausalLM keys them."""
    g = torch.Generator().manual_seed(seed)
    d, hd, ffn = c["hidden_size"], head_dim(c), c["intermediate_size"]
    q, kv = c["num_attention_heads"] * hd, c["num_key_value_heads"] * hd

    def rand(*shape, scale=0.15, base=0.0):
        return base + scale * torch.randn(*shape, generator=g)

    w = {"model.embed_tokens.weight": rand(VOCAB, d, scale=0.5),
         "model.norm.weight": rand(d, scale=0.1, base=1.0)}
    if not c["tie_word_embeddings"]:
        w["lm_head.weight"] = rand(VOCAB, d, scale=0.2)
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = rand(d, scale=0.1, base=1.0)
        w[p + "post_attention_layernorm.weight"] = rand(d, scale=0.1, base=1.0)
        for name, shape in [("self_attn.q_proj", (q, d)), ("self_attn.k_proj", (kv, d)),
                            ("self_attn.v_proj", (kv, d)), ("self_attn.o_proj", (d, q)),
                            ("mlp.gate_proj", (ffn, d)), ("mlp.up_proj", (ffn, d)),
                            ("mlp.down_proj", (d, ffn))]:
            w[p + name + ".weight"] = rand(*shape, scale=0.2)
            # Qwen2: q, k and v biases; Llama and Mistral with
            # attention_bias: o_proj's too.
            biased = ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj")
            if c["model_type"] != "qwen2":
                biased += ("self_attn.o_proj",)
            if c["attention_bias"] and name in biased:
                w[p + name + ".bias"] = rand(shape[0], scale=0.1)
    return w


def rms_norm(x, weight, eps):
    x32 = x.float()
    return weight * (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps))


def inverse_frequencies(c):
    hd = head_dim(c)
    inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2).float() / hd))
    s = c.get("rope_scaling")
    if not s:
        return inv
    if s["rope_type"] == "linear":
        return inv / s["factor"]
    # Llama 3.1's rule, per wavelength: kept when short, divided by factor
    # when long, interpolated between.
    old = s["original_max_position_embeddings"]
    out = []
    for f in inv.tolist():
        wavelen = 2 * math.pi / f
        if wavelen < old / s["high_freq_factor"]:
            out.append(f)
        elif wavelen > old / s["low_freq_factor"]:
            out.append(f / s["factor"])
        else:
            smooth = (old / wavelen - s["low_freq_factor"]) / (s["high_freq_factor"] -
                                                               s["low_freq_factor"])
            out.append((1 - smooth) * f / s["factor"] + smooth * f)
    return torch.tensor(out)


def rope(x, c):
    """x [B, heads, T, hd]: each pair (i, i + hd/2) rotated by position x frequency i."""
    t, half = x.shape[2], x.shape[3] // 2
    angles = torch.outer(torch.arange(t).float(), inverse_frequencies(c))  # [T, hd/2]
    cos, sin = angles.cos(), angles.sin()
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


def reference_loss(w, c, tokens, targets, adapters=None, scale=0.0):
    """The decoder's forward pass from its definition; mean next-token cross-entropy.
    adapters: {"model.layers.N.<map>": (A [r, in], B [out, r])} added as scale * B A x."""
    b, t = tokens.shape
    hd, heads, kv = head_dim(c), c["num_attention_heads"], c["num_key_value_heads"]
    eps = c["rms_norm_eps"]

    def linear(x, name):
        y = x @ w[name + ".weight"].t()
        if name + ".bias" in w:
            y = y + w[name + ".bias"]
        if adapters and name in adapters:
            a, bb = adapters[name]
            y = y + scale * (x @ a.t() @ bb.t())
        return y

    h = w["model.embed_tokens.weight"][tokens]
    causal = torch.tril(torch.ones(t, t, dtype=torch.bool))
    for i in range(c["num_hidden_layers"]):
        p = "model.layers.%d." % i
        n = rms_norm(h, w[p + "input_layernorm.weight"], eps)
        q = linear(n, p + "self_attn.q_proj").view(b, t, heads, hd).transpose(1, 2)
        k = linear(n, p + "self_attn.k_proj").view(b, t, kv, hd).transpose(1, 2)
        v = linear(n, p + "self_attn.v_proj").view(b, t, kv, hd).transpose(1, 2)
        q, k = rope(q, c), rope(k, c)
        # Query head j reads key/value head j // (heads / kv).
        k = k.repeat_interleave(heads // kv, dim=1)
        v = v.repeat_interleave(heads // kv, dim=1)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        scores = scores.masked_fill(~causal, float("-inf"))
        y = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, heads * hd)
        h = h + linear(y, p + "self_attn.o_proj")
        m = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        h = h + linear(F.silu(linear(m, p + "mlp.gate_proj")) * linear(m, p + "mlp.up_proj"),
                       p + "mlp.down_proj")
    head = w["model.embed_tokens.weight"] if c["tie_word_embeddings"] else w["lm_head.weight"]
    logits = rms_norm(h, w["model.norm.weight"], eps) @ head.t()
    return F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1))


def reference_losses(w, c, batches, optimizer):
    """Losses of steps 0 and 1: one optimizer step between them (torch.optim)."""
    params = {k: v.clone().requires_grad_(True) for k, v in w.items()}
    opt = (torch.optim.AdamW(params.values(), lr=optimizer["lr"]) if optimizer["type"] == "adamw"
           else torch.optim.SGD(params.values(), lr=optimizer["lr"]))
    loss0 = reference_loss(params, c, *batches[0])
    opt.zero_grad()
    loss0.backward()
    opt.step()
    with torch.no_grad():
        loss1 = reference_loss(params, c, *batches[1])
    return [loss0.item(), loss1.item()]


def write_checkpoint(folder, w, c, dtype, shards):
    """A Hugging Face checkpoint folder: config.json and model.safetensors, or
    `shards` files with model.safetensors.index.json, in `dtype`."""
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(c, f)
    names = list(w)
    if shards == 1:
        saturn_models.write_safetensors({k: w[k].to(dtype) for k in names},
                                        os.path.join(folder, "model.safetensors"),
                                        {"format": "pt"})
        return folder
    weight_map = {}
    per = (len(names) + shards - 1) // shards
    for s in range(shards):
        file = "model-%05d-of-%05d.safetensors" % (s + 1, shards)
        part = names[s * per:(s + 1) * per]
        saturn_models.write_safetensors({k: w[k].to(dtype) for k in part},
                                        os.path.join(folder, file), {"format": "pt"})
        weight_map.update({k: file for k in part})
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {}, "weight_map": weight_map}, f)
    return folder


def model_fields(c, init):
    """The task.json model object the workload reader writes for `c`."""
    fields = {"type": "llama", "flavor": c["model_type"], "layers": c["num_hidden_layers"],
              "d_model": c["hidden_size"], "heads": c["num_attention_heads"],
              "kv_heads": c["num_key_value_heads"], "head_dim": head_dim(c),
              "ffn": c["intermediate_size"], "vocab": c["vocab_size"],
              "positions": c["max_position_embeddings"], "seq_len": SEQ,
              "rope_theta": c["rope_theta"], "norm_eps": c["rms_norm_eps"],
              "tie_embeddings": c["tie_word_embeddings"], "attention_bias": c["attention_bias"],
              "init": init}
    s = c.get("rope_scaling")
    if s:
        fields["rope_scaling"] = {"type": s["rope_type"]}
        fields["rope_scaling"].update({k: v for k, v in s.items() if k != "rope_type"})
    return fields


def run_worker(args):
    done = subprocess.run([WORKER] + args, capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout + done.stderr


class LlamaEngine(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        g = torch.Generator().manual_seed(1)
        data = torch.randint(0, VOCAB, (ROWS, SEQ + 1), generator=g)
        inputs, targets = data[:, :-1].contiguous(), data[:, 1:].contiguous()
        cls.data = os.path.join(cls.dir, "rows.pt")
        torch.save([inputs, targets], cls.data)
        # Step s trains on rows [s*B, (s+1)*B) of the tensors file.
        cls.batches = [(inputs[s * BATCH:(s + 1) * BATCH], targets[s * BATCH:(s + 1) * BATCH])
                       for s in range(2)]
        # llama: bf16 shards (the reference starts from the same rounded values).
        cls.llama_w = {k: v.to(torch.bfloat16).float() for k, v in hf_weights(LLAMA).items()}
        cls.llama = write_checkpoint(os.path.join(cls.dir, "llama"), cls.llama_w, LLAMA,
                                     torch.bfloat16, 2)
        cls.qwen_w = hf_weights(QWEN2, seed=3)
        cls.qwen = write_checkpoint(os.path.join(cls.dir, "qwen2"), cls.qwen_w, QWEN2,
                                    torch.float32, 1)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def task(self, name, c, init, optimizer, finetune=None, steps=2):
        task = {"name": name, "batch_size": BATCH, "steps": steps,
                "model": model_fields(c, init),
                "data": {"type": "tensors", "path": self.data}, "optimizer": optimizer}
        if finetune:
            task["finetune"] = finetune
        folder = os.path.join(self.dir, name)
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "task.json")
        with open(path, "w") as f:
            json.dump(task, f)
        return path, folder

    def execute(self, task_path, folder, technique, gpus, start=0, end=2):
        out = os.path.join(folder, "result-%s-%d.json" % (technique, start))
        args = ["execute", "--task", task_path, "--technique", technique, "--gpus", str(gpus),
                "--out", out, "--from-step", str(start), "--to-step", str(end),
                "--checkpoint-dir", os.path.join(folder, "checkpoints"), "--timeout-s", "120",
                "--save-model", os.path.join(folder, "model.pt")]
        status, log = run_worker(args)
        self.assertEqual(status, 0, log)
        with open(out) as f:
            return json.load(f)

    def check_every_technique(self, label, c, w, init, optimizer, runs):
        expected = reference_losses(w, c, self.batches, optimizer)
        for technique, gpus in runs:
            with self.subTest(model=label, technique=technique, gpus=gpus):
                name = "%s-%s-%s-%d" % (label, optimizer["type"], technique, gpus)
                path, folder = self.task(name, c, init, optimizer)
                losses = self.execute(path, folder, technique, gpus)["losses"]
                print("%-28s engine %s reference %s" % (name, losses, expected))
                for got, want in zip(losses, expected):
                    self.assertAlmostEqual(got, want, delta=TOLERANCE)

    def test_llama_type_matches_under_every_technique(self):
        # tp 2 splits the two key/value heads; tp-ddp and pipeline-tp hybrids.
        runs = [("single", 1), ("ddp", 2), ("fsdp", 2), ("pipeline", 2), ("spill", 1),
                ("tp", 2), ("tp-ddp", 4), ("pipeline-tp", 4)]
        self.check_every_technique("llama", LLAMA, self.llama_w, self.llama,
                                   {"type": "sgd", "lr": 0.3}, runs)
        self.check_every_technique("llama", LLAMA, self.llama_w, self.llama,
                                   {"type": "adamw", "lr": 0.003}, [("single", 1), ("fsdp", 2)])

    def test_qwen2_type_matches_under_every_technique(self):
        # tp 2 and 4 replicate the one key/value head.
        runs = [("single", 1), ("ddp", 2), ("fsdp", 2), ("pipeline", 2), ("spill", 1),
                ("tp", 2), ("tp", 4)]
        self.check_every_technique("qwen2", QWEN2, self.qwen_w, self.qwen,
                                   {"type": "sgd", "lr": 0.3}, runs)

    def test_llama_attention_bias_covers_all_four_projections(self):
        c = dict(LLAMA, attention_bias=True)
        w = hf_weights(c, seed=5)
        init = write_checkpoint(os.path.join(self.dir, "llama-bias"), w, c, torch.float32, 1)
        self.check_every_technique("llama-bias", c, w, init, {"type": "sgd", "lr": 0.3},
                                   [("single", 1), ("tp", 2)])

    def test_lora_by_peft_names_adapts_only_those_maps(self):
        optimizer = {"type": "adamw", "lr": 0.01}
        lora = {"lora": {"rank": 2, "alpha": 4, "targets": ["q_proj", "v_proj", "down_proj"]}}
        for technique, gpus in (("single", 1), ("fsdp", 2)):
            with self.subTest(technique=technique):
                path, folder = self.task("lora-" + technique, LLAMA, self.llama, optimizer, lora)
                first = self.execute(path, folder, technique, gpus, 0, 1)
                # Before any step B is zero: the loss is the base model's.
                self.assertAlmostEqual(
                    first["losses"][0],
                    reference_loss(self.llama_w, LLAMA, *self.batches[0]).item(),
                    delta=TOLERANCE)
                ckpt = os.path.join(folder, "checkpoints", "checkpoint-1")
                trained = {}
                for block in range(LLAMA["num_hidden_layers"] + 2):
                    blob = torch.load(os.path.join(ckpt, "block-%05d.pt" % block))
                    trained.update({"%d/%s" % (block, k[6:]): v for k, v in blob.items()
                                    if k.startswith("param/")})
                maps = sorted({k.rsplit(".", 1)[0].split("/", 1)[1] for k in trained})
                self.assertEqual(maps, ["mlp.down_proj", "self_attn.q_proj", "self_attn.v_proj"])
                self.assertEqual(len(trained), LLAMA["num_hidden_layers"] * 3 * 2)
                # The adapters after one step give the reference's loss on
                # the next batch (A and B as peft lays them out: [r, in],
                # [out, r]), as the engine reports resuming from them.
                second = self.execute(path, folder, technique, gpus, 1, 2)
                adapters = {}
                for key, value in trained.items():
                    block, name = key.split("/", 1)
                    mapname, leaf = name.rsplit(".", 1)
                    full = "model.layers.%d.%s" % (int(block) - 1, mapname)
                    pair = adapters.setdefault(full, [None, None])
                    pair[0 if leaf == "lora_A" else 1] = value
                with torch.no_grad():
                    want = reference_loss(self.llama_w, LLAMA, *self.batches[1],
                                          adapters=adapters, scale=4 / 2).item()
                self.assertAlmostEqual(second["losses"][0], want, delta=TOLERANCE)
                self.check_exports(folder)

    def check_exports(self, folder):
        """The trained task out in peft's layout (adapters over the base give
        model.pt's merged weights by peft's formula) and in Hugging Face's
        (which the engine takes as init, at the loss of model.pt's weights)."""
        peft = os.path.join(folder, "peft")
        saturn_models.save_peft(folder, peft)
        with open(os.path.join(peft, "adapter_config.json")) as f:
            config = json.load(f)
        self.assertEqual((config["r"], config["lora_alpha"]), (2, 4))
        self.assertEqual(sorted(config["target_modules"]), ["down_proj", "q_proj", "v_proj"])
        adapters = saturn_models.read_safetensors(os.path.join(peft, "adapter_model.safetensors"))
        merged = torch.load(os.path.join(folder, "model.pt"))
        self.assertEqual(len(adapters), LLAMA["num_hidden_layers"] * 3 * 2)
        for key, a in adapters.items():
            if not key.endswith(".lora_A.weight"):
                continue
            module = key[len("base_model.model."):-len(".lora_A.weight")]
            b = adapters["base_model.model." + module + ".lora_B.weight"]
            want = self.llama_w[module + ".weight"] + (4 / 2) * b @ a
            self.assertTrue(torch.allclose(merged[module + ".weight"], want, atol=1e-6), module)
        hf = os.path.join(folder, "hf")
        saturn_models.export_hf(folder, hf)
        path, again = self.task(os.path.basename(folder) + "-again", LLAMA, hf,
                                {"type": "sgd", "lr": 0.1})
        with torch.no_grad():
            want = reference_loss(merged, LLAMA, *self.batches[0]).item()
        self.assertAlmostEqual(self.execute(path, again, "single", 1, 0, 1)["losses"][0], want,
                               delta=TOLERANCE)

    def test_unfit_checkpoints_are_refused_naming_the_tensor(self):
        w = dict(self.qwen_w)
        del w["model.layers.1.self_attn.k_proj.bias"]
        folder = write_checkpoint(os.path.join(self.dir, "bad"), w, QWEN2, torch.float32, 1)
        path, out = self.task("bad", QWEN2, folder, {"type": "sgd", "lr": 0.1})
        status, log = run_worker(
            ["execute", "--task", path, "--technique", "single", "--gpus", "1", "--out",
             os.path.join(out, "r.json"), "--from-step", "0", "--to-step", "1",
             "--checkpoint-dir", os.path.join(out, "c")])
        self.assertEqual(status, 2, log)
        self.assertIn("model.layers.1.self_attn.k_proj.bias", log)


if __name__ == "__main__":
    unittest.main(verbosity=2)
