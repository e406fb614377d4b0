#!/bin/sh
# A private one-node Slurm for the Slurm tests (reference/local-slurm.md): munged, slurmctld and
# slurmd from Debian's slurm-wlm and munge, everything but munge's fixed paths kept in DIR.
#
#   slurm_test_cluster.sh start DIR   write DIR/slurm.conf, start munged (unless one answers
#                                     already), slurmctld and slurmd; exit 0 once the node is idle.
#                                     Exit 77 when Slurm or munge is not installed or cannot run
#                                     here (not root), 1 with the logs when a daemon fails.
#   slurm_test_cluster.sh stop DIR    stop what start started, by the pids it recorded.
#
# Commands talk to it with SLURM_CONF=DIR/slurm.conf. It runs jobs as root (SlurmUser=root):
# the test's sshd logs in as the same user. Ports: free ones, picked at start.
set -eu

cmd=$1
dir=$2

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
        echo $((20000 + $(od -An -N2 -tu2 /dev/urandom) % 20000))
}

wait_gone() {  # pid: up to 10 s
    i=0
    while kill -0 "$1" 2>/dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    kill -0 "$1" 2>/dev/null && kill -KILL "$1" 2>/dev/null
    return 0
}

case "$cmd" in
start)
    for tool in /usr/sbin/munged /usr/sbin/slurmctld /usr/sbin/slurmd /usr/bin/sbatch; do
        [ -x "$tool" ] || { echo "$tool is missing: apt-get install slurm-wlm munge" >&2; exit 77; }
    done
    [ "$(id -u)" -eq 0 ] || { echo "the test Slurm runs its daemons as root; run as root" >&2; exit 77; }
    mkdir -p "$dir/state" "$dir/spool"
    host=$(hostname -s)
    # munge: one daemon per machine at fixed paths. Reuse a working one (its key is the machine's);
    # otherwise create the key and start it, and remember to stop it.
    if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        mkdir -p /etc/munge /run/munge /var/lib/munge /var/log/munge
        if [ ! -s /etc/munge/munge.key ]; then
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2>/dev/null
            chmod 400 /etc/munge/munge.key
        fi
        chown -R munge:munge /etc/munge /run/munge /var/lib/munge /var/log/munge
        rm -f /run/munge/munged.pid
        /usr/sbin/munged --force || { echo "munged did not start" >&2; exit 77; }
        i=0
        while [ ! -s /run/munge/munged.pid ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
        cp /run/munge/munged.pid "$dir/munged.pid"
        munge -n | unmunge >/dev/null 2>&1 || { echo "munge does not work" >&2; exit 77; }
    fi
    cat > "$dir/slurm.conf" <<EOF
ClusterName=wbtest
SlurmctldHost=$host
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/ctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
GresTypes=gpu
KillWait=10
MinJobAge=600
NodeName=$host CPUs=$(nproc) RealMemory=2000 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    # Two stand-in "GPUs" (slurmd wants a device file per GPU; nothing opens them: TaskPlugin
    # is none), so jobs asking for --gpus-per-node=2 are scheduled and the GPU form of the
    # generated script (moe-train --nproc-per-node 2) runs here too, with a cpu config.
    printf 'Name=gpu File=/dev/null\nName=gpu File=/dev/zero\n' > "$dir/gres.conf"
    export SLURM_CONF="$dir/slurm.conf"
    /usr/sbin/slurmctld -f "$SLURM_CONF" || { cat "$dir/ctld.log" >&2; exit 1; }
    /usr/sbin/slurmd -f "$SLURM_CONF" || { cat "$dir/slurmd.log" >&2; exit 1; }
    i=0
    until sinfo -h -o %t 2>/dev/null | grep -qx idle; do
        i=$((i + 1))
        if [ $i -gt 300 ]; then
            echo "the node did not become idle in 30 s:" >&2
            sinfo >&2 || true
            tail -20 "$dir/ctld.log" "$dir/slurmd.log" >&2
            exit 1
        fi
        sleep 0.1
    done
    ;;
stop)
    # Jobs a failed test left behind first (only this private cluster's), then slurmd, the
    # controller, and munge if start started it.
    if [ -s "$dir/slurmctld.pid" ] && [ -f "$dir/slurm.conf" ]; then
        export SLURM_CONF="$dir/slurm.conf"
        scancel --full --signal=KILL --state=RUNNING "--user=$(id -un)" 2>/dev/null || true
        scancel "--user=$(id -un)" 2>/dev/null || true
        i=0
        while [ -n "$(squeue -h -o %i 2>/dev/null)" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
    fi
    for name in slurmd slurmctld munged; do
        [ -s "$dir/$name.pid" ] || continue
        pid=$(cat "$dir/$name.pid")
        kill "$pid" 2>/dev/null && wait_gone "$pid"
        rm -f "$dir/$name.pid"
    done
    ;;
*)
    echo "usage: $0 start DIR | stop DIR" >&2
    exit 2
    ;;
esac
