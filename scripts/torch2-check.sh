#!/usr/bin/env bash
# The engine against LibTorch 2.x and the CUDA headers, on this machine's CPU
# (issue 26; docs/gpus.md says what it proves and what it cannot).
#
#   scripts/torch2-check.sh              # everything below
#   scripts/torch2-check.sh --no-bench   # without the comparison with PyTorch 2.6
#   scripts/torch2-check.sh --quick      # the comparison with 1 round
#   scripts/torch2-check.sh --shell      # a shell inside the root (repository at /saturn)
#   scripts/torch2-check.sh --exec CMD   # CMD inside the root, in /saturn (e.g. a
#                                        # rehearsal of scripts/gpu-check.sh there)
#
# Debian 13 (trixie) ships LibTorch 2.6 (libtorch-dev, python3-torch; CPU)
# and, in contrib and non-free, its CUDA build's headers (libtorch-cuda-dev),
# NCCL's (libnccl-dev) and CUDA 12.4's (nvidia-cuda-dev). They need a newer
# libc than Debian 12's, so they live in a trixie root made with debootstrap,
# cached in .cache/trixie (git-ignored; ~2.3 GB; made once, ~2 minutes, then
# reused; delete it, or change the package lists below, to remake it). As root
# (or with sudo), with Debian's archive reachable the first time.
#
# In the root, with the repository mounted at /saturn (the working tree as it
# is, uncommitted changes included):
#   1. configure (Ninja) and build saturn-worker, the engine's tests and
#      bench/engine against LibTorch 2.6 with -Wall -Wextra -Werror
#      (-DSATURN_ENGINE_ONLY=ON, build-torch2/);
#   2. compile the CUDA translation units (those with SATURN_CUDA / NCCL
#      code) against LibTorch 2.6's CUDA headers, NCCL 2.22 and CUDA 12.4 with
#      -fsyntax-only (their .deb files are unpacked, not installed: the CUDA
#      LibTorch depends on nvidia-cudnn, which downloads from NVIDIA);
#   3. run the engine's and the worker's tests (ctest -LE slow: training,
#      every technique against single, checkpoints and resume, bf16,
#      TorchScript, export into Python);
#   4. bench/engine's single against idiomatic PyTorch 2.6 (the root's
#      python3-torch, OPENBLAS_NUM_THREADS=1) at 1 thread, middle sizes.
# Results: out/torch2-check/summary.txt and the logs beside it.
set -uo pipefail
original_args=("$@")
cd "$(dirname "$0")/.."
repo=$(pwd)
root="${SATURN_TRIXIE_ROOT:-$repo/.cache/trixie}"
mirror="${SATURN_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
inside_out=/saturn/out/torch2-check
build=/saturn/build-torch2

# What the root holds. Changing a list remakes that part of the root.
packages="libtorch-dev python3-torch g++ cmake ninja-build nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libgloo-dev libopenblas0-pthread python3 ca-certificates"
cuda_packages="libtorch-cuda-dev libnccl-dev nvidia-cuda-dev libcu++-dev"

mode=all bench=1 rounds=3 exec_command=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --inside) mode=inside ;;
    --shell) mode=shell ;;
    --exec) mode=exec exec_command="${2:-}"; shift ;;
    --no-bench) bench=0 ;;
    --quick) rounds=1 ;;
    *) echo "usage: scripts/torch2-check.sh [--no-bench] [--quick] [--shell] [--exec CMD]" >&2
       exit 2 ;;
  esac
  shift
done

