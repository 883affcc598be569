#!/usr/bin/env bash
# The dashboard in a real browser: starts an API, loads the page in headless
# Chromium and checks that the rendered DOM shows the API's tasks, their status
# and progress, the Gantt chart, the loss curves and the plan card (its end,
# its status in words, what current practice would take, the run done), the
# model selection (hyper-parameter columns, evaluations and their curves, the
# best so far of each sweep, the report link), following /v1/events live
# (tests/service/browser_check.py does the checking).
#
#   browser_test.sh mock   ARTIFACT_DIR            # tests/service/mock_api.py, canned runs
#   browser_test.sh server ARTIFACT_DIR SATURN     # `saturn serve` + `saturn submit`, fake workers
#
# Artifacts: ARTIFACT_DIR/<case>/dashboard.png (screenshot), dashboard.html
# (the rendered DOM), check.log, and the server's log. Exits 77 (ctest skip)
# when Chromium is not installed: scripts/setup.sh installs Debian's chromium.
set -u
mode=${1:?usage: browser_test.sh mock|server ARTIFACT_DIR [SATURN]}
artifacts=${2:?usage: browser_test.sh mock|server ARTIFACT_DIR [SATURN]}
saturn=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
python=/usr/bin/python3

chromium=$(command -v chromium || command -v chromium-browser || true)
if [[ -z "$chromium" ]]; then
  echo "SKIP: chromium is not installed (Debian package 'chromium'; scripts/setup.sh installs it)"
  exit 77
fi

rm -rf "$artifacts"
mkdir -p "$artifacts"
pids=()
cleanup() {
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
}
trap cleanup EXIT

# wait_for_line FILE REGEX: waits (up to 30 s) until FILE has a line matching
# REGEX, prints its first match.
wait_for_line() {
  for _ in $(seq 300); do
    if grep -qE "$2" "$1" 2>/dev/null; then
      grep -oE "$2" "$1" | head -1
      return 0
    fi
    sleep 0.1
  done
  echo "FAILED: no line matching '$2' in $1:" >&2
  cat "$1" >&2
  return 1
}

# serve_and_submit DIR NAME: `saturn serve` on DIR/cluster.yaml (state and
# cache in DIR, log in $artifacts/NAME.log) with fake workers
# (tests/testing/fake_worker.sh: 0.2 s a step, no training), then `saturn
# submit` of DIR/workload.yaml; sets $url. Port 0: the server picks a free one
# and writes its URL to server.json.
serve_and_submit() {
  local dir=$1 log=$artifacts/$2.log
  SATURN_WORKER="$source_dir/tests/testing/fake_worker.sh" FAKE_STEP_S=0.2 \
    "$saturn" serve --cluster "$dir/cluster.yaml" --listen 127.0.0.1:0 \
    --state-dir "$dir/state" --cache "$dir/cache.sqlite" >"$log" 2>&1 &
  pids+=($!)
  url=$("$python" - "$dir/state/server.json" <<'PY'
import json, sys, time
for _ in range(300):
    try:
        print(json.load(open(sys.argv[1]))["url"])
        sys.exit(0)
    except (OSError, ValueError, KeyError):
        time.sleep(0.1)
sys.exit(1)
PY
) || { echo "FAILED: saturn serve ($2) never wrote its URL"; cat "$log"; return 1; }
  "$saturn" submit "$dir/workload.yaml" --server "$url" >"$artifacts/submit-$2.log" 2>&1 || {
    echo "FAILED: saturn submit ($2)"; cat "$artifacts/submit-$2.log" "$log"; return 1; }
}

# check CASE ARGS...: runs the browser check of one case into $artifacts/CASE.
check() {
  local case=$1
  shift
  echo "--- $case"
  if ! "$python" "$here/browser_check.py" --chromium "$chromium" \
      --artifacts "$artifacts/$case" "$@"; then
    echo "FAILED: $case (see $artifacts/$case/check.log and dashboard.png)"
    return 1
  fi
}

# start_mock CASE ARGS...: the mock API with its scenario; sets $url.
start_mock() {
  local case=$1
  shift
  mkdir -p "$artifacts/$case"
  "$python" "$here/mock_api.py" --port 0 --verbose "$@" >"$artifacts/$case/api.log" 2>&1 &
  pids+=($!)
  local port
  port=$(wait_for_line "$artifacts/$case/api.log" 'listening on [0-9]+' | grep -oE '[0-9]+$') || exit 1
  url=http://127.0.0.1:$port
}

