#!/usr/bin/env bash
# A stand-in for your own training program, showing Saturn's command contract
# (docs/byo.md): it "trains" by sleeping WORK seconds of compute per step,
# split over the GPUs it is given, prints one progress line per step,
# checkpoints every 10 steps and when it receives SIGTERM, and resumes from
# its newest checkpoint. Usage (as a command template):
#   train.sh --gpus {gpus} --steps {steps} --start {start_step} --ckpt {checkpoint_dir}
set -u
gpus=1; steps=0; start=0; ckpt=./checkpoints; work=${WORK:-0.2}
while [ $# -gt 0 ]; do
  case "$1" in
    --gpus) gpus=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --start) start=$2; shift 2 ;;
    --ckpt) ckpt=$2; shift 2 ;;
    *) echo "train.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$ckpt"
# Resume from the newest checkpoint we wrote, if it is ahead of --start.
step=$start
if [ -f "$ckpt/latest" ]; then
  saved=$(cat "$ckpt/latest")
  [ "$saved" -gt "$step" ] && step=$saved
fi
save() { echo "$step" > "$ckpt/latest.tmp" && mv "$ckpt/latest.tmp" "$ckpt/latest"; }
stop=0
trap 'stop=1' TERM
# Near-linear scaling with a little communication overhead per extra GPU.
step_s=$(awk -v w="$work" -v g="$gpus" 'BEGIN { printf "%.4f", w / g * (1 + 0.05 * (g - 1)) }')
while [ "$step" -lt "$steps" ]; do
  sleep "$step_s"
  loss=$((1000000 / (step + 10)))
  echo "saturn: step=$step loss=$((loss / 100000)).$(printf '%05d' $((loss % 100000))) step_s=$step_s"
  step=$((step + 1))
  [ $((step % 10)) -eq 0 ] && save
  if [ "$stop" = 1 ]; then save; exit 0; fi
done
save
