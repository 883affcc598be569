#!/usr/bin/env bash
# A stand-in for saturn-worker that speaks the worker protocol (docs/worker.md)
# without training anything, for testing the orchestrators: results, progress
# lines, checkpoints, SIGTERM pre-emption, crashes and hangs.
# Behaviour per (technique, gpus) comes from the file named by
# FAKE_WORKER_RULES, lines of "technique gpus action [arg]" or, for one task
# only, "task/technique gpus action [arg]" (task rules win):
#   ok STEP_S | samples S1,S2,... (a search measures these) | infeasible REASON |
#   crash | hang | oom | crash_at STEP | nan_at STEP (its loss is nan from STEP on) |
#   estimated NOTE (an analytic estimate: "estimated" says NOTE and the
#   --estimate, --peak-tflops and --link-gb-s it was given) |
#   crash_once MARKER (crashes if the file MARKER does not exist, creating it;
#   else as ok) | bad_result (trains, then writes a result that breaks the
#   protocol and exits 0)
# (default: ok with step_s = FAKE_STEP_S/(gpus x threads), FAKE_STEP_S
# defaulting to 1, threads the device's --threads: a 2-thread device is twice
# as fast, as GPU types differ).
# `execute` sleeps the step time per step, prints "saturn: step=N loss=X
# step_s=Y", writes checkpoint-N/meta.json every --checkpoint-every steps and
# at the end, and on SIGTERM checkpoints and exits 0 with "preempted". The
# loss is a deterministic function of the step, as a real task's would be.
# A task with eval: {every: E} prints "saturn: eval_step=N eval_loss=X
# eval_s=0" after every E-th step and after its last: its loss at that step
# plus |log10(lr) + 3| (a learning rate of 1e-3 evaluates best).
# Each call is logged to FAKE_WORKER_LOG.
# With --rank-from-env (ranks launched by Slurm) only rank SLURM_PROCID=0
# prints, checkpoints and writes results; the others just keep step.
# FAKE_WORKER_STEP_LOG gets one "start ..." and one "end ..." line of
# key=value fields per process (task, node, Slurm step, the step's GPUs,
# rank, time), for checking where and on what Slurm ran each worker.
set -u
started=$EPOCHREALTIME
mode=$1; shift
# `techniques`: the built-ins' traits, as the real worker reports them
# (FAKE_WORKER_TECHNIQUES replaces the list, a JSON array).
if [ "$mode" = techniques ]; then
  default='[{"name": "single", "layout": "one-process", "min_gpus": 1, "max_gpus": 1, "splits_batch": false, "takes_packs": true, "plugin": null},
 {"name": "ddp", "layout": "rank-per-device", "min_gpus": 2, "max_gpus": null, "splits_batch": true, "takes_packs": true, "plugin": null},
 {"name": "fsdp", "layout": "rank-per-device", "min_gpus": 2, "max_gpus": null, "splits_batch": true, "takes_packs": true, "plugin": null},
 {"name": "pipeline", "layout": "rank-per-device", "min_gpus": 2, "max_gpus": null, "splits_batch": false, "takes_packs": true, "plugin": null},
 {"name": "spill", "layout": "one-process", "min_gpus": 1, "max_gpus": 1, "splits_batch": false, "takes_packs": true, "plugin": null}]'
  printf '{"protocol": 1, "techniques": %s}\n' "${FAKE_WORKER_TECHNIQUES:-$default}"
  exit 0
fi
technique=""; gpus=1; out=""; from=0; to=0; ckdir=""; every=0; model=""; task=""; from_env=0
threads=1; estimate=""; peak=0; link=0; pack_sizes=""
while [ $# -gt 0 ]; do
  case "$1" in
    --task) task=$2; shift 2 ;;
    --technique) technique=$2; shift 2 ;;
    --gpus) gpus=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --from-step) from=$2; shift 2 ;;
    --to-step) to=$2; shift 2 ;;
    --checkpoint-dir) ckdir=$2; shift 2 ;;
    --checkpoint-every) every=$2; shift 2 ;;
    --save-model) model=$2; shift 2 ;;
    --rank-from-env) from_env=1; shift ;;
    --estimate) estimate=$2; shift 2 ;;
    --peak-tflops) peak=$2; shift 2 ;;
    --link-gb-s) link=$2; shift 2 ;;
    --pack-sizes) pack_sizes=$2; shift 2 ;;
    *) shift ;;
  esac
