#!/usr/bin/env bash
# The workbench's SSH target against a real GPU node: run ON the GPU machine, which becomes the
# node. An OpenSSH sshd (carried: the machine has none) listens on 127.0.0.1 with generated keys;
# the workbench CLI (carried, built on the workbench machine) reaches it as a user would:
#   1. hosts add refuses the unknown host key and prints its fingerprint; hosts test
#      --accept-new-host-key accepts it and checks the node (GPUs, LibTorch, NCCL, cmake, compiler)
#   2. launch --target ssh:NODE of the benchmark slice on real images: the node check, the
#      runtime source bundle uploaded by SFTP, moe-train built there against the node's PyTorch
#      LibTorch (CUDA, NCCL), then one rank per GPU over NCCL; watch streams every step into the
#      workbench's SQLite store
#   3. a second launch reuses the cached build (no upload, no build); mid-run the SSH sessions are
#      killed and sshd is stopped for 8 s (an outage); watch keeps trying, follows on, and the store
#      ends with every step exactly once; cancel ends the run and no rank is left
# and prints a short table. Everything the node runs gets the node's environment through sshd
# (SetEnv: this machine's PATH and LD_LIBRARY_PATH, and the NCCL/NVLS settings the machine
# requires), as a login on a real node would.
#   here:   benchmarks/pack_ssh_node.sh     (fills .gpu-ssh/)
#   device: benchmarks/gpu_ssh_node.sh [STEPS]   with carry [".gpu-ssh", ".gpu-deps", ".gpu-samples"]
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STEPS=${1:-20}
CARRY="$ROOT/.gpu-ssh"
T=/tmp/wb-ssh-node
[ -x "$CARRY/bin/sshd" ] || { echo "no $CARRY/bin/sshd: run benchmarks/pack_ssh_node.sh on the workbench machine and carry .gpu-ssh"; exit 1; }
[ -f "$ROOT/.gpu-samples/manifest.jsonl" ] || { echo "no .gpu-samples/manifest.jsonl: carry .gpu-samples"; exit 1; }
# WB_SSH_NODE_TINY=1: a CPU dry run of this script's logic (tiny cpu model, 1 rank), for checking
# the script on the workbench machine before spending device time; not for numbers.
TINY=${WB_SSH_NODE_TINY:-0}
gpus=1; [ "$TINY" = 1 ] || gpus=$(nvidia-smi -L | wc -l)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
rm -rf "$T" && mkdir -p "$T"
server="$T/server"
START=$SECONDS
t() { echo "$((SECONDS - START))"; }

# sshd's privilege separation needs its user and /run/sshd (the server script makes the latter).
if ! getent passwd sshd >/dev/null; then
    useradd -r -M -d /run/sshd -s /usr/sbin/nologin sshd 2>/dev/null ||
        echo "sshd:x:$((60000 + RANDOM % 1000)):65534::/run/sshd:/usr/sbin/nologin" >>/etc/passwd
fi
# The node's environment for every session (sshd gives a session a fresh one).
extra="SetEnv PATH=$PATH NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1"
[ -n "${LD_LIBRARY_PATH:-}" ] && extra="$extra LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
server_ctl() {  # start|stop: the carried sshd with its carried libraries
    LD_LIBRARY_PATH="$CARRY/lib" PATH="$CARRY/bin:$PATH" WB_SSHD="$CARRY/bin/sshd" WB_SSHD_EXTRA_CONFIG="$extra" \
        "$ROOT/tests/remote/ssh_test_server.sh" "$1" "$server" ${2:+"$2"}
}
cleanup() { server_ctl stop; }
trap cleanup EXIT
server_ctl start "$port" || { echo "FAIL: sshd did not start"; exit 1; }
echo "== sshd (carried OpenSSH $("$CARRY/bin/sshd" -V 2>&1 | head -1 | awk '{print $1}')) on 127.0.0.1:$port, user $(id -un)"

