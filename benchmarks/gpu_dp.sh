#!/usr/bin/env bash
# Data parallelism over NCCL on one host: the benchmark slice (real images) at MBS 1, GBS = G,
# trained once on 1 GPU (G micro-batches accumulated) and once on G GPUs (`--nproc-per-node G`,
# one micro-batch each). The global batch is the same, so the losses must agree; the table shows
# step time, per-GPU throughput and MFU of both.   benchmarks/gpu_dp.sh [STEPS]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STEPS=${1:-10}
RESULTS=/tmp/gpu_dp
mkdir -p "$RESULTS"
G=$(nvidia-smi -L | wc -l)
[ "$G" -ge 2 ] || { echo "gpu_dp.sh needs at least 2 GPUs (found $G)"; exit 1; }
BIN=$(RESULTS="$RESULTS" "$ROOT/benchmarks/build_gpu.sh" moe-train)
MANIFEST="$ROOT/.gpu-samples/manifest.jsonl"
[ -f "$MANIFEST" ] || { echo "no $MANIFEST: carry .gpu-samples (see gpu_round.sh)"; exit 1; }
python3 - "$ROOT/benchmarks/configs/qwen3vl-30b-slice.json" "$MANIFEST" "$STEPS" "$G" "$RESULTS" <<'PY'
import json, sys
src, manifest, steps, g, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
c = json.load(open(src))
c["train"].update(train_iters=steps, micro_batch_size=1, global_batch_size=g)
c["data"]["manifest"] = manifest
json.dump(c, open(f"{out}/dp.json", "w"), indent=1)
PY
run() {  # name, extra args
  rm -rf "/tmp/run-$1"
  "$BIN/moe-train" --config "$RESULTS/dp.json" --run-dir "/tmp/run-$1" "${@:2}" >"$RESULTS/$1.log" 2>&1 \
    || { echo "$1 failed:"; tail -20 "$RESULTS/$1.log"; for f in /tmp/run-$1/rank*.log; do echo "== $f"; tail -15 "$f"; done; }
  cp "/tmp/run-$1/metrics.jsonl" "$RESULTS/$1.metrics.jsonl" 2>/dev/null || true
}
run gpu1
run "gpus$G" --nproc-per-node "$G"
echo "== losses, 1 GPU vs $G GPUs (same global batch)"
python3 - "$RESULTS/gpu1.metrics.jsonl" "$RESULTS/gpus$G.metrics.jsonl" <<'PY'
import json, sys
def steps(p): return [json.loads(l) for l in open(p) if '"type":"step"' in l]
a, b = steps(sys.argv[1]), steps(sys.argv[2])
worst = 0.0
for x, y in zip(a, b):
    rel = abs(x["loss"] - y["loss"]) / abs(x["loss"])
    worst = max(worst, rel)
    print(f"step {x['step']:3d}  loss {x['loss']:.5f}  {y['loss']:.5f}  rel {rel:.1e}")
print(f"steps {len(a)} vs {len(b)}, worst relative loss difference {worst:.2e}")
PY
echo "== table ($(date -u +%Y-%m-%dT%H:%MZ), medians after 3 warm-up steps)"
python3 "$ROOT/benchmarks/summarize.py" --skip 3 "1 GPU=$RESULTS/gpu1.metrics.jsonl" "$G GPUs (DP$G)=$RESULTS/gpus$G.metrics.jsonl" | tee "$RESULTS/table.md"
[ -n "${OUT:-}" ] && cp "$RESULTS"/*.metrics.jsonl "$RESULTS/table.md" "$RESULTS"/*.log "$OUT/" 2>/dev/null || true
