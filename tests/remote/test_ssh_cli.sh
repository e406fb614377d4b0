#!/bin/bash
# moe-workbench-cli against a private sshd on 127.0.0.1 (ssh_test_server.sh): hosts add refuses
# an unknown host key (printing its fingerprint) until accepted, hosts list/test, launch
# --target ssh:wbtest of the real moe-train, watch to the end (every step once), cancel leaves
# nothing running. Usage: test_ssh_cli.sh CLI MOE_TRAIN
set -uo pipefail

cli=$1
moe=$(realpath "$2")  # the "remote" path: absolute, as on a real host
here=$(cd "$(dirname "$0")" && pwd)
[ -x /usr/sbin/sshd ] || { echo "SKIP: /usr/sbin/sshd missing (apt-get install openssh-server)"; exit 77; }
tmp=$(mktemp -d)
server="$tmp/server"
cleanup() { "$here/ssh_test_server.sh" stop "$server"; rm -rf "$tmp"; }
trap cleanup EXIT
unset SSH_AUTH_SOCK

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000)))
"$here/ssh_test_server.sh" start "$server" "$port" || { echo "FAIL: cannot start sshd"; exit 1; }

failures=0
check() { if eval "$1"; then echo "ok: $2"; else echo "FAIL: $2"; failures=$((failures + 1)); fi; }
wb() { "$cli" --db "$tmp/data/runs.sqlite" "$@"; }

fp=$(ssh-keygen -l -E sha256 -f "$server/host_key.pub" | awk '{print $2}')
runs="$tmp/remote runs/o'clock"
wb hosts add wbtest --ssh-config "$server/ssh_config" --known-hosts "$server/known_hosts" \
    --remote-moe-train "$moe" --remote-runs-root "$runs" >"$tmp/add.out" 2>"$tmp/add.err"
rc=$?
check '[ $rc -ne 0 ]' "hosts add refuses an unknown host key (rc $rc)"
check 'grep -q -- "$fp" "$tmp/add.out" && grep -q -- "$fp" "$tmp/add.err"' "the fingerprint $fp is shown"
check '[ ! -s "$server/known_hosts" ]' "nothing was written to known_hosts"
check 'grep -q "\"name\": \"wbtest\"" "$tmp/data/hosts.json"' "the host is saved in hosts.json"
check '! grep -qi "BEGIN OPENSSH PRIVATE KEY\|password" "$tmp/data/hosts.json"' "hosts.json holds no secrets"

wb hosts test wbtest --accept-new-host-key >"$tmp/test.out" 2>&1
check '[ $? -eq 0 ] && grep -q "accepted now" "$tmp/test.out" && grep -q "^ok$" "$tmp/test.out"' "hosts test --accept-new-host-key"
wb hosts test wbtest >"$tmp/test2.out" 2>&1
check '[ $? -eq 0 ] && grep -q "(known)" "$tmp/test2.out"' "the accepted key is known afterwards"
check 'wb hosts list | grep -q "^wbtest "' "hosts list shows it"
check 'wb hosts list --json | python3 -c "import json,sys; assert json.load(sys.stdin)[0][\"name\"]==\"wbtest\"" 2>/dev/null || wb hosts list --json | grep -q "\"wbtest\""' "hosts list --json"

cat >"$tmp/tiny.json" <<EOF
{"name": "ssh-cli", "model": {"vision": {"num_layers": 1, "hidden_size": 32, "ffn_hidden_size": 64,
 "num_attention_heads": 2, "patch_size": 16, "spatial_merge_size": 2},
 "decoder": {"num_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "num_query_groups": 1,
 "kv_channels": 16, "num_moe_experts": 4, "moe_router_topk": 2, "moe_ffn_hidden_size": 32, "vocab_size": 320}},
 "train": {"train_iters": STEPS, "micro_batch_size": 2, "global_batch_size": 2, "seq_length": 128, "lr_warmup_iters": 1},
 "data": {"source": "mock", "mock_image_size": 32, "caption_max_tokens": 32}}
EOF
sed 's/STEPS/12/' "$tmp/tiny.json" >"$tmp/short.json"
sed 's/STEPS/1000000/' "$tmp/tiny.json" >"$tmp/long.json"

id=$(wb launch --target ssh:wbtest --config "$tmp/short.json" 2>"$tmp/launch.err")
check '[ -n "$id" ] && [ -f "$runs/$id/run.json" ]' "launch --target ssh:wbtest created $runs/$id"
wb watch "$id" --interval-ms 100 >"$tmp/watch.out" 2>&1
rc=$?
check '[ $rc -eq 0 ]' "watch ends with the run finished (rc $rc)"
want=$(grep -c '"type":"step"' "$runs/$id/metrics.jsonl")
got=$(grep -c '^step ' "$tmp/watch.out")
check '[ "$want" -eq 12 ] && [ "$got" -eq "$want" ]' "watch printed every step once ($got of $want)"

