#!/bin/bash
# The CLI's password / keyboard-interactive prompts against a real sshd that accepts no key, only
# a password checked by PAM (ssh_test_server.sh with WB_SSHD_PASSWORD; needs root to add its own
# /etc/pam.d file, else skip). The CLI runs on a pseudo-terminal (pty_answer.py), as for a person:
#   - hosts add asks "(user@host:port) Password:" (keyboard-interactive) with echo off, and works
#     with the right answer; nothing of it reaches hosts.json or the terminal;
#   - a wrong answer is refused with the server's accepted methods named;
#   - without a terminal (stdin not a tty) nothing is asked and the refusal comes at once;
#   - launch --target ssh:A,B asks for every node's session, trains 2 ranks and watch follows it;
#   - launch --target slurm:A asks for the login node's session and gets past authentication;
#   - the "password" method (KbdInteractiveAuthentication off) asks "Password for user@host:port:".
# Usage: test_ssh_password.sh CLI MOE_TRAIN
set -uo pipefail

cli=$1
moe=$(realpath "$2")
here=$(cd "$(dirname "$0")" && pwd)
[ -x /usr/sbin/sshd ] || { echo "SKIP: /usr/sbin/sshd missing (apt-get install openssh-server)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing (the pty driver is Python)"; exit 77; }
tmp=$(mktemp -d)
server="$tmp/server"
server2="$tmp/server2"
cleanup() {
    "$here/ssh_test_server.sh" stop "$server" 2>/dev/null
    "$here/ssh_test_server.sh" stop "$server2" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
unset SSH_AUTH_SOCK

secret="pw with 'quote' \$(x) $RANDOM"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
WB_SSHD_PASSWORD=$secret "$here/ssh_test_server.sh" start "$server" "$port"
rc=$?
if [ $rc -eq 77 ]; then echo "SKIP: no password sshd here (see above)"; exit 77; fi
[ $rc -eq 0 ] || { echo "FAIL: cannot start the password sshd"; exit 1; }

failures=0
check() { if eval "$1"; then echo "ok: $2"; else echo "FAIL: $2"; failures=$((failures + 1)); fi; }
# The CLI at a terminal, answering every password prompt with $1.
at_tty() {
    local answer=$1 log=$2
    shift 2
    WB_PTY_ANSWER=$answer timeout 280 python3 "$here/pty_answer.py" "$log" -- "$cli" --db "$tmp/data/runs.sqlite" "$@"
}
wb() { "$cli" --db "$tmp/data/runs.sqlite" "$@"; }
where="(root@127.0.0.1:$port) Password:"
runs="$tmp/remote runs"

at_tty "$secret" "$tmp/add.prompts" hosts add pw1 --host wbtest --ssh-config "$server/ssh_config" --known-hosts "$server/known_hosts" \
    --remote-moe-train "$moe" --remote-runs-root "$runs/a" --accept-new-host-key >"$tmp/add.out" 2>&1
rc=$?
check '[ $rc -eq 0 ] && grep -q "^ok$" "$tmp/add.out"' "hosts add at a terminal: asked, answered, connected (rc $rc)"
check '[ "$(grep -c -F "$where" "$tmp/add.prompts")" -ge 1 ]' "the prompt names the host: $where"
check '! grep -q -F "$secret" "$tmp/add.out"' "the answer is not echoed"
check '! grep -q -F "$secret" "$tmp/data/hosts.json" && ! grep -qi password "$tmp/data/hosts.json"' "hosts.json holds no secret"

at_tty "wrong" "$tmp/wrong.prompts" hosts test pw1 >"$tmp/wrong.out" 2>&1
rc=$?
check '[ $rc -ne 0 ] && grep -q "authentication refused (the server accepts: keyboard-interactive)" "$tmp/wrong.out"' "a wrong answer is refused (rc $rc)"
check '[ -s "$tmp/wrong.prompts" ]' "the wrong answer was asked for"

start=$(date +%s)
wb hosts test pw1 </dev/null >"$tmp/notty.out" 2>&1
rc=$?
check '[ $rc -ne 0 ] && grep -q "authentication refused" "$tmp/notty.out" && [ $(( $(date +%s) - start )) -lt 30 ]' "without a terminal nothing is asked; refused at once (rc $rc)"

# ssh:A,B: two entries of this one server (separate runs roots), one session per node.
wb hosts add pw2 --host wbtest --ssh-config "$server/ssh_config" --known-hosts "$server/known_hosts" \
    --remote-moe-train "$moe" --remote-runs-root "$runs/b" --no-test >/dev/null 2>&1
cat >"$tmp/short.json" <<EOF
{"name": "pw-multi", "model": {"vision": {"num_layers": 1, "hidden_size": 32, "ffn_hidden_size": 64,
 "num_attention_heads": 2, "patch_size": 16, "spatial_merge_size": 2},
 "decoder": {"num_layers": 1, "hidden_size": 32, "num_attention_heads": 2, "num_query_groups": 1,
 "kv_channels": 16, "num_moe_experts": 4, "moe_router_topk": 2, "moe_ffn_hidden_size": 32, "vocab_size": 320}},
 "train": {"train_iters": 8, "micro_batch_size": 1, "global_batch_size": 2, "seq_length": 128, "lr_warmup_iters": 1},
 "data": {"source": "mock", "mock_image_size": 32, "caption_max_tokens": 32}}
EOF
at_tty "$secret" "$tmp/multi.prompts" launch --target ssh:pw1,pw2 --config "$tmp/short.json" >"$tmp/multi.out" 2>&1
rc=$?
id=$(grep -E -o '^[0-9]{8}-[0-9]{6}-[0-9a-f]+' "$tmp/multi.out" | tail -n 1)
check '[ $rc -eq 0 ] && [ -n "$id" ] && [ -f "$runs/a/$id/run.json" ] && [ -f "$runs/b/$id/run.json" ]' "launch --target ssh:pw1,pw2 at a terminal started both nodes (rc $rc)"
check '[ "$(grep -c -F "$where" "$tmp/multi.prompts")" -ge 2 ]' "asked once per node's session ($(grep -c -F "$where" "$tmp/multi.prompts") prompts)"
at_tty "$secret" "$tmp/watch.prompts" watch "$id" --interval-ms 200 >"$tmp/watch.out" 2>&1
rc=$?
check '[ $rc -eq 0 ] && [ "$(grep -c "^step " "$tmp/watch.out")" -eq 8 ]' "watch (asked again: a new process) follows the 2-rank run to its 8 steps (rc $rc)"

# slurm:A: the login node's session asks too. Past authentication the launch stops at the login
# node check (no cluster is running for this test, and the slurm_conf it names does not exist: the
# check says so at once, before sbatch would spend a minute on a configless lookup): not at the password.
printf '{"version": 1, "hosts": {"pw1": {"slurm_conf": "%s"}}}\n' "$tmp/no cluster/slurm.conf" >"$tmp/data/slurm.json"
at_tty "$secret" "$tmp/slurm.prompts" launch --target slurm:pw1 --config "$tmp/short.json" >"$tmp/slurm.out" 2>&1
check '[ "$(grep -c -F "$where" "$tmp/slurm.prompts")" -ge 1 ]' "launch --target slurm:pw1 asks for the login node"
check '! grep -q "authentication refused" "$tmp/slurm.out" && grep -q -E "sbatch refused|not on the login node|moe-train is missing|login node has no such file" "$tmp/slurm.out"' "and gets past authentication to the Slurm step: $(grep -m1 -E 'sbatch refused|not on the login node|moe-train is missing|login node has no such file' "$tmp/slurm.out" | cut -c1-160)"

# The "password" method instead of keyboard-interactive.
port2=$(free_port)
WB_SSHD_PASSWORD=$secret WB_SSHD_AUTH=password "$here/ssh_test_server.sh" start "$server2" "$port2" ||
    { echo "FAIL: cannot start the second password sshd"; exit 1; }
at_tty "$secret" "$tmp/pw.prompts" hosts add pw3 --host wbtest --ssh-config "$server2/ssh_config" --known-hosts "$server2/known_hosts" \
    --remote-moe-train "$moe" --accept-new-host-key >"$tmp/pw.out" 2>&1
rc=$?
check '[ $rc -eq 0 ] && grep -q -F "Password for root@127.0.0.1:$port2:" "$tmp/pw.prompts"' "the password method asks 'Password for root@127.0.0.1:$port2:' and connects (rc $rc)"

if [ $failures -ne 0 ]; then
    echo "--- logs"; tail -n 15 "$tmp"/*.out "$tmp"/*.prompts 2>/dev/null
    tail -n 10 "$server/sshd.log"
    exit 1
fi
echo "all passed"
