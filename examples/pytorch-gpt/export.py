#!/usr/bin/python3
"""The model of train.py for Saturn's own engine (docs/byo.md, door 2): exports
it to TorchScript and its data as token ids, for engine.yaml.

    /usr/bin/python3 examples/pytorch-gpt/export.py [--out DIR]
    saturn run examples/pytorch-gpt/engine.yaml

Writes gpt.pt (the same nn.Sequential of blocks as train.py trains, with the
same initial weights) and tokens.bin (the corpus as little-endian uint16
character ids) next to this script, or in DIR.
"""
import argparse
import os

import torch

from model import HERE, Corpus, gpt


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=HERE, help="folder for gpt.pt and tokens.bin")
    out = parser.parse_args().out
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = gpt()
    torch.jit.script(model).save(os.path.join(out, "gpt.pt"))
    ids = Corpus().ids
    with open(os.path.join(out, "tokens.bin"), "wb") as f:
        f.write(ids.to(torch.int32).numpy().astype("<u2").tobytes())
    print(f"gpt.pt ({sum(p.numel() for p in model.parameters())} parameters), "
          f"tokens.bin ({len(ids)} tokens) in {out}")


if __name__ == "__main__":
    main()