# The workbench side: the carried CLI; it bundles the runtime sources of this checkout (an
# install's share/moe-workbench/runtime-src) and the header-only libraries of .gpu-deps.
mkdir -p "$CARRY/share/moe-workbench" && ln -sfn "$ROOT" "$CARRY/share/moe-workbench/runtime-src"
wb() {
    LD_LIBRARY_PATH="$CARRY/lib" MOE_WORKBENCH_DEPS_INCLUDE="$ROOT/.gpu-deps/usr/include" \
        "$CARRY/bin/moe-workbench-cli" --db "$T/data/runs.sqlite" --moe-train "$CARRY/bin/moe-train" "$@"
}
failures=0
check() { if eval "$1"; then echo "ok: $2"; else echo "FAIL: $2"; failures=$((failures + 1)); fi; }
runs="$T/node runs"

fp=$(LD_LIBRARY_PATH="$CARRY/lib" "$CARRY/bin/ssh-keygen" -l -E sha256 -f "$server/host_key.pub" | awk '{print $2}')
wb hosts add h200node --host wbtest --ssh-config "$server/ssh_config" --known-hosts "$server/known_hosts" \
    --remote-runs-root "$runs" --remote-cache-dir "$T/node cache" >"$T/add.out" 2>&1
rc=$?
check '[ $rc -ne 0 ] && grep -q -- "$fp" "$T/add.out"' "hosts add refuses the unknown host key, showing $fp (rc $rc)"
wb hosts test h200node --accept-new-host-key >"$T/test.out" 2>&1
rc=$?
echo "== hosts test h200node --accept-new-host-key (rc $rc):"; sed 's/^/   /' "$T/test.out"
if [ "$TINY" = 1 ]; then
    check '[ $rc -eq 0 ]' "the node check ran"
else
    check '[ $rc -eq 0 ] && grep -q "H200" "$T/test.out"' "the node check finds the GPUs"
fi

python3 - "$ROOT/benchmarks/configs/qwen3vl-30b-slice.json" "$ROOT/.gpu-samples/manifest.jsonl" "$STEPS" "$T" "$gpus" "$TINY" <<'PY'
import json, sys
src, manifest, steps, out, gpus, tiny = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5]), sys.argv[6] == "1"
c = json.load(open(src))
c["name"] = "ssh-node-slice"
c["data"]["manifest"] = manifest
if tiny:  # the CPU dry run: the same flow with a model the CPU trains in a second
    c["name"] = "ssh-node-tiny"
    c["model"]["vision"].update(num_layers=1, hidden_size=32, ffn_hidden_size=64, num_attention_heads=2, deepstack_layers=[])
    c["model"]["decoder"].update(num_layers=1, hidden_size=32, num_attention_heads=2, num_query_groups=1, kv_channels=16,
                                 num_moe_experts=4, moe_router_topk=2, moe_ffn_hidden_size=32, mrope_section=[4, 2, 2])
    c["train"]["seq_length"] = 1024
    c["train"]["precision"] = "fp32"
    c["data"].update(num_workers=2, max_pixels=65536)
    c["runtime"]["device"] = "cpu"
c["train"].update(micro_batch_size=1, global_batch_size=gpus, train_iters=steps)
json.dump(c, open(f"{out}/short.json", "w"), indent=1)
c["train"].update(train_iters=100000, lr_decay_style="constant")
json.dump(c, open(f"{out}/long.json", "w"), indent=1)
PY

# 2. First launch: check, upload, build, start.
t0=$SECONDS
id=$(wb launch --target ssh:h200node --config "$T/short.json" 2>"$T/launch1.err")
launch1=$((SECONDS - t0))
echo "== launch 1 ($launch1 s), progress:"; sed 's/^/   /' "$T/launch1.err" | tail -25
check '[ -n "$id" ] && [ -f "$runs/$id/run.json" ]' "launch created the run directory on the node"
t0=$SECONDS
wb watch "$id" --interval-ms 200 >"$T/watch1.out" 2>"$T/watch1.err"
rc=$?
watch1=$((SECONDS - t0))
want=$(grep -c '"type":"step"' "$runs/$id/metrics.jsonl" 2>/dev/null || echo 0)
got=$(grep -c '^step ' "$T/watch1.out")
check '[ $rc -eq 0 ] && [ "$want" -eq "$STEPS" ] && [ "$got" -eq "$want" ]' "watch streamed every step once ($got of $want, rc $rc)"
if [ "$gpus" -gt 1 ]; then
    ranks=$(ls "$runs/$id"/rank*.log 2>/dev/null | wc -l)
    check '[ "$ranks" -eq "$gpus" ] && grep -q "\"world_size\":$gpus" "$runs/$id/metrics.jsonl"' "one rank per GPU ($ranks rank logs, $gpus GPUs)"
