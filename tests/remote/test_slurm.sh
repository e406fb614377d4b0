#!/bin/bash
# The Slurm target end to end: a private Slurm on this machine (slurm_test_cluster.sh: munged,
# slurmctld, slurmd) reached over a private sshd on 127.0.0.1 (ssh_test_server.sh) as the login
# node. Runs test_slurm_target (the library: SlurmTarget + RunFollower + RunStore), then the CLI:
# hosts add, launch --target slurm:wbtest, watch to the end (every step once), cancel of a running
# job (nothing left, the store says cancelled); then Megatron-Bridge jobs (launch --bridge): the
# node check, a followed job through an SSH outage (every iteration once), a cancel, bad folders. Both daemons are stopped at the end, also on failure.
# With GUI_BRIDGE_LAUNCH (tests/ui/gui_bridge_launch, built with the UI), the main window launches
# the same Bridge job through its launch dialog and follows it to finished.
# Usage: test_slurm.sh CLI MOE_TRAIN TEST_SLURM_TARGET [GUI_BRIDGE_LAUNCH]
# Exit 77 (skip) only when Slurm or munge cannot be installed or started here.
set -uo pipefail

cli=$1
moe=$(realpath "$2")
unit=$3
gui_bridge=${4:-}
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

# --- Megatron-Bridge jobs: launch --bridge DIR (the folder generate --format megatron-bridge writes)
bstart=$(date +%s)
bridge="$tmp/bridge job"
wb generate --from "$tmp/short.json" --format megatron-bridge --hardware h200 --gpus 1 --out "$bridge" >"$tmp/bgen.out" 2>&1
check '[ $? -eq 0 ] && [ -f "$bridge/bridge_job.json" ] && [ -f "$bridge/bridge.sbatch" ] && [ -f "$bridge/prediction.json" ] && bash -n "$bridge/bridge.sbatch"' "generate --format megatron-bridge writes bridge_job.json, bridge.sbatch (bash -n) and prediction.json"
# This cluster has no GPU and no Bridge: the job is a script that writes a Megatron-format log
# (the parser fixtures' line format) at a steady pace, through the same sbatch path as a real one.
fake_job() {  # FILE ITERATIONS
    cat >"$1" <<EOF
#!/bin/bash
#SBATCH --ntasks=1
echo "[job] BRIDGE_PYTHON=\$BRIDGE_PYTHON"
for i in \$(seq 1 $2); do
  printf ' [2026-11-20 10:01:10] iteration %8d/%8d | consumed samples: %12d | elapsed time per iteration (ms): 150.5 | throughput per GPU (TFLOP/s/GPU): 301.0 | learning rate: 1.666667E-06 | global batch size:     2 | lm loss: %s | load_balancing_loss: 1.012300E+00 | loss scale: 1.0 | grad norm: 1.210 | number of skipped iterations:   0 | number of nan iterations:   0 |\n' \$i $2 \$((i * 2)) "2.\$i"
  sleep 0.15
done
EOF
}
fake_job "$bridge/bridge.sbatch" 60
cp -r "$bridge" "$tmp/bridge-long"
fake_job "$tmp/bridge-long/bridge.sbatch" 100000

# The node check: python3 here has no megatron.bridge, so the launch stops before anything is stored.
wb hosts slurm wbtest --bridge-python python3 >/dev/null 2>&1
wb launch --target slurm:wbtest --bridge "$bridge" >"$tmp/nobridge.out" 2>"$tmp/nobridge.err"
rc=$?
check '[ $rc -eq 2 ] && grep -q "import megatron.bridge" "$tmp/nobridge.err" && grep -q -- "--bridge-python" "$tmp/nobridge.err" && ! wb runs --json | grep -q megatron-bridge' "node check: no megatron.bridge on the cluster stops the launch, naming the fix (rc $rc)"
# A python that has it: a megatron.bridge package on its path (the cluster's venv, in small).
mkdir -p "$tmp/venv/megatron/bridge"
: >"$tmp/venv/megatron/__init__.py"; : >"$tmp/venv/megatron/bridge/__init__.py"
printf '#!/bin/sh\nPYTHONPATH=%s exec python3 "$@"\n' "'$tmp/venv'" >"$tmp/venv/python"
chmod +x "$tmp/venv/python"
wb hosts slurm wbtest --bridge-python "$tmp/venv/python" >"$tmp/bpy.out" 2>&1
check 'grep -q "bridge python: *$tmp/venv/python" "$tmp/bpy.out"' "hosts slurm --bridge-python"

# Launch and follow to the end, with an SSH outage in the middle.
"$cli" --db "$tmp/data/runs.sqlite" launch --target slurm:wbtest --bridge "$bridge" --name bridge-e2e --interval-ms 200 \
    >"$tmp/blaunch.out" 2>"$tmp/blaunch.err" &
