"""PyTorch definitions of Saturn's model zoo, to use trained models outside Saturn.

Each class is a plain ``torch.nn.Module`` that computes what Saturn's engine
computes (src/engine/models/), with the parameter names Saturn writes into
``tasks/<task>/model.pt``, so that ``load_state_dict(torch.load(...))`` takes
the trained weights as written:

    import saturn_models
    model = saturn_models.load("runs/my-run/tasks/gpt-lr1.0e-4")   # reads task.json + model.pt
    logits = model(tokens)                                           # [B, T] int64 -> [B, T, 256]

or by hand, with the fields of the workload's ``model:``:

    model = saturn_models.GPT(layers=4, d_model=256, heads=4, seq_len=128)
    model.load_state_dict(torch.load("runs/my-run/tasks/gpt/model.pt"))

GPT-2 (``model: {type: gpt2, ...}``) is Hugging Face's GPT2LMHeadModel under
our parameter names; ``save_hf(model, "out/")`` writes it in Hugging Face's
layout again (``model.safetensors`` and ``config.json``, which
``transformers.GPT2LMHeadModel.from_pretrained("out/")`` loads), and
``load_hf("gpt2/")`` reads a Hugging Face checkpoint into a ``GPT2``. Neither
needs the transformers or safetensors packages.

Llama, Mistral and Qwen2 (``model: {type: llama, flavor, ...}`` or a
``preset``) are ``Llama``, whose parameter names are Hugging Face's own
(``model.layers.0.self_attn.q_proj.weight``, ...; LlamaForCausalLM's,
MistralForCausalLM's, Qwen2ForCausalLM's); ``save_hf`` writes it with the
flavor's config.json and ``load_hf`` reads such a folder (one file or shards,
bf16 too) into a ``Llama``.

From the shell, with no Python to write (docs/finetune.md):

    python3 -m saturn_models export runs/my-run/tasks/T out/T-hf --format hf
    python3 -m saturn_models export runs/my-run/tasks/T out/T-lora --format peft

writes a gpt2 or llama task as a Hugging Face model folder (LoRA merged in),
or a LoRA task's adapters as a peft adapter (adapter_config.json,
adapter_model.safetensors: ``PeftModel.from_pretrained(base, "out/T-lora")``).
Errors (a task that is not LoRA asked for peft, ...) exit 2 naming the task.

``saturn_models.loss(model, inputs, targets)`` is the loss Saturn trains and
evaluates with (mean cross-entropy over every target; mean squared error for
torchscript tasks with ``loss: mse``).

A table's groups (docs/groups.md) end in one file, groups.safetensors, and
its index groups.json: ``load_group("runs/my-run", "store-7")`` is one
group's model, ``load_groups("runs/my-run")`` every group's, and
``group_index("runs/my-run")`` the features in order, the label, the classes
and each group's task and losses.

A torchscript task's trained model is its own module: ``torch.jit.load(
"tasks/<task>/trained.pt")``; its ``model.pt`` holds the same weights under
the module's own parameter names. Models were trained in float32 (bf16 tasks
keep float32 master weights), so they load as float32.
"""

import json
import math
import os
import shutil
import sys

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["GPT", "GPT2", "Llama", "ViT", "ResNet", "MLP", "LLAMA_PRESETS", "build", "load", "loss",
           "save_hf", "load_hf", "save_peft", "export_hf", "llama_config", "group_index",
           "load_group", "load_groups", "GroupError"]

VOCAB = 256  # gpt: byte-level next-token prediction
CLASSES = 10  # vit, resnet, mlp
CHANNELS = 3  # vit, resnet: RGB images


def _gelu_tanh(x):
    return F.gelu(x, approximate="tanh")


class Attention(nn.Module):
    def __init__(self, width, heads, causal):
        super().__init__()
        self.heads, self.causal = heads, causal
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        batch, tokens, width = x.shape
        head = width // self.heads
        # [B, T, 3, H, hd] -> [3, B, H, T, hd]
        q, k, v = self.qkv(x).view(batch, tokens, 3, self.heads, head).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head))
        if self.causal:
            mask = torch.full((tokens, tokens), float("-inf"), device=x.device, dtype=scores.dtype)
            scores = scores + mask.triu(1)
        mixed = scores.softmax(-1) @ v
        return self.proj(mixed.transpose(1, 2).reshape(batch, tokens, width))


class MlpBlock(nn.Module):
    def __init__(self, width, activation=F.gelu):
        super().__init__()
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)
        self.activation = activation

    def forward(self, x):
        return self.fc2(self.activation(self.fc1(x)))


