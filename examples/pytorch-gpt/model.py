"""A small GPT-style language model and its data, shared by the examples here.

The model is an nn.Sequential of self-contained blocks (embedding, transformer
layers with their residual connections inside, head), so TorchScript exports
it as a sequence Saturn's engine can split for pipeline, fsdp and spill
(docs/byo.md, "Which techniques apply").
"""
import os

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "..", "data", "corpus.txt")
VOCAB = 64  # ids are below it (the corpus has 34 distinct characters)
SEQ_LEN = 32


class Embed(nn.Module):
    def __init__(self, vocab: int, seq_len: int, width: int):
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Parameter(torch.zeros(seq_len, width))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.tokens(ids) + self.positions[: ids.size(1)]


class Layer(nn.Module):
    """Pre-norm transformer layer with causal self-attention."""

    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.size(0), x.size(1), x.size(2)
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q = q.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) / float(c // self.heads) ** 0.5
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, c)
        x = x + self.proj(y)
        return x + self.mlp(self.norm2(x))


class Head(nn.Module):
    def __init__(self, width: int, vocab: int):
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.out = nn.Linear(width, vocab)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(x))


def gpt(layers=2, width=64, heads=4, vocab=VOCAB, seq_len=SEQ_LEN):
    """Logits [B, T, vocab] for token ids [B, T]."""
    return nn.Sequential(Embed(vocab, seq_len, width),
                         *[Layer(width, heads) for _ in range(layers)],
                         Head(width, vocab))


class Corpus:
    """The shipped text as character ids; batch(step) is the same on every
    process and for every run (drawn from the seed and the step), so a run
    resumed at step s sees what an uninterrupted one would."""

    def __init__(self, path=CORPUS, seq_len=SEQ_LEN, seed=0):
        text = open(path, encoding="utf-8").read()
        chars = sorted(set(text))
        assert len(chars) <= VOCAB, f"{path}: {len(chars)} distinct characters"
        index = {c: i for i, c in enumerate(chars)}
        self.ids = torch.tensor([index[c] for c in text], dtype=torch.long)
        self.seq_len, self.seed = seq_len, seed

    def batch(self, step, size):
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + step)
        starts = torch.randint(0, len(self.ids) - self.seq_len - 1, (size,), generator=g)
        rows = torch.stack([self.ids[s:s + self.seq_len + 1] for s in starts.tolist()])
        return rows[:, :-1], rows[:, 1:]
