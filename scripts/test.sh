#!/usr/bin/env bash
# Builds Saturn and runs every test, installing missing Debian packages first:
# the C++ tests and the Python ones (tests/python: saturn_task, its packaging,
# the PyTorch examples through `saturn run`), all through ctest.
#   scripts/test.sh            # all tests (what CI runs)
#   scripts/test.sh -LE slow   # extra arguments go to ctest, e.g. skip slow tests
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSATURN_WITH_TORCH=ON -DSATURN_WERROR=ON >/dev/null
cmake --build build -j2
ctest --test-dir build --output-on-failure -j2 "$@"
