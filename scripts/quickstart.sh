#!/usr/bin/env bash
# The main job, end to end on this machine: installs what is missing, builds
# Saturn (with the LibTorch training engine), then profiles, plans, trains and
# reports the quickstart workload (examples/quickstart/workload.yaml: a
# learning-rate grid over two GPT sizes on two CPU devices whose declared
# memory keeps the larger model off a single device).
#
# Results go to out/quickstart/run/: report.html (planned vs actual Gantt,
# loss curves), report.json, the plans, the event log and the trained models.
set -euo pipefail
# The repository this script is in (links resolved: its build folder is
# configured for that source folder).
cd "$(dirname "$(readlink -f "$0")")/.."
scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSATURN_WITH_TORCH=ON >/dev/null
cmake --build build -j2 --target saturn saturn-worker
run=out/quickstart/run
rm -rf "$run"
./build/src/cli/saturn run examples/quickstart/workload.yaml --run-dir "$run" \
  --cache out/quickstart/profiles.sqlite
echo "report: $run/report.html   (summary: $run/report.json)"
