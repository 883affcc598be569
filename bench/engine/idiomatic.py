#!/usr/bin/env python3
"""The yardstick of bench/engine: what a user would write in PyTorch.

Not a copy of Saturn's layer code (a copy cannot see our gaps), but the
idiomatic version of each zoo family, built from standard modules and
trained with standard optimizers:

  gpt     pre-LN blocks: nn.MultiheadAttention(batch_first=True) with an
          additive float causal mask, nn.LayerNorm, nn.Linear/nn.GELU MLP 4x;
          nn.Embedding tokens and learned positions; LayerNorm + Linear head
  gpt2    the same blocks with GELU's tanh approximation, GPT-2's vocabulary
          and a head tied to the token embedding
  vit     the same blocks (no mask) over patches embedded by a strided
          nn.Conv2d, a class token, learned positions
  resnet  torchvision-style basic blocks (conv3x3-BN-ReLU-conv3x3-BN, +x,
          ReLU) at constant width, a conv3x3-BN-ReLU stem, average pool, fc
  mlp     nn.Sequential of nn.Linear + nn.ReLU, then a linear head
  llama   Hugging Face's modeling_llama on its eager path: nn.Embedding, an
          RMSNorm module computing in fp32, rotate-half rotary embeddings
          shared by the layers, repeat_kv for grouped-query attention,
          matmul + softmax attention with an additive causal mask made per
          forward pass, a SwiGLU MLP of nn.Linear(bias=False), an untied
          nn.Linear head (the model fields as task.json's llama model says
          them: layers, d_model, heads, kv_heads, ffn, vocab, seq_len, ...)

Optimizers are torch.optim's SGD (momentum 0.9), Adam and AdamW with their
defaults (the foreach/fused choice is PyTorch's own). Data are random
batches made before timing (a user's DataLoader prefetches).

    python3 idiomatic.py --family gpt --model '{"layers":4,"d_model":256,"heads":4,"seq_len":128}' \\
        --batch 16 --optimizer adamw --threads 1 --warmup 2 --measure 8 [--ranks 2]
prints one JSON line {"step_s": median seconds, "steps_s": [...], ...}.
--ranks 2 runs DistributedDataParallel over Gloo, one process per rank, and
reports rank 0's median.

    python3 idiomatic.py --allreduce-bytes 4194304 --ranks 2 --threads 1
measures torch.distributed's Gloo all-reduce of a float32 tensor of that
many bytes between the ranks instead (the bandwidth in bench/engine's tp
communication model): {"allreduce_s": median seconds, ...}.
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
CLASSES = 10


class Block(nn.Module):
    def __init__(self, width, heads, gelu="none"):
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate=gelu),
                                 nn.Linear(4 * width, width))

    def forward(self, x, mask=None):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    """A GPT as a user writes it; gpt2=True: GPT-2's GELU and a tied head."""

    def __init__(self, layers, d_model, heads, seq_len, vocab=VOCAB, gpt2=False):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d_model)
        self.positions = nn.Embedding(seq_len, d_model)
        self.blocks = nn.ModuleList(Block(d_model, heads, gelu="tanh" if gpt2 else "none")
                                    for _ in range(layers))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=not gpt2)
        if gpt2:
            self.head.weight = self.tokens.weight
        mask = torch.full((seq_len, seq_len), float("-inf")).triu(1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, idx):
        t = idx.shape[1]
        x = self.tokens(idx) + self.positions(torch.arange(t, device=idx.device))
        for block in self.blocks:
            x = block(x, self.mask[:t, :t])
        return self.head(self.ln(x))