# A run on the host nobody watches (issue 18 item 1): `runs` does not contact the host (a listing
# never waits on a network) but says how old its view is; `runs --sync` catches it up.
ids=$(wb launch --target ssh:wbtest --config "$tmp/short.json" 2>>"$tmp/launch.err")
for _ in $(seq 600); do grep -q '"finished"' "$runs/$ids/status.json" 2>/dev/null && break; sleep 0.1; done
wb runs >"$tmp/runs.out" 2>&1
check 'grep -q "^$ids .* running " "$tmp/runs.out" && grep -q "note: $ids on ssh:wbtest: running as far as the store knows (never synced); .runs --sync. catches it up" "$tmp/runs.out"' "runs lists the unwatched remote run as last seen and says it was never synced"
wb runs --sync --json >"$tmp/sync.json" 2>"$tmp/sync.err"
check 'python3 - "$tmp/sync.json" "$ids" <<PY
import json, sys
runs = [r for r in json.load(open(sys.argv[1])) if r["id"] == sys.argv[2]]
assert runs and runs[0]["status"] == "finished" and runs[0]["steps"] == 12 and runs[0]["synced_at"], runs
PY' "runs --sync caught the remote run up: finished, 12 steps, synced_at set ($(cat "$tmp/sync.err"))"

# A long outage: with a 2 s reconnect budget, sshd stopped for 8 s makes every poll fail; watch
# keeps trying (saying so on stderr), follows on once sshd is back, and when the run is then
# cancelled it has printed every step of metrics.jsonl exactly once.
python3 - "$tmp/data/hosts.json" <<'PY'
import json, sys
p = sys.argv[1]; d = json.load(open(p))
for h in (d["hosts"] if isinstance(d, dict) else d):
    if h["name"] == "wbtest": h["reconnect_budget_s"] = 2
json.dump(d, open(p, "w"), indent=2)
PY
id3=$(wb launch --target ssh:wbtest --config "$tmp/long.json" 2>>"$tmp/launch.err")
for _ in $(seq 600); do [ -s "$runs/$id3/metrics.jsonl" ] && break; sleep 0.1; done
wb watch "$id3" --interval-ms 100 >"$tmp/watch3.out" 2>"$tmp/watch3.err" &
watcher=$!
sleep 1
# The outage: the listener and its live session processes (the watch's connection) go away.
"$here/ssh_test_server.sh" drop "$server"
sleep 8
"$here/ssh_test_server.sh" start "$server" "$port" || echo "FAIL: cannot restart sshd"
before=$(grep -c '^step ' "$tmp/watch3.out")
for _ in $(seq 300); do [ "$(grep -c '^step ' "$tmp/watch3.out")" -gt "$before" ] && break; sleep 0.1; done
wb cancel "$id3" --grace-s 20 >>"$tmp/cancel.out" 2>&1
wait "$watcher"
want3=$(grep -c '"type":"step"' "$runs/$id3/metrics.jsonl")
got3=$(grep -c '^step ' "$tmp/watch3.out")
dups3=$(grep '^step ' "$tmp/watch3.out" | awk '{print $2}' | sort | uniq -d | wc -l)
check '[ "$got3" -gt "$before" ] && [ "$got3" -eq "$want3" ] && [ "$dups3" -eq 0 ]' "watch followed on after an 8 s outage: $got3 of $want3 steps, each once ($before before the restart)"
check 'grep -q "trying again" "$tmp/watch3.err"' "watch said it keeps trying during the outage"

id2=$(wb launch --target ssh:wbtest --config "$tmp/long.json" 2>>"$tmp/launch.err")
for _ in $(seq 600); do [ -s "$runs/$id2/metrics.jsonl" ] && break; sleep 0.1; done  # LibTorch start-up is slow on a loaded machine
pid=$(cat "$runs/$id2/pid")
wb cancel "$id2" --grace-s 20 >"$tmp/cancel.out" 2>&1
rc=$?
check '[ $rc -eq 0 ]' "cancel (rc $rc)"
check '! ps -e -o pgid=,stat= | awk -v g="$pid" "\$1==g && \$2 !~ /^Z/ {f=1} END {exit !f}"' "no process of the cancelled run is left"
check 'wb runs --json | grep -q cancelled' "the store says cancelled"

# A host with moe_train "auto" (the default): `hosts test` checks the node and says what it found.
wb hosts add wbauto --host wbtest --ssh-config "$server/ssh_config" --known-hosts "$server/known_hosts" \
    --remote-runs-root "$runs" --remote-cache-dir "$tmp/remote cache" >"$tmp/auto.out" 2>&1
rc=$?
check '[ $rc -eq 0 ] && grep -q "^LibTorch: " "$tmp/auto.out" && grep -q "^compiler: " "$tmp/auto.out" && grep -q "built by the workbench on the first launch" "$tmp/auto.out"' "hosts add (auto) checks the node (rc $rc)"
check 'grep -q "\"moe_train\": \"auto\"" "$tmp/data/hosts.json"' "auto is the default moe_train"
check 'wb hosts list | grep -q "^wbauto .*auto (built on the host)"' "hosts list says auto"
# Two nodes from two entries; an entry twice is refused before anything starts.
wb launch --target ssh:wbtest,wbtest --config "$tmp/short.json" >/dev/null 2>"$tmp/twice.err"
check '[ $? -ne 0 ] && grep -q "listed twice" "$tmp/twice.err"' "a node listed twice is refused"

wb launch --target ssh:nosuchhost --config "$tmp/short.json" >/dev/null 2>"$tmp/nohost.err"
check '[ $? -eq 2 ] && grep -q "hosts add" "$tmp/nohost.err"' "an unregistered host is a usage error naming hosts add"

if [ $failures -ne 0 ]; then
    echo "--- logs"; cat "$tmp"/*.err "$tmp/watch.out" "$tmp/cancel.out" 2>/dev/null | tail -40
    exit 1
fi
echo "all passed"
