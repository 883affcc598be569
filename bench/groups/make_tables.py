#!/usr/bin/env python3
"""Write the CSV tables of the "learning over groups" benchmarks.

Two tables, one subcommand each:

  zipf    a synthetic regression table with many groups of Zipf-distributed
          sizes, each group its own linear model:

              make_tables.py zipf --out /tmp/zipf.csv --groups 1000 \\
                  --rows 2000000 --features 8 --seed 0 [--min-rows 40]

          Header `group,f0,...,f{F-1},y`. Group g has its own weights
          w_g ~ N(0, 1)^F and bias b_g ~ N(0, 1); features x ~ N(0, 1);
          y = x . w_g + b_g + 0.1 N(0, 1). Group sizes follow Zipf's law,
          max(--min-rows, c * rank^-1.1), c chosen so that they sum to
          --rows exactly (when --rows >= groups * min-rows); which
          group gets which rank is drawn at random, so that sorting by name
          does not sort by size. Names are g0000, g0001, ... (zero-padded to
          at least 4 digits); the rows of all groups are interleaved in a
          random order. Deterministic in --seed.

  philly  the Philly trace (Microsoft's 2017 GPU cluster jobs) as a table
          grouped by cluster:

              make_tables.py philly --out /tmp/philly.csv \\
                  [--source /work/shared/data/philly/philly_jobs.csv]

          Reads `timestamp,duration,num_gpus,gpu_time,cluster` (timestamp
          like 2017-10-09 07:01:55) and writes
          `cluster,hour,weekday,gpus,log_duration`: the submission hour
          (0-23), the weekday (Monday 0 .. Sunday 6), num_gpus and
          ln(duration + 1). Rows whose timestamp, duration, num_gpus or
          cluster is missing or unparseable (or whose duration is negative)
          are skipped and counted on stderr. The default --source is
          ../shared/data/philly/philly_jobs.csv relative to the repository
          root.

Both print a one-line summary to stderr: rows, groups, the smallest and the
largest group. Needs numpy only (run with the python that has it, e.g.
/usr/bin/python3).
"""
import argparse
import collections
import csv
import datetime
import math
import os
import sys
import time

import numpy as np

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
DEFAULT_PHILLY = os.path.join(REPO_ROOT, "..", "shared", "data", "philly", "philly_jobs.csv")
ZIPF_EXPONENT = 1.1
CHUNK_ROWS = 65536  # rows formatted per write


def summary(rows, sizes, seconds, out):
    """One line on stderr: rows, groups, smallest and largest group."""
    small = min(sizes.items(), key=lambda kv: (kv[1], kv[0]))
    large = max(sizes.items(), key=lambda kv: (kv[1], kv[0]))
    print(f"{out}: {rows} rows, {len(sizes)} groups, smallest {small[0]} ({small[1]} rows), "
          f"largest {large[0]} ({large[1]} rows), {seconds:.1f} s", file=sys.stderr)


def zipf_sizes(groups, rows, min_rows):
    """Group sizes by rank: max(min_rows, floor(c * rank^-1.1)).

    c is found by bisection so that the sizes sum to at most `rows`; the few
    rows left over by rounding go to the largest group, so that they sum to
    max(rows, groups * min_rows) exactly. Returns int64, largest first.
    """
    if rows <= groups * min_rows:
        return np.full(groups, min_rows, dtype=np.int64)
    weight = np.arange(1, groups + 1, dtype=np.float64) ** -ZIPF_EXPONENT

    def sizes_for(c):
        return np.maximum(min_rows, np.floor(c * weight)).astype(np.int64)

    lo, hi = 0.0, float(rows)  # sizes_for(rows).sum() >= rows
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if sizes_for(mid).sum() <= rows else (lo, mid)
    sizes = sizes_for(lo)
    sizes[0] += rows - int(sizes.sum())
    return sizes


def write_rows(f, fmt, table):
    """Write a float64 (rows, cols) array with one %-format per row, in chunks.

    Formatting a whole chunk with one `%` is ~10x faster than np.savetxt.
    """
    for start in range(0, table.shape[0], CHUNK_ROWS):
        chunk = table[start:start + CHUNK_ROWS]
        f.write((fmt * chunk.shape[0]) % tuple(chunk.ravel().tolist()))


