#!/usr/bin/env bash
# A stand-in for saturn-worker that speaks the worker protocol (docs/worker.md)
# without training anything, for testing the orchestrators' handling of
# results, crashes and hangs. Behaviour per (technique, gpus) comes from the
# file named by FAKE_WORKER_RULES, lines of "technique gpus action [arg]":
#   ok STEP_S | infeasible REASON | crash | hang | oom
# (default: ok with step_s = 1/gpus). Each call is logged to FAKE_WORKER_LOG.
set -u
mode=$1; shift
technique=""; gpus=1; out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --technique) technique=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) shift ;;
  esac
done
[ -n "${FAKE_WORKER_LOG:-}" ] && echo "$mode $technique $gpus" >> "$FAKE_WORKER_LOG"
action=ok; arg=""
if [ -n "${FAKE_WORKER_RULES:-}" ] && [ -f "$FAKE_WORKER_RULES" ]; then
  rule=$(awk -v t="$technique" -v g="$gpus" '$1 == t && $2 == g { $1 = ""; $2 = ""; print; exit }' "$FAKE_WORKER_RULES")
  if [ -n "$rule" ]; then
    action=$(echo $rule | cut -d' ' -f1)
    arg=$(echo $rule | cut -s -d' ' -f2-)
  fi
fi
case "$action" in
  ok)
    step=${arg:-$(awk -v g="$gpus" 'BEGIN { print 1.0 / g }')}
    printf '{"protocol": 1, "feasible": true, "technique": "%s", "gpus": %s, "step_s": %s, "step_samples_s": [%s], "peak_memory_bytes": [1073741824], "knobs": {"fake": true}, "reason": ""}\n' \
      "$technique" "$gpus" "$step" "$step" > "$out.tmp" && mv "$out.tmp" "$out" ;;
  infeasible)
    printf '{"protocol": 1, "feasible": false, "technique": "%s", "gpus": %s, "reason": "%s"}\n' \
      "$technique" "$gpus" "$arg" > "$out.tmp" && mv "$out.tmp" "$out" ;;
  crash) echo "fake worker: segmentation fault in the model" >&2; exit 1 ;;
  oom) echo "fake worker: rank 0 out of memory" >&2; exit 3 ;;
  hang) sleep 1000 ;;
esac
exit 0
