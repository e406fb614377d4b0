#!/bin/sh
# moe-train ignores SIGPIPE: with its stdout a pipe whose reader is gone, a tiny run still
# finishes (status.json "finished") instead of dying at its first flushed line (rc 141). The
# same disposition is what lets a rank whose peer died exit 4 from Gloo's socket error rather
# than be killed by SIGPIPE (runtime_parallel_kill*). Usage: sigpipe_check.sh MOE_TRAIN CONFIG
set -u
moe=$1
config=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
sed -e 's/"train_iters": *[0-9]*/"train_iters": 3/' -e 's/"lr_warmup_iters": *[0-9]*/"lr_warmup_iters": 1/' -e 's/"manifest": *"[^"]*"/"manifest": ""/' "$config" >"$dir/run.json"
# `true` exits at once: every write to the pipe after that fails.
"$moe" --config "$dir/run.json" --run-dir "$dir/run" | true
if grep -q '"status": *"finished"' "$dir/run/status.json" 2>/dev/null; then
    echo "ok: moe-train finished with its stdout closed"
    exit 0
fi
echo "FAIL: moe-train did not finish with its stdout closed (SIGPIPE not ignored?)"
cat "$dir/run/status.json" 2>/dev/null
exit 1