class RmsNorm(nn.Module):
    """LlamaRMSNorm: in fp32, then the weight in the input's dtype."""

    def __init__(self, width, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(width))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    x1, x2 = x[..., :x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def repeat_kv(x, n_rep):
    b, kv_heads, t, hd = x.shape
    if n_rep == 1:
        return x
    return x[:, :, None, :, :].expand(b, kv_heads, n_rep, t, hd).reshape(b, kv_heads * n_rep, t, hd)


class LlamaAttention(nn.Module):
    def __init__(self, d, heads, kv_heads, head_dim, bias):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.q_proj = nn.Linear(d, heads * head_dim, bias=bias)
        self.k_proj = nn.Linear(d, kv_heads * head_dim, bias=bias)
        self.v_proj = nn.Linear(d, kv_heads * head_dim, bias=bias)
        self.o_proj = nn.Linear(heads * head_dim, d, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = repeat_kv(k, self.heads // self.kv_heads)
        v = repeat_kv(v, self.heads // self.kv_heads)
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim) + mask
        weights = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        weights = F.dropout(weights, p=0.0, training=self.training)
        out = torch.matmul(weights, v).transpose(1, 2).contiguous().reshape(b, t, -1)
        return self.o_proj(out)


class LlamaMlp(nn.Module):
    def __init__(self, d, ffn):
        super().__init__()
        self.gate_proj = nn.Linear(d, ffn, bias=False)
        self.up_proj = nn.Linear(d, ffn, bias=False)
        self.down_proj = nn.Linear(ffn, d, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaLayer(nn.Module):
    def __init__(self, d, heads, kv_heads, head_dim, ffn, eps, bias):
        super().__init__()
        self.self_attn = LlamaAttention(d, heads, kv_heads, head_dim, bias)
        self.mlp = LlamaMlp(d, ffn)
        self.input_layernorm = RmsNorm(d, eps)
        self.post_attention_layernorm = RmsNorm(d, eps)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class Llama(nn.Module):
    """LlamaForCausalLM's eager path (no rope scaling: the bench's cases have none)."""

    def __init__(self, m):
        super().__init__()
        d, heads = m["d_model"], m["heads"]
        kv_heads = m.get("kv_heads", heads)
        head_dim = m.get("head_dim", d // heads)
        eps = m.get("norm_eps", 1e-6)
        self.embed_tokens = nn.Embedding(m["vocab"], d)
        self.layers = nn.ModuleList(
            LlamaLayer(d, heads, kv_heads, head_dim, m["ffn"], eps, m.get("attention_bias", False))
            for _ in range(m["layers"]))
        self.norm = RmsNorm(d, eps)
        self.lm_head = nn.Linear(d, m["vocab"], bias=False)
        exponents = torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim
        inv_freq = 1.0 / (m.get("rope_theta", 10000.0) ** exponents)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def rotary(self, x, positions):
        """LlamaRotaryEmbedding: cos and sin [B, T, head_dim], once per forward pass."""
        inv = self.inv_freq[None, :, None].float().expand(positions.shape[0], -1, 1)
        freqs = (inv @ positions[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)

    def forward(self, idx):
        b, t = idx.shape
        x = self.embed_tokens(idx)
        positions = torch.arange(t, device=idx.device).unsqueeze(0).expand(b, -1)
        cos, sin = self.rotary(x, positions)
        lowest = torch.finfo(x.dtype).min
        mask = torch.full((t, t), lowest, dtype=x.dtype, device=x.device).triu(1)
        mask = mask[None, None, :, :].expand(b, 1, -1, -1)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x))


GPT2_PRESETS = {"small": (12, 768, 12), "medium": (24, 1024, 16), "large": (36, 1280, 20),
                "xl": (48, 1600, 25)}


class Vit(nn.Module):
    def __init__(self, layers, d_model, heads, image_size, patch):
        super().__init__()
        self.patch = nn.Conv2d(3, d_model, patch, stride=patch)
        patches = (image_size // patch) ** 2
        self.cls = nn.Parameter(torch.zeros(1, 1, d_model))
        self.positions = nn.Parameter(torch.randn(1, patches + 1, d_model) * 0.02)
        self.blocks = nn.ModuleList(Block(d_model, heads) for _ in range(layers))
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, CLASSES)

    def forward(self, images):
        x = self.patch(images).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.positions
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x[:, 0]))


class BasicBlock(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.conv1 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + x)


class ResNet(nn.Module):
    def __init__(self, blocks, width, image_size):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, width, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(width), nn.ReLU())
        self.blocks = nn.Sequential(*[BasicBlock(width) for _ in range(blocks)])
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(width, CLASSES)

    def forward(self, x):
        return self.fc(torch.flatten(self.pool(self.blocks(self.stem(x))), 1))


def mlp(layers, width, input_width=None, classes=CLASSES):
    input_width = input_width or width
    modules = []
    for i in range(layers):
        modules += [nn.Linear(input_width if i == 0 else width, width), nn.ReLU()]
    return nn.Sequential(*modules, nn.Linear(width, classes))


def build(family, m):
    """The model, a function making one (inputs, targets) batch, and the loss."""
    if family == "gpt":
        model = Gpt(m["layers"], m["d_model"], m["heads"], m["seq_len"])

        def batch(n, g):
            window = torch.randint(0, VOCAB, (n, m["seq_len"] + 1), generator=g)
            return window[:, :-1].contiguous(), window[:, 1:].contiguous()

        def loss(out, y):
            return F.cross_entropy(out.reshape(-1, VOCAB), y.reshape(-1))
        return model, batch, loss
    if family == "gpt2":
        layers, d_model, heads = GPT2_PRESETS[m.get("preset", "small")]
        vocab, positions = m.get("vocab", 50257), m.get("positions", 1024)
        seq = m.get("seq_len", positions)
        model = Gpt(m.get("layers", layers), m.get("d_model", d_model), m.get("heads", heads),
                    positions, vocab=vocab, gpt2=True)

        def batch(n, g):
            window = torch.randint(0, vocab, (n, seq + 1), generator=g)
            return window[:, :-1].contiguous(), window[:, 1:].contiguous()

        def loss(out, y):
            return F.cross_entropy(out.reshape(-1, vocab), y.reshape(-1))
        return model, batch, loss
    if family == "llama":
        model, vocab, seq = Llama(m), m["vocab"], m["seq_len"]

        def batch(n, g):
            window = torch.randint(0, vocab, (n, seq + 1), generator=g)
            return window[:, :-1].contiguous(), window[:, 1:].contiguous()

        def loss(out, y):
            return F.cross_entropy(out.reshape(-1, vocab), y.reshape(-1))
        return model, batch, loss
    if family in ("vit", "resnet"):
        if family == "vit":
            model = Vit(m["layers"], m["d_model"], m["heads"], m["image_size"], m["patch"])
        else:
            model = ResNet(m["blocks"], m["width"], m["image_size"])
        s = m["image_size"]

        def batch(n, g):
            return (torch.randn(n, 3, s, s, generator=g),
                    torch.randint(0, CLASSES, (n,), generator=g))
        return model, batch, F.cross_entropy
    if family == "mlp":
        model = mlp(m["layers"], m["width"])

        def batch(n, g):
            return (torch.randn(n, m["width"], generator=g),
                    torch.randint(0, CLASSES, (n,), generator=g))
        return model, batch, F.cross_entropy
    raise SystemExit("idiomatic.py: unknown family " + family)


def make_optimizer(name, params, lr):
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=0.9)
    if name == "adam":
        return torch.optim.Adam(params, lr=lr)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr)
    raise SystemExit("idiomatic.py: unknown optimizer " + name)


