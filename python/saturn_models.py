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

``saturn_models.loss(model, inputs, targets)`` is the loss Saturn trains and
evaluates with (mean cross-entropy over every target; mean squared error for
torchscript tasks with ``loss: mse``).

A torchscript task's trained model is its own module: ``torch.jit.load(
"tasks/<task>/trained.pt")``; its ``model.pt`` holds the same weights under
the module's own parameter names. Models were trained in float32 (bf16 tasks
keep float32 master weights), so they load as float32.
"""

import json
import math
import os

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["GPT", "GPT2", "ViT", "ResNet", "MLP", "build", "load", "loss", "save_hf", "load_hf"]

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


_SAFETENSORS_DTYPES = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
                       torch.float64: "F64", torch.int64: "I64", torch.int32: "I32",
                       torch.uint8: "U8", torch.bool: "BOOL"}


def write_safetensors(tensors, path, metadata=None):
    """Writes a dict of tensors as a safetensors file (the format's JSON
    header and raw little-endian bytes; no safetensors package needed)."""
    header, blobs, offset = {}, [], 0
    for name, tensor in tensors.items():
        data = tensor.detach().cpu().contiguous()
        raw = data.view(torch.uint8).numpy().tobytes() if data.numel() else b""
        header[name] = {"dtype": _SAFETENSORS_DTYPES[data.dtype], "shape": list(data.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    tmp = path + ".partial"
    with open(tmp, "wb") as f:
        f.write(len(text).to_bytes(8, "little"))
        f.write(text)
        for raw in blobs:
            f.write(raw)
    os.replace(tmp, path)


def read_safetensors(path):
    """The tensors of a safetensors file, as a dict."""
    names = {v: k for k, v in _SAFETENSORS_DTYPES.items()}
    with open(path, "rb") as f:
        length = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(length))
        data = f.read()
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        raw = torch.frombuffer(bytearray(data[begin:end]), dtype=torch.uint8) if end > begin \
            else torch.empty(0, dtype=torch.uint8)
        out[name] = raw.view(names[entry["dtype"]]).reshape(entry["shape"]).clone()
    return out


def save_hf(model, directory):
    """Writes a GPT2 in Hugging Face's layout: model.safetensors (the tied
    lm_head left out, as Hugging Face does) and config.json."""
    if not isinstance(model, GPT2):
        raise TypeError("save_hf takes a saturn_models.GPT2, got %s" % type(model).__name__)
    os.makedirs(directory, exist_ok=True)
    write_safetensors(_hf_state(model), os.path.join(directory, "model.safetensors"),
                      {"format": "pt"})
    c = model.config
    config = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2",
              "vocab_size": c["vocab"], "n_positions": c["positions"], "n_ctx": c["positions"],
              "n_embd": c["d_model"], "n_layer": c["layers"], "n_head": c["heads"],
              "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
              "tie_word_embeddings": True, "resid_pdrop": 0.1, "embd_pdrop": 0.1,
              "attn_pdrop": 0.1, "initializer_range": 0.02}
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
        f.write("\n")


def load_hf(path):
    """A Hugging Face GPT-2 checkpoint (a folder with model.safetensors or
    pytorch_model.bin, or one of those files) as a GPT2."""
    if os.path.isdir(path):
        for name in ("model.safetensors", "pytorch_model.bin"):
            if os.path.exists(os.path.join(path, name)):
                path = os.path.join(path, name)
                break
    if path.endswith(".safetensors"):
        state = read_safetensors(path)
    else:
        state = torch.load(path, map_location="cpu")
    prefix = "transformer." if "transformer.wte.weight" in state else ""
    wte = state[prefix + "wte.weight"]
    layers = 1 + max(int(k[len(prefix) + 2:].split(".")[0]) for k in state
                     if k.startswith(prefix + "h."))
    d_model = wte.shape[1]
    heads = _heads_of(path, d_model)
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


def _heads_of(path, d_model):
    """n_head from the config.json beside a checkpoint (GPT-2's sizes else)."""
    config = os.path.join(os.path.dirname(os.path.abspath(path)), "config.json")
    if os.path.exists(config):
        with open(config) as f:
            return json.load(f)["n_head"]
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
    """Vector classifier: model {type: mlp, layers, width}.

    Input [B, width] float; output [B, 10] logits.
    """

    def __init__(self, layers, width):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(width, width) for _ in range(layers)])
        self.out = nn.Linear(width, CLASSES)

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
    if kind == "vit":
        return ViT(model["layers"], model["d_model"], model["heads"], model["image_size"],
                   model["patch"])
    if kind == "resnet":
        return ResNet(model["blocks"], model["width"], model.get("image_size"))
    if kind == "mlp":
        return MLP(model["layers"], model["width"])
    if kind == "torchscript":
        return torch.jit.load(model["path"])
    raise ValueError("unknown model type %r; expected gpt, gpt2, vit, resnet, mlp or torchscript"
                     % kind)


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
