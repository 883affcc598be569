#!/usr/bin/env bash
# The engine on a real GPU, in two short device calls (issues 12 and 17).
#
#   scripts/gpu-check.sh --prepare     # here, with Debian's archive: unpack the
#                                      # header-only/static Debian packages the
#                                      # build needs into .deps/ (git-ignored)
#   scripts/gpu-check.sh --build-only  # configure and build saturn-worker, the
#                                      # engine tests and bench/engine against
#                                      # the image's PyTorch LibTorch (carry .deps)
#   scripts/gpu-check.sh --run         # then the checks below (same machine,
#                                      # build-gpu/ kept: two device calls, each
#                                      # well under the 10-minute call limit)
#   scripts/gpu-check.sh               # both in one go
#
# The GPU machine's image has PyTorch 2.x with CUDA, CMake and nvcc but no
# Debian packages and no network: nlohmann-json, CLI11 and GoogleTest travel
# unpacked in .deps/. Without a CUDA LibTorch (here) the build uses Debian's
# LibTorch 1.13, which checks that the engine compiles against it.
#
# What runs on the GPU (each step under its own time limit; results in
# ${OUT:-out/gpu-check}/):
#   1. the engine tests (CPU devices, built against the CUDA LibTorch);
#   2. saturn-worker search on cuda for single and spill, and, with two GPUs
#      or more, ddp/fsdp/pipeline on two (NCCL refuses two ranks on one GPU),
#      fp32 and bf16, on a GPT of the quickstart's kind: step time, peak
#      memory by our metering (CUDA's caching-allocator statistics), phases;
#   3. bench/engine on cuda in bf16 against idiomatic PyTorch eager with
#      autocast, GPT-2-small-sized (12 x 768, 12 heads, seq 1024, batch 8),
#      MFU against the measured bf16 matmul rate.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
deps="$root/.deps"
out="${OUT:-$root/out/gpu-check}"
build="$root/build-gpu"
mode="${1:-all}"
case "$mode" in
  --prepare | --build-only | --run | all) ;;
  *) echo "usage: scripts/gpu-check.sh [--prepare | --build-only | --run]" >&2; exit 2 ;;
esac
# What WorkerEnv (src/launch/worker.h) gives every worker Saturn starts.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"

if [[ "$mode" == "--prepare" ]]; then
  set -e
  mkdir -p "$deps/debs"
  (cd "$deps/debs" && apt-get download nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev)
  for deb in "$deps"/debs/*.deb; do dpkg -x "$deb" "$deps"; done
  echo "gpu-check: unpacked into $deps: $(ls "$deps/debs" | tr '\n' ' ')"
  exit 0
fi

mkdir -p "$out"
log() { echo "gpu-check: $*" | tee -a "$out/summary.txt"; }

# LibTorch: the Python package's when it has a CMake config, else the system's.
torch_prefix=""
torch_python=python3
for python in python3 /usr/bin/python3; do
  candidate=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null) || continue
  if [[ -f "$candidate/Torch/TorchConfig.cmake" ]]; then
    torch_prefix="$candidate"
    torch_python="$python"
    break
  fi
done
prefixes="$torch_prefix;$deps/usr"
cuda=OFF
"$torch_python" -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && cuda=ON
gpus=$("$torch_python" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
abi=$("$torch_python" -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))' 2>/dev/null || echo 1)
log "LibTorch prefix: ${torch_prefix:-system}; CUDA available: $cuda ($gpus GPUs); C++11 ABI: $abi"
if [[ "$abi" == 0 ]]; then
  log "this LibTorch uses the pre-C++11 string ABI; Debian's GoogleTest and the torch-free"
  log "libraries use the new one, so the build would not link: stopping"
  exit 1
fi

jobs=$(nproc)
if [[ "$cuda" == OFF && $jobs -gt 2 ]]; then jobs=2; fi
start=$(date +%s)
if [[ "$mode" == --run ]]; then
  [[ -x "$build/src/worker/saturn-worker" ]] || { log "nothing built: run --build-only first"; exit 1; }
else
timeout 420 cmake -S . -B "$build" -DSATURN_ENGINE_ONLY=ON -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefixes" >"$out/configure.log" 2>&1 || {
  log "configure FAILED (see configure.log)"; tail -20 "$out/configure.log"; exit 1; }
timeout 480 cmake --build "$build" -j"$jobs" --target saturn-worker engine_test engine_bench \
  >"$out/build.log" 2>&1 || { log "build FAILED (see build.log)"; grep -m20 -B2 -A6 'error' "$out/build.log"; exit 1; }
log "built saturn-worker, engine_test, engine_bench in $(( $(date +%s) - start )) s"
fi
[[ "$mode" == "--build-only" ]] && exit 0

worker="$build/src/worker/saturn-worker"
timeout 120 "$build/tests/engine/engine_test" --gtest_brief=1 >"$out/engine_test.log" 2>&1
log "engine_test: exit $? ($(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$out/engine_test.log") failed)"

if [[ "$cuda" == ON ]]; then
  kind=cuda threads=4 limit=60
else
  kind=cpu threads=1 limit=240
  log "no CUDA device: the searches below run on CPU devices"
fi
task="$out/task.json"
for precision in fp32 bf16; do
  cat >"$task" <<EOF
{"name": "gpu-check", "precision": "$precision", "batch_size": 16,
 "model": {"type": "gpt", "layers": 4, "d_model": 256, "heads": 4, "seq_len": 128},
 "data": {"type": "synthetic"}, "optimizer": {"type": "adamw", "lr": 0.001}}
EOF
  for spec in single:1 spill:1 ddp:2 fsdp:2 pipeline:2; do
    technique=${spec%%:*}; n=${spec##*:}
    if [[ "$kind" == cuda && $n -gt $gpus ]]; then
      log "search $technique x$n $precision: skipped (needs $n GPUs, NCCL refuses two ranks on one)"
      continue
    fi
    ids=0; [[ $n == 2 ]] && ids=0,1
    result="$out/search-$technique-$precision.json"
    rm -f "$result"
    timeout "$limit" "$worker" search --task "$task" --technique "$technique" --gpus "$n" \
      --device-kind "$kind" --device-ids "$ids" --threads "$threads" --warmup 3 --measure 10 \
      --timeout-s 30 --out "$result" >"$out/search-$technique-$precision.log" 2>&1
    status=$?
    summary=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("feasible" if r.get("feasible") else "infeasible: "+r.get("reason","")[:120], "step_s=%.4f" % (r.get("step_s") or 0), "peak_MiB=%s" % [round(b/2**20) for b in r.get("peak_memory_bytes",[])], "phases=%s" % {k: round(v*1000,2) for k,v in r.get("stats",{}).get("phases",{}).items()})' "$result" 2>/dev/null)
    log "search $technique x$n $precision on $kind: exit $status ${summary:-no result (see log)}"
  done
done

if [[ "$kind" == cuda ]]; then
  SATURN_PYTHON="$torch_python" timeout 240 "$build/bench/engine/engine_bench" --device cuda \
    --precision bf16 --gpt2 --only single --rounds 2 --threads 4 >"$out/bench-gpt2-bf16.txt" 2>&1
  log "engine_bench gpt2 bf16: exit $?"
  cat "$out/bench-gpt2-bf16.txt"
else
  log "engine_bench gpt2 bf16: skipped without CUDA (a GPT-2-small step takes minutes on a CPU)"
fi
log "done in $(( $(date +%s) - start )) s"