class TransformerLayer(nn.Module):
    """Pre-norm: x + attention(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, width, heads, causal, activation=F.gelu):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads, causal)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = MlpBlock(width, activation)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """Byte-level decoder: model {type: gpt, layers, d_model, heads, seq_len}.

    Input [B, T] int64 byte ids (T <= seq_len); output [B, T, 256] logits of
    the next byte.
    """

    def __init__(self, layers, d_model, heads, seq_len):
        super().__init__()
        self.tokens = nn.Embedding(VOCAB, d_model)
        self.positions = nn.Parameter(torch.zeros(seq_len, d_model))
        self.layers = nn.ModuleList(
            [TransformerLayer(d_model, heads, causal=True) for _ in range(layers)])
        self.ln = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, VOCAB)

    def forward(self, tokens):
        x = self.tokens(tokens) + self.positions[: tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.out(self.ln(x))


GPT2_PRESETS = {"small": (12, 768, 12), "medium": (24, 1024, 16), "large": (36, 1280, 20),
                "xl": (48, 1600, 25)}


class Conv1D(nn.Module):
    """GPT-2's linear map: x W + b with W [in, out] (Hugging Face's Conv1D)."""

    def __init__(self, width_in, width_out):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(width_in, width_out))
        self.bias = nn.Parameter(torch.zeros(width_out))
        nn.init.normal_(self.weight, std=0.02)

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(
            *x.shape[:-1], self.weight.shape[1])


class Gpt2Attention(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.qkv = Conv1D(width, 3 * width)
        self.proj = Conv1D(width, width)

    def forward(self, x):
        batch, tokens, width = x.shape
        head = width // self.heads
        q, k, v = self.qkv(x).view(batch, tokens, 3, self.heads, head).permute(2, 0, 3, 1, 4)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(head))
        mask = torch.full((tokens, tokens), float("-inf"), device=x.device, dtype=scores.dtype)
        mixed = (scores + mask.triu(1)).softmax(-1) @ v
        return self.proj(mixed.transpose(1, 2).reshape(batch, tokens, width))


class Gpt2Mlp(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = Conv1D(width, 4 * width)
        self.fc2 = Conv1D(4 * width, width)

    def forward(self, x):
        return self.fc2(_gelu_tanh(self.fc1(x)))


class Gpt2Layer(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = Gpt2Attention(width, heads)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = Gpt2Mlp(width)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT2(nn.Module):
    """GPT-2: model {type: gpt2, layers, d_model, heads, vocab, positions, seq_len}.

    Input [B, T] int64 token ids (T <= positions); output [B, T, vocab]
    logits. The head is the token embedding (tied), GELU is the tanh
    approximation, LayerNorm's epsilon 1e-5, and the linear maps keep
    GPT-2's Conv1D layout ([in, out]), as in GPT-2.
    """

    def __init__(self, layers=12, d_model=768, heads=12, vocab=50257, positions=1024, **_):
        super().__init__()
        self.config = dict(layers=layers, d_model=d_model, heads=heads, vocab=vocab,
                           positions=positions)
        self.tokens = nn.Embedding(vocab, d_model)
        self.positions = nn.Embedding(positions, d_model)
        self.layers = nn.ModuleList([Gpt2Layer(d_model, heads) for _ in range(layers)])
        self.ln = nn.LayerNorm(d_model)

    def forward(self, tokens):
        x = self.tokens(tokens) + self.positions.weight[: tokens.shape[1]]
        for layer in self.layers:
            x = layer(x)
        return self.ln(x) @ self.tokens.weight.t()


# Our names of a GPT2 layer's parameters and Hugging Face's (same layout).
_HF_LAYER = [("ln1", "ln_1"), ("attn.qkv", "attn.c_attn"), ("attn.proj", "attn.c_proj"),
             ("ln2", "ln_2"), ("mlp.fc1", "mlp.c_fc"), ("mlp.fc2", "mlp.c_proj")]


def _hf_state(model):
    """A GPT2's weights under Hugging Face's names (with "transformer.")."""
    ours = model.state_dict()
    out = {"transformer.wte.weight": ours["tokens.weight"],
           "transformer.wpe.weight": ours["positions.weight"],
           "transformer.ln_f.weight": ours["ln.weight"], "transformer.ln_f.bias": ours["ln.bias"]}
    for k in range(len(model.layers)):
        for mine, theirs in _HF_LAYER:
            for leaf in ("weight", "bias"):
                out["transformer.h.%d.%s.%s" % (k, theirs, leaf)] = \
                    ours["layers.%d.%s.%s" % (k, mine, leaf)]
    return out


# Llama-family decoders (model {type: llama}): Hugging Face's LlamaForCausalLM,
# MistralForCausalLM and Qwen2ForCausalLM, whose parameters are named here
# exactly as Hugging Face names them (and as the engine writes model.pt).

def _llama3(factor):
    return {"type": "llama3", "factor": factor, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192}


def _preset(layers, d_model, heads, kv_heads, head_dim, ffn, vocab, positions, rope_theta,
            rope_scaling, norm_eps, tie, flavor, bias=False, sliding_window=None):
    out = dict(layers=layers, d_model=d_model, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
               ffn=ffn, vocab=vocab, positions=positions, rope_theta=rope_theta,
               rope_scaling=rope_scaling, norm_eps=norm_eps, tie_embeddings=tie, flavor=flavor,
               attention_bias=bias)
    if sliding_window is not None:
        out["sliding_window"] = sliding_window
    return out


# The engine's preset table (common/model_presets.h), name -> the model's keys.
LLAMA_PRESETS = {
    "smollm-135m": _preset(30, 576, 9, 3, 64, 1536, 49152, 2048, 10000.0, None, 1e-5, True,
                           "llama"),
    "tinyllama-1.1b": _preset(22, 2048, 32, 4, 64, 5632, 32000, 2048, 10000.0, None, 1e-5, False,
                              "llama"),
    "llama-3.2-1b": _preset(16, 2048, 32, 8, 64, 8192, 128256, 131072, 500000.0, _llama3(32.0),
                            1e-5, True, "llama"),
    "llama-3.2-3b": _preset(28, 3072, 24, 8, 128, 8192, 128256, 131072, 500000.0, _llama3(32.0),
                            1e-5, True, "llama"),
    "llama-3.1-8b": _preset(32, 4096, 32, 8, 128, 14336, 128256, 131072, 500000.0, _llama3(8.0),
                            1e-5, False, "llama"),
    "qwen2.5-0.5b": _preset(24, 896, 14, 2, 64, 4864, 151936, 32768, 1000000.0, None, 1e-6, True,
                            "qwen2", bias=True),
    "qwen2.5-7b": _preset(28, 3584, 28, 4, 128, 18944, 152064, 131072, 1000000.0, None, 1e-6,
                          False, "qwen2", bias=True),
    "mistral-7b": _preset(32, 4096, 32, 8, 128, 14336, 32000, 32768, 10000.0, None, 1e-5, False,
                          "mistral", sliding_window=4096),
}

LLAMA_FLAVORS = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                 "qwen2": "Qwen2ForCausalLM"}
_LLAMA_REQUIRED = ("layers", "d_model", "heads", "ffn", "vocab", "positions")


def _rope_scaling(scaling):
    """A rope_scaling object as task.json writes it ({type: ...}; "rope_type"
    read too), or None."""
    if not scaling:
        return None
    kind = scaling.get("type", scaling.get("rope_type"))
    if kind in (None, "default"):
        return None
    if kind == "linear":
        return {"type": "linear", "factor": float(scaling["factor"])}
    if kind == "llama3":
        return {"type": "llama3", "factor": float(scaling["factor"]),
                "low_freq_factor": float(scaling["low_freq_factor"]),
                "high_freq_factor": float(scaling["high_freq_factor"]),
                "original_max_position_embeddings":
                    int(scaling["original_max_position_embeddings"])}
    raise ValueError("rope_scaling type %r is not supported (llama3 or linear)" % kind)


def llama_config(model):
    """Every key of a llama `model` object, as the workload reader writes it
    into task.json: the preset's values (when `preset` names one) under the
    keys given, then the contract's defaults."""
    preset = model.get("preset")
    if preset is not None and preset not in LLAMA_PRESETS:
        raise ValueError("unknown llama preset %r; expected one of %s"
                         % (preset, ", ".join(sorted(LLAMA_PRESETS))))
    c = dict(LLAMA_PRESETS[preset]) if preset else {}
    c.update({k: v for k, v in model.items() if k not in ("type",)})
    missing = [k for k in _LLAMA_REQUIRED if k not in c]
    if missing:
        raise ValueError("llama model: %s missing (and no preset gives it)" % ", ".join(missing))
    c.setdefault("flavor", "llama")
    if c["flavor"] not in LLAMA_FLAVORS:
        raise ValueError("llama flavor %r; expected llama, mistral or qwen2" % c["flavor"])
    c.setdefault("kv_heads", c["heads"])
    c.setdefault("head_dim", c["d_model"] // c["heads"])
    c.setdefault("rope_theta", 10000.0)
    c["rope_scaling"] = _rope_scaling(c.get("rope_scaling"))
    c.setdefault("norm_eps", 1e-6)
    c.setdefault("tie_embeddings", False)
    c.setdefault("attention_bias", c["flavor"] == "qwen2")
    c.setdefault("seq_len", min(c["positions"], 2048))
    if c["heads"] % c["kv_heads"] or c["head_dim"] % 2:
        raise ValueError("llama model: heads (%d) must be a multiple of kv_heads (%d) and "
                         "head_dim (%d) even" % (c["heads"], c["kv_heads"], c["head_dim"]))
    return c


def rope_frequencies(head_dim, theta=10000.0, scaling=None):
    """RoPE's inverse frequencies [head_dim / 2] (float32): theta^(-2i/d),
    then rope_scaling's adjustment (linear: all divided by factor; llama3:
    wavelengths beyond original/low_freq_factor divided by factor, below
    original/high_freq_factor kept, interpolated between)."""
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    scaling = _rope_scaling(scaling)
    if scaling is None:
        return inv
    factor = scaling["factor"]
    if scaling["type"] == "linear":
        return inv / factor
    original = scaling["original_max_position_embeddings"]
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    wavelength = 2 * math.pi / inv
    long_ = wavelength > original / low   # low frequencies: scaled down
    short = wavelength < original / high  # high frequencies: kept
    smooth = (original / wavelength - low) / (high - low)
    middle = (1 - smooth) * inv / factor + smooth * inv
    return torch.where(long_, inv / factor, torch.where(short, inv, middle))


def _rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), -1)


