#!/usr/bin/env bash
# Where moe-train's own GPU step goes, kernel by kernel: builds moe-train (cached like
# gpu_round.sh), trains the benchmark slice (benchmarks/configs/qwen3vl-30b-slice.json, real images
# from .gpu-samples) for 8 steps with WB_PROFILE_STEPS=6:7 (LibTorch's Kineto profiler, in the
# trainer), and prints benchmarks/kernel_summary.py's tables per step: GPU busy vs idle, kernel time
# by category, by launching ATen op, and the top kernels.
#   benchmarks/gpu_profile_ours.sh [real|mock] [extra JSON merged into the config, e.g. '{"train":{"global_batch_size":16}}']
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
SOURCE=${1:-real}
EXTRA=${2:-}
[ -n "$EXTRA" ] || EXTRA='{}'
RESULTS=/tmp/gpu_profile_ours
BUILD=${WB_GPU_BUILD:-/tmp/wb-rt-build}
mkdir -p "$RESULTS"
BIN=$(RESULTS="$RESULTS" WB_GPU_BUILD="$BUILD" "$ROOT/benchmarks/build_gpu.sh" moe-train)
python3 - "$ROOT/benchmarks/configs/qwen3vl-30b-slice.json" "$ROOT/.gpu-samples/manifest.jsonl" "$RESULTS/$SOURCE.json" "$SOURCE" "$EXTRA" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["data"]["manifest"] = sys.argv[2]; c["train"]["train_iters"] = 8
if sys.argv[4] == "mock":
    c["data"].update(source="mock", mock_image_size=0)
def merge(a, b):
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(a.get(k), dict): merge(a[k], v)
        else: a[k] = v
merge(c, json.loads(sys.argv[5]))
json.dump(c, open(sys.argv[3], "w"), indent=1)
PY
rm -rf "$RESULTS/run"
WB_PROFILE_STEPS=6:7 "$BIN/moe-train" --config "$RESULTS/$SOURCE.json" --run-dir "$RESULTS/run" >"$RESULTS/train.log" 2>&1 \
  || { tail -5 "$RESULTS/train.log"; exit 1; }
grep '^step [5678]/' "$RESULTS/train.log" || true
python3 "$ROOT/benchmarks/kernel_summary.py" "$RESULTS/run/kernel_trace.json" --steps 2 --top 30 | tee "$RESULTS/summary.md"
[ -n "${OUT:-}" ] && cp "$RESULTS/summary.md" "$OUT/summary-$SOURCE.md" && gzip -c "$RESULTS/run/kernel_trace.json" >"$OUT/kernel_trace-$SOURCE.json.gz" || true
