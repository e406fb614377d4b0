#!/usr/bin/env bash
# One GPU round of moe-train, run on the GPU machine from anywhere in the repository:
#   benchmarks/gpu_round.sh [STEPS]
# 1. builds the runtime (cmake -S runtime, WB_WITH_CUDA=ON) against the machine's PyTorch wheel
#    LibTorch, with the header-only deps from .gpu-deps/usr;
# 2. runs the GPU unit checks (test_runtime_gpu: grouped GEMM vs loop, varlen flash vs dense mask,
#    CUDA vs CPU);
# 3. trains the standard workload (benchmarks/configs/qwen3vl-30b-slice.json: Qwen3-VL-30B-A3B dims,
#    6 decoder + 4 vision layers, seq 4096, MBS 4, bf16) on real images from .gpu-samples
#    (built here with: moe-sample-set --from /usr/share/openclipart/png --out .gpu-samples --count 400
#    --min-side 256 --max-side 896 --caption-bytes 64:256) and the same shape as a mock, text-only
#    run, and prints the table (medians after 3 warm-up steps); plus MBS 1 with varlen flash vs the
#    dense masked decoder attention.
# Logs and metrics go to /tmp/gpu_round; the table, GPU check log and metrics also to $OUT if set.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STEPS=${1:-12}
RESULTS=/tmp/gpu_round   # everything; a few files are copied to $OUT at the end
BUILD=${WB_GPU_BUILD:-/tmp/wb-rt-build}
mkdir -p "$RESULTS"
cd "$ROOT"

BIN=$(RESULTS="$RESULTS" WB_GPU_BUILD="$BUILD" "$ROOT/benchmarks/build_gpu.sh" moe-train test_runtime_gpu test_runtime_model)
echo "built in $BUILD"

echo "== GPU checks"
"$BUILD/bin/test_runtime_gpu" >"$RESULTS/test_gpu.log" 2>&1 && echo "test_runtime_gpu: passed" \
  || echo "test_runtime_gpu FAILED (the benchmark still runs)"
grep -v '^frame #' "$RESULTS/test_gpu.log" | head -20
"$BUILD/bin/test_runtime_model" >"$RESULTS/test_model.log" 2>&1 && echo "test_runtime_model (CPU tests, CUDA build): passed" \
  || { echo "test_runtime_model FAILED"; tail -20 "$RESULTS/test_model.log"; }

echo "== benchmark: $STEPS steps each"
MANIFEST="$ROOT/.gpu-samples/manifest.jsonl"
[ -f "$MANIFEST" ] || { echo "no $MANIFEST: build the sample set (see the top of this script) and carry .gpu-samples"; exit 1; }
python3 - "$ROOT/benchmarks/configs/qwen3vl-30b-slice.json" "$MANIFEST" "$STEPS" "$RESULTS" <<'PY'
import json, sys
src, manifest, steps, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
c = json.load(open(src))
c["train"]["train_iters"] = steps
c["data"]["manifest"] = manifest
json.dump(c, open(f"{out}/real.json", "w"), indent=1)
m = json.loads(json.dumps(c))
m["name"] += "-mock"
m["data"]["source"] = "mock"
m["data"]["mock_image_size"] = 0   # text only: the same captions, no images
json.dump(m, open(f"{out}/mock.json", "w"), indent=1)
one = json.loads(json.dumps(c))
one["train"]["micro_batch_size"] = one["train"]["global_batch_size"] = 1
json.dump(one, open(f"{out}/real-mbs1.json", "w"), indent=1)
json.dump(one, open(f"{out}/real-mbs1-dense.json", "w"), indent=1)
PY
# real-mbs1-dense: the decoder's attention through the dense document-causal mask (B×T×T, fp32
# softmax) instead of varlen flash, all else equal, at MBS 1 (at MBS 4 the dense scores of six
# layers do not fit beside the weights): the measurement behind choosing varlen flash.
for run in real mock real-mbs1 real-mbs1-dense; do
  rm -rf "/tmp/run-$run"
  "$BUILD/bin/moe-train" --validate "$RESULTS/$run.json"
  echo "-- $run"
  dense=""; [ "$run" = real-mbs1-dense ] && dense=dense
  WB_DECODER_ATTENTION=$dense "$BUILD/bin/moe-train" --config "$RESULTS/$run.json" --run-dir "/tmp/run-$run" \
    >"$RESULTS/$run.log" 2>&1 || { echo "$run run failed:"; tail -15 "$RESULTS/$run.log"; }
  tail -2 "$RESULTS/$run.log"
  cp "/tmp/run-$run/metrics.jsonl" "$RESULTS/$run.metrics.jsonl" 2>/dev/null || true
done
echo "== table ($(date -u +%Y-%m-%dT%H:%MZ), medians over steps 4..$STEPS)"
python3 "$ROOT/benchmarks/summarize.py" --skip 3 "real=$RESULTS/real.metrics.jsonl" "mock=$RESULTS/mock.metrics.jsonl" \
  "real-mbs1=$RESULTS/real-mbs1.metrics.jsonl" "real-mbs1-dense-decoder-attn=$RESULTS/real-mbs1-dense.metrics.jsonl" \
  | tee "$RESULTS/table.md"
# The device tool brings back at most 8 files from $OUT: keep the table, the checks and the metrics there.
if [ -n "${OUT:-}" ] && [ "$RESULTS" != "$OUT" ]; then
  cp "$RESULTS/table.md" "$RESULTS/test_gpu.log" "$RESULTS"/real.metrics.jsonl "$RESULTS"/mock.metrics.jsonl \
     "$RESULTS"/real-mbs1*.metrics.jsonl "$OUT/" 2>/dev/null || true
fi