def cmd_zipf(args):
    """The synthetic table; see the module docstring."""
    if args.groups < 1 or args.features < 1 or args.min_rows < 1:
        sys.exit("make_tables: --groups, --features and --min-rows must be >= 1")
    t0 = time.time()
    rng = np.random.default_rng(args.seed)
    g, nf = args.groups, args.features
    width = max(4, len(str(g - 1)))
    names = [f"g{i:0{width}d}" for i in range(g)]
    sizes = zipf_sizes(g, args.rows, args.min_rows)[rng.permutation(g)]  # size of group i
    weights = rng.standard_normal((g, nf))
    bias = rng.standard_normal(g)
    gid = np.repeat(np.arange(g), sizes)
    gid = gid[rng.permutation(gid.size)]  # interleave the groups
    n = gid.size
    x = rng.standard_normal((n, nf))
    y = np.einsum("ij,ij->i", x, weights[gid]) + bias[gid] + 0.1 * rng.standard_normal(n)
    table = np.empty((n, nf + 2))
    table[:, 0] = gid
    table[:, 1:nf + 1] = x
    table[:, nf + 1] = y
    fmt = f"g%0{width}d" + ",%.6g" * (nf + 1) + "\n"
    with open(args.out, "w", newline="") as f:
        f.write("group," + ",".join(f"f{i}" for i in range(nf)) + ",y\n")
        write_rows(f, fmt, table)
    summary(n, dict(zip(names, sizes.tolist())), time.time() - t0, args.out)


def parse_philly_row(rec):
    """(cluster, hour, weekday, gpus, log_duration) of one trace record, or None."""
    try:
        ts = datetime.datetime.strptime(rec["timestamp"].strip(), "%Y-%m-%d %H:%M:%S")
        duration = float(rec["duration"])
        gpus = int(float(rec["num_gpus"]))
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    cluster = (rec.get("cluster") or "").strip()
    if not cluster or not math.isfinite(duration) or duration < 0:
        return None
    return cluster, ts.hour, ts.weekday(), gpus, math.log(duration + 1.0)


def cmd_philly(args):
    """The Philly table; see the module docstring."""
    t0 = time.time()
    source = os.path.normpath(args.source)
    kept, skipped = [], 0
    with open(source, newline="") as f:
        reader = csv.DictReader(f)
        missing = {"timestamp", "duration", "num_gpus", "cluster"} - set(reader.fieldnames or [])
        if missing:
            sys.exit(f"make_tables: {source} lacks column(s) {', '.join(sorted(missing))}")
        for rec in reader:
            if not any((v or "").strip() for v in rec.values() if isinstance(v, str)):
                continue  # a blank line
            row = parse_philly_row(rec)
            if row is None:
                skipped += 1
            else:
                kept.append(row)
    sizes = collections.Counter(r[0] for r in kept)
    with open(args.out, "w", newline="") as f:
        f.write("cluster,hour,weekday,gpus,log_duration\n")
        f.writelines(f"{c},{h},{w},{g},{d:.6g}\n" for c, h, w, g, d in kept)
    print(f"{source}: skipped {skipped} row(s) with a missing or unparseable "
          f"timestamp, duration, num_gpus or cluster", file=sys.stderr)
    if not kept:
        sys.exit("make_tables: no rows left")
    summary(len(kept), sizes, time.time() - t0, args.out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="See the module docstring for the tables' definitions.")
    sub = p.add_subparsers(dest="table", required=True)
    z = sub.add_parser("zipf", help="synthetic per-group linear regression, Zipf group sizes")
    z.add_argument("--out", required=True, help="CSV to write")
    z.add_argument("--groups", type=int, default=1000, help="number of groups (default 1000)")
    z.add_argument("--rows", type=int, default=2000000, help="total rows (default 2000000)")
    z.add_argument("--features", type=int, default=8, help="feature columns (default 8)")
    z.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    z.add_argument("--min-rows", type=int, default=40, help="smallest group (default 40)")
    z.set_defaults(func=cmd_zipf)
    ph = sub.add_parser("philly", help="the Philly trace grouped by cluster")
    ph.add_argument("--out", required=True, help="CSV to write")
    ph.add_argument("--source", default=DEFAULT_PHILLY,
                    help="philly_jobs.csv (default: ../shared/data/philly/philly_jobs.csv "
                         "from the repository root)")
    ph.set_defaults(func=cmd_philly)
    args = p.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
