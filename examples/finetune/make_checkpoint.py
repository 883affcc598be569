#!/usr/bin/env python3
"""Makes what examples/finetune/workload.yaml fine-tunes: a small GPT-2 in
Hugging Face's layout (gpt2-tiny/: model.safetensors and config.json, as
`transformers` saves one) and token data (train.bin, eval.bin: uint16 ids).

The "pretrained" weights are random (this machine reaches no model hub); a
real GPT-2 goes in the same way (docs/finetune.md). The data is a small
artificial language of 4096 tokens: each sequence repeats a short seeded
phrase with small variations, which a model learns from its context.

    /usr/bin/python3 examples/finetune/make_checkpoint.py [FOLDER]   # default: beside this file
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import saturn_models  # noqa: E402

VOCAB, POSITIONS = 4096, 64


def language(tokens, seed):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < tokens:
        phrase = rng.integers(0, VOCAB, size=rng.integers(3, 9))
        for _ in range(rng.integers(4, 12)):
            varied = phrase.copy()
            varied[rng.integers(0, len(varied))] = rng.integers(0, VOCAB)
            out.extend(varied.tolist())
    return np.array(out[:tokens], dtype=np.uint16)


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else HERE
    torch.manual_seed(0)
    model = saturn_models.GPT2(layers=4, d_model=256, heads=4, vocab=VOCAB, positions=POSITIONS)
    with torch.no_grad():  # GPT-2's initialisation: N(0, 0.02) matrices, zero biases
        for name, p in model.named_parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.02)
            elif name.endswith("bias"):
                p.zero_()
    saturn_models.save_hf(model, os.path.join(folder, "gpt2-tiny"))
    language(200_000, 1).tofile(os.path.join(folder, "train.bin"))
    language(20_000, 2).tofile(os.path.join(folder, "eval.bin"))
    print("wrote %s (%d parameters), train.bin, eval.bin"
          % (os.path.join(folder, "gpt2-tiny"), sum(p.numel() for p in model.parameters())))


if __name__ == "__main__":
    main()
