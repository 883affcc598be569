#!/usr/bin/env python3
"""PyTorch side of bench/engine: the same GPT as Saturn's engine (same layers,
same ops, same initial scale), trained with the same batch, optimizer and
thread counts, so that engine_bench can print C++/PyTorch step-time ratios
measured in the same run.

    python3 torch_bench.py --layers 4 --d-model 128 --heads 4 --seq-len 64 \\
        --batch 16 --threads 1 --warmup 2 --measure 8 --ranks 1
prints one JSON line: {"technique": "single", "step_s": 0.123, ...}.
With --ranks 2 it runs torch DistributedDataParallel over Gloo on loopback,
one process per rank, and reports rank 0's median step time.
"""
import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F

VOCAB = 256


class Layer(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 4 * width)
        self.fc2 = nn.Linear(4 * width, width)

    def attention(self, x):
        batch, tokens, width = x.shape
        head_width = width // self.heads
        qkv = self.qkv(x).view(batch, tokens, 3, self.heads, head_width).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(head_width))
        future = torch.ones(tokens, tokens, dtype=torch.bool).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        mixed = torch.matmul(torch.softmax(scores, -1), v)
        return self.proj(mixed.transpose(1, 2).reshape(batch, tokens, width))

    def forward(self, x):
        h = x + self.attention(self.ln1(x))
        return h + self.fc2(F.gelu(self.fc1(self.ln2(h))))


class Gpt(nn.Module):
    def __init__(self, layers, width, heads, seq_len):
        super().__init__()
        self.tokens = nn.Parameter(torch.randn(VOCAB, width) * 0.02)
        self.positions = nn.Parameter(torch.randn(seq_len, width) * 0.02)
        self.layers = nn.ModuleList(Layer(width, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(width)
        self.out = nn.Linear(width, VOCAB)
        for module in self.modules():
            if isinstance(module, nn.Linear):
                nn.init.normal_(module.weight, 0.0, 0.02)
                nn.init.zeros_(module.bias)

    def forward(self, x):
        h = F.embedding(x, self.tokens) + self.positions[: x.shape[1]]
        for layer in self.layers:
            h = layer(h)
        return self.out(self.ln(h))


def measure(args, rank, world):
    torch.manual_seed(0)
    model = Gpt(args.layers, args.d_model, args.heads, args.seq_len)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, foreach=False)
    local = args.batch // world
    count = args.batch * args.seq_len
    generator = torch.Generator().manual_seed(rank)
    samples = []
    for step in range(args.warmup + args.measure):
        start = time.perf_counter()
        window = torch.randint(0, VOCAB, (local, args.seq_len + 1), generator=generator)
        inputs, targets = window[:, :-1], window[:, 1:]
        logits = model(inputs)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets.reshape(-1), reduction="sum") / count
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        loss.item()
        if step >= args.warmup:
            samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def rank_main(rank, args, store_path, results):
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method="file://" + store_path, rank=rank,
                            world_size=args.ranks)
    step_s = measure(args, rank, args.ranks)
    if rank == 0:
        results.put(step_s)
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    for name, default in [("layers", 4), ("d-model", 128), ("heads", 4), ("seq-len", 64),
                          ("batch", 16), ("threads", 1), ("warmup", 2), ("measure", 8),
                          ("ranks", 1)]:
        parser.add_argument("--" + name, type=int, default=default)
    args = parser.parse_args()
    if args.ranks == 1:
        torch.set_num_threads(args.threads)
        step_s = measure(args, 0, 1)
    else:
        with tempfile.TemporaryDirectory() as folder:
            context = mp.get_context("spawn")
            results = context.SimpleQueue()
            mp.spawn(rank_main, args=(args, os.path.join(folder, "store"), results),
                     nprocs=args.ranks, join=True)
            step_s = results.get()
    json.dump({"technique": "single" if args.ranks == 1 else "ddp", "ranks": args.ranks,
               "threads": args.threads, "step_s": step_s, "torch": torch.__version__}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
