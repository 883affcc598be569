#!/usr/bin/env bash
# What keeping the best evaluation's model costs (docs/worker.md, "The best
# model"): one task of bench/executor/asha.yaml's GPT (800 steps, evaluated
# every 50 on 4 batches) trained by saturn-worker on one device, without and
# with --best-dir, alternating, twice each, on the same single core
# (OPENBLAS_NUM_THREADS=1, --threads 1); prints each side's faster wall
# time, how many times the best was replaced (the evaluations that improved
# on it: with this learning rate, every one, the worst case) and the ratio.
#
#   bench/executor/best_model.sh [BUILD_DIR] [STEPS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
build=${1:-$source_dir/build}
steps=${2:-800}
worker=$build/src/worker/saturn-worker
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/task.json" <<JSON
{"name": "gpt", "model": {"type": "gpt", "layers": 2, "d_model": 128, "heads": 4, "seq_len": 64},
 "data": {"type": "text", "path": "$source_dir/examples/data/corpus.txt"},
 "batch_size": 8, "optimizer": {"type": "adamw", "lr": 1.0e-3}, "steps": $steps,
 "eval": {"every": 50, "batches": 4}}
JSON
run() {  # run NAME [EXTRA FLAGS...]: prints the wall seconds
  local name=$1; shift
  local start end
  start=$(date +%s.%N)
  OPENBLAS_NUM_THREADS=1 "$worker" execute --task "$work/task.json" --technique single --gpus 1 \
    --threads 1 --out "$work/$name.json" --from-step 0 --to-step "$steps" \
    --checkpoint-dir "$work/$name-ck" "$@" >"$work/$name.out" 2>"$work/$name.err"
  end=$(date +%s.%N)
  echo "$end - $start" | bc
}
min() { echo "if ($1 < $2) $1 else $2" | bc; }
plain=$(run plain)
kept=$(run kept --best-dir "$work/best" --select eval_loss:min)
rm -rf "$work/plain-ck" "$work/kept-ck" "$work/best"
plain=$(min "$plain" "$(run plain)")
kept=$(min "$kept" "$(run kept --best-dir "$work/best" --select eval_loss:min)")
evals=$(grep -c "eval_step=" "$work/kept.out")
improved=$(awk '/eval_step=/ { for (i = 1; i <= NF; i++) if ($i ~ /^eval_loss=/) { v = substr($i, 11) + 0;
  if (n == 0 || v < best) { best = v; k++ } n++ } } END { print k }' "$work/kept.out")
echo "steps $steps, evaluations $evals, best replaced $improved times"
echo "without --best-dir: ${plain} s"
echo "with --best-dir:    ${kept} s"
echo "ratio (with / without): $(echo "scale=3; $kept / $plain" | bc)"
