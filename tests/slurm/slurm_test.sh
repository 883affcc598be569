#!/usr/bin/env bash
# `saturn run --backend slurm` against a real Slurm 22.05 started here: a
# controller and two node daemons on 127.0.0.1 (n1 with 4 fake GPUs, n2 with
# 2; cluster.sh), and the fake worker (tests/testing/fake_worker.sh), which
# logs the Slurm step it runs in. Scenarios:
#   run      the example batch script under sbatch: trials and tasks run as
#            steps on the planned node with the planned GPU count, steps
#            running together never share a GPU, and the results equal a
#            --backend local run of the same workload and profile
#   refuse   outside an allocation, nodes or GPUs the allocation lacks, a run
#            folder one node cannot see: exit 2 with the reason
#   kill     a task's step cancelled twice: retried from its checkpoint, then
#            marked failed, while the others finish
#   serve    saturn serve --backend slurm on a `from: slurm` cluster file: the
#            allocation's nodes, trials and tasks as steps of the allocation
#   switch   a re-plan pre-empts a task on n2 (SIGTERM through Slurm, it
#            checkpoints) and resumes it on n1 with more GPUs
#
#   tests/slurm/slurm_test.sh build/src/cli/saturn
# Exit status: 0 passed, 1 failed, 77 skipped (not root, or the machine does
# not let the daemons run). SATURN_KEEP_TEST_DIR=1 keeps the test folder.
set -u

saturn=$(readlink -f "${1:?usage: slurm_test.sh SATURN_BINARY}")
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
example=$root/examples/slurm/saturn.sbatch
export SATURN_WORKER=$root/tests/testing/fake_worker.sh
started=$SECONDS
failures=0

skip() {
  echo "SKIP: $*"
  exit 77
}
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}
pass() { echo "ok: $*"; }
# check DESCRIPTION COMMAND...: runs the command, passes if it succeeds.
check() {
  local what=$1
  shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}

[ "$(id -u)" = 0 ] || skip "not root: starting munge, slurmctld and slurmd needs root"
[ -x "$saturn" ] || { echo "no saturn binary at $saturn"; exit 1; }

# Debian's packages, installed if missing.
tools="munged mungekey slurmctld slurmd srun salloc sbatch scontrol squeue scancel sinfo jq"
missing() {
  local t
  for t in $tools; do command -v "$t" >/dev/null || { echo "$t"; return; }; done
}
if [ -n "$(missing)" ]; then
  echo "installing slurm-wlm, munge and jq (missing: $(missing))"
  export DEBIAN_FRONTEND=noninteractive
  { timeout 600 apt-get install -y -qq slurm-wlm munge jq ||
    { timeout 300 apt-get update -qq && timeout 600 apt-get install -y -qq slurm-wlm munge jq; }
  } >/dev/null 2>&1
  [ -z "$(missing)" ] || skip "cannot install slurm-wlm, munge and jq ($(missing) missing)"
fi