launcher=$!
for _ in $(seq 600); do [ "$(grep -c '^step ' "$tmp/blaunch.out")" -ge 5 ] && break; sleep 0.1; done
"$here/ssh_test_server.sh" drop "$server"
sleep 3
"$here/ssh_test_server.sh" start "$server" "$port" || echo "FAIL: cannot restart sshd"
for _ in $(seq 2400); do kill -0 $launcher 2>/dev/null || break; sleep 0.1; done
kill $launcher 2>/dev/null
wait $launcher
rc=$?
bid=$(head -n 1 "$tmp/blaunch.out")
check '[ $rc -eq 0 ] && grep -q "^run $bid finished" "$tmp/blaunch.out"' "launch --bridge follows the job to its end: finished (rc $rc)"
check '[ -s "$runs/$bid/slurm_job_id" ] && grep -q "BRIDGE_PYTHON=$tmp/venv/python" "$runs/$bid/stdout.log" && [ -f "$runs/$bid/overrides.yaml" ]' "the job ran in its run directory with the folder's files and BRIDGE_PYTHON"
steps=$(grep '^step ' "$tmp/blaunch.out" | awk '{print $2}')
check '[ "$(echo "$steps" | wc -l)" -eq 60 ] && [ "$(echo "$steps" | sort -un | wc -l)" -eq 60 ] && [ "$(echo "$steps" | sort -n | tail -n 1)" -eq 60 ]' "every iteration printed once ($(echo "$steps" | wc -l) lines, $(echo "$steps" | sort -un | wc -l) distinct)"
wb show "$bid" --json >"$tmp/bshow.json" 2>&1
check 'grep -q "\"steps\": *60" "$tmp/bshow.json" && grep -q "\"kind\": *\"megatron-bridge\"" "$tmp/bshow.json" && grep -q "\"status\": *\"finished\"" "$tmp/bshow.json"' "the store holds 60 steps of a finished megatron-bridge run"
wb compare "$bid" >"$tmp/bcompare.out" 2>&1
check 'grep -q "PREDICTED VS MEASURED" "$tmp/bcompare.out" && grep -q "1 x h200" "$tmp/bcompare.out"' "the run carries the plan's prediction (compare shows predicted vs measured)"
check 'grep -q "connection to wbtest lost\|trying again" "$tmp/blaunch.err"' "the follow went through the SSH outage"

# Cancel: scancel, the run ends cancelled.
bid2=$(wb launch --target slurm:wbtest --bridge "$tmp/bridge-long" --detach 2>>"$tmp/blaunch.err")
for _ in $(seq 600); do grep -q "iteration" "$runs/$bid2/stdout.log" 2>/dev/null && break; sleep 0.1; done
bjob2=$(cat "$runs/$bid2/slurm_job_id" 2>/dev/null)
timeout 120 "$cli" --db "$tmp/data/runs.sqlite" cancel "$bid2" --grace-s 10 >"$tmp/bcancel.out" 2>&1
rc=$?
check '[ $rc -eq 0 ] && grep -q "cancelled" "$tmp/bcancel.out" && [ -n "$bjob2" ] && [ -z "$(squeue -h -j "$bjob2" -o %T 2>/dev/null)" ]' "cancel of a launched Bridge run: scancel, cancelled (rc $rc)"
check 'wb show "$bid2" --json | grep -q "\"status\": *\"cancelled\""' "the store says cancelled"

# The GUI: the launch dialog submits the folder on slurm:wbtest, the main window follows it.
if [ -n "$gui_bridge" ]; then
    timeout 300 "$gui_bridge" "$tmp/data/runs.sqlite" "$tmp/data/hosts.json" "$bridge" "$here/../../resources/catalog" \
        "$moe" "$runs" >"$tmp/bgui.out" 2>"$tmp/bgui.err"
    rc=$?
    gid=$(sed -n 's/^run //p' "$tmp/bgui.out" | tail -n 1)
    wb show "$gid" --json >"$tmp/bgui-show.json" 2>&1
    check '[ $rc -eq 0 ] && grep -q "\"steps\": *60" "$tmp/bgui-show.json" && grep -q "\"kind\": *\"megatron-bridge\"" "$tmp/bgui-show.json" && grep -q "\"status\": *\"finished\"" "$tmp/bgui-show.json" && grep -q "\"target\": *\"slurm:wbtest\"" "$tmp/bgui-show.json"' "the GUI's launch dialog submits the Bridge folder and the main window follows it to finished, 60 steps (rc $rc)"
fi

# Bad input: exit 2 naming the file, what is wrong and the fix.
mkdir -p "$tmp/empty"
wb launch --target slurm:wbtest --bridge "$tmp/empty" >/dev/null 2>"$tmp/bad1.err"
check '[ $? -eq 2 ] && grep -q "not a Megatron-Bridge folder" "$tmp/bad1.err" && grep -q "generate --format megatron-bridge" "$tmp/bad1.err"' "a folder that is not a Bridge folder: exit 2"
cp -r "$bridge" "$tmp/noscript"; rm "$tmp/noscript/bridge.sbatch"
wb launch --target slurm:wbtest --bridge "$tmp/noscript" >/dev/null 2>"$tmp/bad2.err"
check '[ $? -eq 2 ] && grep -q "bridge.sbatch" "$tmp/bad2.err" && grep -q "\"script\"" "$tmp/bad2.err"' "a Bridge folder without its script: exit 2"
wb launch --target slurm:nosuchhost --bridge "$bridge" >/dev/null 2>"$tmp/bad3.err"
check '[ $? -eq 2 ] && grep -q "hosts add" "$tmp/bad3.err"' "--bridge on an unregistered host: exit 2 naming hosts add"
echo "Bridge part took $(( $(date +%s) - bstart )) s"

wb launch --target slurm:nosuchhost --config "$tmp/short.json" >/dev/null 2>"$tmp/nohost.err"
check '[ $? -eq 2 ] && grep -q "hosts add" "$tmp/nohost.err"' "an unregistered host is a usage error naming hosts add"

echo "Slurm test took $(( $(date +%s) - start )) s"
if [ $failures -ne 0 ]; then
    echo "--- logs"; [ -n "$gui_bridge" ] && cat "$tmp/bgui.out" "$tmp/bgui-show.json" "$tmp/bgui.err" 2>/dev/null | grep -v "^\[" | head -40; cat "$tmp"/*.err "$tmp/watch.out" "$tmp/cancel.out" "$tmp/blaunch.out" "$tmp/blaunch.err" "$tmp/bcancel.out" 2>/dev/null | tail -60
    tail -5 "$cluster/ctld.log" "$cluster/slurmd.log" 2>/dev/null
    exit 1
fi
echo "all passed"
