"""Unit tests of python/saturn_models.py's Llama, its Hugging Face files and
the peft export (ctest python_saturn_models; needs torch, exit 77 without).

    /usr/bin/python3 tests/python/test_saturn_models.py

- saturn_models.Llama against a forward pass written here from the
  architecture's definition (float64, loops over heads and positions, RoPE
  as rotations of the pairs (i, i + d/2), llama3's frequency rule per
  frequency), on random weights: GQA, llama3 and linear scaling, q/k/v
  biases, tied and untied heads.
- save_hf / load_hf: keys, shapes and config.json fields against the names
  transformers uses. Sources checked (no transformers here): LlamaConfig's,
  MistralConfig's and Qwen2Config's attributes (huggingface/transformers
  configuration_*.py) and the config.json files of Llama 3.1 8B and
  Ministral 8B as published (quoted in a transformers benchmark's
  registry); modeling_llama.py for the key names and o_proj's bias.
- save_peft: key names, shapes and adapter_config.json against peft's
  checkpoint format (huggingface/peft docs/source/developer_guides/
  checkpoint.md: "base_model.model." + module path + ".lora_A.weight";
  LoraConfig's fields in src/peft/tuners/lora/config.py; target_modules
  matched as peft matches them, a name equal to the module's path or its
  end after a dot), and the exported adapters applied by peft's merge
  (W + alpha/r * B A, transposed for fan_in_fan_out) to the base weights
  equal the task's model.pt, for fake llama and gpt2 task folders.
"""
import contextlib
import io
import json
import math
import os
import subprocess
import sys
import tempfile
import unittest

try:
    import torch
except ImportError:
    torch = None

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PYDIR = os.path.join(ROOT, "python")
sys.path.insert(0, PYDIR)
if torch is not None:
    import saturn_models  # noqa: E402