status=0
case "$mode" in
  mock)
    # A busy run with a token: every status, a re-plan and t5-small starting
    # 3.5-4 s after the page loads, so the page must follow the stream to pass.
    # Streams end every 2 s and replay everything: nothing may be counted twice.
    # The gpt2 sweep's best so far is ahead by more than twice the noise;
    # t5-small evaluates live (9 s after the page loads): its row and its own
    # best-so-far line (no runner-up) follow the task_evaluated event.
    start_mock busy --scenario busy --token s3cret-token --drop-streams-after 2
    check busy --server "$url" --token s3cret-token \
      --expect-tasks gpt2-lr1e-4,gpt2-lr3e-4,bert-base,resnet50,vit-small,gpt2-lr1e-3,t5-small,llama-tiny \
      --wait-status t5-small=running --expect-moving --min-streams 2 --timeout 60 \
      --delay-of "t5-small=running:emitted task_started t5-small:$artifacts/busy/api.log" \
      --expect-text '#c-plan-label' '^Plan ends$' --expect-text '#c-plan-sub' '^in .* · proven optimal$' \
      --expect-text '#c-plan-baseline' '^$' \
      --expect-text 'th[data-path="optimizer.lr"]' '^lr$' \
      --expect-text 'tr[data-task="gpt2-lr3e-4"] td.hp' '^0\.0003$' \
      --expect-text '#best li[data-sweep="gpt2"]' '^gpt2: gpt2-lr1e-4 — eval loss [0-9.]+ at step [0-9]+; ahead of gpt2-lr3e-4 by [0-9.]+ \(standard error 0\.0085: more than twice the noise\) · 2 of 3 tasks evaluated$' \
      --expect-text 'tr[data-task="t5-small"] td.eval' '^\(best\) [0-9.]+ @10$' \
      --expect-text '#best li[data-sweep="t5-small"]' '^t5-small: t5-small — eval loss [0-9.]+ at step [0-9]+ · 1 of 1 task evaluated$' || status=1
    # A server that wants the token for the page too: /?access_token=.
    start_mock query-token --scenario busy --token s3cret-token --token-for-page
    check query-token --server "$url" --token s3cret-token --token-in-query --timeout 30 || status=1
    # Every task ended (one cancelled before it started, which its plan, stopped
    # at its time limit, still places): the plan card says the run is done and
    # when, the plan's status is in words, the baselines say what Saturn saves,
    # and the cancelled task shows no technique, GPUs or node. Its server
    # predates model selection (no hyperparameters, eval, best, report): the
    # page shows none of it.
    start_mock ended --scenario ended
    check ended --server "$url" --timeout 30 \
      --expect-tasks gpt2-lr1e-4,gpt2-lr3e-4,resnet50,vit-small,bert-base \
      --expect-text '#c-plan' '^done$' \
      --expect-text '#c-plan-sub' '^at 27m10s on the run clock · all 5 tasks ended$' \
      --expect-text '#c-plan-baseline' "^Saturn's plan takes ~28m20s; current practice \(each task on a whole node, one after another\) ~1h11m \(2\.50× longer\)$" \
      --expect-text '#plan-note' '^plan stopped at its time limit \(not proven optimal\) · ' \
      --reject-text main 'time_limit|past due' \
      --expect-text 'tr[data-task="bert-base"] td:nth-child(3)' '^–$' \
      --expect-text 'tr[data-task="bert-base"] td:nth-child(4)' '^–$' \
      --expect-text 'tr[data-task="bert-base"] td:nth-child(5)' '^–$' || status=1
    # Model selection after a search and a sweep have ended, with a report:
    # hyper-parameter columns (two paths ending in "type" named whole), the
    # latest evaluations with "(best)" on each sweep's best in its metric's
    # column, dashed evaluation curves, the best so far in the report's words
    # (a runner-up within the evaluations' noise; one ranked by accuracy on one
    # batch, its noise unknown), tasks stopped early by ASHA, and the report link.
    start_mock sweep --scenario sweep --token s3cret-token
    check sweep --server "$url" --token s3cret-token --timeout 30 \
      --expect-tasks gpt-lr3.162e-5-seed1,gpt-lr3.162e-4-seed1,gpt-lr3.162e-4-seed2,gpt-lr1e-3-seed1,gpt-lr3.162e-3-seed1,lora-gpt2-adamw,lora-gpt2-sgd,lora-llama-adamw,resnet50 \
      --wait-status gpt-lr1e-3-seed1=stopped \
      --expect-text 'th[data-path="optimizer.lr"]' '^lr$' \
      --expect-text 'th[data-path="model.type"]' '^model\.type$' \
      --expect-text 'tr[data-task="gpt-lr3.162e-5-seed1"] td.hp' '^3\.16228e-05$' \
      --expect-text 'tr[data-task="gpt-lr3.162e-4-seed2"] td.hp' '^0\.000316228$' \
      --expect-text 'tr[data-task="resnet50"] td.hp' '^–$' \
      --expect-text 'tr[data-task="gpt-lr3.162e-4-seed1"] td.eval[data-metric=eval_loss]' '^\(best\) 2\.3915 @1000$' \
      --expect-text 'tr[data-task="gpt-lr1e-3-seed1"] td.eval[data-metric=eval_loss]' '^2\.9725 @400$' \
      --expect-text 'tr[data-task="lora-llama-adamw"] td.eval[data-metric=eval_accuracy]' '^\(best\) 0\.4548$' \
      --expect-text '#best li[data-sweep="gpt"]' "^gpt: gpt-lr3\.162e-4-seed1 — eval loss 2\.3915 at step 1000; ahead of gpt-lr3\.162e-4-seed2 by 0\.0060 \(standard error 0\.0085: within the evaluations' noise\) · 5 of 5 tasks evaluated$" \
      --expect-text '#best li[data-sweep="lora"]' '^lora: lora-llama-adamw — eval accuracy 0\.4548 at step 600; ahead of lora-gpt2-adamw by 0\.0110 \(noise unknown: evaluate on 2 or more batches for a standard error\) · 3 of 3 tasks evaluated$' \
      --expect-text '#loss path[data-kind=eval][data-task="gpt-lr3.162e-4-seed1"][stroke-dasharray]' '' \
      --expect-text '#report-link' '^report' || status=1
    # Nothing submitted yet: the empty state.
    start_mock empty --scenario empty
    check empty --server "$url" --expect-empty --timeout 30 || status=1
    ;;
  server)
    [[ -x "$saturn" ]] || { echo "FAILED: no saturn binary at '$saturn'"; exit 1; }
    work="$artifacts/work"
    mkdir -p "$work"
    head -c 3000 /dev/zero | tr '\0' z >"$work/corpus.txt"
    cat >"$work/cluster.yaml" <<'EOF'