class RMSNorm(nn.Module):
    """weight * x / sqrt(mean(x^2) + eps), normalized in float32."""

    def __init__(self, width, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


class LlamaAttention(nn.Module):
    """Grouped-query attention with RoPE: `heads` query heads share `kv_heads`
    key/value heads (query head h reads kv head h // (heads / kv_heads)); q, k,
    v biases when `bias`; o_proj without."""

    def __init__(self, d_model, heads, kv_heads, head_dim, bias):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.q_proj = nn.Linear(d_model, heads * head_dim, bias=bias)
        self.k_proj = nn.Linear(d_model, kv_heads * head_dim, bias=bias)
        self.v_proj = nn.Linear(d_model, kv_heads * head_dim, bias=bias)
        self.o_proj = nn.Linear(heads * head_dim, d_model, bias=False)

    def forward(self, x, cos, sin):
        batch, tokens, _ = x.shape
        q = self.q_proj(x).view(batch, tokens, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, tokens, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, tokens, self.kv_heads, self.head_dim).transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        groups = self.heads // self.kv_heads
        k, v = k.repeat_interleave(groups, 1), v.repeat_interleave(groups, 1)
        scores = (q @ k.transpose(-2, -1)) * self.head_dim ** -0.5
        mask = torch.full((tokens, tokens), float("-inf"), device=x.device, dtype=scores.dtype)
        weights = (scores + mask.triu(1)).softmax(-1, dtype=torch.float32).to(q.dtype)
        mixed = (weights @ v).transpose(1, 2).reshape(batch, tokens, self.heads * self.head_dim)
        return self.o_proj(mixed)


class LlamaMlp(nn.Module):
    """SwiGLU: down_proj(silu(gate_proj(x)) * up_proj(x)), no biases."""

    def __init__(self, d_model, ffn):
        super().__init__()
        self.gate_proj = nn.Linear(d_model, ffn, bias=False)
        self.up_proj = nn.Linear(d_model, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, d_model, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c["d_model"], c["norm_eps"])
        self.self_attn = LlamaAttention(c["d_model"], c["heads"], c["kv_heads"], c["head_dim"],
                                        c["attention_bias"])
        self.post_attention_layernorm = RMSNorm(c["d_model"], c["norm_eps"])
        self.mlp = LlamaMlp(c["d_model"], c["ffn"])

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class _LlamaBody(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab"], c["d_model"])
        self.layers = nn.ModuleList([LlamaLayer(c) for _ in range(c["layers"])])
        self.norm = RMSNorm(c["d_model"], c["norm_eps"])


class Llama(nn.Module):
    """Llama, Mistral and Qwen2 decoders: model {type: llama, flavor, layers,
    d_model, heads, kv_heads, head_dim, ffn, vocab, positions, rope_theta,
    rope_scaling, norm_eps, tie_embeddings, attention_bias} (or `preset:`;
    llama_config fills in the rest).

    Input [B, T] int64 token ids; output [B, T, vocab] logits. Pre-norm
    RMSNorm (float32 inside), rotate-half RoPE on q and k (rope_theta, and
    rope_scaling llama3 or linear), grouped-query causal attention, SwiGLU
    MLP; the head is the token embedding when tie_embeddings (no
    lm_head.weight then). state_dict() keys are Hugging Face's
    (model.layers.0.self_attn.q_proj.weight, ..., lm_head.weight), so a
    Hugging Face checkpoint loads as written. Mistral's sliding window is not
    applied: as in the engine, attention is full, which is exact for
    sequences up to the window.
    """

    def __init__(self, **model):
        super().__init__()
        c = llama_config(model)
        self.config = c
        self.model = _LlamaBody(c)
        if not c["tie_embeddings"]:
            self.lm_head = nn.Linear(c["d_model"], c["vocab"], bias=False)

    def rope(self, tokens, device, dtype):
        """cos and sin [T, head_dim] of positions 0..T-1, computed in float32."""
        c = self.config
        inv = rope_frequencies(c["head_dim"], c["rope_theta"], c["rope_scaling"]).to(device)
        angles = torch.outer(torch.arange(tokens, device=device, dtype=torch.float32), inv)
        angles = torch.cat((angles, angles), -1)
        return angles.cos().to(dtype), angles.sin().to(dtype)

    def forward(self, tokens):
        x = self.model.embed_tokens(tokens)
        cos, sin = self.rope(tokens.shape[1], x.device, x.dtype)
        for layer in self.model.layers:
            x = layer(x, cos, sin)
        x = self.model.norm(x)
        head = self.model.embed_tokens.weight if self.config["tie_embeddings"] \
            else self.lm_head.weight
        return x @ head.t()


def llama_shapes(model):
    """The model.pt keys of a llama `model` object and their shapes
    (Hugging Face's names), without building the model."""
    c = llama_config(model)
    d, q, kv = c["d_model"], c["heads"] * c["head_dim"], c["kv_heads"] * c["head_dim"]
    out = {"model.embed_tokens.weight": [c["vocab"], d]}
    for i in range(c["layers"]):
        p = "model.layers.%d." % i
        out[p + "input_layernorm.weight"] = [d]
        for name, rows in (("q_proj", q), ("k_proj", kv), ("v_proj", kv)):
            out[p + "self_attn.%s.weight" % name] = [rows, d]
            if c["attention_bias"]:
                out[p + "self_attn.%s.bias" % name] = [rows]
        out[p + "self_attn.o_proj.weight"] = [d, q]
        out[p + "post_attention_layernorm.weight"] = [d]
        out[p + "mlp.gate_proj.weight"] = [c["ffn"], d]
        out[p + "mlp.up_proj.weight"] = [c["ffn"], d]
        out[p + "mlp.down_proj.weight"] = [d, c["ffn"]]
    out["model.norm.weight"] = [d]
    if not c["tie_embeddings"]:
        out["lm_head.weight"] = [c["vocab"], d]
    return out


# Hugging Face's files: safetensors (written and read here, no package
# needed), config.json, sharded checkpoints.

_SAFETENSORS_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
                       torch.float64: "F64", torch.int64: "I64", torch.int32: "I32",
                       torch.uint8: "U8", torch.bool: "BOOL"}
_DTYPE_NAMES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16"}
SHARD_BYTES = 5 * 10 ** 9  # save_pretrained's default max_shard_size, "5GB"


def _tensor_bytes(tensor, dtype=None):
    size = torch.empty(0, dtype=dtype).element_size() if dtype else tensor.element_size()
    return tensor.numel() * size


def write_safetensors(tensors, path, metadata=None, dtype=None):
    """Writes a dict of tensors as a safetensors file (the format's JSON
    header and raw little-endian bytes; no safetensors package needed),
    converted to `dtype` if given. One tensor's bytes at a time are held
    beside the tensors."""
    header, offset = {}, 0
    for name, tensor in tensors.items():
        size = _tensor_bytes(tensor, dtype)
        header[name] = {"dtype": _SAFETENSORS_DTYPES[dtype or tensor.dtype],
                        "shape": list(tensor.shape), "data_offsets": [offset, offset + size]}
        offset += size
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = path + ".partial"
    with open(tmp, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for tensor in tensors.values():
            data = tensor.detach().cpu().to(dtype or tensor.dtype).contiguous()
            if data.numel():
                f.write(data.reshape(-1).view(torch.uint8).numpy().tobytes())
    os.replace(tmp, path)


def read_safetensors(path, keys=None):
    """The tensors of a safetensors file, as a dict (read one at a time);
    only those named in `keys` if given."""
    names = {v: k for k, v in _SAFETENSORS_DTYPES.items()}
    out = {}
    with open(path, "rb") as f:
        length = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(length))
        start = 8 + length
        for name, entry in header.items():
            if name == "__metadata__" or (keys is not None and name not in keys):
                continue
            if entry["dtype"] not in names:
                raise ValueError("%s: %s: dtype %s is not supported" % (path, name, entry["dtype"]))
            begin, end = entry["data_offsets"]
            f.seek(start + begin)
            raw = bytearray(f.read(end - begin))
            data = torch.frombuffer(raw, dtype=torch.uint8) if raw \
                else torch.empty(0, dtype=torch.uint8)
            out[name] = data.view(names[entry["dtype"]]).reshape(entry["shape"])
    return out


def _torch_load(path, mmap=False):
    """A torch.save file's dict, weights only; mmap: its tensors mapped from
    the file rather than read (PyTorch 2.1 and later, zip-format files),
    so that a large model.pt is not held in memory twice."""
    if mmap:
        try:
            return torch.load(path, map_location="cpu", weights_only=True, mmap=True)
        except (TypeError, RuntimeError):  # an older PyTorch, or a pre-1.6 file
            pass
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except TypeError:  # PyTorch before 1.13
        return torch.load(path, map_location="cpu")


def _read_weights(path):
    """A checkpoint's tensors: one safetensors or torch.save file, or the
    shards named by a *.index.json ({"weight_map": {key: shard file}})."""
    if path.endswith(".index.json"):
        with open(path) as f:
            shards = sorted(set(json.load(f)["weight_map"].values()))
        out = {}
        for shard in shards:
            out.update(_read_weights(os.path.join(os.path.dirname(path), shard)))
        return out
    if path.endswith(".safetensors"):
        return read_safetensors(path)
    return _torch_load(path)


HF_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                   "pytorch_model.bin.index.json")


