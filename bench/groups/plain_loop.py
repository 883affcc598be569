#!/usr/bin/env python3
"""The baseline of bench/groups: what a user writes today to learn over groups.

One model per group, trained one group after another in plain PyTorch on the
same cores as Saturn, then evaluated on the group's held-out rows:

    OPENBLAS_NUM_THREADS=1 /usr/bin/python3 plain_loop.py --csv /tmp/zipf.csv \\
        --group-by group --features f0,f1,f2,f3,f4,f5,f6,f7 --label y \\
        --epochs 5 --batch 64 --lr 1e-2 --layers 0 --width 16 \\
        --holdout 0.2 --split-seed 0 --threads 1 --out results.json [--limit-groups N]

torch.set_num_threads(--threads) sets PyTorch's intra-op threads; the caller
sets OPENBLAS_NUM_THREADS (and OMP_NUM_THREADS if wanted) in the environment,
since BLAS reads them when it loads.

Data: the CSV's columns are found by header name; features and label are read
as float32 (regression, MSE). Groups are the distinct values of --group-by,
sorted by name (UTF-8 byte order, as Saturn's std::map). Each group's rows,
in file order, are shuffled exactly as Saturn's table::GroupShuffle
(src/table/grouped_table.cc: FNV-1a of the name into splitmix64, then
Fisher-Yates), and the last llround(rows * holdout), clamped to
[1, rows - 1], are held out; see group_split(). Groups of fewer than 2 rows
are skipped with a warning (Saturn rejects groups under data.min_group_rows).

Model: --layers 0 is nn.Linear(F, 1); otherwise Linear(F, width) + ReLU,
(layers - 1) x (Linear(width, width) + ReLU), Linear(width, 1). Adam(lr).
Each epoch draws a permutation of the training rows (torch.randperm, a
generator seeded per group), takes mini-batches of --batch (the last one may
be partial), MSE mean, backward, step. Tensors are made once per group; no
DataLoader. Then the held-out MSE (mean over the held-out rows).

Writes JSON to --out: {"seconds": wall time of training and evaluating all
groups, "read_seconds": reading the CSV, "split_seconds": grouping and
shuffling, "groups": {name: {"rows", "train_rows", "eval_loss", "seconds"}},
"threads", "steps": total optimizer steps, ...}, and one summary line to
stderr. --self-test prints GroupShuffle(10, 0, "g0") and
GroupShuffle(7, 3, "store-7") for comparison with the C++ implementation.
"""
import argparse
import csv
import json
import math
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

MASK = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
FNV_PRIME = 0x100000001B3
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB


def shuffle_state(seed, name):
    """The generator's starting state: seed ^ gamma, then FNV-1a over the name's bytes."""
    state = (seed ^ GAMMA) & MASK
    for c in name.encode("utf-8"):
        state = ((state ^ c) * FNV_PRIME) & MASK
    return state


