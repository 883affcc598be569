#!/usr/bin/env bash
# The main job, end to end on this machine: installs what is missing, builds
# Saturn, and plans a Saturn-like workload (the paper's TXT grid: GPT-2 1.5B
# and GPT-J 6B x 2 batch sizes x 3 learning rates on one node of 8 GPUs) from
# its profile, writes the plan and its Gantt chart, checks the plan with the
# independent validator and compares it with current practice.
#
# Until the training path lands, this runs planning only (profile -> plan ->
# Gantt) on a profile produced by the benchmark's runtime model.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2 --target saturn
out=out/quickstart
mkdir -p "$out"
ex=examples/planning
./build/src/cli/saturn plan --cluster $ex/cluster.yaml --profile $ex/profile.csv \
  --time-limit 5 --output $out/plan.json --gantt $out/plan.svg
./build/src/cli/saturn validate --cluster $ex/cluster.yaml --profile $ex/profile.csv --plan $out/plan.json
./build/src/cli/saturn plan --cluster $ex/cluster.yaml --profile $ex/profile.csv \
  --solver current-practice --output $out/current-practice.json --gantt $out/current-practice.svg
makespan() { sed -n 's/^  "makespan_s": \([0-9.e+-]*\),*$/\1/p' "$1"; }
awk -v a="$(makespan $out/plan.json)" -v c="$(makespan $out/current-practice.json)" 'BEGIN {
  printf "Saturn plan: %.1f h vs current practice %.1f h -> %.2fx faster\n", a/3600, c/3600, c/a }'
echo "plan: $out/plan.json   chart: $out/plan.svg   (current practice: $out/current-practice.svg)"