# ---------------------------------------------------------------------------
# Inside the root: build, compile the CUDA files, test, bench.
# ---------------------------------------------------------------------------
if [[ "$mode" == inside ]]; then
  out=$inside_out
  mkdir -p "$out"
  : >"$out/summary.txt"
  log() { echo "torch2-check: $*" | tee -a "$out/summary.txt"; }
  failed=0
  fail() { log "FAILED: $*"; failed=1; }
  elapsed() { echo $(( $(date +%s) - $1 )); }
  torch_version=$(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)
  log "inside Debian $(cat /etc/debian_version): $(g++ --version | head -1), $(cmake --version | head -1),"
  version_h=/usr/include/torch/csrc/api/include/torch/version.h
  log "  LibTorch $(awk '/define TORCH_VERSION_(MAJOR|MINOR|PATCH) /{v = v (v ? "." : "") $3} END{print v}' \
    "$version_h") (CPU), python3-torch $torch_version"

  # 1. Build against LibTorch 2.6.
  start=$(date +%s)
  if cmake -S /saturn -B "$build" -G Ninja -DSATURN_ENGINE_ONLY=ON -DSATURN_WERROR=ON \
      -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$out/configure.log" 2>&1 &&
     cmake --build "$build" -j2 -- -k 0 >"$out/build.log" 2>&1; then
    log "1. built saturn-worker, the engine tests and bench/engine against LibTorch 2.6 with" \
        "-Werror in $(elapsed "$start") s ($(grep -c 'Building CXX' "$out/build.log") files compiled)"
  else
    fail "1. the build against LibTorch 2.6 (configure.log, build.log):"
    grep -h -A3 -E 'error' "$out/configure.log" "$out/build.log" | grep -v '^/usr/bin/c++' |
      head -60 | tee -a "$out/summary.txt"
    exit 1
  fi

  # 2. The CUDA translation units against the CUDA headers.
  start=$(date +%s)
  cuda_include=/opt/cuda-dev/usr/include
  units=$(grep -rlE 'SATURN_CUDA|USE_C10D_NCCL|SATURN_HAVE_NCCL' /saturn/src --include='*.cc' | sort)
  count=0
  : >"$out/cuda-syntax.log"
  for unit in $units; do
    # The unit's own flags from the CPU build, with the CUDA headers first
    # and the definitions a CUDA LibTorch gets (src/engine/CMakeLists.txt).
    command=$(python3 - "$build/compile_commands.json" "$unit" "$cuda_include" <<'PY'
import json, shlex, sys
db, unit, include = sys.argv[1:]
entry = next(e for e in json.load(open(db)) if e["file"] == unit)
args = shlex.split(entry["command"])
out, skip = [args[0], "-fsyntax-only", "-isystem", include,
             "-DSATURN_CUDA", "-DUSE_C10D_NCCL", "-DUSE_C10D_GLOO"], False
for a in args[1:]:
    if skip:
        skip = False
        continue
    if a in ("-o", "-MF", "-MT", "-MQ", "-include"):  # and the argument after it
        skip = True
        continue
    if a in ("-c", "-MD", "-MMD", "-Winvalid-pch") or a == unit:
        continue
    out.append(a)
print(shlex.join(out + [unit]))
PY
)
    echo "\$ $command" >>"$out/cuda-syntax.log"
    if (cd "$build" && eval "$command") >>"$out/cuda-syntax.log" 2>&1; then
      count=$((count + 1))
    else
      fail "2. ${unit#/saturn/} does not compile against the CUDA headers (cuda-syntax.log)"
      grep -m10 -A4 'error' "$out/cuda-syntax.log" | tee -a "$out/summary.txt"
    fi
  done
  log "2. $count of $(echo "$units" | wc -w) CUDA translation units compile against LibTorch 2.6" \
      "CUDA, NCCL 2.22 and CUDA 12.4 headers (-fsyntax-only -Werror) in $(elapsed "$start") s:" \
      "$(echo "$units" | sed 's|/saturn/||' | tr '\n' ' ')"

  # 3. The engine's and the worker's tests.
  start=$(date +%s)
  ctest --test-dir "$build" -j2 -LE slow --output-on-failure >"$out/ctest.log" 2>&1
  status=$?
  summary=$(grep -E 'tests passed|tests failed' "$out/ctest.log" | tail -1)
  if [[ $status -eq 0 ]]; then
    log "3. engine and worker tests on LibTorch 2.6: $summary ($(elapsed "$start") s)"
  else
    fail "3. engine and worker tests on LibTorch 2.6: ${summary:-no summary} (ctest.log)"
    grep -E '^\s+[0-9]+ - ' "$out/ctest.log" | tee -a "$out/summary.txt"
  fi

  # 4. single against idiomatic PyTorch 2.6, one thread each.
  if [[ $bench == 1 ]]; then
    start=$(date +%s)
    OPENBLAS_NUM_THREADS=1 SATURN_PYTHON=/usr/bin/python3 "$build/bench/engine/engine_bench" \
      --only single --threads 1 --sizes M --rounds "$rounds" >"$out/bench.txt" 2>&1
    log "4. bench/engine single vs PyTorch $torch_version, 1 thread, middle sizes," \
        "$rounds round(s), $(elapsed "$start") s:"
    sed -n '/^family/,$p' "$out/bench.txt" | tee -a "$out/summary.txt"
  fi
  exit $failed
fi

# ---------------------------------------------------------------------------
# Outside: make or reuse the root, then run the above inside it.
# ---------------------------------------------------------------------------
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "torch2-check: needs root (debootstrap, chroot)" >&2; exit 1; }
  exec sudo -E "$0" "${original_args[@]}"
fi
say() { echo "torch2-check: $*" >&2; }
run_start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
in_root() { chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
  LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }

# Every mount under the root goes when this script ends, also those a killed
# run left behind: the repository and /dev are bind-mounted there, and must
# never be in it when the root is removed.
mounts_under_root() { awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/self/mounts | sort -r; }
unmount_root() {
  local where
  for where in $(mounts_under_root); do umount -l "$where" 2>/dev/null; done
}
trap unmount_root EXIT
mount_in() {  # mount_in WHAT WHERE [mount options...]
  local where="$root$2"
  mkdir -p "$where"
  mountpoint -q "$where" || mount "${@:3}" "$1" "$where"
}

stamp() { echo "$*" | tr -s ' \n' ' ' | md5sum | cut -c1-12; }
if [[ ! -x "$root/usr/bin/apt-get" || ! -f "$root/.saturn-base" ]]; then
  command -v debootstrap >/dev/null || apt-get install -y -qq --no-install-recommends debootstrap >&2
  say "making a Debian 13 root in $root (debootstrap, ~1 minute)"
  unmount_root
  if [[ -n "$(mounts_under_root)" ]]; then
    say "cannot remake $root: something is still mounted in it ($(mounts_under_root | tr '\n' ' '))"
    exit 1
  fi
  rm -rf --one-file-system "$root"
  mkdir -p "$(dirname "$root")"
  debootstrap --variant=minbase trixie "$root" "$mirror" >"$repo/.cache/debootstrap.log" 2>&1 || {
    say "debootstrap failed (see .cache/debootstrap.log)"; exit 1; }
  echo "deb $mirror trixie main contrib non-free" >"$root/etc/apt/sources.list"
  touch "$root/.saturn-base"
fi
mount_in proc /proc -t proc
mount_in sysfs /sys -t sysfs -o ro
mount_in /dev /dev --bind
if [[ "$(cat "$root/.saturn-packages" 2>/dev/null)" != "$(stamp "$packages")" ]]; then
  say "installing LibTorch 2.6 and the build tools in the root (~1 minute)"
  in_root apt-get update -qq &&
    in_root apt-get install -y -qq --no-install-recommends $packages >"$repo/.cache/trixie-apt.log" 2>&1 || {
    say "apt-get in the root failed (see .cache/trixie-apt.log)"; exit 1; }
  stamp "$packages" >"$root/.saturn-packages"
fi
if [[ "$(cat "$root/.saturn-cuda" 2>/dev/null)" != "$(stamp "$cuda_packages")" ]]; then
  say "unpacking the CUDA headers ($cuda_packages; ~1 GB to download)"
  rm -rf "$root/opt/cuda-debs" "$root/opt/cuda-dev"
  mkdir -p "$root/opt/cuda-debs" "$root/opt/cuda-dev"
  in_root sh -c "cd /opt/cuda-debs && apt-get download $cuda_packages" >"$repo/.cache/trixie-cuda.log" 2>&1 || {
    say "apt-get download failed (see .cache/trixie-cuda.log)"; exit 1; }
  for deb in "$root"/opt/cuda-debs/*.deb; do
    # Headers and CMake files only (nvidia-cuda-dev is ~1 GB of libraries).
    dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$root/opt/cuda-dev" --wildcards \
      './usr/include/*' './usr/lib/x86_64-linux-gnu/cmake/*' 2>/dev/null
  done
  rm -rf "$root/opt/cuda-debs"
  stamp "$cuda_packages" >"$root/.saturn-cuda"
fi
mount_in "$repo" /saturn --bind
# The machine's CUDA toolkit, when it has one (nvcc for rehearsals of
# scripts/gpu-check.sh in the root).
[[ -x /usr/local/cuda/bin/nvcc ]] && mount_in /usr/local/cuda /usr/local/cuda --bind -o ro
say "root ready in $(( $(date +%s) - run_start )) s"
if [[ "$mode" == shell ]]; then
  in_root TERM="${TERM:-xterm}" bash -c 'cd /saturn && exec bash -i'
  exit $?
fi
if [[ "$mode" == exec ]]; then
  in_root OUT="${OUT:-}" SATURN_GPU_CHECK_SECONDS="${SATURN_GPU_CHECK_SECONDS:-}" \
    SATURN_GPU_BUILD="${SATURN_GPU_BUILD:-}" bash -c "cd /saturn && $exec_command"
  exit $?
fi
args=(--inside)
[[ $bench == 0 ]] && args+=(--no-bench)
[[ $rounds == 1 ]] && args+=(--quick)
in_root bash /saturn/scripts/torch2-check.sh "${args[@]}"
status=$?
say "done in $(( $(date +%s) - run_start )) s (exit $status); summary: out/torch2-check/summary.txt"
exit $status