def _weights_file(path):
    """The weights file a folder stands for (the first of HF_WEIGHT_FILES)."""
    if not os.path.isdir(path):
        return path
    for name in HF_WEIGHT_FILES:
        if os.path.exists(os.path.join(path, name)):
            return os.path.join(path, name)
    raise FileNotFoundError("%s: none of %s in it" % (path, ", ".join(HF_WEIGHT_FILES)))


def _config_beside(path):
    """The config.json of a checkpoint folder (or beside a file), or None."""
    folder = path if os.path.isdir(path) else os.path.dirname(os.path.abspath(path))
    config = os.path.join(folder, "config.json")
    if not os.path.exists(config):
        return None
    with open(config) as f:
        return json.load(f)


def write_hf_weights(tensors, directory, shard_bytes=SHARD_BYTES, dtype=None):
    """model.safetensors, or, past shard_bytes, model-0000K-of-0000N.safetensors
    shards and model.safetensors.index.json, as save_pretrained writes them
    (the tensors converted to dtype as they are written, if given)."""
    shards, size = [[]], 0
    for name, tensor in tensors.items():
        n = _tensor_bytes(tensor, dtype)
        if shards[-1] and size + n > shard_bytes:
            shards.append([])
            size = 0
        shards[-1].append(name)
        size += n
    for stale in ("model.safetensors", "model.safetensors.index.json"):
        if os.path.exists(os.path.join(directory, stale)):
            os.remove(os.path.join(directory, stale))
    if len(shards) == 1:
        write_safetensors(tensors, os.path.join(directory, "model.safetensors"), {"format": "pt"},
                          dtype)
        return
    weight_map = {}
    for k, names in enumerate(shards):
        file = "model-%05d-of-%05d.safetensors" % (k + 1, len(shards))
        write_safetensors({n: tensors[n] for n in names}, os.path.join(directory, file),
                          {"format": "pt"}, dtype)
        weight_map.update({n: file for n in names})
    index = {"metadata": {"total_size": sum(_tensor_bytes(t, dtype) for t in tensors.values())},
             "weight_map": weight_map}
    with open(os.path.join(directory, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f, indent=2, sort_keys=True)
        f.write("\n")


def _write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=2, sort_keys=True)
        f.write("\n")


def llama_hf_config(model, dtype=torch.float32, extra=None):
    """config.json for a llama `model` object as transformers writes it for
    its flavor (LlamaConfig, MistralConfig, Qwen2Config); `extra` adds keys
    (bos_token_id, eos_token_id, ...)."""
    c = llama_config(model)
    flavor = c["flavor"]
    out = {"architectures": [LLAMA_FLAVORS[flavor]], "model_type": flavor,
           "vocab_size": c["vocab"], "hidden_size": c["d_model"],
           "intermediate_size": c["ffn"], "num_hidden_layers": c["layers"],
           "num_attention_heads": c["heads"], "num_key_value_heads": c["kv_heads"],
           "head_dim": c["head_dim"], "hidden_act": "silu",
           "max_position_embeddings": c["positions"], "initializer_range": 0.02,
           "rms_norm_eps": c["norm_eps"], "use_cache": True,
           "tie_word_embeddings": bool(c["tie_embeddings"]), "rope_theta": float(c["rope_theta"]),
           "rope_scaling": None, "attention_dropout": 0.0, "torch_dtype": _DTYPE_NAMES[dtype]}
    if c["rope_scaling"]:
        scaling = dict(c["rope_scaling"])
        scaling["rope_type"] = scaling.pop("type")
        out["rope_scaling"] = scaling
    if flavor == "llama":
        out.update(attention_bias=bool(c["attention_bias"]), mlp_bias=False, pretraining_tp=1)
    elif flavor == "mistral":
        if c["attention_bias"]:
            raise ValueError("flavor mistral with attention_bias: transformers' "
                             "MistralForCausalLM has no attention biases (use flavor llama)")
        out["sliding_window"] = c.get("sliding_window")
    else:  # qwen2: q, k, v biases always
        out.update(use_sliding_window=False, sliding_window=None, max_window_layers=c["layers"])
    out.update(extra or {})
    return out