nodes: [{name: node0, gpus: 4, gpu_memory_gib: 1}]
EOF
    {
      echo "cluster: cluster.yaml"
      echo "tasks:"
      for name in gpt-a gpt-b gpt-c; do
        echo "  - name: $name"
        echo "    model: {type: gpt, layers: 1, d_model: 16, heads: 2, seq_len: 8}"
        echo "    data: {type: text, path: corpus.txt}"
        echo "    batch_size: 4"
        echo "    optimizer: {type: sgd, lr: 0.1}"
        echo "    steps: 60"
        echo "    eval: {every: 20}"
      done
    } >"$work/workload.yaml"
    serve_and_submit "$work" server || exit 1
    check server --server "$url" --expect-tasks gpt-a,gpt-b,gpt-c --expect-moving \
      --wait-status gpt-a=finished --wait-status gpt-b=finished --wait-status gpt-c=finished \
      --timeout 120 || status=1
    # A page opened after every task ended: the stream's recent progress
    # messages must not make finished tasks look running again.
    check server-ended --server "$url" --expect-tasks gpt-a,gpt-b,gpt-c \
      --wait-status gpt-a=finished --wait-status gpt-b=finished --wait-status gpt-c=finished \
      --expect-text '#c-plan' '^done$' \
      --expect-text '#c-plan-sub' '^at [0-9.hms]+ on the run clock · all 3 tasks ended$' \
      --reject-text main 'time_limit|past due' --timeout 30 || status=1
    # A task cancelled before it started: a second server with one GPU and two
    # tasks; the one waiting for the GPU is cancelled while the other trains.
    # It ran nowhere, so its row shows no technique, GPUs or node, although
    # the plan placed it; once the other ends, the run is done.
    one="$artifacts/one-gpu"
    mkdir -p "$one"
    cp "$work/corpus.txt" "$one/"
    echo "nodes: [{name: node0, gpus: 1, gpu_memory_gib: 1}]" >"$one/cluster.yaml"
    sed -e 's/gpt-a/gpt-d/' -e 's/gpt-b/gpt-e/' -e '/name: gpt-c/,$d' "$work/workload.yaml" \
      >"$one/workload.yaml"
    serve_and_submit "$one" server-one || exit 1
    # "RUNNING QUEUED" once one trains and the plan places the other after it.
    read -r running queued < <("$python" - "$url" <<'PY'
import json, sys, time, urllib.request
for _ in range(600):
    tasks = json.load(urllib.request.urlopen(sys.argv[1] + "/v1/tasks", timeout=10))["tasks"]
    by = {t["status"]: t for t in tasks}
    if len(tasks) == 2 and "running" in by and by.get("queued", {}).get("technique"):
        print(by["running"]["id"], by["queued"]["id"])
        sys.exit(0)
    time.sleep(0.1)
sys.exit(1)
PY
) || { echo "FAILED: never one task running and one queued"; cat "$artifacts/server-one.log"; exit 1; }
    "$saturn" cancel "$queued" --server "$url" >"$artifacts/cancel-one.log" 2>&1 || {
      echo "FAILED: saturn cancel $queued"; cat "$artifacts/cancel-one.log"; exit 1; }
    # The cancelled task shows no technique, GPUs or node: columns 4-6, after
    # the task, its evaluation loss and its status.
    check server-cancelled --server "$url" --expect-tasks gpt-d,gpt-e \
      --wait-status "$running=finished" --wait-status "$queued=cancelled" \
      --expect-text "tr[data-task=\"$queued\"] td:nth-child(4)" '^–$' \
      --expect-text "tr[data-task=\"$queued\"] td:nth-child(5)" '^–$' \
      --expect-text "tr[data-task=\"$queued\"] td:nth-child(6)" '^–$' \
      --expect-text '#c-plan' '^done$' --reject-text main 'time_limit|past due' \
      --timeout 90 || status=1
    ;;
  *)
    echo "usage: browser_test.sh mock|server ARTIFACT_DIR [SATURN]" >&2
    exit 2
    ;;
esac
echo "screenshots: $artifacts/*/dashboard.png"
exit $status
