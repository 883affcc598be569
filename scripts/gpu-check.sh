#!/usr/bin/env bash
# The engine on a real GPU, in one device call of under 9 minutes (issues 26
# and 32; docs/gpus.md). A lent GPU machine stays warm only ~30 s between
# calls, so everything happens in one:
#
#   scripts/gpu-check.sh --prepare   # here, with Debian's archive: unpack the
#                                    # header-only and static packages the build
#                                    # needs (nlohmann-json, CLI11, GoogleTest)
#                                    # into .deps/ (git-ignored; carry it)
#   scripts/gpu-check.sh             # there (or here, as a rehearsal): all below
#
# Steps, each under its own limit and all under a 540 s deadline (the rest of
# a step is skipped, and said so, when the deadline comes):
#   0. versions first: g++, cmake, ninja, nvcc, torch and its CUDA, the GPUs;
#   1. configure (Ninja; with CUDA: CMAKE_CUDA_ARCHITECTURES=90, nvcc and
#      nvtx3 found, NCCL's headers from the nvidia-nccl wheel) and build
#      saturn-worker, the engine tests and bench/engine against the
#      interpreter's PyTorch LibTorch (Debian's LibTorch where it has none);
#   2. saturn-worker searches on cuda, fp32 and bf16, of every technique that
#      runs on one GPU (single, spill; ddp, fsdp, pipeline on two when there
#      are two: NCCL refuses two ranks on one GPU) for GPT-2 small (type
#      gpt2, batch 8, sequence 1024): step time, peak memory, phases;
#   3. bench/engine: our single step against PyTorch eager with autocast,
#      bf16, GPT-2 small, MFU against the measured bf16 matmul rate;
#  3b. bench/engine/pack_bench.py: packs of k = 1, 2, 4, 8 LoRA tasks over
#      GPT-2 small, bf16, against the k alone (step time, peak memory);
#  3c. a pack of three whose members leave at their own ends, fp32;
#   4. the engine tests (CPU devices, against this LibTorch), last.
# Without CUDA (a rehearsal here) steps 2-3 run a small GPT-2 on CPU devices;
# SATURN_GPU_CHECK_SECONDS=1500 gives a 2-core machine time to build.
# Writes ${OUT:-out/gpu-check}/summary.txt and logs.tar.gz (two files; $OUT
# returns at most 8).
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
deps="$root/.deps"
out="${OUT:-$root/out/gpu-check}"
build="${SATURN_GPU_BUILD:-$root/build-gpu}"
mode="${1:-all}"
case "$mode" in
  --prepare | all) ;;
  *) echo "usage: scripts/gpu-check.sh [--prepare]" >&2; exit 2 ;;
esac
# What WorkerEnv (src/launch/worker.h) gives every worker Saturn starts.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"