work=$(mktemp -d /tmp/saturn-slurm-test.XXXXXX)
export SLURM_DIR=$work/cluster SLURM_PRIVATE_DIR=$work/private
mkdir -p "$SLURM_PRIVATE_DIR"
# shellcheck source=cluster.sh
source "$here/cluster.sh"
cleanup() {
  [ -n "${reaper:-}" ] && kill "$reaper" 2>/dev/null
  slurm_down
  if [ "$failures" = 0 ] && [ -z "${SATURN_KEEP_TEST_DIR:-}" ]; then
    rm -rf "$work"
  else
    echo "test files kept in $work"
  fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if ! slurm_up; then
  skip "the Slurm daemons cannot run here: $(tail -n 3 "$SLURM_DIR"/log/*.out "$SLURM_DIR"/log/*.log 2>/dev/null | tr '\n' ' ' | cut -c1-600)"
fi
echo "Slurm up in $((SECONDS - started)) s: $(sinfo -h -N -o '%N:%G:%T' | tr '\n' ' ')"
# However this script ends, even killed outright (a CTest timeout), the
# daemons end with it.
setsid bash -c 'while kill -0 "$1" 2>/dev/null; do sleep 1; done
  source "$2/cluster.sh"; SLURM_PIDS=$3; slurm_down' reaper $$ "$here" "$SLURM_PIDS" \
  > /dev/null 2>&1 < /dev/null &
reaper=$!

# ---- helpers ---------------------------------------------------------------

# Runs a command in a fresh allocation of both nodes, whole.
in_allocation() { timeout 300 salloc --quiet --nodes=2 --nodelist=n1,n2 --exclusive "$@"; }

# Workers' records from the step log ($1) as "task node step_gpu_count from
# ntasks step step_gpu_ids t_start t_end how gpus", one per process of rank 0
# in mode $2 (search or execute).
step_records() {
  awk -v mode="$2" '
    { delete f; for (i = 2; i <= NF; i++) { k = substr($i, 1, index($i, "=") - 1); f[k] = substr($i, index($i, "=") + 1) } }
    f["mode"] != mode || f["rank"] != 0 { next }
    { key = f["step"] " " f["task"] " " f["from"] }
    $1 == "start" {
      n = f["step_gpus"] == "" ? 0 : split(f["step_gpus"], g, ",")
      order[++count] = key
      rec[key] = f["task"] " " f["node"] " " n " " f["from"] " " f["ntasks"] " " f["step"] " " (f["step_gpus"] == "" ? "-" : f["step_gpus"]) " " f["t"]
      requested[key] = f["gpus"]
      end[key] = "inf"; how[key] = "killed"
    }
    $1 == "end" { end[key] = f["t"]; how[key] = f["how"] }
    END { for (i = 1; i <= count; i++) print rec[order[i]], end[order[i]], how[order[i]], requested[order[i]] }
  ' "$1"
}

# Starts of tasks from the event log as "task node gpus from", in order.
event_starts() {
  jq -r 'select(.event == "task_started") | "\(.task) \(.node) \(.gpus) \(.step)"' "$1/events.jsonl"
}

# Every worker of run $1 (step log $2) ran as a Slurm step of job $3 on its
# planned node with its planned GPU count, one step task per rank.
steps_match_plan() {
  local run=$1 log=$2 job=$3 ok=0
  diff <(event_starts "$run" | sort -s -k1,1) \
    <(step_records "$log" execute | awk '{ print $1, $2, $3, $4 }' | sort -s -k1,1) >&2 || ok=1
  step_records "$log" execute | awk -v job="$job" '
    $6 !~ "^" job "\\.[0-9]+$" { print "not a step of job " job ": " $0; bad = 1 }
    ($3 > 1 && $5 != $3) || ($3 == 1 && $5 != 1) { print "ranks != GPUs: " $0; bad = 1 }
    END { exit bad }' >&2 || ok=1
  return $ok
}

# No GPU of a node was held by two steps at once (workers' lifetimes), and
# at least two steps did run at the same time (else this proves nothing).
no_gpu_shared() {
  step_records "$1" "$2" | awk '
    { node[NR] = $2; step[NR] = $6; gpus[NR] = $7; s[NR] = $8; e[NR] = ($9 == "inf" ? 1e18 : $9) }
    END {
      for (i = 1; i <= NR; i++) for (j = i + 1; j <= NR; j++) {
        if (s[i] >= e[j] || s[j] >= e[i]) continue
        overlap = 1
        if (node[i] != node[j]) continue
        split(gpus[i], a, ","); split(gpus[j], b, ",")
        for (x in a) for (y in b) if (a[x] == b[y]) { print "GPU " node[i] ":" a[x] " in steps " step[i] " and " step[j]; bad = 1 }
      }
      if (!overlap) { print "no two steps ran at once"; bad = 1 }
      exit bad
    }' >&2
}

report_tasks() {
  jq -r '.tasks[] | "\(.task) \(.status) \(.steps_done) \(.final_loss) \(.technique) \(.gpus) \(.node) \(.failures)"' \
    "$1/report.json" | sort
}

# ---- run: the example batch script ----------------------------------------
scenario_run() {
  local d=$work/run
  mkdir -p "$d"
  cat > "$d/workload.yaml" <<'EOF'
cluster: {from: slurm, device: cuda}
tasks:
  - {name: wide, model: {type: mlp, layers: 2, width: 64}, data: {type: synthetic}, batch_size: 8,
     optimizer: {type: sgd, lr: 0.1}, steps: 12, techniques: [single, ddp], sweep: {seed: [1, 2]}}
  - {name: deep, model: {type: mlp, layers: 4, width: 32}, data: {type: synthetic}, batch_size: 8,
     optimizer: {type: sgd, lr: 0.1}, steps: 16, techniques: [single, ddp], sweep: {seed: [1, 2, 3]}}
EOF
  # More GPUs are always worth it: the plan runs tasks on several GPUs (one
  # step task per rank) and on both nodes.
  printf 'single 1 ok 0.3\nddp 2 ok 0.145\nddp 3 ok 0.095\nddp 4 ok 0.07\n' > "$d/rules.txt"
  # sbatch --wait polls every 10 s here: watch the queue instead.
  local job status i
  job=$(cd "$d" && WORKLOAD=$d/workload.yaml RUN_DIR=$d/slurm DEVICE=cuda SATURN=$saturn \
    SATURN_ARGS="--no-introspection --cache $d/cache.sqlite" FAKE_WORKER_RULES=$d/rules.txt \
    FAKE_WORKER_STEP_LOG=$d/steps.log \
    sbatch --parsable --nodes=2 --nodelist=n1,n2 --exclusive --output="$d/job.out" "$example")
  job=${job%%;*}
  for ((i = 0; i < 3000; i++)); do
    [ -n "$(squeue -h -j "$job" 2>/dev/null)" ] || break
    sleep 0.1
  done
  [ "$i" -lt 3000 ] || scancel "$job"
  status=$(scontrol -o show job "$job" | grep -oE 'ExitCode=[0-9]+' | cut -d= -f2)
  echo "-- run: sbatch job $job ended with exit $status after $((SECONDS - started)) s"
  check "run: the batch job succeeded" [ "$status" = 0 ]
  [ "$status" = 0 ] || { tail -n 20 "$d/job.out"; return; }
  check "run: the cluster read from the allocation is n1 x4 + n2 x2" \
    [ "$(tr -d ' \n' < "$d/slurm/cluster.yaml")" = "nodes:-name:n1gpus:4device:cuda-name:n2gpus:2device:cuda" ]
  check "run: every task finished" \
    [ "$(jq '[.tasks[] | select(.status == "finished")] | length' "$d/slurm/report.json")" = 5 ]
  check "run: profiling trials ran as Slurm steps with as many GPUs as they measure" \
    awk -v job="$job" '$6 !~ "^" job "\\.[0-9]+$" || $3 != $11 { print; bad = 1 } END { exit bad || NR < 8 }' \
    <(step_records "$d/steps.log" search)
  check "run: each task ran as a step of the job on its planned node with its planned GPUs" \
    steps_match_plan "$d/slurm" "$d/steps.log" "$job"
  check "run: steps running together never shared a GPU" no_gpu_shared "$d/steps.log" execute
  check "run: some tasks ran on several GPUs, one step task per rank" \
    awk '$3 > 1 { multi = 1 } END { exit !multi }' <(step_records "$d/steps.log" execute)
  check "run: both nodes ran tasks" \
    [ "$(step_records "$d/steps.log" execute | awk '{ print $2 }' | sort -u | tr '\n' ' ')" = "n1 n2 " ]
  # The same workload and profile on this machine, without Slurm (the
  # cluster the Slurm run planned for, listed).
  sed 's#^cluster: .*#cluster: slurm/cluster.yaml#' "$d/workload.yaml" > "$d/local.yaml"
  (cd "$d" && FAKE_WORKER_RULES=$d/rules.txt timeout 300 "$saturn" run "$d/local.yaml" \
    --backend local --run-dir "$d/local" --profile "$d/slurm/profile.csv" --no-introspection \
    > "$d/local.out" 2>&1)
  check "run: a local run of the same workload succeeded" [ $? = 0 ]
  check "run: results (status, steps, loss, technique, GPUs, node) equal the local run's" \
    diff <(report_tasks "$d/slurm") <(report_tasks "$d/local")
}

# ---- refuse: what cannot run is refused with the reason --------------------
scenario_refuse() {
  local d=$work/refuse out
  mkdir -p "$d"
  workload() { # FILE CLUSTER
    printf 'cluster: {nodes: [%s]}\ntasks:\n  - {name: t, model: {type: mlp, layers: 1, width: 4}, data: {type: synthetic}, batch_size: 4, optimizer: {type: sgd, lr: 0.1}, steps: 2}\n' \
      "$2" > "$1"
  }
  # expect NAME MESSAGE COMMAND...: exit 2 and MESSAGE on stderr.
  expect() {
    local name=$1 message=$2
    shift 2
    out=$("$@" 2>&1)
    local status=$?
    if [ "$status" = 2 ] && grep -qF -- "$message" <<< "$out"; then
      pass "refuse: $name"
    else
      fail "refuse: $name: exit $status, expected 2 and \"$message\" in: $out"
    fi
  }
  workload "$d/ok.yaml" "{name: n1, gpus: 4}, {name: n2, gpus: 2}"
  expect "outside an allocation" "must run inside a Slurm allocation" \
    env -u SLURM_JOB_ID -u SLURM_JOBID "$saturn" run "$d/ok.yaml" --backend slurm --run-dir "$d/r1"
  workload "$d/n3.yaml" "{name: n1, gpus: 4}, {name: n3, gpus: 2}"
  expect "a node outside the allocation" "'n3': is not a node of Slurm allocation" \
    in_allocation "$saturn" run "$d/n3.yaml" --backend slurm --run-dir "$d/r2"
  workload "$d/big.yaml" "{name: n1, gpus: 4}, {name: n2, gpus: 4}"
  expect "more GPUs than the allocation holds" "has 2 GPUs in Slurm allocation" \
    in_allocation "$saturn" run "$d/big.yaml" --backend slurm --run-dir "$d/r3"
  workload "$d/cuda.yaml" "{name: n1, gpus: 4, device: cuda}"
  expect "an allocation without GPUs" "has 0 GPUs in Slurm allocation" \
    timeout 300 salloc --quiet --nodes=1 --nodelist=n1 "$saturn" run "$d/cuda.yaml" \
    --backend slurm --run-dir "$d/r4"
  # A folder n2 cannot see (its slurmd has its own mount over it), if the
  # machine allows mount namespaces.
  echo probe > "$SLURM_PRIVATE_DIR/probe"
  if in_allocation sh -c "srun -N1 -w n1 test -e '$SLURM_PRIVATE_DIR/probe' &&
                          ! srun -N1 -w n2 test -e '$SLURM_PRIVATE_DIR/probe'" 2>/dev/null; then
    expect "a run folder one node cannot see" "not visible from Slurm node n2" \
      in_allocation "$saturn" run "$d/ok.yaml" --backend slurm --run-dir "$SLURM_PRIVATE_DIR/run"
  else
    echo "skipped: refuse: a run folder one node cannot see (no mount namespaces here;" \
      "slurm_backend_test covers the check)"
  fi
}

# ---- kill: a cancelled step is a crashed worker -----------------------------
scenario_kill() {
  local d=$work/kill
  mkdir -p "$d"
  cat > "$d/workload.yaml" <<'EOF'
cluster: {nodes: [{name: n1, gpus: 4}, {name: n2, gpus: 2}]}
tasks:
  - {name: victim, model: {type: mlp, layers: 1, width: 4}, data: {type: synthetic}, batch_size: 4, optimizer: {type: sgd, lr: 0.1}, steps: 40}
  - {name: steady1, model: {type: mlp, layers: 1, width: 4}, data: {type: synthetic}, batch_size: 4, optimizer: {type: sgd, lr: 0.1}, steps: 10}
  - {name: steady2, model: {type: mlp, layers: 1, width: 4}, data: {type: synthetic}, batch_size: 4, optimizer: {type: sgd, lr: 0.1}, steps: 10}
EOF
  printf 'task,technique,gpus,runtime_s\nvictim,single,1,6\nsteady1,single,1,1.5\nsteady2,single,1,1.5\n' > "$d/profile.csv"
  FAKE_STEP_S=0.15 FAKE_WORKER_STEP_LOG=$d/steps.log in_allocation "$saturn" run "$d/workload.yaml" \
    --backend slurm --run-dir "$d/run" --profile "$d/profile.csv" --no-introspection \
    --max-retries 1 --checkpoint-every 5 > "$d/out.log" 2>&1 &
  local pid=$! first="" second="" i
  victim_steps() { step_records "$d/steps.log" execute 2>/dev/null | awk '$1 == "victim" { print $6, $4 }'; }
  for ((i = 0; i < 300; i++)); do
    [ -e "$d/run/tasks/victim/checkpoints/checkpoint-5/meta.json" ] && first=$(victim_steps | head -n 1)
    [ -n "$first" ] && break
    sleep 0.1
  done
  [ -n "$first" ] && scancel "${first%% *}"
  for ((i = 0; i < 300; i++)); do
    second=$(victim_steps | sed -n 2p)
    [ -n "$second" ] && break
    sleep 0.1
  done
  sleep 0.5
  [ -n "$second" ] && scancel "${second%% *}"
  wait "$pid"
  local status=$?
  echo "-- kill: cancelled steps ${first%% *} and ${second%% *}; saturn ended with $status after $((SECONDS - started)) s"
  check "kill: both of the victim's steps were cancelled" [ -n "$first" -a -n "$second" ]
  check "kill: saturn reports the failure (exit 1)" [ "$status" = 1 ]
  check "kill: the retry resumed from a checkpoint" [ "${second##* }" -ge 5 ]
  check "kill: the victim failed twice, the others finished" \
    [ "$(report_tasks "$d/run" | awk '{ print $1, $2, $8 }' | tr '\n' ' ')" = "steady1 finished 0 steady2 finished 0 victim failed 2 " ]
  check "kill: the failure was retried once, then given up" \
    [ "$(jq -r 'select(.event == "task_failed") | "\(.task):\(.gave_up)"' "$d/run/events.jsonl" | tr '\n' ' ')" = "victim:false victim:true " ]
  check "kill: no step is left behind" [ -z "$(squeue -h -s -o %i)" ]
}

# ---- switch: a re-plan moves a running task to the other node --------------
scenario_switch() {
  local d=$work/switch
  mkdir -p "$d"
  # The profile says b is long and a scales badly; in truth b is short (n1
  # frees up early) and a is slow on 2 GPUs: the re-plan moves a from n2 x2
  # to n1 x4.
  cat > "$d/workload.yaml" <<'EOF'
cluster: {nodes: [{name: n1, gpus: 4}, {name: n2, gpus: 2}]}
tasks:
  - {name: a, model: {type: mlp, layers: 1, width: 4}, data: {type: synthetic}, batch_size: 4, optimizer: {type: sgd, lr: 0.1}, steps: 20, techniques: [ddp]}
  - {name: b, model: {type: mlp, layers: 1, width: 4}, data: {type: synthetic}, batch_size: 4, optimizer: {type: sgd, lr: 0.1}, steps: 20, techniques: [ddp]}
EOF
  printf 'task,technique,gpus,runtime_s\na,ddp,2,10\na,ddp,4,2.5\nb,ddp,4,20\n' > "$d/profile.csv"
  printf 'b/ddp 4 ok 0.1\na/ddp 2 ok 0.8\na/ddp 4 ok 0.2\n' > "$d/rules.txt"
  FAKE_WORKER_RULES=$d/rules.txt FAKE_WORKER_STEP_LOG=$d/steps.log in_allocation "$saturn" run \
    "$d/workload.yaml" --backend slurm --run-dir "$d/run" --profile "$d/profile.csv" \
    --interval 1 --threshold 0.5 --switch-cost 0.5 --time-limit 1 --checkpoint-every 2 \
    > "$d/out.log" 2>&1
  local status=$?
  echo "-- switch: saturn ended with $status after $((SECONDS - started)) s"
  check "switch: the run succeeded" [ "$status" = 0 ]
  check "switch: the plan switched" [ "$(jq .plan_switches "$d/run/report.json")" -ge 1 ]
  local a
  a=$(step_records "$d/steps.log" execute | awk '$1 == "a" { print $2, $3, $4, $5, $10 }' | tr '\n' ' ')
  echo "   a's steps (node GPUs from ranks how): $a"
  check "switch: a ran on n2 x2, checkpointed on SIGTERM, and resumed on n1 x4" \
    grep -qE '^n2 2 0 2 preempted n1 4 [1-9][0-9]* 4 finished $' <<< "$a"
  check "switch: a's second rank got SIGTERM too" \
    grep -qE '^end .*task=a .*node=n2 .*rank=1 .* how=preempted' "$d/steps.log"
  check "switch: the executor saw a pre-emption, not a failure" \
    [ "$(jq -r 'select(.task == "a" and (.event == "task_stopped" or .event == "task_failed")) | "\(.event):\(.reason)"' "$d/run/events.jsonl")" = "task_stopped:preempted" ]
  check "switch: every worker ran where the events say" steps_match_plan "$d/run" "$d/steps.log" \
    "$(step_records "$d/steps.log" execute | awk 'NR == 1 { split($6, s, "."); print s[1] }')"
  check "switch: steps running together never shared a GPU" no_gpu_shared "$d/steps.log" execute
  check "switch: both tasks finished" \
    [ "$(report_tasks "$d/run" | awk '{ print $1, $2, $3 }' | tr '\n' ' ')" = "a finished 20 b finished 20 " ]
}

# ---- serve: saturn serve on the allocation's nodes ---------------------------
scenario_serve() {
  local d=$work/serve
  mkdir -p "$d"
  # The cluster file says where the nodes come from, as a workload's
  # `cluster: {from: slurm}` does for saturn run.
  printf 'from: slurm\ndevice: cuda\n' > "$d/cluster.yaml"
  printf '%s\n' 'tasks:' \
    '  - {name: wide, model: {type: mlp, layers: 2, width: 64}, data: {type: synthetic}, batch_size: 8,' \
    '     optimizer: {type: sgd, lr: 0.1}, steps: 12, techniques: [single, ddp], sweep: {seed: [1, 2]}}' \
    > "$d/workload.yaml"
  printf 'single 1 ok 0.3\nddp 2 ok 0.145\nddp 3 ok 0.095\nddp 4 ok 0.07\n' > "$d/rules.txt"
  # Inside the allocation: a service on its nodes, one submission, until it ended.
  local script='
    FAKE_WORKER_RULES=$D/rules.txt FAKE_WORKER_STEP_LOG=$D/steps.log "$SATURN" serve \
      --cluster "$D/cluster.yaml" --backend slurm --state-dir "$D/state" --listen 127.0.0.1:0 \
      --cache "$D/cache.sqlite" --no-introspection > "$D/serve.out" 2>&1 &
    pid=$!
    for i in $(seq 300); do [ -e "$D/state/server.json" ] && break; sleep 0.1; done
    url=$(jq -r .url "$D/state/server.json")
    "$SATURN" submit "$D/workload.yaml" --server "$url" > "$D/submit.out" 2>&1
    "$SATURN" wait --server "$url" --timeout 200 > "$D/wait.out" 2>&1
    echo "wait=$?" > "$D/wait.status"
    echo "$SLURM_JOB_ID" > "$D/job"
    kill -TERM $pid
    wait $pid
    echo "serve=$?" >> "$D/wait.status"'
  D=$d SATURN=$saturn in_allocation bash -c "$script"
  echo "-- serve: $(tr '\n' ' ' < "$d/wait.status" 2>/dev/null)after $((SECONDS - started)) s"
  check "serve: every submitted task finished and the service stopped cleanly" \
    [ "$(tr '\n' ' ' < "$d/wait.status" 2>/dev/null)" = "wait=0 serve=0 " ]
  [ -e "$d/state/cluster.yaml" ] || { tail -n 20 "$d/serve.out"; return; }
  check "serve: the cluster read from the allocation is n1 x4 + n2 x2" \
    [ "$(tr -d ' \n' < "$d/state/cluster.yaml")" = "nodes:-name:n1gpus:4device:cuda-name:n2gpus:2device:cuda" ]
  check "serve: each task ran as a step of the allocation on its planned node with its planned GPUs" \
    steps_match_plan "$d/state" "$d/steps.log" "$(cat "$d/job")"
  check "serve: profiling trials ran as Slurm steps" \
    awk -v job="$(cat "$d/job")" '$6 !~ "^" job "\\.[0-9]+$" { print; bad = 1 } END { exit bad || NR < 4 }' \
    <(step_records "$d/steps.log" search)
}

scenario_run
scenario_serve
scenario_refuse
scenario_kill
scenario_switch

echo "slurm test: $failures failure(s) in $((SECONDS - started)) s"
[ "$failures" = 0 ]
