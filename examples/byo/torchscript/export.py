#!/usr/bin/python3
"""Exports two PyTorch models and their data for Saturn (docs/byo.md).

    /usr/bin/python3 examples/byo/torchscript/export.py
    saturn run examples/byo/torchscript/workload.yaml

Writes next to this script:
  lm.pt          a small token language model, an nn.Sequential (so Saturn
                 can split it into blocks: every technique applies)
  tokens.bin     its data: the token ids of a text, little-endian uint16
  residual.pt    a classifier with a residual connection (not a sequence:
                 Saturn trains it with single or ddp only)
  vectors.pt     its data: torch.save([inputs, targets])
"""
import os

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = 64  # workload.yaml: data.vocab (ids must be below it)


class Residual(nn.Module):
    def __init__(self, width, classes):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.Linear(width, width))
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        return self.head(x + self.body(x))


def main():
    torch.manual_seed(0)
    # Token data: a character-level vocabulary over a text.
    text = open(os.path.join(HERE, "../../data/corpus.txt"), encoding="utf-8").read()
    vocab = sorted(set(text))
    assert len(vocab) <= VOCAB, f"{len(vocab)} distinct characters, more than {VOCAB}"
    ids = torch.tensor([vocab.index(c) for c in text], dtype=torch.int32)
    with open(os.path.join(HERE, "tokens.bin"), "wb") as f:
        f.write(ids.numpy().astype("<u2").tobytes())
    print(f"tokens.bin: {len(ids)} tokens, {len(vocab)} distinct")

    # Children called in order: Saturn cuts it into blocks (Embedding,
    # Linear+GELU, Linear+GELU, Linear).
    width = 64
    lm = nn.Sequential(
        nn.Embedding(VOCAB, width),
        nn.Linear(width, width), nn.GELU(),
        nn.Linear(width, width), nn.GELU(),
        nn.Linear(width, VOCAB),
    )
    torch.jit.script(lm).save(os.path.join(HERE, "lm.pt"))

    # Vectors around one prototype per class.
    classes, width = 5, 32
    prototypes = torch.randn(classes, width)
    targets = torch.randint(0, classes, (512,))
    inputs = prototypes[targets] + 0.5 * torch.randn(512, width)
    torch.save([inputs, targets], os.path.join(HERE, "vectors.pt"))
    torch.jit.script(Residual(width, classes)).save(os.path.join(HERE, "residual.pt"))
    print("lm.pt, residual.pt, vectors.pt written")


if __name__ == "__main__":
    main()
