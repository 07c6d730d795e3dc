#!/bin/sh
# local-slurm.sh: a private Slurm cluster on this machine, for tests and for trying accel's Slurm
# templates without a real cluster. Uses the Debian packages (slurm-wlm 22.05, munge) and runs as root.
#
#   local-slurm.sh up        start munged, slurmctld and N slurmd; wait until the nodes are idle
#   eval "$(local-slurm.sh env)"   SLURM_CONF and the Open MPI settings for clients (srun, sbatch)
#   local-slurm.sh status    daemons, nodes, jobs (exit 0 up, 1 partly up, 3 down)
#   local-slurm.sh down      cancel every job, stop every daemon this script started, remove the state
#
# Knobs (read by `up`; the other commands use what `up` recorded in $LOCAL_SLURM_DIR/state.env):
#   LOCAL_SLURM_DIR=/tmp/local-slurm  state directory (config, munge key and socket, spool, logs)
#   LOCAL_SLURM_NODES=1       virtual nodes n1..nN, one slurmd each (slurmd -N nX); MPI sees them as separate
#                             nodes because each has its own TmpFS, TMPDIR and Open MPI shared-memory directory
#   LOCAL_SLURM_CPUS=<cores>  CPUs per node (may exceed the real cores: SlurmdParameters=config_overrides)
#   LOCAL_SLURM_GPUS=0        N: every node advertises N "gpu" GRES (stand-in device files), so that GPU job
#                             scripts (--gpus-per-node) are accepted; the jobs still compute on the CPU
#   LOCAL_SLURM_PORT=auto     slurmctld port; slurmd of node k uses PORT+k. 'auto' picks the first free block
#                             from 17817 upwards (outside the ephemeral port range); a number is used as is
#   LOCAL_SLURM_CRED_EXPIRE=10  seconds a job credential lives; also the delay before a requeued job restarts
#                             (Slurm's default is 120)
#   LOCAL_SLURM_LINK_ETC=0    1: also link /etc/slurm/slurm.conf to the config, only if that path is free
#   LOCAL_SLURM_KEEP_LOGS=0   1: `down` keeps $LOCAL_SLURM_DIR/log
#   LOCAL_SLURM_WAIT=30       seconds `up` waits for the nodes to become idle
#
# Safe to repeat: `up` on a running cluster does nothing; `up` after a run that died (stale pid files,
# half-started daemons) cleans up first. Daemons are identified by pid file, /proc/PID/comm and their
# command line (which names this state directory), never by name alone. A stopped daemon can stay a
# zombie for seconds on machines whose PID 1 reaps slowly, so "running" means /proc/PID/stat state != Z.
set -u

D=${LOCAL_SLURM_DIR:-/tmp/local-slurm}
D=${D%/}
CONF=$D/etc/slurm.conf
STATE=$D/state.env
SBIN=${LOCAL_SLURM_SBIN:-/usr/sbin}

say() { echo "local-slurm: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# ------------------------------------------------------------------ processes
# running PID COMM: PID is a live (not zombie) process named COMM whose command line mentions $D.
running() {
    p=$1
    case $p in ''|*[!0-9]*) return 1 ;; esac
    [ -r "/proc/$p/stat" ] || return 1
    st=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$st" ] && [ "$st" != Z ] || return 1
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$2" ] || return 1
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF -- "$D/" || return 1
}

pid_of() { [ -r "$1" ] && tr -dc 0-9 <"$1"; }

# The daemons of this cluster as "pidfile comm" lines, slurmd first (stopped first).
daemons() {
    for f in "$D"/run/slurmd-*.pid; do [ -e "$f" ] && echo "$f slurmd"; done
    echo "$D/run/slurmctld.pid slurmctld"
    echo "$D/munge/munged.pid munged"
}