done
rank=0
[ "$from_env" = 1 ] && rank=${SLURM_PROCID:-0}
[ -n "${FAKE_WORKER_LOG:-}" ] && [ "$rank" = 0 ] && echo "$mode $technique $gpus $from $to${pack_sizes:+ packs=$pack_sizes}" >> "$FAKE_WORKER_LOG"
name=""
if [ -n "${FAKE_WORKER_STEP_LOG:-}" ] || [ -n "${FAKE_WORKER_RULES:-}" ]; then
  name=$(sed -n 's/.*"name": *"\([^"]*\)".*/\1/p' "$task" 2>/dev/null | head -1)
fi
steplog() {
  [ -n "${FAKE_WORKER_STEP_LOG:-}" ] || return 0
  echo "$1 mode=$mode task=$name technique=$technique gpus=$gpus from=$from" \
    "node=${SLURMD_NODENAME:-} step=${SLURM_JOB_ID:-}.${SLURM_STEP_ID:-}" \
    "step_gpus=${SLURM_STEP_GPUS:-} cuda=${CUDA_VISIBLE_DEVICES:-}" \
    "rank=$rank ntasks=${SLURM_NTASKS:-1} t=$EPOCHREALTIME${2:+ how=$2}" >> "$FAKE_WORKER_STEP_LOG"
}
steplog start
action=ok; arg=""
if [ -n "${FAKE_WORKER_RULES:-}" ] && [ -f "$FAKE_WORKER_RULES" ]; then
  rule=$(awk -v t="$name/$technique" -v g="$gpus" '$1 == t && $2 == g { $1 = ""; $2 = ""; print; exit }' "$FAKE_WORKER_RULES")
  [ -z "$rule" ] && rule=$(awk -v t="$technique" -v g="$gpus" '$1 == t && $2 == g { $1 = ""; $2 = ""; print; exit }' "$FAKE_WORKER_RULES")
  if [ -n "$rule" ]; then
    action=$(echo $rule | cut -d' ' -f1)
    arg=$(echo $rule | cut -s -d' ' -f2-)
  fi
fi
step_s=$(awk -v g="$gpus" -v t="$threads" -v b="${FAKE_STEP_S:-1}" 'BEGIN { print b / (g * t) }')
[ "$action" = ok ] && [ -n "$arg" ] && step_s=$arg
# samples S1,S2,...: a search measures these step times (their spread is
# the trial's noise); otherwise as ok with step_s = S1.
samples=$step_s
if [ "$action" = samples ]; then samples=$arg; step_s=${arg%%,*}; action=ok; fi
if [ "$action" = crash_once ]; then
  if [ -e "$arg" ]; then action=ok; arg=""; else : > "$arg"; action=crash; fi
fi
case "$action" in
  infeasible)
    printf '{"protocol": 1, "feasible": false, "technique": "%s", "gpus": %s, "reason": "%s"}\n' \
      "$technique" "$gpus" "$arg" > "$out.tmp" && mv "$out.tmp" "$out"; exit 0 ;;
  crash) steplog end crashed; echo "fake worker: segmentation fault in the model" >&2; exit 1 ;;
  oom) steplog end oom; echo "fake worker: rank 0 out of memory" >&2; exit 3 ;;
  hang) sleep 1000; exit 0 ;;
  estimated)
    printf '{"protocol": 1, "feasible": true, "technique": "%s", "gpus": %s, "step_s": %s, "peak_memory_bytes": [1073741824], "knobs": {}, "reason": "", "estimated": "%s (estimate=%s tflops=%s link=%s)"}\n' \
      "$technique" "$gpus" "$step_s" "$arg" "$estimate" "$peak" "$link" > "$out.tmp" && mv "$out.tmp" "$out"
    exit 0 ;;
