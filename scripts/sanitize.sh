#!/usr/bin/env bash
# Runs the tests under sanitizers, each mode in its own build folder:
#   address  ASan + UBSan (build-asan/, torch-free): the whole torch-free suite
#   thread   ThreadSanitizer (build-tsan/, torch-free): the executor's, the
#            re-planner's, the simulator's and the service's tests (the
#            re-planning thread, signal handling, progress, HTTP threads)
#   engine   ASan + UBSan with LibTorch (build-asan-torch/): the engine's tests
#            (training, techniques' equivalence, checkpoints and resume,
#            memory, TorchScript, export) and the worker's, leak detection
#            off (LibTorch is not instrumented)
# Every sanitized process, tests and the programs they start, writes its
# reports under <build>/sanitizer-logs/; a mode fails if a test fails or any
# report was written (the first lines of each are printed). Suppressions
# (third-party code only, each with its reason): tests/sanitizers/.
#   scripts/sanitize.sh                   # address, then thread
#   scripts/sanitize.sh thread            # one mode
#   scripts/sanitize.sh address -R spec   # extra arguments go to ctest (address)
#   scripts/sanitize.sh thread --gtest_filter='Replan*'  # or to each test program
set -euo pipefail
cd "$(dirname "$0")/.."
modes=(address thread)
if [ $# -gt 0 ] && [[ $1 =~ ^(address|thread|engine)$ ]]; then
  modes=("$1")
  shift
fi
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
supp=$PWD/tests/sanitizers
status=0

run_mode() {
  local mode=$1 build torch=OFF sanitize=ON binaries=() targets=()
  shift
  # address runs every ctest test; the others run these test programs.
  case $mode in
    address) build=build-asan ;;
    thread)
      build=build-tsan sanitize=thread
      binaries=(executor/executor_test replan/replan_test sim/sim_test service/service_test
                common/common_test)
      targets=(saturn executor_test replan_test sim_test service_test common_test)
      ;;
    engine)
      build=build-asan-torch torch=ON
      binaries=(engine/engine_task_test engine/engine_test engine/engine_worker_test
                engine/engine_equivalence_test engine/engine_torchscript_test
                engine/engine_torchscript_worker_test engine/engine_export_test worker/worker_test)
      targets=(saturn-worker engine_task_test engine_test engine_worker_test engine_equivalence_test
               engine_torchscript_test engine_torchscript_worker_test engine_export_test worker_test)
      ;;
  esac
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSATURN_WITH_TORCH=$torch \
    -DSATURN_WERROR=ON -DSATURN_SANITIZE=$sanitize "${launcher[@]}" >/dev/null
  local start=$SECONDS
  local build_args=()
  for t in "${targets[@]}"; do build_args+=(--target "$t"); done
  nice cmake --build "$build" -j2 "${build_args[@]}"
  local built=$SECONDS
  local logs=$PWD/$build/sanitizer-logs
  rm -rf "$logs" && mkdir -p "$logs"
  local leaks=1
  if [ "$mode" = engine ]; then leaks=0; fi
  # log_path: one file per process that reports, children included.
  export ASAN_OPTIONS="log_path=$logs/asan:detect_leaks=$leaks:abort_on_error=1:strict_string_checks=1"
  export LSAN_OPTIONS="suppressions=$supp/lsan.supp"
  export UBSAN_OPTIONS="log_path=$logs/ubsan:print_stacktrace=1:halt_on_error=1:suppressions=$supp/ubsan.supp"
  export TSAN_OPTIONS="log_path=$logs/tsan:halt_on_error=0:second_deadlock_stack=1:suppressions=$supp/tsan.supp"
  local failed=0
  if [ ${#binaries[@]} -eq 0 ]; then
    ctest --test-dir "$build" --output-on-failure -j2 "$@" || failed=1
  else
    for b in "${binaries[@]}"; do
      echo "== $b"
      "$build/tests/$b" --gtest_brief=1 "$@" || failed=1
    done
  fi
  local reports
  reports=$(find "$logs" -type f | wc -l)
  for f in $(find "$logs" -type f | head -20); do
    echo "--- $f"
    grep -m1 -A12 -E 'ERROR|WARNING|runtime error' "$f" || head -15 "$f"
  done
  echo "sanitize $mode: build $((built - start)) s, tests $((SECONDS - built)) s, reports: $reports, failed tests: $failed"
  if [ "$reports" -ne 0 ] || [ "$failed" -ne 0 ]; then status=1; fi
}

for mode in "${modes[@]}"; do run_mode "$mode" "$@"; done
exit $status