if [[ "$mode" == "--prepare" ]]; then
  set -e
  mkdir -p "$deps/debs"
  (cd "$deps/debs" && apt-get download nlohmann-json3-dev libcli11-dev libgtest-dev libgmock-dev)
  for deb in "$deps"/debs/*.deb; do dpkg -x "$deb" "$deps"; done
  rm -rf "$deps/debs"
  echo "gpu-check: unpacked into $deps ($(du -sh "$deps" | cut -f1)); carry .deps to the GPU machine"
  exit 0
fi

start=$(date +%s)
# 540 s on a GPU machine (16 cores); a rehearsal on 2 cores needs longer.
deadline=$((start + ${SATURN_GPU_CHECK_SECONDS:-540}))
mkdir -p "$out"
logs="$out/logs"
rm -rf "$logs"
mkdir -p "$logs"
: >"$out/summary.txt"
log() { echo "gpu-check: $*" | tee -a "$out/summary.txt"; }
left() { echo $((deadline - $(date +%s))); }
# A step's time limit: its own, cut to what the deadline leaves (minus a
# reserve for the steps after it).
limit() {
  local want=$1 reserve=${2:-0} have
  have=$(($(left) - reserve))
  ((have < want)) && want=$have
  ((want < 1)) && want=1
  echo "$want"
}
finish() {
  tar -czf "$out/logs.tar.gz" -C "$out" logs 2>/dev/null && rm -rf "$logs"
  log "done in $(($(date +%s) - start)) s; logs in logs.tar.gz"
}
trap finish EXIT

# 0. Versions and the GPU, first.
python=""
for candidate in python3 /usr/bin/python3; do
  if "$candidate" -c 'import torch' 2>/dev/null; then python=$candidate; break; fi
done
nvcc=$(command -v nvcc || true)
[[ -z "$nvcc" && -x /usr/local/cuda/bin/nvcc ]] && nvcc=/usr/local/cuda/bin/nvcc
log "g++: $(g++ --version 2>/dev/null | head -1)"
log "cmake: $(cmake --version 2>/dev/null | head -1); ninja: $(ninja --version 2>/dev/null || echo none)"
log "nvcc: ${nvcc:-none} $([[ -n "$nvcc" ]] && "$nvcc" --version | tail -2 | tr '\n' ' ')"
info=$([[ -n "$python" ]] && "$python" - <<'PY' 2>/dev/null
import torch
print("torch %s, CUDA %s, cxx11 ABI %d, %d GPU(s)%s, cmake prefix %s" % (
    torch.__version__, torch.version.cuda, torch.compiled_with_cxx11_abi(),
    torch.cuda.device_count(),
    "".join(": %s (%.0f GiB)" % (torch.cuda.get_device_name(i),
                                 torch.cuda.get_device_properties(i).total_memory / 2**30)
            for i in range(torch.cuda.device_count())),
    torch.utils.cmake_prefix_path))
PY
)
log "python: ${python:-none}; ${info:-no torch}"
command -v nvidia-smi >/dev/null && nvidia-smi >"$logs/nvidia-smi.txt" 2>&1

cuda=OFF gpus=0 abi=1 torch_prefix=""
if [[ -n "$python" ]]; then
  "$python" -c 'import torch,sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null && cuda=ON
  gpus=$("$python" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
  abi=$("$python" -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))' 2>/dev/null || echo 1)
  candidate=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null)
  [[ -f "$candidate/Torch/TorchConfig.cmake" ]] && torch_prefix=$candidate
fi
if [[ "$abi" == 0 ]]; then
  log "this LibTorch uses the pre-C++11 string ABI; Debian's GoogleTest and the torch-free"
  log "libraries use the new one, so the build would not link: stopping"
  exit 1
fi

# 1. Configure and build.
args=(-DSATURN_ENGINE_ONLY=ON -DCMAKE_BUILD_TYPE=Release
      "-DCMAKE_PREFIX_PATH=${torch_prefix:+$torch_prefix;}$deps/usr")
command -v ninja >/dev/null && args+=(-G Ninja)
if [[ -n "$nvcc" ]]; then
  cuda_root=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
  nvtx=$cuda_root/include
  [[ -d $cuda_root/targets/x86_64-linux/include/nvtx3 ]] && nvtx=$cuda_root/targets/x86_64-linux/include
  # Caffe2's CMake wants nvcc and, with CUDA 13 (no nvToolsExt), nvtx3.
  export CUDACXX="$nvcc" TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}"
  args+=(-DCMAKE_CUDA_COMPILER="$nvcc" -DCUDAToolkit_ROOT="$cuda_root"
         -DCMAKE_CUDA_ARCHITECTURES=90 -DUSE_SYSTEM_NVTX=ON -Dnvtx3_dir="$nvtx")
fi
if [[ "$cuda" == ON ]]; then
  nccl=$("$python" -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "include"))' 2>/dev/null)
  [[ -f "$nccl/nccl.h" ]] && args+=(-DSATURN_NCCL_INCLUDE_DIR="$nccl")
fi
jobs=$(nproc)
[[ "$cuda" == OFF && $jobs -gt 2 ]] && jobs=2
t=$(date +%s)
if timeout "$(limit 150 300)" cmake -S . -B "$build" "${args[@]}" >"$logs/configure.log" 2>&1; then
  log "1. configured in $(($(date +%s) - t)) s: $(grep -m1 -iE 'CUDA.*(found|version)' "$logs/configure.log" | head -c 120)"
  grep -E 'saturn:' "$logs/configure.log" | sed 's/^/gpu-check:    /' | tee -a "$out/summary.txt"
else
  log "1. configure FAILED (configure.log):"
  grep -m20 -iE 'error|warn' "$logs/configure.log" | tee -a "$out/summary.txt"
  exit 1
fi
t=$(date +%s)
if timeout "$(limit $((${SATURN_GPU_CHECK_SECONDS:-540} - 240)) 150)" cmake --build "$build" -j"$jobs" --target saturn-worker engine_test \
    engine_bench >"$logs/build.log" 2>&1; then
  log "   built saturn-worker, engine_test, engine_bench in $(($(date +%s) - t)) s"
else
  log "   build FAILED or out of time after $(($(date +%s) - t)) s (build.log):"
  grep -m20 -A6 'error' "$logs/build.log" | tee -a "$out/summary.txt"
  exit 1
fi
worker="$build/src/worker/saturn-worker"

# 2. Searches.
if [[ "$cuda" == ON ]]; then
  kind=cuda threads=4 batch=8
  model='{"type": "gpt2", "preset": "small"}'
else
  kind=cpu threads=1 batch=8
  model='{"type": "gpt2", "layers": 2, "d_model": 128, "heads": 4, "vocab": 512, "seq_len": 64}'
  log "2. no CUDA device: the searches run a small GPT-2 on CPU devices"
fi
for precision in fp32 bf16; do
  task="$logs/task-$precision.json"
  cat >"$task" <<EOF
{"name": "gpu-check", "precision": "$precision", "batch_size": $batch, "model": $model,
 "data": {"type": "synthetic"}, "optimizer": {"type": "adamw", "lr": 0.0001}}
EOF
  for spec in single:1 spill:1 ddp:2 fsdp:2 pipeline:2; do
    technique=${spec%%:*} n=${spec##*:}
    if [[ "$kind" == cuda && $n -gt $gpus ]]; then
      log "   search $technique x$n $precision: skipped (needs $n GPUs; NCCL refuses two ranks on one)"
      continue
    fi
    if (($(left) < 200)); then
      log "   search $technique x$n $precision: skipped (deadline)"
      continue
    fi
    ids=0
    ((n == 2)) && ids="0 1"
    result="$logs/search-$technique-$precision.json"
    timeout "$(limit 90 150)" "$worker" search --task "$task" --technique "$technique" --gpus "$n" \
      --device-kind "$kind" --device-ids $ids --threads "$threads" --warmup 3 --measure 10 \
      --timeout-s 60 --out "$result" >"$logs/search-$technique-$precision.log" 2>&1
    status=$?
    summary=$(python3 - "$result" <<'PY' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))
if not r.get("feasible"):
    print("infeasible: " + r.get("reason", "")[:150])
else:
    phases = {k: round(v * 1000, 1) for k, v in r.get("stats", {}).get("phases", {}).items()}
    print("step_s=%.4f peak_MiB=%s knobs=%s phases_ms=%s" % (
        r["step_s"], [round(b / 2**20) for b in r.get("peak_memory_bytes", [])],
        json.dumps(r.get("knobs", {})), phases))
PY
)
    log "   search $technique x$n $precision on $kind: exit $status ${summary:-no result (see its log)}"
  done
done

# 3. Our single step against PyTorch eager, bf16, GPT-2 small.
if [[ "$cuda" == ON ]] && (($(left) > 130)); then
  SATURN_PYTHON="$python" timeout "$(limit 200 60)" "$build/bench/engine/engine_bench" --device cuda \
    --precision bf16 --gpt2 --only single --rounds 2 --threads 4 >"$logs/bench-gpt2-bf16.txt" 2>&1
  log "3. engine_bench GPT-2 small bf16 against PyTorch eager + autocast: exit $?"
  sed -n '/^matmul/p;/^family/,$p' "$logs/bench-gpt2-bf16.txt" | tee -a "$out/summary.txt"
elif [[ "$cuda" == ON ]]; then
  log "3. engine_bench: skipped (deadline)"
else
  log "3. engine_bench: skipped without CUDA (a GPT-2-small step takes minutes on a CPU)"
fi

# 3b. Packs (issue 43): a pack of k LoRA tasks over GPT-2 small against the
# k tasks alone, k = 1, 2, 4, 8, bf16 on GPU 0: the real pack step times
# that planner/packing.h's pack_step_s and bench/paper's roofline model.
if [[ "$cuda" == ON ]] && (($(left) > 110)); then
  timeout "$(limit 150 40)" python3 bench/engine/pack_bench.py --build "$build" --device cuda \
    --precision bf16 --gpt2-small --threads 4 --sizes 1,2,4,8 >"$logs/pack-bench.txt" 2>&1
  log "3b. pack_bench GPT-2 small bf16, packs of 1-8 against their members alone: exit $?"
  grep -E '^ *k |^ *[0-9]+ ' "$logs/pack-bench.txt" | sed 's/^/gpu-check:    /' | tee -a "$out/summary.txt"
elif [[ "$cuda" == ON ]]; then
  log "3b. pack_bench: skipped (deadline)"
else
  log "3b. pack_bench: skipped without CUDA (bench/engine/pack_bench.py measures CPU packs)"
fi

# 3c. A pack whose members leave at their own ends (issue 43), fp32 on
# device 0: two of three leave at steps 2 and 4 of 6 and the last trains on
# in the same worker (worker/pack_job.h); each member's losses are its own
# steps' (the CPU tests check them against twins alone).
if (($(left) > 60)); then
  pack_task="$logs/pack-leave.json"
  python3 - "$pack_task" "$model" <<'PY'
import json, sys
model = json.loads(sys.argv[2])
members = [{"name": "m%d" % i, "model": model, "data": {"type": "synthetic"}, "batch_size": 2,
            "seed": 7, "steps": steps, "optimizer": {"type": "adamw", "lr": lr},
            "finetune": {"lora": {"rank": 8}}}
           for i, (steps, lr) in enumerate([(2, 1e-3), (4, 3e-4), (6, 1e-4)])]
json.dump({"pack": members}, open(sys.argv[1], "w"))
PY
  timeout "$(limit 90 30)" "$worker" execute --task "$pack_task" --technique single --gpus 1 \
    --device-kind "$kind" --device-ids 0 --threads "$threads" --from-step 0 --to-step 6 \
    --checkpoint-dir "$logs/pack-leave" --out "$logs/pack-leave-result.json" \
    >"$logs/pack-leave.log" 2>&1
  status=$?
  summary=$(python3 - "$logs/pack-leave-result.json" <<'PY' 2>/dev/null
import json, sys
r = json.load(open(sys.argv[1]))
print("%d steps, members' losses %s (want [2, 4, 6])" % (
    r["completed_steps"], [len(m["losses"]) for m in r["members"]]))
PY
)
  log "3c. a pack whose members leave on $kind: exit $status," \
      "$(grep -c left_member "$logs/pack-leave.log") left_member lines (want 2), ${summary:-no result}"
else
  log "3c. pack members leaving: skipped (deadline)"
fi

# 4. The engine tests, last.
if (($(left) > 20)); then
  timeout "$(limit 150)" "$build/tests/engine/engine_test" --gtest_brief=1 >"$logs/engine_test.log" 2>&1
  status=$?
  log "4. engine_test: exit $status ($(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$logs/engine_test.log") failed," \
      "$(grep -oE '[0-9]+ tests? from [0-9]+ test suites? ran' "$logs/engine_test.log" | head -1))"
else
  log "4. engine_test: skipped (deadline)"
fi