def group_shuffle_reference(n, seed, name):
    """GroupShuffle(n, seed, name) in plain Python integers, line for line as the C++."""
    state = shuffle_state(seed, name)
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        state = (state + GAMMA) & MASK
        z = state
        z = ((z ^ (z >> 30)) * MIX1) & MASK
        z = ((z ^ (z >> 27)) * MIX2) & MASK
        z ^= z >> 31
        j = z % (i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def group_shuffle(n, seed, name):
    """GroupShuffle(n, seed, name): the same permutation, its draws vectorized.

    The k-th draw (k = 1, 2, ...) mixes state0 + k * gamma (mod 2^64), so all
    draws are computed at once in uint64 (numpy wraps modulo 2^64); only the
    swaps of Fisher-Yates run one after another. Returns a list of ints.
    """
    if n <= 1:
        return list(range(n))
    u = np.uint64
    k = np.arange(1, n, dtype=np.uint64)  # draw k is used for i = n - k
    with np.errstate(over="ignore"):
        z = u(shuffle_state(seed, name)) + k * u(GAMMA)
        z = (z ^ (z >> u(30))) * u(MIX1)
        z = (z ^ (z >> u(27))) * u(MIX2)
        z ^= z >> u(31)
    i = np.arange(n - 1, 0, -1, dtype=np.uint64)
    js = (z % (i + u(1))).tolist()
    order = list(range(n))
    for i, j in zip(range(n - 1, 0, -1), js):
        order[i], order[j] = order[j], order[i]
    return order


def held_out(n, holdout):
    """llround(n * holdout) (halves away from zero) clamped to [1, n - 1]."""
    x = abs(n * holdout)
    held = math.floor(x)
    held += 1 if x - held >= 0.5 else 0  # exact, unlike floor(x + 0.5)
    return min(max(held, 1), n - 1)


def group_split(names_rows, seed, holdout):
    """Saturn's split of each group into training and held-out rows.

    names_rows: {name: [row indices in file order]} (or (name, rows) pairs).
    Returns [(name, train_rows, held_rows)] sorted by name (UTF-8 bytes), where
    the group's rows are rows[order[k]] for order = GroupShuffle(n, seed, name),
    the first n - held train and the last held are held out. Groups of fewer
    than 2 rows cannot be split and are left out.
    """
    items = names_rows.items() if isinstance(names_rows, dict) else names_rows
    out = []
    for name, rows in sorted(items, key=lambda kv: kv[0].encode("utf-8")):
        n = len(rows)
        if n < 2:
            print(f"plain_loop: group {name!r} has {n} row(s), skipped", file=sys.stderr)
            continue
        shuffled = [rows[k] for k in group_shuffle(n, seed, name)]
        train = n - held_out(n, holdout)
        out.append((name, shuffled[:train], shuffled[train:]))
    return out


def read_table(path, group_by, features, label):
    """(x float32 [rows, F], y float32 [rows, 1], {group: [row indices in file order]})."""
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        col = {name: i for i, name in enumerate(header)}
        missing = [c for c in [group_by, label] + features if c not in col]
        if missing:
            sys.exit(f"plain_loop: {path} has no column(s) {', '.join(missing)}; header: {header}")
        gi, li, fi = col[group_by], col[label], [col[c] for c in features]
        groups, values = {}, []
        for line, rec in enumerate(reader, start=2):
            if not rec:
                continue
            try:
                values.append([float(rec[i]) for i in fi] + [float(rec[li])])
            except (ValueError, IndexError):
                sys.exit(f"plain_loop: {path}:{line}: a feature or the label is not a number "
                         f"(regression only)")
            groups.setdefault(rec[gi], []).append(len(values) - 1)
    table = np.asarray(values, dtype=np.float32).reshape(-1, len(features) + 1)
    return (torch.from_numpy(np.ascontiguousarray(table[:, :-1])),
            torch.from_numpy(np.ascontiguousarray(table[:, -1:])), groups)


def make_model(n_features, layers, width):
    """Linear for layers == 0, else an MLP of `layers` hidden ReLU layers of `width`."""
    if layers == 0:
        return nn.Linear(n_features, 1)
    mods = [nn.Linear(n_features, width), nn.ReLU()]
    for _ in range(layers - 1):
        mods += [nn.Linear(width, width), nn.ReLU()]
    return nn.Sequential(*mods, nn.Linear(width, 1))


def train_group(x, y, held_x, held_y, args, seed):
    """Train one group's model; returns (held-out MSE, optimizer steps)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = make_model(x.shape[1], args.layers, args.width)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    n, steps = x.shape[0], 0
    model.train()
    for _ in range(args.epochs):
        perm = torch.randperm(n, generator=gen)
        for start in range(0, n, args.batch):
            idx = perm[start:start + args.batch]
            opt.zero_grad(set_to_none=True)
            loss = F.mse_loss(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
            steps += 1
    model.eval()
    with torch.no_grad():
        return F.mse_loss(model(held_x), held_y).item(), steps


def self_test():
    """Print the two shuffles to compare with C++; check both implementations agree."""
    for n, seed, name in [(10, 0, "g0"), (7, 3, "store-7")]:
        print(f'GroupShuffle({n}, {seed}, "{name}") = {group_shuffle(n, seed, name)}')
    for n, seed, name in [(0, 0, "a"), (1, 0, "a"), (2, 5, "x"), (1000, 2**64 - 1, "g0999"),
                          (333, 7, "ünïcode"), (10, 0, "g0"), (7, 3, "store-7")]:
        assert group_shuffle(n, seed, name) == group_shuffle_reference(n, seed, name), (n, seed, name)
    assert [held_out(n, h) for n, h in [(10, 0.2), (12, 0.125), (2, 0.5), (5, 0.9), (3, 0.0)]] \
        == [2, 2, 1, 4, 1]
    print("self-test: vectorized shuffle equals the reference; held-out rounding ok", file=sys.stderr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="See the module docstring for details.")
    p.add_argument("--csv", help="input table")
    p.add_argument("--group-by", help="group column")
    p.add_argument("--features", help="comma-separated feature columns")
    p.add_argument("--label", help="label column (a float; MSE)")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--layers", type=int, default=0, help="hidden layers; 0 = linear (default)")
    p.add_argument("--width", type=int, default=16, help="hidden width (default 16)")
    p.add_argument("--holdout", type=float, default=0.2, help="fraction held out (default 0.2)")
    p.add_argument("--split-seed", type=int, default=0, help="seeds the split (as Saturn's)")
    p.add_argument("--seed", type=int, default=0,
                   help="seeds model init and batch order; group i uses seed + i (default 0)")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (default 1)")
    p.add_argument("--out", help="JSON results file (default: stdout)")
    p.add_argument("--limit-groups", type=int, help="only the first N groups by name")
    p.add_argument("--self-test", action="store_true", help="print the check shuffles and exit")
    args = p.parse_args()
    if args.self_test:
        self_test()
        return
    for req in ("csv", "group_by", "features", "label"):
        if getattr(args, req) is None:
            p.error(f"--{req.replace('_', '-')} is required")
    if args.batch < 1 or args.epochs < 0 or args.layers < 0 or not 0 <= args.holdout <= 1:
        p.error("--batch >= 1, --epochs >= 0, --layers >= 0 and 0 <= --holdout <= 1")
    torch.set_num_threads(args.threads)
    features = [c for c in args.features.split(",") if c]

    t0 = time.perf_counter()
    x, y, groups = read_table(args.csv, args.group_by, features, args.label)
    t1 = time.perf_counter()
    if args.limit_groups is not None:
        keep = sorted(groups, key=lambda g: g.encode("utf-8"))[:args.limit_groups]
        groups = {g: groups[g] for g in keep}
    split = group_split(groups, args.split_seed, args.holdout)
    # Each group's rows gathered once, before timing: the user's tensors per group.
    data = [(name, x[train], y[train], x[held], y[held])
            for name, train, held in ((n, torch.tensor(t), torch.tensor(h)) for n, t, h in split)]
    t2 = time.perf_counter()

    results, total_steps = {}, 0
    for i, (name, tx, ty, hx, hy) in enumerate(data):
        g0 = time.perf_counter()
        loss, steps = train_group(tx, ty, hx, hy, args, args.seed + i)
        total_steps += steps
        results[name] = {"rows": tx.shape[0] + hx.shape[0], "train_rows": tx.shape[0],
                         "eval_loss": loss, "seconds": time.perf_counter() - g0}
    t3 = time.perf_counter()

    out = {"seconds": t3 - t2, "read_seconds": t1 - t0, "split_seconds": t2 - t1,
           "threads": args.threads, "steps": total_steps, "epochs": args.epochs,
           "batch": args.batch, "lr": args.lr, "layers": args.layers, "width": args.width,
           "holdout": args.holdout, "split_seed": args.split_seed, "torch": torch.__version__,
           "groups": results}
    text = json.dumps(out, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    losses = [r["eval_loss"] for r in results.values()]
    print(f"plain_loop: {len(results)} groups, {total_steps} steps, {t3 - t2:.2f} s training "
          f"(read {t1 - t0:.2f} s, split {t2 - t1:.2f} s), threads {args.threads}, "
          f"mean eval MSE {sum(losses) / max(len(losses), 1):.4g}", file=sys.stderr)


if __name__ == "__main__":
    main()
