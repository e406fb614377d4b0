#!/bin/bash
# The Slurm target end to end: a private Slurm on this machine (slurm_test_cluster.sh: munged,
# slurmctld, slurmd) reached over a private sshd on 127.0.0.1 (ssh_test_server.sh) as the login
# node. Runs test_slurm_target (the library: SlurmTarget + RunFollower + RunStore), then the CLI:
# hosts add, launch --target slurm:wbtest, watch to the end (every step once), cancel of a running
# job (nothing left, the store says cancelled). Both daemons are stopped at the end, also on failure.
# Usage: test_slurm.sh CLI MOE_TRAIN TEST_SLURM_TARGET
# Exit 77 (skip) only when Slurm or munge cannot be installed or started here.
set -uo pipefail

cli=$1
moe=$(realpath "$2")
unit=$3
here=$(cd "$(dirname "$0")" && pwd)
[ -x /usr/sbin/sshd ] || { echo "SKIP: /usr/sbin/sshd missing (apt-get install openssh-server)"; exit 77; }
tmp=$(mktemp -d)
cluster="$tmp/slurm"
server="$tmp/server"
cleanup() {
    "$here/ssh_test_server.sh" stop "$server" 2>/dev/null
    "$here/slurm_test_cluster.sh" stop "$cluster"
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM  # so that cleanup runs when ctest's timeout ends us
unset SSH_AUTH_SOCK

start=$(date +%s)
"$here/slurm_test_cluster.sh" start "$cluster"
rc=$?
if [ $rc -eq 77 ]; then echo "SKIP: no Slurm here (see above)"; exit 77; fi
[ $rc -eq 0 ] || { echo "FAIL: the test Slurm did not start"; exit 1; }
export SLURM_CONF="$cluster/slurm.conf"
echo "test Slurm up in $(( $(date +%s) - start )) s"

failures=0
check() { if eval "$1"; then echo "ok: $2"; else echo "FAIL: $2"; failures=$((failures + 1)); fi; }

timeout 200 "$unit"
check '[ $? -eq 0 ]' "test_slurm_target"
scancel "--user=$(id -un)" 2>/dev/null  # whatever a failed library test left queued

# --- the CLI
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)))
"$here/ssh_test_server.sh" start "$server" "$port" || { echo "FAIL: cannot start sshd"; exit 1; }
wb() { "$cli" --db "$tmp/data/runs.sqlite" "$@"; }
runs="$tmp/shared runs/o'clock"
wb hosts add wbtest --ssh-config "$server/ssh_config" --known-hosts "$server/known_hosts" \
    --remote-moe-train "$moe" --remote-runs-root "$runs" --accept-new-host-key >"$tmp/add.out" 2>&1
check '[ $? -eq 0 ]' "hosts add wbtest --accept-new-host-key"
wb hosts slurm wbtest --partition debug --time 00:10:00 --slurm-conf "$SLURM_CONF" >"$tmp/slurm-settings.out" 2>&1
check '[ $? -eq 0 ] && grep -q "partition: *debug" "$tmp/slurm-settings.out" && grep -q "\"time\": \"00:10:00\"" "$tmp/data/slurm.json"' "hosts slurm writes slurm.json"

cat >"$tmp/tiny.json" <<EOF
{"name": "slurm-cli", "model": {"vision": {"num_layers": 1, "hidden_size": 32, "ffn_hidden_size": 64,
 "num_attention_heads": 2, "patch_size": 16, "spatial_merge_size": 2},
 "decoder": {"num_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "num_query_groups": 1,
 "kv_channels": 16, "num_moe_experts": 4, "moe_router_topk": 2, "moe_ffn_hidden_size": 32, "vocab_size": 320}},
 "train": {"train_iters": STEPS, "micro_batch_size": 2, "global_batch_size": 2, "seq_length": 128, "lr_warmup_iters": 1},
 "data": {"source": "mock", "mock_image_size": 32, "caption_max_tokens": 32}}
EOF
sed 's/STEPS/20/' "$tmp/tiny.json" >"$tmp/short.json"
sed 's/STEPS/1000000/' "$tmp/tiny.json" >"$tmp/long.json"

id=$(wb launch --target slurm:wbtest --config "$tmp/short.json" 2>"$tmp/launch.err")
check '[ -n "$id" ] && [ -s "$runs/$id/slurm_job_id" ] && [ -f "$runs/$id/run.sbatch" ]' "launch --target slurm:wbtest submitted $runs/$id"
check 'grep -q "submitted as Slurm job $(cat "$runs/$id/slurm_job_id")" "$tmp/launch.err"' "launch reports the job id"
check 'grep -q "^#SBATCH --partition=debug$" "$runs/$id/run.sbatch" && grep -q "^#SBATCH --time=00:10:00$" "$runs/$id/run.sbatch"' "partition and time from slurm.json"
timeout 90 "$cli" --db "$tmp/data/runs.sqlite" watch "$id" --interval-ms 100 >"$tmp/watch.out" 2>&1
rc=$?
check '[ $rc -eq 0 ]' "watch ends with the job finished (rc $rc)"
want=$(grep -c '"type":"step"' "$runs/$id/metrics.jsonl")
got=$(grep -c '^step ' "$tmp/watch.out")
check '[ "$want" -eq 20 ] && [ "$got" -eq "$want" ]' "watch printed every step once ($got of $want)"

id2=$(wb launch --target slurm:wbtest --config "$tmp/long.json" 2>>"$tmp/launch.err")
job2=$(cat "$runs/$id2/slurm_job_id" 2>/dev/null)
for _ in $(seq 600); do [ -s "$runs/$id2/metrics.jsonl" ] && break; sleep 0.1; done
check '[ -s "$runs/$id2/metrics.jsonl" ]' "the second job runs"
timeout 90 "$cli" --db "$tmp/data/runs.sqlite" cancel "$id2" --grace-s 20 >"$tmp/cancel.out" 2>&1
rc=$?
check '[ $rc -eq 0 ]' "cancel (rc $rc)"
check '[ -z "$(squeue -h -j "$job2" -o %T 2>/dev/null)" ]' "squeue no longer lists job $job2"
# (the pattern travels in the environment: on awk's command line it would match awk itself)
check '! P="--run-dir $runs/$id2" ps -e -ww -o stat=,args= | P="--run-dir $runs/$id2" awk "index(\$0, ENVIRON[\"P\"]) && \$1 !~ /^Z/ {f=1} END {exit !f}"' "no process of the cancelled run is left"
check 'wb runs --json | grep -q cancelled' "the store says cancelled"

wb launch --target slurm:nosuchhost --config "$tmp/short.json" >/dev/null 2>"$tmp/nohost.err"
check '[ $? -eq 2 ] && grep -q "hosts add" "$tmp/nohost.err"' "an unregistered host is a usage error naming hosts add"

echo "Slurm test took $(( $(date +%s) - start )) s"
if [ $failures -ne 0 ]; then
    echo "--- logs"; cat "$tmp"/*.err "$tmp/watch.out" "$tmp/cancel.out" 2>/dev/null | tail -40
    tail -5 "$cluster/ctld.log" "$cluster/slurmd.log" 2>/dev/null
    exit 1
fi
echo "all passed"