def measure(args, rank, world):
    torch.manual_seed(0)
    device = torch.device(args.device)
    model, make_batch, loss_fn = build(args.family, json.loads(args.model))
    model.to(device)
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    model.train()
    optimizer = make_optimizer(args.optimizer, model.parameters(), args.lr)
    generator = torch.Generator().manual_seed(rank)
    steps = args.warmup + args.measure
    batches = [tuple(t.to(device) for t in make_batch(args.batch // world, generator))
               for _ in range(min(steps, 4))]
    # bf16: autocast around the forward pass and the loss, fp32 parameters
    # and optimizer state (what torch.autocast's documentation recommends).
    autocast = torch.autocast(device.type, dtype=torch.bfloat16,
                              enabled=args.precision == "bf16")
    samples = []
    for step in range(steps):
        start = time.perf_counter()
        inputs, targets = batches[step % len(batches)]
        optimizer.zero_grad()
        with autocast:
            loss = loss_fn(model(inputs), targets)
        loss.backward()
        optimizer.step()
        loss.item()
        if step >= args.warmup:
            samples.append(time.perf_counter() - start)
    return samples


def measure_allreduce(args):
    tensor = torch.ones(args.allreduce_bytes // 4)
    samples = []
    for step in range(args.warmup + args.measure):
        dist.barrier()
        start = time.perf_counter()
        dist.all_reduce(tensor)
        if step >= args.warmup:
            samples.append(time.perf_counter() - start)
    return samples


def rank_main(rank, args, store_path, results):
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method="file://" + store_path, rank=rank,
                            world_size=args.ranks)
    samples = measure_allreduce(args) if args.allreduce_bytes else measure(args, rank, args.ranks)
    if rank == 0:
        results.put(samples)
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--family", default="gpt")
    parser.add_argument("--model", default='{"layers":4,"d_model":128,"heads":4,"seq_len":64}')
    parser.add_argument("--optimizer", default="adamw")
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    for name, default in [("batch", 16), ("threads", 1), ("warmup", 2), ("measure", 8),
                          ("ranks", 1), ("allreduce-bytes", 0)]:
        parser.add_argument("--" + name, type=int, default=default)
    args = parser.parse_args()
    if args.allreduce_bytes and args.ranks < 2:
        raise SystemExit("idiomatic.py: --allreduce-bytes needs --ranks 2 or more")
    if args.ranks == 1:
        torch.set_num_threads(args.threads)
        samples = measure(args, 0, 1)
    else:
        with tempfile.TemporaryDirectory() as folder:
            context = mp.get_context("spawn")
            results = context.SimpleQueue()
            mp.spawn(rank_main, args=(args, os.path.join(folder, "store"), results),
                     nprocs=args.ranks, join=True)
            samples = results.get()
    if args.allreduce_bytes:
        json.dump({"allreduce_bytes": args.allreduce_bytes, "ranks": args.ranks,
                   "allreduce_s": statistics.median(samples), "samples_s": samples,
                   "torch": torch.__version__}, sys.stdout)
        print()
        return
    json.dump({"family": args.family, "ranks": args.ranks, "threads": args.threads,
               "device": args.device, "precision": args.precision,
               "optimizer": args.optimizer, "step_s": statistics.median(samples),
               "steps_s": samples, "torch": torch.__version__}, sys.stdout)
    print()


if __name__ == "__main__":
    main()