def llama_hf_state(state, model):
    """model.pt's tensors (Hugging Face's names already) as the flavor's
    Hugging Face class holds them: biases it has and the model lacks added as
    zeros (Qwen2's q/k/v without attention_bias; Llama's o_proj with it), a
    tied lm_head left out."""
    c = llama_config(model)
    expected = llama_shapes(model)
    missing = [k for k in expected if k not in state]
    unknown = [k for k in state if k not in expected and not
               (k == "lm_head.weight" and c["tie_embeddings"])]
    if missing or unknown:
        raise ValueError("the weights do not fit the llama model: missing %s; unexpected %s"
                         % (missing[:5] or "none", unknown[:5] or "none"))
    out = {k: state[k] for k in expected}
    for i in range(c["layers"]):
        p = "model.layers.%d.self_attn." % i
        if c["flavor"] == "qwen2" and not c["attention_bias"]:
            for name in ("q_proj", "k_proj", "v_proj"):
                w = out[p + name + ".weight"]
                out[p + name + ".bias"] = torch.zeros(w.shape[0], dtype=w.dtype)
        if c["flavor"] == "llama" and c["attention_bias"]:
            w = out[p + "o_proj.weight"]
            out[p + "o_proj.bias"] = torch.zeros(w.shape[0], dtype=w.dtype)
    return out


def save_llama_hf(state, model, directory, dtype=None, extra=None, shard_bytes=SHARD_BYTES):
    """Writes a llama state dict (model.pt's) in Hugging Face's layout for
    `model` (a task.json model object): config.json and model.safetensors
    (sharded past shard_bytes). dtype: the tensors' type on disk (None: as
    they are)."""
    tensors = llama_hf_state(state, model)
    dtype = dtype or next(iter(tensors.values())).dtype
    os.makedirs(directory, exist_ok=True)
    write_hf_weights(tensors, directory, shard_bytes, dtype)
    _write_json(os.path.join(directory, "config.json"), llama_hf_config(model, dtype, extra))


def save_hf(model, directory, dtype=None, extra=None):
    """Writes a GPT2 or a Llama in Hugging Face's layout: config.json (as
    transformers writes it) and model.safetensors (the tied lm_head left
    out, as Hugging Face does; a Llama over 5 GB in shards with
    model.safetensors.index.json). dtype: the tensors' type on disk, e.g.
    torch.bfloat16 (default: the model's, float32); extra: keys added to
    config.json (bos_token_id, eos_token_id, ...)."""
    if isinstance(model, Llama):
        save_llama_hf(model.state_dict(), model.config, directory, dtype, extra)
        return
    if not isinstance(model, GPT2):
        raise TypeError("save_hf takes a saturn_models.GPT2 or Llama, got %s"
                        % type(model).__name__)
    os.makedirs(directory, exist_ok=True)
    tensors = {k: v if dtype is None else v.to(dtype) for k, v in _hf_state(model).items()}
    write_safetensors(tensors, os.path.join(directory, "model.safetensors"), {"format": "pt"})
    c = model.config
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
              "vocab_size": c["vocab"], "n_positions": c["positions"], "n_ctx": c["positions"],
              "n_embd": c["d_model"], "n_layer": c["layers"], "n_head": c["heads"],
              "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
              "tie_word_embeddings": True, "resid_pdrop": 0.1, "embd_pdrop": 0.1,
              "attn_pdrop": 0.1, "initializer_range": 0.02,
              "torch_dtype": _DTYPE_NAMES[next(iter(tensors.values())).dtype]}
    config.update(extra or {})
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


def llama_model_of_hf(config):
    """A llama `model` object from a Hugging Face config.json (model_type
    llama, mistral or qwen2), as the workload reader maps it."""
    flavor = config.get("model_type", "llama")
    if flavor not in LLAMA_FLAVORS:
        raise ValueError("model_type %r is not a llama flavor (llama, mistral, qwen2)" % flavor)
    if config.get("mlp_bias"):
        raise ValueError("config.json: mlp_bias true is not supported")
    rope = config.get("rope_parameters") or {}  # transformers 5's form
    scaling = config.get("rope_scaling") or (rope if rope.get("rope_type", "default") != "default"
                                             else None)
    heads = config["num_attention_heads"]
    model = {"type": "llama", "flavor": flavor, "layers": config["num_hidden_layers"],
             "d_model": config["hidden_size"], "heads": heads,
             "kv_heads": config.get("num_key_value_heads") or heads,
             "head_dim": config.get("head_dim") or config["hidden_size"] // heads,
             "ffn": config["intermediate_size"], "vocab": config["vocab_size"],
             "positions": config["max_position_embeddings"],
             "rope_theta": config.get("rope_theta", rope.get("rope_theta", 10000.0)),
             "rope_scaling": _rope_scaling(scaling),
             "norm_eps": config.get("rms_norm_eps", 1e-6),
             "tie_embeddings": bool(config.get("tie_word_embeddings", False)),
             "attention_bias": True if flavor == "qwen2"
             else bool(config.get("attention_bias", False))}
    if flavor == "mistral" and config.get("sliding_window"):
        model["sliding_window"] = config["sliding_window"]
    return model


def load_hf(path):
    """A Hugging Face checkpoint as a GPT2 or a Llama: a folder (the first of
    model.safetensors, model.safetensors.index.json for shards,
    pytorch_model.bin, pytorch_model.bin.index.json; config.json in it) or
    one of those files. Its model_type picks the class (gpt2; llama, mistral,
    qwen2: a Llama, whose config.json is needed). Tensors load as float32
    (bf16 and fp16 files too)."""
    config = _config_beside(path)
    file = _weights_file(path)
    if config is not None and config.get("model_type") in LLAMA_FLAVORS:
        return _load_llama_hf(file, config)
    state = _read_weights(file)
    if config is None and "model.embed_tokens.weight" in state:
        raise ValueError("%s: a Llama-layout checkpoint needs the config.json beside it" % path)
    return _load_gpt2_hf(state, file, config)