fi
wb show "$id" >"$T/show1.out" 2>&1
echo "== show $id"; sed 's/^/   /' "$T/show1.out" | head -30

# 3. Second launch: cached build; an outage mid-run; cancel.
t0=$SECONDS
id2=$(wb launch --target ssh:h200node --config "$T/long.json" 2>"$T/launch2.err")
launch2=$((SECONDS - t0))
echo "== launch 2 ($launch2 s), progress:"; sed 's/^/   /' "$T/launch2.err" | tail -8
check '! grep -qi "upload" "$T/launch2.err" || grep -qi "cached" "$T/launch2.err"' "the second launch reuses the build"
stepsIn() { local n; n=$(grep -c '"type":"step"' "$1" 2>/dev/null); echo "${n:-0}"; }
for _ in $(seq 900); do [ "$(stepsIn "$runs/$id2/metrics.jsonl")" -ge 3 ] && break; sleep 0.2; done
wb watch "$id2" --interval-ms 200 >"$T/watch2.out" 2>"$T/watch2.err" &
watcher=$!
sleep 3
server_ctl drop
during=$(grep -c '^step ' "$T/watch2.out")
sleep 8
server_ctl start "$port" || echo "FAIL: sshd did not restart"
for _ in $(seq 300); do [ "$(grep -c '^step ' "$T/watch2.out")" -gt $((during + 2)) ] && break; sleep 0.2; done
pgid=$(cat "$runs/$id2/pid")
wb cancel "$id2" --grace-s 30 >"$T/cancel.out" 2>&1
crc=$?
wait "$watcher"
want2=$(grep -c '"type":"step"' "$runs/$id2/metrics.jsonl")
got2=$(grep -c '^step ' "$T/watch2.out")
dups2=$(grep '^step ' "$T/watch2.out" | awk '{print $2}' | sort | uniq -d | wc -l)
stored2=$(wb export "$id2" --csv - 2>/dev/null | tail -n +2 | wc -l)
check '[ "$got2" -gt "$during" ] && [ "$got2" -eq "$want2" ] && [ "$dups2" -eq 0 ] && [ "$stored2" -eq "$want2" ]' \
    "after the 8 s outage: watch showed $got2 of $want2 steps, each once; the store holds $stored2"
check 'grep -q "trying again\|reconnect" "$T/watch2.err"' "watch said it kept trying during the outage"
check '[ $crc -eq 0 ]' "cancel (rc $crc)"
left=$(ps -e -o pgid=,stat=,args= | awk -v g="$pgid" '$1==g && $2 !~ /^Z/' | wc -l)
check '[ "$left" -eq 0 ] && ! pgrep -f "node cache.*moe-train" >/dev/null' "no rank of the cancelled run is left ($left in its group)"

gpu=cpu; [ "$TINY" = 1 ] || gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "== table ($(date -u +%Y-%m-%dT%H:%MZ), $gpus x $gpu, node = this machine over SSH)"
echo "| step | seconds | result |"
echo "|---|---|---|"
echo "| launch 1: check + SFTP upload + build + start | $launch1 | run $id |"
echo "| watch to the end ($STEPS steps, $gpus ranks) | $watch1 | $got of $want steps streamed |"
echo "| launch 2 (cached build) | $launch2 | run $id2 |"
echo "| outage (sessions killed, sshd down 8 s) then cancel | — | $got2 of $want2 steps, $dups2 duplicates, $stored2 stored; $left processes left |"
[ -n "${OUT:-}" ] && mkdir -p "$OUT/ssh_node" && cp "$T"/*.out "$T"/*.err "$server/sshd.log" "$OUT/ssh_node/" 2>/dev/null
if [ $failures -ne 0 ]; then
    echo "--- $failures check(s) failed; logs:"; tail -20 "$T"/launch*.err "$T"/watch*.err "$server/sshd.log" 2>/dev/null
    exit 1
fi
echo "all passed ($(t) s)"