# Processes of this cluster that the pid files missed (a pid file lost or overwritten) and job
# processes left behind: every daemon is started with SLURM_CONF=$CONF in its environment, which
# slurmscriptd and slurmstepd inherit, and job tasks inherit it from the submitter. Matched: our
# daemons by name, and any process that also carries a job id. Never this shell or its ancestors.
leftovers() {
    ancestors=" "
    a=$$
    while [ -n "$a" ] && [ "$a" -gt 1 ] 2>/dev/null; do
        ancestors="$ancestors$a "
        a=$(sed 's/^.*) //' "/proc/$a/stat" 2>/dev/null | cut -d' ' -f2)
    done
    for e in /proc/[0-9]*/environ; do
        p=${e#/proc/}; p=${p%/environ}
        case $ancestors in *" $p "*) continue ;; esac
        tr '\0' '\n' 2>/dev/null <"$e" | grep -qxF "SLURM_CONF=$CONF" || continue
        c=$(cat "/proc/$p/comm" 2>/dev/null)
        case $c in
            munged|slurmctld|slurmd|slurmscriptd|slurmstepd) ;;
            *) tr '\0' '\n' 2>/dev/null <"$e" | grep -q '^SLURM_JOB_ID=' || continue ;;
        esac
        st=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | cut -d' ' -f1)
        [ -n "$st" ] && [ "$st" != Z ] && echo "$p"
    done
}