def _load_llama_hf(file, config):
    model = llama_model_of_hf(config)
    c = llama_config(model)
    expected = llama_shapes(model)
    state = {}
    for name, tensor in _read_weights(file).items():
        if name.endswith("rotary_emb.inv_freq"):  # a buffer of older checkpoints
            continue
        if name == "lm_head.weight" and c["tie_embeddings"]:
            continue
        if name not in expected and name.endswith(".bias"):
            # A bias the flavor's class has and the model lacks (Llama's
            # o_proj with attention_bias; q/k/v without): zero is the same map.
            if tensor.any():
                raise ValueError("%s: %s is not zero, but the llama model has no such bias"
                                 % (file, name))
            continue
        state[name] = tensor.float()
    llama = Llama(**model)
    llama.load_state_dict(state)
    return llama


def _load_gpt2_hf(state, path, config):
    prefix = "transformer." if "transformer.wte.weight" in state else ""
    wte = state[prefix + "wte.weight"]
    layers = 1 + max(int(k[len(prefix) + 2:].split(".")[0]) for k in state
                     if k.startswith(prefix + "h."))
    d_model = wte.shape[1]
    heads = _heads_of(path, d_model, config)
    model = GPT2(layers=layers, d_model=d_model, heads=heads, vocab=wte.shape[0],
                 positions=state[prefix + "wpe.weight"].shape[0])
    ours = {"tokens.weight": wte, "positions.weight": state[prefix + "wpe.weight"],
            "ln.weight": state[prefix + "ln_f.weight"], "ln.bias": state[prefix + "ln_f.bias"]}
    for k in range(layers):
        for mine, theirs in _HF_LAYER:
            for leaf in ("weight", "bias"):
                ours["layers.%d.%s.%s" % (k, mine, leaf)] = \
                    state[prefix + "h.%d.%s.%s" % (k, theirs, leaf)]
    model.load_state_dict({k: v.float() for k, v in ours.items()})
    return model


def _heads_of(path, d_model, config):
    """n_head from the config.json beside a checkpoint (GPT-2's sizes else)."""
    if config is not None:
        return config["n_head"]
    for layers, width, heads in GPT2_PRESETS.values():
        if width == d_model:
            return heads
    raise ValueError("%s: no config.json beside it to give n_head" % path)


