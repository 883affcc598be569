#!/usr/bin/env bash
# Learning over groups (issue 45, docs/groups.md), side by side on this
# machine's cores, one after another in this script:
#   1. a plain PyTorch program that trains each group's model one after
#      another (bench/groups/plain_loop.py; what a user writes today), on
#      the same 2 cores as saturn run's 2 devices (2 threads; one thread
#      runs it as fast: its steps are too small to split);
#   2. the engine alone: every group as one fused array, against each group
#      alone through the same code, in one process (array_bench);
#   3. `saturn run` end to end (profiling, planning, CSV reading counted),
#      from an empty cache;
#   4. with --no-pack also `saturn run --no-pack`: one task (one worker) per
#      group (minutes for 1,000 groups).
# The table: N Zipf-sized groups of 8 features (bench/groups/make_tables.py),
# linear regression, 5 epochs of batch 64, Adam at 1e-2.
#
# With --philly, the table is the Philly trace grouped by cluster instead
# (make_tables.py philly: predict log duration from submission hour,
# weekday and GPU count; 15 clusters of 3 to 41,226 jobs, so
# min_group_rows: 3).
#
#   bench/groups/groups_bench.sh [BUILD_DIR] [--groups N] [--rows R] [--no-pack] [--philly]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
build=$source_dir/build
groups=1000 rows=2000000 no_pack=0 philly=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --groups) groups=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --no-pack) no_pack=1; shift ;;
    --philly) philly=1; shift ;;
    *) build=$1; shift ;;
  esac
done
work=${WORK:-$(mktemp -d)}
echo "work folder: $work" >&2
if [[ $philly == 1 ]]; then
  table=$work/philly.csv features=hour,weekday,gpus label=log_duration group_by=cluster
  [[ -f $table ]] || /usr/bin/python3 "$here/make_tables.py" philly --out "$table"
  extra=", min_group_rows: 3" bench_extra=(--min-group-rows 3)
else
  table=$work/zipf.csv features=f0,f1,f2,f3,f4,f5,f6,f7 label=y group_by=group extra="" bench_extra=()
  [[ -f $table ]] || /usr/bin/python3 "$here/make_tables.py" zipf --out "$table" --groups "$groups" \
    --rows "$rows" --features 8 --seed 0
fi
cat >"$work/w.yaml" <<YAML
cluster: {nodes: [{name: n0, gpus: 2, gpu_memory_gib: 4}]}
tasks:
  - name: g
    model: {type: mlp, layers: 0}
    data: {type: table, path: $table, features: [$features], label: $label, group_by: $group_by$extra}
    batch_size: 64
    optimizer: {type: adam, lr: 1.0e-2}
    epochs: 5
YAML
seconds() {  # seconds COMMAND...: runs it, prints its wall seconds
  local start end
  start=$(date +%s.%N)
  "$@" >"$work/last.out" 2>&1 || { cat "$work/last.out" >&2; exit 1; }
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
plain=$(OPENBLAS_NUM_THREADS=2 seconds /usr/bin/python3 "$here/plain_loop.py" --csv "$table" \
  --group-by "$group_by" --features "$features" --label "$label" --epochs 5 --batch 64 --lr 1e-2 --threads 2 \
  --out "$work/plain.json")
OPENBLAS_NUM_THREADS=1 "$build/bench/groups/array_bench" --csv "$table" --group-by "$group_by" --features "$features" --label "$label" \
  "${bench_extra[@]}" --threads 1 --group-file "$work/bench.groups" --out "$work/array.json" 2>/dev/null
# From an empty cache and a fresh run folder each time (WORK may be reused
# for its table; an old run folder would resume, not train).
rm -rf "$work/cache" "$work/run" "$work/cache-np" "$work/run-no-pack"
saturn=$(XDG_CACHE_HOME=$work/cache seconds "$build/src/cli/saturn" run "$work/w.yaml" \
  --run-dir "$work/run")
if [[ $no_pack == 1 ]]; then
  alone=$(XDG_CACHE_HOME=$work/cache-np seconds "$build/src/cli/saturn" run "$work/w.yaml" \
    --run-dir "$work/run-no-pack" --no-pack)
else
  alone=""
fi
/usr/bin/python3 - "$work" "$plain" "$saturn" "$alone" <<'PY'
import json, statistics, sys
work, plain_s, saturn_s, alone_s = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
plain = json.load(open(f"{work}/plain.json"))
array = json.load(open(f"{work}/array.json"))
run = json.load(open(f"{work}/run/report.json"))
ev = [json.loads(l) for l in open(f"{work}/run/events.jsonl")]
plan = next(e for e in ev if e["event"] == "plan")
saturn_loss = [t["final_eval_loss"] for t in run["tasks"]]
plain_loss = [g["eval_loss"] for g in plain["groups"].values()]
print(f"groups: {len(plain['groups'])}, steps: {array['steps']}")
print(f"plain PyTorch loop, 2 threads: {plain_s:.1f} s wall (reading {plain['read_seconds']:.1f} s, "
      f"training {plain['seconds']:.1f} s)")
print(f"engine: fused array {array['fused_seconds']:.2f} s against each group alone "
      f"{array['alone_seconds']:.2f} s, both 1 thread: "
      f"{array['alone_seconds'] / array['fused_seconds']:.2f}x; "
      f"trajectories apart at most {array['max_relative_difference']:.1e}")
print(f"saturn run: {saturn_s:.1f} s wall (profiling {plan['profiling_s']:.1f} s, planning "
      f"{plan['planning_s']:.1f} s, makespan {run['makespan_s']:.1f} s): "
      f"{plain_s / saturn_s:.2f}x faster than the plain loop end to end")
if alone_s:
    print(f"saturn run --no-pack: {float(alone_s):.1f} s wall: arrays {float(alone_s) / saturn_s:.2f}x faster")
print(f"median held-out loss per group: saturn {statistics.median(saturn_loss):.4f}, "
      f"plain loop {statistics.median(plain_loss):.4f}")
PY