# any_running PID COMM [PID COMM...]: one of the pairs still runs.
any_running() {
    while [ $# -ge 2 ]; do running "$1" "$2" && return 0; shift 2; done
    return 1
}

# wait_gone SECONDS PID COMM...: wait until none of the (pid, comm) pairs runs.
wait_gone() {
    t=$1; shift
    i=0
    while [ "$i" -lt $((t * 10)) ]; do
        any_running "$@" || return 0
        sleep 0.1; i=$((i + 1))
    done
    return 1
}

# ------------------------------------------------------------------ ports
port_busy() {
    hex=$(printf '%04X' "$1")
    awk -v h=":$hex" 'NR > 1 && substr($2, length($2) - 4) == h && $4 == "0A" { found = 1 } END { exit !found }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

block_free() {   # block_free BASE COUNT
    k=0
    while [ "$k" -le "$2" ]; do port_busy $(($1 + k)) && return 1; k=$((k + 1)); done
    return 0
}

# ------------------------------------------------------------------ commands
load_state() {
    [ -r "$STATE" ] || return 1
    # shellcheck disable=SC1090
    . "$STATE"
}

client() { SLURM_CONF=$CONF "$@"; }

cmd_env() {
    load_state || die "no cluster in $D (run '$0 up' first, with the same LOCAL_SLURM_DIR)"
    cat <<EOF
export SLURM_CONF='$CONF'
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
EOF
}

# status_code: 0 every daemon runs, 3 none, 1 some.
status_code() {
    up=0 down=0
    while read -r f c; do
        if running "$(pid_of "$f")" "$c"; then up=$((up + 1)); else down=$((down + 1)); fi
    done <<EOF
$(daemons)
EOF
    load_state || { [ "$up" = 0 ] && return 3; return 1; }
    expect=$((NODES + 2))
    [ "$up" = "$expect" ] && return 0
    [ "$up" = 0 ] && return 3
    return 1
}

cmd_status() {
    if ! load_state; then echo "local-slurm: no cluster in $D"; return 3; fi
    echo "local-slurm: $D, $NODES node(s) x $CPUS CPUs, ${GPUS:-0} gpu GRES, slurmctld port $PORT, SLURM_CONF=$CONF"
    while read -r f c; do
        p=$(pid_of "$f")
        if running "$p" "$c"; then echo "  $c ($(basename "$f" .pid)) pid $p: running"
        else echo "  $c ($(basename "$f" .pid)): not running"; fi
    done <<EOF
$(daemons)
EOF
    status_code; rc=$?
    if [ "$rc" = 0 ]; then
        timeout 10 env SLURM_CONF="$CONF" sinfo -h -N -o '  node %N: %T, %c CPUs' 2>&1
        timeout 10 env SLURM_CONF="$CONF" squeue -h -o '  job %i %j: %T on %D node(s) %R' 2>&1
    fi
    return "$rc"
}

cmd_down() {
    load_state 2>/dev/null || true
    # Jobs first: slurmstepd outlives slurmd by design.
    ctld=$(pid_of "$D/run/slurmctld.pid")
    if running "$ctld" slurmctld; then
        jobs=$(timeout 10 env SLURM_CONF="$CONF" squeue -h -o %A 2>/dev/null)
        if [ -n "$jobs" ]; then
            # shellcheck disable=SC2086
            timeout 10 env SLURM_CONF="$CONF" scancel $jobs 2>/dev/null
            i=0
            while [ "$i" -lt 100 ]; do
                [ -z "$(leftovers)" ] && break
                sleep 0.1; i=$((i + 1))
            done
        fi
    fi
    pairs=""
    while read -r f c; do
        p=$(pid_of "$f")
        if running "$p" "$c"; then kill -TERM "$p" 2>/dev/null; pairs="$pairs $p $c"; fi
    done <<EOF
$(daemons)
EOF
    # shellcheck disable=SC2086
    if [ -n "$pairs" ] && ! wait_gone 10 $pairs; then
        set -- $pairs
        while [ $# -ge 2 ]; do running "$1" "$2" && kill -KILL "$1" 2>/dev/null; shift 2; done
        wait_gone 5 $pairs || say "WARNING: some daemons did not stop:$pairs"
    fi
    left=$(leftovers)
    if [ -n "$left" ]; then
        say "stopping leftover processes of this cluster:" "$(echo "$left" | tr '\n' ' ')"
        # shellcheck disable=SC2086
        kill -TERM $left 2>/dev/null
        i=0
        while [ "$i" -lt 30 ] && [ -n "$(leftovers)" ]; do sleep 0.1; i=$((i + 1)); done
        left=$(leftovers)
        # shellcheck disable=SC2086
        [ -n "$left" ] && kill -KILL $left 2>/dev/null
    fi
    if [ "${LINK_ETC:-0}" = 1 ] && [ "$(readlink /etc/slurm/slurm.conf 2>/dev/null)" = "$CONF" ]; then
        rm -f /etc/slurm/slurm.conf
    fi
    [ -n "${SHM:-}" ] && rm -rf "$SHM"
    if [ -d "$D" ]; then
        if [ "${LOCAL_SLURM_KEEP_LOGS:-0}" = 1 ]; then
            find "$D" -mindepth 1 -maxdepth 1 ! -name log -exec rm -rf {} +
            say "stopped; logs kept in $D/log"
        else
            rm -rf "$D"
        fi
    fi
    return 0
}

write_conf() {
    mkdir -p "$D/etc" "$D/run" "$D/log" "$D/spool/ctld" "$D/munge" "$D/tmp"
    : >"$D/etc/plugstack.conf"     # keep the system's /etc/slurm/plugstack.conf (SPANK plugins) out
    cat >"$D/etc/task_prolog.sh" <<EOF
#!/bin/sh
# TaskProlog: virtual nodes share one hostname, so Open MPI's per-host files (shared-memory segments,
# session directory) must be told apart by node name, or ranks of different nodes collide; and by
# job, or one job's cleanup of its session directory races another job's creation of its own (seen:
# "shared memory initialization ... open(2) ENOENT", then a segfault, with two jobs on one node).
d=\${SLURMD_NODENAME:-node}/job\${SLURM_JOB_ID:-0}
mkdir -p "$SHM/\$d" "$D/tmp/\$d"
echo "export OMPI_MCA_btl_vader_backing_directory=$SHM/\$d"
echo "export TMPDIR=$D/tmp/\$d"
EOF
    chmod 755 "$D/etc/task_prolog.sh"
    {
        cat <<EOF
# Written by local-slurm.sh: a private test cluster on this machine.
ClusterName=local
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$PORT
AuthType=auth/munge
CredType=cred/munge
# cred_expire: job credentials' lifetime, and how long a requeued job waits before it may start
AuthInfo=socket=$D/munge/munge.sock,cred_expire=$CRED_EXPIRE
StateSaveLocation=$D/spool/ctld
SlurmdSpoolDir=$D/spool/%n
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd-%n.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
PlugStackConfig=$D/etc/plugstack.conf
# pmix puts spmix_appdir_* under TmpFS: one per virtual node, or steps collide
TmpFS=$D/tmp/%n
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
TaskProlog=$D/etc/task_prolog.sh
JobCompType=jobcomp/filetxt
JobCompLoc=$D/log/jobcomp.txt
MailProg=/bin/true
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,sched_interval=2,bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# Debian's Open MPI wires up only through PMIx (pmi2 and none abort)
MpiDefault=pmix
ReturnToService=2
SlurmdParameters=config_overrides
SlurmdTimeout=60
KillWait=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
EOF
        gres=""
        if [ "$GPUS" -gt 0 ]; then
            echo "GresTypes=gpu"
            gres=" Gres=gpu:$GPUS"
            # Slurm drops GPUs without device files: stand-ins (copies of /dev/null, never opened here).
            mkdir -p "$D/dev"
            g=0
            while [ "$g" -lt "$GPUS" ]; do mknod "$D/dev/gpu$g" c 1 3 2>/dev/null || : >"$D/dev/gpu$g"; g=$((g + 1)); done
            printf 'AutoDetect=off\nName=gpu File=%s/dev/gpu[0-%s]\n' "$D" $((GPUS - 1)) >"$D/etc/gres.conf"
        fi
        k=1
        while [ "$k" -le "$NODES" ]; do
            mkdir -p "$D/tmp/n$k"
            echo "NodeName=n$k NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((PORT + k)) CPUs=$CPUS$gres State=UNKNOWN"
            k=$((k + 1))
        done
        echo "PartitionName=debug Nodes=n[1-$NODES] Default=YES DefaultTime=00:10:00 MaxTime=INFINITE OverSubscribe=YES State=UP"
    } >"$CONF"
    cat >"$STATE" <<EOF
NODES=$NODES
CPUS=$CPUS
GPUS=$GPUS
PORT=$PORT
SHM='$SHM'
LINK_ETC=$LINK_ETC
EOF
}

# Wait until every node is idle; print the reason when they do not come up.
wait_idle() {
    i=0
    while [ "$i" -lt $((WAIT * 10)) ]; do
        states=$(timeout 5 env SLURM_CONF="$CONF" sinfo -h -N -o %T 2>/dev/null | sort | uniq -c | tr -s ' ')
        case $states in " $NODES idle") return 0 ;; esac
        sleep 0.1; i=$((i + 1))
    done
    say "nodes not idle after ${WAIT}s (sinfo: $states)"
    return 1
}

cmd_up() {
    [ "$(id -u)" = 0 ] || die "needs root (slurmd runs job steps as their user and here SlurmUser=root)"
    for b in munged mungekey slurmctld slurmd; do
        [ -x "$SBIN/$b" ] || command -v "$b" >/dev/null 2>&1 || die "$b not found (apt-get install slurm-wlm munge)"
    done
    if [ -r "$STATE" ] && status_code; then
        say "already up in $D"
        return 0
    fi
    if [ -e "$D" ]; then
        say "cleaning up a previous cluster in $D"
        cmd_down
    fi

    NODES=${LOCAL_SLURM_NODES:-1}
    CPUS=${LOCAL_SLURM_CPUS:-$(nproc)}
    GPUS=${LOCAL_SLURM_GPUS:-0}
    CRED_EXPIRE=${LOCAL_SLURM_CRED_EXPIRE:-10}
    WAIT=${LOCAL_SLURM_WAIT:-30}
    LINK_ETC=${LOCAL_SLURM_LINK_ETC:-0}
    case $NODES in ''|*[!0-9]*|0) die "LOCAL_SLURM_NODES='$NODES' is not a positive number" ;; esac
    case $CPUS in ''|*[!0-9]*|0) die "LOCAL_SLURM_CPUS='$CPUS' is not a positive number" ;; esac
    case $GPUS in ''|*[!0-9]*) die "LOCAL_SLURM_GPUS='$GPUS' is not a number" ;; esac
    case $CRED_EXPIRE in ''|*[!0-9]*|0) die "LOCAL_SLURM_CRED_EXPIRE='$CRED_EXPIRE' is not a positive number" ;; esac
    # Clusters started at the same time (make -j check) must not pick the same free ports: choose
    # and bind them under one machine-wide lock, held until the daemons listen.
    if command -v flock >/dev/null 2>&1; then
        exec 9>"${LOCAL_SLURM_LOCK:-/tmp/local-slurm.lock}"
        flock -w 120 9 || die "timed out waiting for ${LOCAL_SLURM_LOCK:-/tmp/local-slurm.lock}"
    fi
    PORT=${LOCAL_SLURM_PORT:-auto}
    if [ "$PORT" = auto ]; then
        PORT=17817
        while ! block_free "$PORT" "$NODES"; do
            PORT=$((PORT + 20))
            [ "$PORT" -lt 27817 ] || die "no free block of $((NODES + 1)) TCP ports in 17817..27817"
        done
    else
        case $PORT in ''|*[!0-9]*) die "LOCAL_SLURM_PORT='$PORT' is not a port number" ;; esac
        block_free "$PORT" "$NODES" || die "a port in $PORT..$((PORT + NODES)) is in use
