#!/usr/bin/python3
"""Makes what examples/finetune/workload.yaml fine-tunes: a small pretrained
GPT-2 in Hugging Face's layout (gpt2-tiny/: model.safetensors and
config.json, as `transformers` saves one) and token data to fine-tune it on
(train.bin, eval.bin: uint16 ids).

No model hub is reachable here, so the script pretrains the model itself,
briefly (about a minute), with PyTorch: on a small artificial language
where each of 128 words may be followed by one of two others (a fixed
random table). The fine-tuning data speaks a dialect of it, with the
successors of every third word changed: the pretrained model knows most of
it and must learn the rest.
A real GPT-2 goes in the same way (docs/finetune.md).

    /usr/bin/python3 examples/finetune/make_checkpoint.py [FOLDER]   # default: beside this file
"""
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import saturn_models  # noqa: E402

VOCAB, POSITIONS, WORDS, SEQ = 4096, 64, 128, 32


def table(seed, changed_from=None):
    """Each word's two successors; with changed_from, every third word's redrawn."""
    rng = np.random.default_rng(seed)
    successors = rng.integers(0, WORDS, size=(WORDS, 2))
    if changed_from is not None:
        kept = np.arange(WORDS) % 3 != 0
        successors[kept] = changed_from[kept]
    return successors


def language(successors, tokens, seed):
    rng = np.random.default_rng(seed)
    out = np.empty(tokens, dtype=np.uint16)
    word = rng.integers(0, WORDS)
    choices = rng.integers(0, 2, size=tokens)
    for i in range(tokens):
        out[i] = word
        word = successors[word, choices[i]]
    return out


def pretrain(model, data, steps=200, batch=16):
    """A few hundred AdamW steps on the base language."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    rng = np.random.default_rng(0)
    ids = torch.from_numpy(data.astype(np.int64))
    for step in range(steps):
        starts = rng.integers(0, len(ids) - SEQ - 1, size=batch)
        window = torch.stack([ids[s:s + SEQ + 1] for s in starts])
        loss = saturn_models.loss(model, window[:, :-1], window[:, 1:])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return loss.item()


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else HERE
    torch.manual_seed(0)
    torch.set_num_threads(2)
    model = saturn_models.GPT2(layers=4, d_model=256, heads=4, vocab=VOCAB, positions=POSITIONS)
    with torch.no_grad():  # GPT-2's initialisation: N(0, 0.02) matrices, zero biases
        for name, p in model.named_parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.02)
            elif name.endswith("bias"):
                p.zero_()
    base = table(1)
    start = time.time()
    loss = pretrain(model, language(base, 100_000, 1))
    saturn_models.save_hf(model, os.path.join(folder, "gpt2-tiny"))
    dialect = table(2, changed_from=base)
    language(dialect, 200_000, 3).tofile(os.path.join(folder, "train.bin"))
    language(dialect, 20_000, 4).tofile(os.path.join(folder, "eval.bin"))
    print("wrote %s (%d parameters, pretrained in %.0f s to loss %.2f), train.bin, eval.bin"
          % (os.path.join(folder, "gpt2-tiny"), sum(p.numel() for p in model.parameters()),
             time.time() - start, loss))


if __name__ == "__main__":
    main()