class ViT(nn.Module):
    """Image classifier: model {type: vit, layers, d_model, heads, image_size, patch}.

    Input [B, 3, S, S] float; output [B, 10] logits.
    """

    def __init__(self, layers, d_model, heads, image_size, patch):
        super().__init__()
        self.image_size, self.patch_size, self.width = image_size, patch, d_model
        self.patch = nn.Linear(CHANNELS * patch * patch, d_model)  # the patch embedding
        self.cls = nn.Parameter(torch.zeros(1, 1, d_model))
        self.positions = nn.Parameter(torch.zeros((image_size // patch) ** 2 + 1, d_model))
        self.layers = nn.ModuleList(
            [TransformerLayer(d_model, heads, causal=False) for _ in range(layers)])
        self.ln = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, CLASSES)

    def forward(self, images):
        batch, p = images.shape[0], self.patch_size
        grid = self.image_size // p
        patches = (images.reshape(batch, CHANNELS, grid, p, grid, p)
                   .permute(0, 2, 4, 1, 3, 5)
                   .reshape(batch, grid * grid, CHANNELS * p * p))
        x = torch.cat([self.cls.expand(batch, 1, self.width), self.patch(patches)], 1)
        x = x + self.positions
        for layer in self.layers:
            x = layer(x)
        return self.out(self.ln(x[:, 0]))


def _groups(width):
    for g in range(8, 1, -1):
        if width % g == 0:
            return g
    return 1


class Stem(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv = nn.Conv2d(CHANNELS, width, 3, padding=1, bias=False)
        self.norm = nn.GroupNorm(_groups(width), width)

    def forward(self, x):
        return F.relu(self.norm(self.conv(x)))


class Residual(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv1 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.norm1 = nn.GroupNorm(_groups(width), width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.norm2 = nn.GroupNorm(_groups(width), width)

    def forward(self, x):
        h = F.relu(self.norm1(self.conv1(x)))
        return F.relu(x + self.norm2(self.conv2(h)))


class ResNet(nn.Module):
    """Image classifier: model {type: resnet, blocks, width, image_size}.

    Input [B, 3, S, S] float; output [B, 10] logits. GroupNorm (no batch
    statistics), constant width and resolution, global average pooling.
    """

    def __init__(self, blocks, width, image_size=None):
        super().__init__()
        self.stem = Stem(width)
        self.blocks = nn.ModuleList([Residual(width) for _ in range(blocks)])
        self.out = nn.Linear(width, CLASSES)

    def forward(self, images):
        x = self.stem(images)
        for block in self.blocks:
            x = block(x)
        return self.out(x.mean((2, 3)))


class MLP(nn.Module):
    """Vector model: model {type: mlp, layers, width[, inputs, outputs]}.

    `layers` hidden blocks (linear + ReLU: inputs to width, then width to
    width) and a linear head to `outputs`; layers 0 is the head alone
    (linear or logistic regression, a table's groups: docs/groups.md).
    Input [B, inputs] float (inputs: width unless given); output
    [B, outputs] (10 logits unless given).
    """

    def __init__(self, layers, width, inputs=None, outputs=CLASSES):
        super().__init__()
        inputs = width if inputs is None else inputs
        self.layers = nn.ModuleList([nn.Linear(inputs if k == 0 else width, width)
                                     for k in range(layers)])
        self.out = nn.Linear(width if layers else inputs, outputs)

    def forward(self, x):
        for layer in self.layers:
            x = F.relu(layer(x))
        return self.out(x)


def build(model):
    """The untrained module for a workload's / task.json's `model` object."""
    kind = model["type"]
    if kind == "gpt":
        return GPT(model["layers"], model["d_model"], model["heads"], model["seq_len"])
    if kind == "gpt2":
        layers, d_model, heads = GPT2_PRESETS[model.get("preset", "small")]
        return GPT2(layers=model.get("layers", layers), d_model=model.get("d_model", d_model),
                    heads=model.get("heads", heads), vocab=model.get("vocab", 50257),
                    positions=model.get("positions", 1024))
    if kind == "llama":
        return Llama(**model)
    if kind == "vit":
        return ViT(model["layers"], model["d_model"], model["heads"], model["image_size"],
                   model["patch"])
    if kind == "resnet":
        return ResNet(model["blocks"], model["width"], model.get("image_size"))
    if kind == "mlp":
        layers = model.get("layers", 1)
        width = model["width"] if layers else model.get("width", 1)
        return MLP(layers, width, model.get("inputs"), model.get("outputs", CLASSES))
    if kind == "torchscript":
        return torch.jit.load(model["path"])
    raise ValueError("unknown model type %r; expected gpt, gpt2, llama, vit, resnet, mlp or "
                     "torchscript" % kind)


def load(task_dir, map_location="cpu"):
    """A run's trained model: `task_dir` is runs/<run>/tasks/<task>.

    Zoo models: build(task.json's model) with model.pt's weights. Torchscript
    tasks: trained.pt (the user's module with the trained weights).
    """
    with open(os.path.join(task_dir, "task.json")) as f:
        task = json.load(f)
    if task["model"]["type"] == "torchscript":
        return torch.jit.load(os.path.join(task_dir, "trained.pt"), map_location=map_location)
    model = build(task["model"])
    model.load_state_dict(torch.load(os.path.join(task_dir, "model.pt"),
                                     map_location=map_location))
    return model


def loss(model, inputs, targets, kind="cross_entropy"):
    """The mean loss Saturn trains and evaluates with."""
    outputs = model(inputs)
    if kind == "mse":
        return F.mse_loss(outputs, targets)
    return F.cross_entropy(outputs.reshape(-1, outputs.shape[-1]), targets.reshape(-1))


# A table's groups (docs/groups.md, "The models of every group"): a run of
# table tasks ends with groups.safetensors (every group's model, its tensors
# named "<group>/<name in model.pt>") and groups.json, its index.

GROUPS_FORMAT = "saturn-groups/1"
# What a group's entry in groups.json holds where it differs from the
# index's own (a run of several table tasks, a sweep of model sizes).
_GROUP_SHARED = ("model", "features", "label", "kind", "classes")


class GroupError(LookupError):
    """A run without groups.json, a group not in it, or one without a model."""


def group_index(run_dir, group=None):
    """A run's groups.json: the model, features (in input order), label,
    kind (regression or classification), classes (in output order) and per
    group its task, keys, train_rows, final_loss, eval_loss[, eval_accuracy]
    or the reason it has no model. With `group`: that group's entry, the
    index's shared fields filled in (GroupError if it is not there)."""
    path = os.path.join(run_dir, "groups.json")
    if not os.path.exists(path):
        raise GroupError("%s has no groups.json: a finished `saturn run` of table tasks "
                         "(data: {type: table, ...}) writes it, and `saturn serve` once all "
                         "its tasks have ended" % run_dir)
    with open(path) as f:
        index = json.load(f)
    if index.get("format") != GROUPS_FORMAT:
        raise GroupError("%s: format %r, expected %r" % (path, index.get("format"),
                                                         GROUPS_FORMAT))
    if group is None:
        return index
    if group not in index["groups"]:
        import difflib
        names = list(index["groups"])
        near = difflib.get_close_matches(str(group), names, 3)
        raise GroupError("group %r is not in %s (%d groups: %s%s)%s" % (
            group, path, len(names), ", ".join(repr(g) for g in names[:5]),
            ", ..." if len(names) > 5 else "",
            "; did you mean %s?" % ", ".join(repr(g) for g in near) if near else ""))
    entry = dict(index["groups"][group])
    for field in _GROUP_SHARED:
        if field not in entry and field in index:
            entry[field] = index[field]
    return entry


def _group_module(group, model, keys, tensors):
    """build(model) with the tensors "<group>/<name>" of `keys` as its own."""
    module = build(model)
    prefix = group + "/"
    module.load_state_dict({key[len(prefix):]: tensors[key] for key in keys
                            if key.startswith(prefix)}, strict=True)
    return module.eval()


def load_group(run_dir, group):
    """One group's trained model (an nn.Module in eval mode) out of a run's
    groups.safetensors; GroupError naming the group when it is not in the
    run or has no model (with the reason: its task failed, ...)."""
    entry = group_index(run_dir, group)
    if not entry["keys"]:
        raise GroupError("group %r has no model: %s" % (group, entry.get("reason", "")))
    tensors = read_safetensors(os.path.join(run_dir, "groups.safetensors"), set(entry["keys"]))
    return _group_module(group, entry["model"], entry["keys"], tensors)


def load_groups(run_dir):
    """Every group's trained model, {group: nn.Module in eval mode}; groups
    without a model are left out (groups.json says why)."""
    index = group_index(run_dir)
    tensors = read_safetensors(os.path.join(run_dir, "groups.safetensors"))
    out = {}
    for group, entry in index["groups"].items():
        if entry["keys"]:
            out[group] = _group_module(group, entry.get("model", index["model"]), entry["keys"],
                                       tensors)
    return out


# Out of a run: a finished task as a Hugging Face model (--format hf) or its
# LoRA adapters as a peft adapter (--format peft).

class ExportError(Exception):
    """A task that cannot be exported as asked (the CLI's exit 2)."""


def _read_task(task_dir):
    path = os.path.join(task_dir, "task.json")
    if not os.path.exists(path):
        raise ExportError("%s: no task.json (expected a finished task's folder, "
                          "runs/<run>/tasks/<task>)" % task_dir)
    with open(path) as f:
        task = json.load(f)
    task.setdefault("name", os.path.basename(os.path.normpath(task_dir)))
    return task


def _base_folder(task):
    """The Hugging Face folder of a task's model.init (init names a folder or
    a file in one), or None."""
    init = task["model"].get("init")
    if not init:
        return None
    return init if os.path.isdir(init) else os.path.dirname(init)


# Files of a Hugging Face folder that go with the weights (the tokenizer's,
# generation defaults), copied from the task's init folder by export_hf.
HF_SIDE_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                 "tokenizer.model", "vocab.json", "merges.txt", "added_tokens.json",
                 "generation_config.json")
# config.json keys of the base kept in the exported config (token ids).
_TOKEN_KEYS = ("bos_token_id", "eos_token_id", "pad_token_id")


def export_hf(task_dir, out_dir, dtype=None):
    """A finished gpt2 or llama task as a Hugging Face model folder: its
    model.pt (LoRA merged in) as model.safetensors and config.json, plus the
    tokenizer files and token ids of its init folder when it has one.
    Returns the names of the files copied from the init folder."""
    task = _read_task(task_dir)
    kind = task["model"]["type"]
    if kind not in ("gpt2", "llama"):
        raise ExportError("task %s: model type %s has no Hugging Face architecture (gpt2 and "
                          "llama do); load it with saturn_models.load instead"
                          % (task["name"], kind))
    weights = os.path.join(task_dir, "model.pt")
    if not os.path.exists(weights):
        raise ExportError("task %s: no model.pt in %s (has the task run?)"
                          % (task["name"], task_dir))
    base = _base_folder(task)
    for folder, what in ((base, "its init folder"), (task_dir, "the task's folder")):
        if folder and os.path.realpath(folder) == os.path.realpath(out_dir):
            raise ExportError("task %s: %s is %s; write the export elsewhere"
                              % (task["name"], out_dir, what))
    base_config = _config_beside(base) if base else None
    extra = {k: base_config[k] for k in _TOKEN_KEYS if base_config and k in base_config}
    if kind == "gpt2":
        save_hf(load(task_dir), out_dir, dtype, extra)
    else:
        try:
            save_llama_hf(_torch_load(weights, mmap=True), task["model"], out_dir, dtype, extra)
        except ValueError as e:
            raise ExportError("task %s: %s: %s" % (task["name"], weights, e))
    copied = []
    for name in HF_SIDE_FILES if base else ():
        if os.path.exists(os.path.join(base, name)):
            shutil.copyfile(os.path.join(base, name), os.path.join(out_dir, name))
            copied.append(name)
    return copied


# gpt2 adapters: our module -> Hugging Face's (under transformer.h.N.).
_GPT2_PEFT = {"attn.qkv": "attn.c_attn", "attn.proj": "attn.c_proj", "mlp.fc1": "mlp.c_fc",
              "mlp.fc2": "mlp.c_proj"}


def _gpt2_targets(modules):
    """peft target_modules for GPT-2's adapted modules (attn.c_attn, ...).
    peft matches a name in the list against the end of a module's path
    after a dot, so "c_proj" would adapt both attn.c_proj and mlp.c_proj: it
    is listed as "c_proj" only when both were adapted, else as
    "attn.c_proj" or "mlp.c_proj"."""
    out = set()
    for m in modules:
        short = m.split(".")[-1]
        both = {"attn.c_proj", "mlp.c_proj"} <= set(modules)
        out.add(m if short == "c_proj" and not both else short)
    return sorted(out)


def peft_adapter(task):
    """(adapter_config, tensors) of peft's layout for a LoRA task's adapters
    (`task`: task.json with its adapters.pt's dict under "adapters")."""
    model, lora = task["model"], task["finetune"]["lora"]
    kind, rank = model["type"], int(lora["rank"])
    alpha = lora.get("alpha", rank)
    tensors, modules = {}, set()
    for key, tensor in task["adapters"].items():
        path, leaf = key.rsplit(".", 1)
        if leaf not in ("lora_A", "lora_B"):
            raise ExportError("task %s: adapters.pt: %s is not an adapter (lora_A, lora_B)"
                              % (task["name"], key))
        if kind == "llama":
            module, value = path, tensor
        else:  # Conv1D's x A B: A [in, r], B [r, out]; peft's Linear layout transposes them
            parts = path.split(".", 2)
            if len(parts) != 3 or parts[0] != "layers" or parts[2] not in _GPT2_PEFT:
                raise ExportError("task %s: adapters.pt: unexpected key %s" % (task["name"], key))
            module = "transformer.h.%s.%s" % (parts[1], _GPT2_PEFT[parts[2]])
            value = tensor.t().contiguous()
        if value.dim() != 2 or value.shape[0 if leaf == "lora_A" else 1] != rank:
            raise ExportError("task %s: adapters.pt: %s is %s, not of rank %d"
                              % (task["name"], key, list(tensor.shape), rank))
        tensors["base_model.model.%s.%s.weight" % (module, leaf)] = value.float()
        modules.add(module.split(".", 3)[-1] if kind == "gpt2" else module.rsplit(".", 1)[-1])
    for name in tensors:
        other = name.replace(".lora_A.", ".lora_B.") if ".lora_A." in name \
            else name.replace(".lora_B.", ".lora_A.")
        if other not in tensors:
            raise ExportError("task %s: adapters.pt: %s has no %s" % (task["name"], name, other))
    if not tensors:
        raise ExportError("task %s: adapters.pt holds no adapters" % task["name"])
    targets = _gpt2_targets(modules) if kind == "gpt2" else sorted(modules)
    base = _base_folder(task)
    # LoraConfig's long-standing fields, each at its meaning here (later
    # ones, use_rslora, use_dora, ..., are left to their defaults, which are
    # Saturn's LoRA: an older peft refuses fields it does not know).
    config = {
        "base_model_name_or_path": base, "bias": "none", "fan_in_fan_out": kind == "gpt2",
        "inference_mode": True, "init_lora_weights": True, "layers_pattern": None,
        "layers_to_transform": None,
        "lora_alpha": int(alpha) if float(alpha).is_integer() else float(alpha),
        "lora_dropout": 0.0, "modules_to_save": None, "peft_type": "LORA", "r": rank,
        "revision": None, "target_modules": targets, "task_type": "CAUSAL_LM"}
    return config, tensors


def save_peft(task_dir, out_dir):
    """A finished LoRA task's adapters (task.json + adapters.pt) in peft's
    layout: adapter_config.json and adapter_model.safetensors, which
    peft.PeftModel.from_pretrained(base_model, out_dir) loads over the base
    (the task's init). Returns the adapter config."""
    task = _read_task(task_dir)
    kind = task["model"]["type"]
    if not (task.get("finetune") or {}).get("lora"):
        raise ExportError("task %s is not a LoRA task (its task.json has no finetune.lora): "
                          "there are no adapters to export; use --format hf for the whole "
                          "model" % task["name"])
    if kind not in ("gpt2", "llama"):
        raise ExportError("task %s: peft adapters need a Hugging Face architecture (gpt2 or "
                          "llama), not %s" % (task["name"], kind))
    path = os.path.join(task_dir, "adapters.pt")
    if not os.path.exists(path):
        raise ExportError("task %s: no adapters.pt in %s (has the task run?)"
                          % (task["name"], task_dir))
    task["adapters"] = _torch_load(path)
    config, tensors = peft_adapter(task)
    os.makedirs(out_dir, exist_ok=True)
    write_safetensors(tensors, os.path.join(out_dir, "adapter_model.safetensors"),
                      {"format": "pt"})
    _write_json(os.path.join(out_dir, "adapter_config.json"), config)
    return config


_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def main(argv=None):
    """python3 -m saturn_models export TASK_DIR OUT --format hf|peft"""
    import argparse
    parser = argparse.ArgumentParser(
        prog="python3 -m saturn_models",
        description="Saturn's trained models out as Hugging Face files.")
    commands = parser.add_subparsers(dest="command", required=True)
    export = commands.add_parser(
        "export", help="a finished task as a Hugging Face model or a peft adapter",
        description="Writes a finished task (runs/<run>/tasks/<task>) as a Hugging Face "
                    "model folder (--format hf: config.json + model.safetensors, LoRA merged "
                    "in; gpt2 and llama tasks) or its LoRA adapters as a peft adapter "
                    "(--format peft: adapter_config.json + adapter_model.safetensors).")
    export.add_argument("task_dir", metavar="TASK_DIR")
    export.add_argument("out", metavar="OUT", help="the folder to write (made if missing)")
    export.add_argument("--format", required=True, choices=["hf", "peft"])
    export.add_argument("--dtype", choices=sorted(_DTYPES),
                        help="hf: the weights' type on disk (default: float32, as trained)")
    args = parser.parse_args(argv)
    try:
        if args.format == "peft":
            config = save_peft(args.task_dir, args.out)
            print("wrote %s: peft LoRA adapter, r %d, alpha %s, target_modules %s, base %s"
                  % (args.out, config["r"], config["lora_alpha"],
                     ",".join(config["target_modules"]), config["base_model_name_or_path"]))
        else:
            copied = export_hf(args.task_dir, args.out, _DTYPES.get(args.dtype))
            print("wrote %s: Hugging Face model%s" % (
                args.out, " (with %s from the init folder)" % ", ".join(copied) if copied else ""))
    except (ExportError, ValueError, OSError) as e:
        print("saturn_models export: error: %s" % e, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
