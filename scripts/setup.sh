#!/usr/bin/env bash
# Installs the Debian packages Saturn needs, only those that are missing.
# Usage: scripts/setup.sh [--no-torch]
#   --no-torch  skip LibTorch and its companions (planner/simulator-only builds)
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  coinor-libcbc-dev          # CBC MILP solver (planner)
  libyaml-cpp-dev            # cluster and workload files
  nlohmann-json3-dev         # plans, reports, profiles' knobs
  libcli11-dev               # command line
  libsqlite3-dev             # profile cache, run state
  libcpp-httplib-dev         # saturn serve (HTTP API)
  libonig-dev                # saturn tokenize: tokenizer.json's regexes (Oniguruma, as Hugging Face)
  libicu-dev                 # saturn tokenize: Unicode normalization (NFC, ...)
  libgtest-dev libgmock-dev  # tests
  chromium                   # the dashboard's browser test (large; the test skips without it)
)
torch_packages=(
  libtorch-dev               # LibTorch 1.13 (CPU)
  libopenblas0-pthread       # ~10x faster BLAS than the reference one for LibTorch
  libgloo-dev                # c10d ProcessGroupGloo from C++
  python3-torch              # PyTorch for /usr/bin/python3: examples/pytorch-gpt, tests/python
)
if [[ "${1:-}" != "--no-torch" ]]; then
  packages+=("${torch_packages[@]}")
fi
# Node.js and npm: the tokenizer's reference test (tests/tokenizer, Hugging
# Face's JS tokenizers from npm; the test skips without them). Any node with
# npm will do: one from elsewhere (NodeSource) is left as it is.
if ! command -v npm >/dev/null 2>&1; then
  packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "setup: installing missing Debian packages: ${missing[*]}" >&2
if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "setup: need root or sudo to install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
