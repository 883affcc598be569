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

__all__ = ["GPT", "ViT", "ResNet", "MLP", "build", "load", "loss"]

VOCAB = 256  # gpt: byte-level next-token prediction
CLASSES = 10  # vit, resnet, mlp
CHANNELS = 3  # vit, resnet: RGB images


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
    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class TransformerLayer(nn.Module):
    """Pre-norm: x + attention(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, width, heads, causal):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = Attention(width, heads, causal)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = MlpBlock(width)

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
    if kind == "vit":
        return ViT(model["layers"], model["d_model"], model["heads"], model["image_size"],
                   model["patch"])
    if kind == "resnet":
        return ResNet(model["blocks"], model["width"], model.get("image_size"))
    if kind == "mlp":
        return MLP(model["layers"], model["width"])
    if kind == "torchscript":
        return torch.jit.load(model["path"])
    raise ValueError("unknown model type %r; expected gpt, vit, resnet, mlp or torchscript" % kind)


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