esac
if [ "$mode" = search ]; then
  # --pack-sizes K1,...: arrays of K copies, each stepping step_s x (1 +
  # K/16), those of more than FAKE_WORKER_PACK_FIT members not fitting (the
  # first such ends the list).
  sizes=""
  for k in ${pack_sizes//,/ }; do
    if [ "$k" -le "${FAKE_WORKER_PACK_FIT:-1000000}" ]; then
      size_s=$(awk -v b="$step_s" -v k="$k" 'BEGIN { print b * (1 + k / 16) }')
      sizes+="${sizes:+, }{\"protocol\": 1, \"feasible\": true, \"technique\": \"$technique\", \"gpus\": $gpus, \"members\": $k, \"step_s\": $size_s, \"step_samples_s\": [$size_s], \"setup_s\": 0.01, \"reason\": \"\"}"
    else
      sizes+="${sizes:+, }{\"protocol\": 1, \"feasible\": false, \"technique\": \"$technique\", \"gpus\": $gpus, \"members\": $k, \"reason\": \"the array does not fit the device's memory\"}"
      break
    fi
  done
  # With sizes, the task alone says when it was ready and done and its
  # setup (0.05 s), so each size's launch cost can be derived from it.
  times=""
  [ -n "$pack_sizes" ] && times=", \"ready_unix_s\": $started, \"setup_s\": 0.05, \"done_unix_s\": $EPOCHREALTIME"
  printf '{"protocol": 1, "feasible": true, "technique": "%s", "gpus": %s, "step_s": %s, "step_samples_s": [%s], "peak_memory_bytes": [1073741824], "knobs": {"fake": true}, "reason": "", "pack_sizes": [%s]%s}\n' \
    "$technique" "$gpus" "$step_s" "$samples" "$sizes" "$times" > "$out.tmp" && mv "$out.tmp" "$out"
  steplog end searched
  exit 0
fi
# execute
# 50 / (10 + step), with bash arithmetic only (no process per step).
# Sets LOSS (no command substitution in the step loop: bash 5.2 can abort
# when the SIGTERM trap runs while it parses one, "reader_loop: bad jump").
loss() { local m=$((50000000 / (10 + $1))); printf -v LOSS '%d.%06d' $((m / 1000000)) $((m % 1000000)); }
checkpoint() {
  [ "$rank" = 0 ] || return 0
  mkdir -p "$ckdir/checkpoint-$1.partial"
  echo "{\"step\": $1}" > "$ckdir/checkpoint-$1.partial/meta.json"
  rm -rf "$ckdir/checkpoint-$1" && mv "$ckdir/checkpoint-$1.partial" "$ckdir/checkpoint-$1"
}
result() {
  [ "$rank" = 0 ] || return 0
  loss "$1"
  printf '{"protocol": 1, "completed_steps": %s, "final_loss": %s, "preempted": %s, "checkpoint": "%s/checkpoint-%s"}\n' \
    "$1" "$LOSS" "$2" "$ckdir" "$1" > "$out.tmp" && mv "$out.tmp" "$out"
}
eval_every=0; eval_penalty=0
if [ "$mode" = execute ] && [ -f "$task" ]; then
  eval_every=$(tr -d '\n' < "$task" | sed -n 's/.*"eval": *{[^}]*"every": *\([0-9][0-9]*\).*/\1/p')
  eval_every=${eval_every:-0}
  lr=$(tr -d '\n' < "$task" | sed -n 's/.*"lr": *\([-0-9.eE+]*\).*/\1/p')
  eval_penalty=$(awk -v lr="${lr:-0.001}" 'BEGIN { p = log(lr) / log(10) + 3; if (p < 0) p = -p; printf "%d", p * 1000000 }')
fi
evaluate() {
  [ "$rank" = 0 ] || return 0
  local m=$((50000000 / (10 + $1) + eval_penalty))
  printf -v EVAL '%d.%06d' $((m / 1000000)) $((m % 1000000))
  echo "saturn: eval_step=$1 eval_loss=$EVAL eval_s=0"
}
stop=0
trap 'stop=1' TERM
step=$from
while [ "$step" -lt "$to" ]; do
  if [ "$action" = crash_at ] && [ "$step" -ge "$arg" ]; then
    steplog end crashed; echo "fake worker: crashed at step $step" >&2; exit 1
  fi
  sleep "$step_s"
  if [ "$rank" = 0 ]; then
    loss "$step"
    if [ "$action" = nan_at ] && [ "$step" -ge "$arg" ]; then LOSS=nan; fi
    echo "saturn: step=$step loss=$LOSS step_s=$step_s"
  fi
  step=$((step + 1))
  if [ "$every" -gt 0 ] && [ $((step % every)) -eq 0 ]; then checkpoint $step; fi
  if [ "$eval_every" -gt 0 ] && { [ $((step % eval_every)) -eq 0 ] || [ "$step" -eq "$to" ]; }; then
    evaluate $step
  fi
  if [ "$stop" = 1 ]; then checkpoint $step; result $step true; steplog end preempted; exit 0; fi
done
checkpoint $step
[ -n "$model" ] && [ "$rank" = 0 ] && echo "model" > "$model"
if [ "$action" = bad_result ]; then
  echo '{"protocol": 1, "completed_steps": "all of them"}' > "$out"; steplog end finished; exit 0
fi
result $step false
steplog end finished
exit 0