--> hint: choose another LOCAL_SLURM_PORT, or LOCAL_SLURM_PORT=auto"
    fi
    SHM=/dev/shm/local-slurm.$PORT

    # munge's client refuses a socket whose directories are not o+x.
    mkdir -p "$D" || die "cannot create $D"
    chmod 755 "$D"
    write_conf
    chmod 755 "$D/munge"
    rm -rf "$SHM"; mkdir -p "$SHM"

    mungekey -c -k "$D/munge/munge.key" -b 1024 >/dev/null 2>&1 \
        || dd if=/dev/urandom of="$D/munge/munge.key" bs=128 count=1 2>/dev/null
    chmod 600 "$D/munge/munge.key"
    SLURM_CONF=$CONF "$SBIN/munged" 9>&- --key-file="$D/munge/munge.key" --socket="$D/munge/munge.sock" \
        --pid-file="$D/munge/munged.pid" --log-file="$D/munge/munged.log" \
        --seed-file="$D/munge/munged.seed" || { cat "$D/munge/munged.log" >&2; cmd_down; die "munged did not start"; }

    if [ "$LINK_ETC" = 1 ]; then
        if [ ! -e /etc/slurm/slurm.conf ] && [ ! -L /etc/slurm/slurm.conf ]; then
            mkdir -p /etc/slurm && ln -s "$CONF" /etc/slurm/slurm.conf
        else
            say "/etc/slurm/slurm.conf exists: not linking it (use: eval \"\$($0 env)\")"
            sed -i 's/^LINK_ETC=1/LINK_ETC=0/' "$STATE"
        fi
    fi

    # SLURM_CONF in the daemons' environment marks them and their job steps as ours (see leftovers).
    SLURM_CONF=$CONF "$SBIN/slurmctld" -f "$CONF" 9>&- \
        || { tail -n 20 "$D/log/slurmctld.log" >&2; cmd_down; die "slurmctld did not start"; }
    k=1
    while [ "$k" -le "$NODES" ]; do
        SLURM_CONF=$CONF "$SBIN/slurmd" -f "$CONF" -N "n$k" 9>&- \
            || { tail -n 20 "$D/log/slurmd-n$k.log" >&2; cmd_down; die "slurmd -N n$k did not start"; }
        k=$((k + 1))
    done
    if ! wait_idle; then
        tail -n 5 "$D/log/slurmctld.log" "$D"/log/slurmd-*.log >&2
        cmd_down
        die "cluster did not come up"
    fi
    exec 9>&-
    # One step through PMIx on every node proves the whole path (munge, TmpFS, pmix plugin).
    out=$(timeout 60 env SLURM_CONF="$CONF" srun -t 1 -N "$NODES" -n "$NODES" echo local-slurm-ok 2>&1)
    if [ "$(printf '%s\n' "$out" | grep -cx local-slurm-ok)" != "$NODES" ]; then
        say "a test step failed: $out"
        tail -n 5 "$D/log/slurmctld.log" "$D"/log/slurmd-*.log >&2
        cmd_down
        die "cluster did not come up"
    fi
    say "up: $NODES node(s) x $CPUS CPUs, slurmctld port $PORT, state in $D"
    say "clients: eval \"\$($0 env)\"   (sets SLURM_CONF=$CONF)"
}

case ${1:-} in
    up) cmd_up ;;
    down) cmd_down ;;
    env) cmd_env ;;
    status) cmd_status ;;
    -h|--help|help)
        sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'
        ;;
    *)
        echo "usage: $0 up|down|env|status|--help" >&2
        exit 2
        ;;
esac