# ---------------------------------------------------------------- reference
def ref_inverse_frequencies(head_dim, theta, scaling):
    """RoPE's frequencies, one at a time, from the definitions: theta^(-2i/d);
    linear: / factor; llama3 (Llama 3.1's rule): a frequency whose wavelength
    2 pi / f exceeds original / low_freq_factor is divided by factor, one
    whose wavelength is below original / high_freq_factor is kept, and in
    between mixed as (1 - s) f / factor + s f with
    s = (original / wavelength - low) / (high - low)."""
    out = []
    for i in range(head_dim // 2):
        f = theta ** (-2.0 * i / head_dim)
        if scaling and scaling["type"] == "linear":
            f = f / scaling["factor"]
        elif scaling and scaling["type"] == "llama3":
            orig = scaling["original_max_position_embeddings"]
            low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
            wavelength = 2 * math.pi / f
            if wavelength > orig / low:
                f = f / scaling["factor"]
            elif wavelength >= orig / high:
                s = (orig / wavelength - low) / (high - low)
                f = (1 - s) * f / scaling["factor"] + s * f
        out.append(f)
    return out


def ref_forward(w, cfg, tokens):
    """Logits [B, T, V] of a Llama-architecture decoder, float64, with
    Hugging Face's weight names in `w`."""
    w = {k: v.double() for k, v in w.items()}
    L, H, KV = cfg["layers"], cfg["heads"], cfg["kv_heads"]
    hd, eps = cfg["head_dim"], cfg["norm_eps"]
    freqs = ref_inverse_frequencies(hd, cfg["rope_theta"], cfg.get("rope_scaling"))
    batch, T = tokens.shape

    def rms(x, weight):
        return weight * x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps)

    def rotate(v, pos):
        # Pairs (i, i + hd/2) rotated by the angle pos * freqs[i].
        out = v.clone()
        for i, f in enumerate(freqs):
            c, s = math.cos(pos * f), math.sin(pos * f)
            a, b = v[..., i], v[..., i + hd // 2]
            out[..., i] = a * c - b * s
            out[..., i + hd // 2] = b * c + a * s
        return out

    x = w["model.embed_tokens.weight"][tokens]
    for n in range(L):
        p = "model.layers.%d." % n
        h = rms(x, w[p + "input_layernorm.weight"])

        def proj(name):
            y = h @ w[p + "self_attn.%s.weight" % name].t()
            if p + "self_attn.%s.bias" % name in w:
                y = y + w[p + "self_attn.%s.bias" % name]
            return y
        q, k, v = proj("q_proj"), proj("k_proj"), proj("v_proj")
        mixed = torch.zeros(batch, T, H * hd, dtype=torch.float64)
        for b in range(batch):
            for head in range(H):
                kv = head // (H // KV)  # the kv head this query head shares
                qs = torch.stack([rotate(q[b, t, head * hd:(head + 1) * hd], t)
                                  for t in range(T)])
                ks = torch.stack([rotate(k[b, t, kv * hd:(kv + 1) * hd], t) for t in range(T)])
                vs = v[b, :, kv * hd:(kv + 1) * hd]
                for t in range(T):
                    scores = (ks[:t + 1] @ qs[t]) / math.sqrt(hd)
                    mixed[b, t, head * hd:(head + 1) * hd] = scores.softmax(0) @ vs[:t + 1]
        x = x + mixed @ w[p + "self_attn.o_proj.weight"].t()
        h = rms(x, w[p + "post_attention_layernorm.weight"])
        gate = h @ w[p + "mlp.gate_proj.weight"].t()
        up = h @ w[p + "mlp.up_proj.weight"].t()
        x = x + (gate * torch.sigmoid(gate) * up) @ w[p + "mlp.down_proj.weight"].t()
    x = rms(x, w["model.norm.weight"])
    head = w["model.embed_tokens.weight"] if cfg["tie_embeddings"] else w["lm_head.weight"]
    return x @ head.t()


def random_weights(shapes, seed):
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in shapes.items():
        if name.endswith("norm.weight"):
            out[name] = 1 + 0.2 * torch.randn(*shape, generator=g)
        else:
            out[name] = 0.3 * torch.randn(*shape, generator=g)
    return out


LLAMA3 = {"type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
          "original_max_position_embeddings": 64}
SMALL = dict(type="llama", layers=2, d_model=32, heads=4, kv_heads=2, head_dim=16, ffn=48,
             vocab=40, positions=128, rope_theta=500000.0, norm_eps=1e-5)


def small(**kw):
    m = dict(SMALL)
    m.update(kw)
    return m


@unittest.skipIf(torch is None, "needs torch")
class LlamaForward(unittest.TestCase):
    def check(self, model, seed=0):
        cfg = saturn_models.llama_config(model)
        weights = random_weights(saturn_models.llama_shapes(model), seed)
        llama = saturn_models.build(model)
        llama.load_state_dict(weights)  # strict: Hugging Face's names, every key
        tokens = torch.randint(0, cfg["vocab"], (2, 9), generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            ours = llama(tokens).double()
        ref = ref_forward(weights, cfg, tokens)
        self.assertEqual(list(ours.shape), [2, 9, cfg["vocab"]])
        self.assertLess((ours - ref).abs().max().item(), 2e-4 * max(1.0, ref.abs().max().item()))
        return ours

    def test_gqa_llama3_untied(self):
        self.check(small(rope_scaling=LLAMA3))

    def test_llama3_frequencies_cover_all_three_bands(self):
        ours = saturn_models.rope_frequencies(16, 500000.0, LLAMA3).double()
        ref = torch.tensor(ref_inverse_frequencies(16, 500000.0, LLAMA3), dtype=torch.float64)
        self.assertLess(((ours - ref) / ref).abs().max().item(), 1e-6)
        plain = torch.tensor(ref_inverse_frequencies(16, 500000.0, None), dtype=torch.float64)
        ratio = (plain / ref).tolist()
        self.assertAlmostEqual(ratio[0], 1.0)  # kept
        self.assertTrue(any(1.01 < r < 7.99 for r in ratio))  # between: smoothed
        self.assertAlmostEqual(ratio[-1], 8.0, places=5)  # divided

    def test_linear_scaling_tied_biases_qwen2(self):
        out = self.check(small(flavor="qwen2", rope_scaling={"type": "linear", "factor": 4.0},
                               tie_embeddings=True))
        plain = self.check(small(flavor="qwen2", tie_embeddings=True))
        self.assertGreater((out - plain).abs().max().item(), 1e-3)  # scaling matters here

    def test_mha_no_gqa_head_dim_not_d_model_over_heads(self):
        self.check(small(kv_heads=4, head_dim=8, flavor="mistral"))

    def test_biases_on_llama_and_state_keys(self):
        model = small(attention_bias=True)
        keys = list(saturn_models.build(model).state_dict())
        self.assertIn("model.layers.1.self_attn.k_proj.bias", keys)
        self.assertNotIn("model.layers.1.self_attn.o_proj.bias", keys)
        self.assertIn("lm_head.weight", keys)
        self.check(model)
        tied = saturn_models.build(small(tie_embeddings=True)).state_dict()
        self.assertNotIn("lm_head.weight", tied)
        self.assertEqual(keys[:3], ["model.embed_tokens.weight",
                                    "model.layers.0.input_layernorm.weight",
                                    "model.layers.0.self_attn.q_proj.weight"])

    def test_rmsnorm_in_float32_under_bf16(self):
        model = saturn_models.build(small())
        model.load_state_dict(random_weights(saturn_models.llama_shapes(small()), 3))
        tokens = torch.randint(0, 40, (1, 6))
        with torch.no_grad():
            full = model(tokens)
            half = model.to(torch.bfloat16)(tokens)
        self.assertEqual(half.dtype, torch.bfloat16)
        self.assertLess((half.float() - full).abs().max().item(), 0.1 * full.abs().max().item())

    def test_presets_match_the_contract_and_load_a_task(self):
        c = saturn_models.llama_config({"type": "llama", "preset": "llama-3.2-1b"})
        self.assertEqual((c["layers"], c["d_model"], c["heads"], c["kv_heads"], c["head_dim"],
                          c["ffn"], c["vocab"], c["positions"], c["rope_theta"], c["norm_eps"],
                          c["tie_embeddings"], c["flavor"], c["attention_bias"]),
                         (16, 2048, 32, 8, 64, 8192, 128256, 131072, 500000.0, 1e-5, True,
                          "llama", False))
        self.assertEqual(c["rope_scaling"], {"type": "llama3", "factor": 32.0,
                                             "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                             "original_max_position_embeddings": 8192})
        q = saturn_models.llama_config({"type": "llama", "preset": "qwen2.5-0.5b"})
        self.assertEqual((q["flavor"], q["attention_bias"], q["tie_embeddings"], q["norm_eps"]),
                         ("qwen2", True, True, 1e-6))
        # Published parameter counts (SmolLM 135M, Llama 3.2 1B 1.24B, Qwen2.5 7.62B, ...).
        counts = {name: sum(torch.Size(s).numel() for s in
                            saturn_models.llama_shapes({"preset": name}).values())
                  for name in saturn_models.LLAMA_PRESETS}
        for name, billions in [("smollm-135m", 0.135), ("tinyllama-1.1b", 1.100),
                               ("llama-3.2-1b", 1.236), ("llama-3.2-3b", 3.213),
                               ("llama-3.1-8b", 8.030), ("qwen2.5-0.5b", 0.494),
                               ("qwen2.5-7b", 7.616), ("mistral-7b", 7.242)]:
            self.assertAlmostEqual(counts[name] / 1e9, billions, places=3, msg=name)
        with self.assertRaisesRegex(ValueError, "unknown llama preset 'llama-9'"):
            saturn_models.llama_config({"preset": "llama-9"})
        with self.assertRaisesRegex(ValueError, "ffn, vocab, positions missing"):
            saturn_models.llama_config({"layers": 1, "d_model": 8, "heads": 2})
        with tempfile.TemporaryDirectory() as d:
            model = small(preset=None, seq_len=16, init="/nonexistent")
            del model["preset"]
            weights = random_weights(saturn_models.llama_shapes(model), 4)
            write_task(d, model, weights)
            loaded = saturn_models.load(d)
            self.assertIsInstance(loaded, saturn_models.Llama)
            self.assertTrue(torch.equal(loaded.state_dict()["model.norm.weight"],
                                        weights["model.norm.weight"]))


def read_json(path):
    with open(path) as f:
        return json.load(f)


def write_task(folder, model, weights, lora=None, adapters=None):
    task = {"name": os.path.basename(folder), "model": model,
            "data": {"type": "synthetic"}, "batch_size": 2, "steps": 1}
    if lora:
        task["finetune"] = {"lora": lora}
    with open(os.path.join(folder, "task.json"), "w") as f:
        json.dump(task, f)
    torch.save(weights, os.path.join(folder, "model.pt"))
    if adapters is not None:
        torch.save(adapters, os.path.join(folder, "adapters.pt"))


# config.json keys transformers writes (LlamaConfig / MistralConfig /
# Qwen2Config attributes, as in the published config.json files), that
# save_hf must write.
COMMON_KEYS = {"architectures", "model_type", "vocab_size", "hidden_size", "intermediate_size",
               "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
               "hidden_act", "max_position_embeddings", "initializer_range", "rms_norm_eps",
               "use_cache", "tie_word_embeddings", "rope_theta", "rope_scaling",
               "attention_dropout", "torch_dtype", "head_dim"}
FLAVOR_KEYS = {"llama": {"attention_bias", "mlp_bias", "pretraining_tp"},
               "mistral": {"sliding_window"},
               "qwen2": {"use_sliding_window", "sliding_window", "max_window_layers"}}


@unittest.skipIf(torch is None, "needs torch")
class HuggingFaceFiles(unittest.TestCase):
    def roundtrip(self, model, **save):
        llama = saturn_models.build(model)
        llama.load_state_dict(random_weights(saturn_models.llama_shapes(model), 5))
        with tempfile.TemporaryDirectory() as d:
            saturn_models.save_hf(llama, d, **save)
            with open(os.path.join(d, "config.json")) as f:
                config = json.load(f)
            files = sorted(os.listdir(d))
            weights = saturn_models._read_weights(saturn_models._weights_file(d))
            back = saturn_models.load_hf(d)
        self.assertEqual(back.config["flavor"], llama.config["flavor"])
        dtype = save.get("dtype") or torch.float32
        for key, value in llama.state_dict().items():
            self.assertTrue(torch.equal(back.state_dict()[key], value.to(dtype).float()), key)
        return config, files, weights, back

    def test_llama3_tied_config_and_keys(self):
        model = small(rope_scaling=LLAMA3, tie_embeddings=True)
        config, files, weights, _ = self.roundtrip(model)
        self.assertEqual(files, ["config.json", "model.safetensors"])
        self.assertEqual(set(config), COMMON_KEYS | FLAVOR_KEYS["llama"])
        self.assertEqual(config["architectures"], ["LlamaForCausalLM"])
        self.assertEqual(config["model_type"], "llama")
        self.assertEqual((config["hidden_size"], config["intermediate_size"],
                          config["num_hidden_layers"], config["num_attention_heads"],
                          config["num_key_value_heads"], config["head_dim"],
                          config["vocab_size"], config["max_position_embeddings"]),
                         (32, 48, 2, 4, 2, 16, 40, 128))
        self.assertEqual(config["rope_scaling"], {"rope_type": "llama3", "factor": 8.0,
                                                  "low_freq_factor": 1.0,
                                                  "high_freq_factor": 4.0,
                                                  "original_max_position_embeddings": 64})
        self.assertEqual((config["rope_theta"], config["rms_norm_eps"], config["hidden_act"],
                          config["tie_word_embeddings"], config["attention_bias"],
                          config["mlp_bias"], config["torch_dtype"]),
                         (500000.0, 1e-5, "silu", True, False, False, "float32"))
        self.assertNotIn("lm_head.weight", weights)  # tied: left out, as Hugging Face does
        self.assertEqual(set(weights), set(saturn_models.llama_shapes(model)))
        for name, shape in saturn_models.llama_shapes(model).items():
            self.assertEqual(list(weights[name].shape), shape, name)

    def test_qwen2_untied_bf16_sharded(self):
        model = small(flavor="qwen2")
        config, files, weights, back = self.roundtrip(model, dtype=torch.bfloat16)
        self.assertEqual(set(config), COMMON_KEYS | FLAVOR_KEYS["qwen2"])
        self.assertEqual((config["architectures"], config["model_type"], config["torch_dtype"],
                          config["use_sliding_window"]),
                         (["Qwen2ForCausalLM"], "qwen2", "bfloat16", False))
        self.assertTrue(all(t.dtype == torch.bfloat16 for t in weights.values()))
        self.assertIn("model.layers.0.self_attn.q_proj.bias", weights)
        self.assertIn("lm_head.weight", weights)
        # Sharded as save_pretrained shards (model-0000K-of-0000N + index).
        with tempfile.TemporaryDirectory() as d:
            saturn_models.save_llama_hf(back.state_dict(), back.config, d, shard_bytes=20000)
            index = read_json(os.path.join(d, "model.safetensors.index.json"))
            shards = sorted(f for f in os.listdir(d) if f.startswith("model-"))
            self.assertGreater(len(shards), 1)
            self.assertEqual(shards[0], "model-00001-of-%05d.safetensors" % len(shards))
            self.assertEqual(set(index["weight_map"].values()), set(shards))
            self.assertEqual(set(index["weight_map"]), set(back.state_dict()))
            self.assertEqual(index["metadata"]["total_size"],
                             sum(t.numel() * 4 for t in back.state_dict().values()))
            again = saturn_models.load_hf(d)
            for key, value in back.state_dict().items():
                self.assertTrue(torch.equal(again.state_dict()[key], value), key)

    def test_mistral_and_zero_biases_the_flavor_needs(self):
        config, _, _, _ = self.roundtrip(small(flavor="mistral", sliding_window=4096))
        self.assertEqual(set(config), COMMON_KEYS | FLAVOR_KEYS["mistral"])
        self.assertEqual((config["architectures"], config["sliding_window"]),
                         (["MistralForCausalLM"], 4096))
        # Llama with attention_bias: LlamaAttention's o_proj has a bias too (zero here).
        _, _, weights, _ = self.roundtrip(small(attention_bias=True))
        self.assertFalse(weights["model.layers.0.self_attn.o_proj.bias"].any())
        # Qwen2 always has q/k/v biases: zeros when the model has none.
        _, _, weights, back = self.roundtrip(small(flavor="qwen2", attention_bias=False))
        self.assertFalse(weights["model.layers.1.self_attn.v_proj.bias"].any())
        with self.assertRaisesRegex(ValueError, "MistralForCausalLM has no attention biases"):
            saturn_models.llama_hf_config(small(flavor="mistral", attention_bias=True))

    def test_reads_published_configs(self):
        # Llama 3.1 8B's config.json as published, and transformers 5's rope_parameters.
        llama31 = {"architectures": ["LlamaForCausalLM"], "attention_bias": False,
                   "attention_dropout": 0.0, "bos_token_id": 128000, "eos_token_id": 128001,
                   "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
                   "intermediate_size": 14336, "max_position_embeddings": 131072,
                   "mlp_bias": False, "model_type": "llama", "num_attention_heads": 32,
                   "num_hidden_layers": 32, "num_key_value_heads": 8, "pretraining_tp": 1,
                   "rms_norm_eps": 1e-05,
                   "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0,
                                    "high_freq_factor": 4.0,
                                    "original_max_position_embeddings": 8192,
                                    "rope_type": "llama3"},
                   "rope_theta": 500000.0, "tie_word_embeddings": False,
                   "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": 128256}
        model = saturn_models.llama_model_of_hf(llama31)
        preset = saturn_models.llama_config({"preset": "llama-3.1-8b"})
        del preset["preset"]
        self.assertEqual(saturn_models.llama_config(model), preset)
        written = saturn_models.llama_hf_config({"preset": "llama-3.1-8b"}, torch.bfloat16,
                                                {"bos_token_id": 128000, "eos_token_id": 128001})
        self.assertEqual({k: v for k, v in written.items() if k != "head_dim"}, llama31)
        v5 = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4,
              "num_hidden_layers": 1, "intermediate_size": 96, "vocab_size": 10,
              "max_position_embeddings": 32,
              "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 1234.0}}
        c = saturn_models.llama_config(saturn_models.llama_model_of_hf(v5))
        self.assertEqual((c["rope_theta"], c["rope_scaling"], c["kv_heads"], c["head_dim"]),
                         (1234.0, {"type": "linear", "factor": 2.0}, 4, 16))
        with self.assertRaisesRegex(ValueError, "mlp_bias true is not supported"):
            saturn_models.llama_model_of_hf(dict(v5, mlp_bias=True))

    def test_nonzero_bias_the_model_lacks_is_refused(self):
        model = small(attention_bias=True)
        llama = saturn_models.build(model)
        with tempfile.TemporaryDirectory() as d:
            saturn_models.save_hf(llama, d)
            state = saturn_models.read_safetensors(os.path.join(d, "model.safetensors"))
            state["model.layers.0.self_attn.o_proj.bias"] += 1
            state["model.layers.0.self_attn.rotary_emb.inv_freq"] = torch.ones(8)  # ignored
            saturn_models.write_safetensors(state, os.path.join(d, "model.safetensors"))
            with self.assertRaisesRegex(ValueError, "o_proj.bias is not zero"):
                saturn_models.load_hf(d)

    def test_gpt2_still_round_trips(self):
        gpt2 = saturn_models.GPT2(layers=2, d_model=16, heads=2, vocab=30, positions=8)
        with tempfile.TemporaryDirectory() as d:
            saturn_models.save_hf(gpt2, d)
            back = saturn_models.load_hf(d)
        for key, value in gpt2.state_dict().items():
            self.assertTrue(torch.equal(back.state_dict()[key], value), key)


# ---------------------------------------------------------------- peft
def peft_targets(modules, target_modules):
    """The modules peft adapts for a list target_modules: a name equal to
    the module's path, or the path's end after a dot."""
    return {m for m in modules
            if any(m == t or m.endswith("." + t) for t in target_modules)}


GPT2_LINEAR = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")
OURS_OF_GPT2 = {"attn.c_attn": "attn.qkv", "attn.c_proj": "attn.proj", "mlp.c_fc": "mlp.fc1",
                "mlp.c_proj": "mlp.fc2"}


@unittest.skipIf(torch is None, "needs torch")
class PeftExport(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.g = torch.Generator().manual_seed(7)

    def folder(self, name):
        path = os.path.join(self.tmp.name, name)
        os.makedirs(path)
        return path

    def llama_task(self, targets, rank=4, alpha=8):
        """A finished llama LoRA task: base weights, adapters ([r, in],
        [out, r]) on `targets`, model.pt = base + alpha/r B A."""
        model = small(init=self.folder("base"))
        base = random_weights(saturn_models.llama_shapes(model), 11)
        merged, adapters = dict(base), {}
        for key, w in base.items():
            module = key[:-len(".weight")]
            if not key.endswith(".weight") or module.split(".")[-1] not in targets:
                continue
            out_, in_ = w.shape
            a = torch.randn(rank, in_, generator=self.g)
            b = torch.randn(out_, rank, generator=self.g)
            adapters[module + ".lora_A"], adapters[module + ".lora_B"] = a, b
            merged[key] = w + (alpha / rank) * (b @ a)
        task = self.folder("llama-lora")
        write_task(task, model, merged, {"rank": rank, "alpha": alpha, "targets": targets},
                   adapters)
        return task, base, merged

    def gpt2_task(self, targets, rank=3, alpha=6):
        """A finished gpt2 LoRA task in Saturn's names and Conv1D layout:
        adapters A [in, r], B [r, out], model.pt = base + alpha/r A B."""
        gpt2 = saturn_models.GPT2(layers=2, d_model=16, heads=2, vocab=30, positions=8)
        base = {k: v.detach().clone() for k, v in gpt2.state_dict().items()}
        merged, adapters = dict(base), {}
        ours = [m for t in targets for m in {"attn": ("attn.qkv", "attn.proj"),
                                             "mlp": ("mlp.fc1", "mlp.fc2")}[t]]
        for layer in range(2):
            for mod in ours:
                key = "layers.%d.%s" % (layer, mod)
                w = base[key + ".weight"]  # [in, out]
                a = torch.randn(w.shape[0], rank, generator=self.g)
                b = torch.randn(rank, w.shape[1], generator=self.g)
                adapters[key + ".lora_A"], adapters[key + ".lora_B"] = a, b
                merged[key + ".weight"] = w + (alpha / rank) * (a @ b)
        base_dir = self.folder("gpt2-base")
        task = self.folder("gpt2-lora")
        model = {"type": "gpt2", "layers": 2, "d_model": 16, "heads": 2, "vocab": 30,
                 "positions": 8, "seq_len": 8,
                 "init": os.path.join(base_dir, "model.safetensors")}
        write_task(task, model, merged, {"rank": rank, "alpha": alpha, "targets": targets},
                   adapters)
        return task, base, merged

    def export(self, task):
        out = os.path.join(self.tmp.name, "out-" + os.path.basename(task))
        saturn_models.save_peft(task, out)
        config = read_json(os.path.join(out, "adapter_config.json"))
        tensors = saturn_models.read_safetensors(os.path.join(out, "adapter_model.safetensors"))
        return config, tensors

    def check_config(self, config, r, alpha, fan_in_fan_out, base):
        self.assertEqual((config["peft_type"], config["task_type"], config["r"],
                          config["lora_alpha"], config["lora_dropout"], config["bias"],
                          config["inference_mode"], config["fan_in_fan_out"],
                          config["base_model_name_or_path"], config["modules_to_save"]),
                         ("LORA", "CAUSAL_LM", r, alpha, 0.0, "none", True, fan_in_fan_out,
                          base, None))
        # Only LoraConfig fields (peft's src/peft/tuners/lora/config.py), and
        # none that older peft versions lack (they refuse unknown fields).
        self.assertEqual(set(config), {
            "base_model_name_or_path", "bias", "fan_in_fan_out", "inference_mode",
            "init_lora_weights", "layers_pattern", "layers_to_transform", "lora_alpha",
            "lora_dropout", "modules_to_save", "peft_type", "r", "revision", "target_modules",
            "task_type"})

    def test_llama_keys_config_and_merge(self):
        task, base, merged = self.llama_task(["q_proj", "v_proj", "down_proj"])
        config, tensors = self.export(task)
        self.check_config(config, 4, 8, False, os.path.join(self.tmp.name, "base"))
        self.assertEqual(config["target_modules"], ["down_proj", "q_proj", "v_proj"])
        self.assertIn("base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight", tensors)
        self.assertEqual(list(tensors["base_model.model.model.layers.1.mlp.down_proj.lora_A"
                                      ".weight"].shape), [4, 48])  # [r, in]
        self.assertEqual(list(tensors["base_model.model.model.layers.1.mlp.down_proj.lora_B"
                                      ".weight"].shape), [32, 4])  # [out, r]
        self.assertEqual(len(tensors), 2 * 2 * 3)
        modules = {k[:-len(".weight")] for k in base if k.endswith("_proj.weight")}
        adapted = {k[len("base_model.model."):].rsplit(".", 2)[0] for k in tensors}
        self.assertEqual(peft_targets(modules, config["target_modules"]), adapted)
        self.apply_and_compare(config, tensors, base, merged)

    def test_gpt2_attn_only_names_attn_c_proj(self):
        task, base, merged = self.gpt2_task(["attn"])
        config, tensors = self.export(task)
        self.check_config(config, 3, 6, True, os.path.join(self.tmp.name, "gpt2-base"))
        # "c_proj" alone would also adapt mlp.c_proj: the attention's is named in full.
        self.assertEqual(config["target_modules"], ["attn.c_proj", "c_attn"])
        self.assertIn("base_model.model.transformer.h.0.attn.c_attn.lora_A.weight", tensors)
        self.assertEqual(list(tensors["base_model.model.transformer.h.0.attn.c_attn.lora_A"
                                      ".weight"].shape), [3, 16])
        self.assertEqual(list(tensors["base_model.model.transformer.h.0.attn.c_attn.lora_B"
                                      ".weight"].shape), [48, 3])
        modules = {"transformer.h.%d.%s" % (n, m) for n in range(2) for m in GPT2_LINEAR}
        adapted = {k[len("base_model.model."):].rsplit(".", 2)[0] for k in tensors}
        self.assertEqual(peft_targets(modules, config["target_modules"]), adapted)
        self.apply_and_compare(config, tensors, self.hf_gpt2(base), self.hf_gpt2(merged))

    def test_gpt2_attn_and_mlp(self):
        task, base, merged = self.gpt2_task(["attn", "mlp"])
        config, tensors = self.export(task)
        self.assertEqual(config["target_modules"], ["c_attn", "c_fc", "c_proj"])
        modules = {"transformer.h.%d.%s" % (n, m) for n in range(2) for m in GPT2_LINEAR}
        adapted = {k[len("base_model.model."):].rsplit(".", 2)[0] for k in tensors}
        self.assertEqual(adapted, modules)
        self.assertEqual(peft_targets(modules, config["target_modules"]), adapted)
        self.apply_and_compare(config, tensors, self.hf_gpt2(base), self.hf_gpt2(merged))
        # --format hf: GPT2LMHeadModel's files, the base's token ids and tokenizer along.
        base_dir = os.path.join(self.tmp.name, "gpt2-base")
        with open(os.path.join(base_dir, "config.json"), "w") as f:
            json.dump({"n_head": 2, "bos_token_id": 29, "eos_token_id": 29}, f)
        with open(os.path.join(base_dir, "merges.txt"), "w") as f:
            f.write("#version: 0.2\n")
        out = os.path.join(self.tmp.name, "gpt2-hf")
        self.assertEqual(saturn_models.export_hf(task, out), ["merges.txt"])
        hf = read_json(os.path.join(out, "config.json"))
        self.assertEqual((hf["architectures"], hf["eos_token_id"], hf["n_head"]),
                         (["GPT2LMHeadModel"], 29, 2))
        back = saturn_models.load_hf(out).state_dict()
        for key, value in merged.items():
            self.assertTrue(torch.equal(back[key], value), key)

    def test_gpt2_mlp_only(self):
        task, _, _ = self.gpt2_task(["mlp"])
        config, _ = self.export(task)
        self.assertEqual(config["target_modules"], ["c_fc", "mlp.c_proj"])

    @staticmethod
    def hf_gpt2(state):
        """Saturn's GPT2 weights under Hugging Face's names (the linear maps)."""
        return {"transformer.h.%s.%s.weight" % (k.split(".")[1], hf): v
                for k, v in state.items() for hf, ours in OURS_OF_GPT2.items()
                if k.startswith("layers.") and k.split(".", 2)[2] == ours + ".weight"}

    def apply_and_compare(self, config, tensors, base, merged):
        """peft's merge: W + lora_alpha / r * (B A), transposed when
        fan_in_fan_out (Conv1D's [in, out] weights), for every adapted module."""
        scale = config["lora_alpha"] / config["r"]
        seen = 0
        for key, a in tensors.items():
            if ".lora_A." not in key:
                continue
            module = key[len("base_model.model."):-len(".lora_A.weight")]
            b = tensors[key.replace(".lora_A.", ".lora_B.")]
            delta = b @ a
            if config["fan_in_fan_out"]:
                delta = delta.t()
            got = base[module + ".weight"] + scale * delta
            self.assertLess((got - merged[module + ".weight"]).abs().max().item(), 1e-5, module)
            seen += 1
        self.assertGreater(seen, 0)
        changed = [k for k in base if not torch.equal(base[k], merged[k])]
        self.assertEqual(len(changed), seen)

    def run_cli(self, *args, spawn=False):
        """`python3 -m saturn_models ARGS` (spawn), or its main() here (faster)."""
        if spawn:
            env = dict(os.environ, PYTHONPATH=PYDIR)
            return subprocess.run([sys.executable, "-m", "saturn_models", *args], env=env,
                                  capture_output=True, text=True, timeout=120)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = saturn_models.main(list(args))
        return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())

    def test_cli_exports_and_refuses_clearly(self):
        task, _, merged = self.llama_task(["q_proj"])
        base = os.path.join(self.tmp.name, "base")
        with open(os.path.join(base, "config.json"), "w") as f:
            json.dump({"bos_token_id": 1, "eos_token_id": 2}, f)
        with open(os.path.join(base, "tokenizer.json"), "w") as f:
            f.write("{}")
        out = os.path.join(self.tmp.name, "cli-hf")
        done = self.run_cli("export", task, out, "--format", "hf", spawn=True)
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("tokenizer.json", done.stdout)
        config = read_json(os.path.join(out, "config.json"))
        self.assertEqual((config["bos_token_id"], config["eos_token_id"]), (1, 2))
        self.assertTrue(os.path.exists(os.path.join(out, "tokenizer.json")))
        back = saturn_models.load_hf(out)
        for key, value in merged.items():
            self.assertTrue(torch.equal(back.state_dict()[key], value), key)
        done = self.run_cli("export", task, os.path.join(self.tmp.name, "cli-peft"),
                            "--format", "peft")
        self.assertEqual(done.returncode, 0, done.stderr)
        self.assertIn("target_modules q_proj", done.stdout)
        # A task without LoRA asked for peft: exit 2 naming the task.
        plain = self.folder("full-ft")
        write_task(plain, small(), merged)
        done = self.run_cli("export", plain, os.path.join(self.tmp.name, "x"), "--format", "peft",
                            spawn=True)
        self.assertEqual(done.returncode, 2)
        self.assertIn("task full-ft is not a LoRA task", done.stderr)
        self.assertEqual(len(done.stderr.strip().splitlines()), 1, done.stderr)
        # A gpt task has no Hugging Face architecture.
        gpt = self.folder("gpt")
        write_task(gpt, {"type": "gpt", "layers": 1, "d_model": 8, "heads": 2, "seq_len": 4},
                   {}, {"rank": 2}, {})
        for fmt in ("hf", "peft"):
            done = self.run_cli("export", gpt, os.path.join(self.tmp.name, "y"), "--format", fmt)
            self.assertEqual(done.returncode, 2)
            self.assertIn("task gpt:", done.stderr)
        done = self.run_cli("export", task, base, "--format", "hf")
        self.assertEqual(done.returncode, 2)
        self.assertIn("is its init folder; write the export elsewhere", done.stderr)
        done = self.run_cli("export", self.tmp.name + "/none", "z", "--format", "hf")
        self.assertEqual(done.returncode, 2)
        self.assertIn("no task.json", done.stderr)


if __name__ == "__main__":
    if torch is None:
        print("skipped: needs torch (Debian's python3-torch)")
        sys.exit(77)
    unittest.main()
