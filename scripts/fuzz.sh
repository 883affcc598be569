#!/usr/bin/env bash
# Builds the readers' libFuzzer targets (tests/fuzz/; a torch-free clang build
# in build-fuzz/) and runs each for SECONDS (default 60) under nice, one after
# another (FUZZ_JOBS=2: two at a time). Seeds: tests/fuzz/corpus/<target>/
# and the examples; the corpus grown stays in build-fuzz/corpus/<target>/,
# each run's log in build-fuzz/logs/. An input that crashes, hangs (over 10 s)
# or allocates past 2 GB lands in build-fuzz/crashes/<target>/: fix the bug
# and keep the input in tests/fuzz/crashes/<target>/, which the normal test
# suite replays (fuzz_replay_test). Prints each target's executions and
# coverage (libFuzzer's cov: edges and ft: features); exits 1 on any crash.
#   scripts/fuzz.sh                  # every target, 60 s each
#   scripts/fuzz.sh 600 plan events  # two targets, 10 minutes each
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(cluster workload profile plan events protocol step_lines command_task weights)
fi
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build-fuzz -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSATURN_WITH_TORCH=OFF -DSATURN_FUZZ=ON "${launcher[@]}" >/dev/null
cmake --build build-fuzz -j2 --target "${targets[@]/#/fuzz_}"

# Examples as extra seeds, by the reader they are for.
seeds() {
  case $1 in
    cluster) ls examples/*/cluster.yaml 2>/dev/null ;;
    workload) ls examples/*/workload.yaml examples/*/*/workload.yaml examples/validation/*.yaml 2>/dev/null ;;
    profile) ls examples/planning/profile.csv 2>/dev/null ;;
  esac
}

run_one() {
  local t=$1 corpus=build-fuzz/corpus/$1
  mkdir -p "$corpus" "build-fuzz/crashes/$t" build-fuzz/logs
  cp -n tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  for s in $(seeds "$t"); do cp -n "$s" "$corpus/example-$(echo "$s" | tr / -)"; done
  # -timeout: an input that takes over 10 s is a hang; -rss_limit_mb: memory
  # without bound. Both are kept as crashes.
  nice -n 19 "build-fuzz/tests/fuzz/fuzz_$t" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -dict="tests/fuzz/dict/$t.dict" -print_final_stats=1 \
    -artifact_prefix="build-fuzz/crashes/$t/" "$corpus" >"build-fuzz/logs/$t.log" 2>&1
}

summary() {
  local t=$1 log=build-fuzz/logs/$1.log
  local last execs crashes
  last=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+ corp: [0-9]+' || true)
  execs=$(grep -oE 'stat::number_of_executed_units: [0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  crashes=$(find "build-fuzz/crashes/$t" -type f | wc -l)
  printf '%-13s %8s s  %10s execs  %-34s crashes: %s\n' "$t" "$seconds" "$execs" "$last" "$crashes"
}

jobs_at_once=${FUZZ_JOBS:-1}
failed=0
for t in "${targets[@]}"; do
  run_one "$t" &
  while [ "$(jobs -rp | wc -l)" -ge "$jobs_at_once" ]; do wait -n || failed=1; done
done
while [ "$(jobs -rp | wc -l)" -gt 0 ]; do wait -n || failed=1; done
for t in "${targets[@]}"; do summary "$t"; done
if [ "$failed" -ne 0 ]; then
  echo "fuzz: a target crashed; see build-fuzz/logs/ and build-fuzz/crashes/" >&2
  exit 1
fi
