# A loopback Slurm 22.05 cluster in one folder, for tests (sourced by
# slurm_test.sh). Two node names on this host, n1 with 4 fake GPUs and n2
# with 2, munge with a private key and socket, private ports, every state
# and log file under $SLURM_DIR. Facts this relies on are in
# /work/shared/docs/platform-notes.md ("Slurm 22.05 on one machine").
#
#   SLURM_DIR=/tmp/x slurm_up || exit 77    # exports SLURM_CONF
#   srun -w n2 --gres=gpu:2 env; ...
#   slurm_down                              # stops and reaps every daemon
#
# With SLURM_PRIVATE_DIR set, the last node's slurmd runs in its own mount
# namespace with an empty tmpfs over that folder: files this host writes
# there are invisible to steps on that node (a folder that is not shared).

SLURM_NODES=${SLURM_NODES:-"n1:4 n2:2"}

# A free TCP port on 127.0.0.1 at or after $1.
free_port() {
  local p=$1
  while ss -Htln "sport = :$p" 2>/dev/null | grep -q .; do p=$((p + 1)); done
  echo "$p"
}

slurm_log() { echo "slurm-cluster: $*" >&2; }

slurm_write_conf() {
  local d=$SLURM_DIR base ctld
  base=$((20000 + ($$ * 7) % 30000))
  ctld=$(free_port "$base")
  mkdir -p "$d/state" "$d/spool" "$d/log" "$d/dev" "$d/munge"
  : > "$d/plugstack.conf"
  cat > "$d/slurm.conf" <<CONF
ClusterName=saturntest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$ctld
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$d/munge/munge.socket
CommunicationParameters=NoCtldInAddrAny,NoInAddrAny
StateSaveLocation=$d/state
SlurmdSpoolDir=$d/spool/%n
SlurmctldPidFile=$d/slurmctld.pid
SlurmdPidFile=$d/slurmd-%n.pid
SlurmctldLogFile=$d/log/slurmctld.log
SlurmdLogFile=$d/log/slurmd-%n.log
PlugStackConfig=$d/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
GresTypes=gpu
ReturnToService=2
MpiDefault=none
KillWait=5
InactiveLimit=0
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
CONF
  : > "$d/gres.conf"
  echo "AutoDetect=off" >> "$d/gres.conf"
  local spec name gpus port=$((ctld + 1)) nodes=""
  for spec in $SLURM_NODES; do
    name=${spec%%:*}; gpus=${spec##*:}
    port=$(free_port "$port")
    local g
    for ((g = 0; g < gpus; g++)); do
      rm -f "$d/dev/$name-gpu$g"
      mknod -m 666 "$d/dev/$name-gpu$g" c 1 3 || return 1
    done
    echo "NodeName=$name NodeHostname=localhost NodeAddr=127.0.0.1 Port=$port CPUs=8 RealMemory=1000 Gres=gpu:$gpus State=UNKNOWN" >> "$d/slurm.conf"
    echo "NodeName=$name Name=gpu File=$d/dev/$name-gpu[0-$((gpus - 1))]" >> "$d/gres.conf"
    nodes=${nodes:+$nodes,}$name
    port=$((port + 1))
  done
  echo "PartitionName=test Nodes=$nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO" >> "$d/slurm.conf"
}

# Waits up to $2 seconds for command $1 to succeed.
slurm_wait_for() {
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    eval "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  return 1
}

slurm_up() {
  : "${SLURM_DIR:?}"
  export SLURM_CONF=$SLURM_DIR/slurm.conf
  slurm_write_conf || { slurm_log "cannot create the fake GPU devices (mknod)"; return 1; }
  mungekey -c -k "$SLURM_DIR/munge/munge.key" >/dev/null 2>&1 || { slurm_log "mungekey failed"; return 1; }
  chmod 400 "$SLURM_DIR/munge/munge.key"
  munged -F --force -S "$SLURM_DIR/munge/munge.socket" --key-file "$SLURM_DIR/munge/munge.key" \
    --pid-file "$SLURM_DIR/munge/munged.pid" --log-file "$SLURM_DIR/log/munged.log" \
    --seed-file "$SLURM_DIR/munge/seed" >"$SLURM_DIR/log/munged.out" 2>&1 &
  SLURM_PIDS="$!"
  slurm_wait_for "[ -S '$SLURM_DIR/munge/munge.socket' ]" 10 || { slurm_log "munged did not start"; return 1; }
  slurmctld -D -i -f "$SLURM_CONF" >"$SLURM_DIR/log/slurmctld.out" 2>&1 &
  SLURM_PIDS="$SLURM_PIDS $!"
  slurm_wait_for "scontrol ping | grep -q UP" 20 || { slurm_log "slurmctld did not answer"; return 1; }
  local spec last=${SLURM_NODES##* }
  for spec in $SLURM_NODES; do
    local name=${spec%%:*} out=$SLURM_DIR/log/slurmd-${spec%%:*}.out
    if [ -n "${SLURM_PRIVATE_DIR:-}" ] && [ "$spec" = "$last" ] &&
       unshare --mount --propagation private true 2>/dev/null; then
      # unshare and sh exec: $! stays the slurmd's PID.
      unshare --mount --propagation private sh -c \
        'mount -t tmpfs saturn-private "$0" || echo "no private mount" >&2; exec "$@"' \
        "$SLURM_PRIVATE_DIR" slurmd -D -N "$name" -f "$SLURM_CONF" >"$out" 2>&1 &
    else
      slurmd -D -N "$name" -f "$SLURM_CONF" >"$out" 2>&1 &
    fi
    SLURM_PIDS="$SLURM_PIDS $!"
  done
  local n=$(echo $SLURM_NODES | wc -w)
  slurm_wait_for "[ \$(sinfo -h -N -t idle -o %N | sort -u | wc -l) -eq $n ]" 30 ||
    { slurm_log "nodes did not become idle: $(sinfo -h -N -o '%N %T %E' | tr '\n' ';')"; return 1; }
}

# Stops everything slurm_up started, in order: jobs, node daemons,
# controller, munge, each by PID and reaped; then any process still carrying
# this cluster's SLURM_CONF in its environment (a slurmstepd or a task that
# outlived its slurmd).
slurm_down() {
  [ -n "${SLURM_DIR:-}" ] || return 0
  local pid i
  if [ -n "${SLURM_PIDS:-}" ]; then
    scancel --quiet --user=root 2>/dev/null
    slurm_wait_for '[ -z "$(squeue -h -o %i 2>/dev/null)" ]' 10
  fi
  for pid in $(echo ${SLURM_PIDS:-} | tr ' ' '\n' | tac); do
    kill -TERM "$pid" 2>/dev/null
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
  SLURM_PIDS=""
  local env
  for env in $(grep -lszxF "SLURM_CONF=$SLURM_DIR/slurm.conf" /proc/[0-9]*/environ); do
    pid=${env#/proc/}; pid=${pid%/environ}
    [ "$pid" = $$ ] || [ "$pid" = "$BASHPID" ] || ! kill -0 "$pid" 2>/dev/null && continue
    slurm_log "killing leftover $(tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null)(pid $pid)"
    kill -KILL "$pid" 2>/dev/null
  done
}
