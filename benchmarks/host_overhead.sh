#!/usr/bin/env bash
# How long moe-train's host takes to issue one step, by part (GPU): benchmarks/host_overhead.sh [STEPS]
#
# An eager LibTorch step costs the host a fixed time per operator it launches (dispatch, autograd,
# the launch itself), whatever the tensors' sizes; when the GPU's work per micro-batch is shorter
# than that, the GPU waits (MBS 1 on one H200: 23 % idle, docs/benchmarks.md "Attention by
# kernel"). This round trains the standard workload's layer structure (benchmarks/configs/
# qwen3vl-30b-slice.json: the same layer counts, heads, experts, top-k, vocabulary and real images)
# at tiny widths, so the GPU's work is a few ms and the step time is the host's; then varies one
# part at a time — decoder layers, vision layers, images (mock: none), micro-batches per step — and
# prints the host milliseconds each part costs, for the runtime profile's "host" rates
# (resources/catalog/runtime-profiles.json; the planner's host-bound term, docs/planner.md). The
# full-width MBS 1 rows are measured beside it: their step against the planner's GPU time.
# Needs .gpu-deps (../shared/tools/gpu-deps.sh .gpu-deps) and .gpu-samples (docs/benchmarks.md).
# Env: WB_GPU_BUILD (default /tmp/wb-rt-build), WB_HOST_RESULTS (default /tmp/host_overhead);
# WB_HOST_BIN=build/bin: no build, only moe-train --validate of every config (a CPU check of this script).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STEPS=${1:-20}
RESULTS=${WB_HOST_RESULTS:-/tmp/host_overhead}
BUILD=${WB_GPU_BUILD:-/tmp/wb-rt-build}
mkdir -p "$RESULTS/runs"
cd "$ROOT"
if [ -n "${WB_HOST_BIN:-}" ]; then BIN=$WB_HOST_BIN
else BIN=$(RESULTS="$RESULTS" WB_GPU_BUILD="$BUILD" "$ROOT/benchmarks/build_gpu.sh" moe-train); fi
MANIFEST="$ROOT/.gpu-samples/manifest.jsonl"
[ -f "$MANIFEST" ] || { echo "no $MANIFEST: carry .gpu-samples"; exit 1; }

python3 - "$ROOT/benchmarks/configs/qwen3vl-30b-slice.json" "$MANIFEST" "$STEPS" "$RESULTS/runs" <<'PY'
import json, sys
base, manifest, steps, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
c = json.load(open(base))
c["train"].update(train_iters=steps, log_interval=1, micro_batch_size=1, global_batch_size=1,
                  lr_warmup_iters=min(c["train"].get("lr_warmup_iters", 0), steps - 1))
c["data"]["manifest"] = manifest
def variant(name, edit):
    v = json.loads(json.dumps(c))
    edit(v)
    json.dump(v, open(f"{out}/{name}.json", "w"), indent=1)
def tiny(v):
    # Same structure, widths that leave the GPU a few ms: heads and KV groups kept (head dim 8),
    # experts and top-k kept (expert FFN 32), the vocabulary kept.
    v["model"]["vision"].update(hidden_size=128, ffn_hidden_size=256)
    v["model"]["decoder"].update(hidden_size=256, kv_channels=8, moe_ffn_hidden_size=32, mrope_section=[2, 1, 1])
def with_(*edits):
    def edit(v):
        for e in edits:
            e(v)
    return edit
dec = lambda n: (lambda v: v["model"]["decoder"].update(num_layers=n))
vis = lambda n: (lambda v: v["model"]["vision"].update(num_layers=n))
mock = lambda v: v["data"].update(source="mock", mock_image_size=0)
batch = lambda mbs, gbs: (lambda v: v["train"].update(micro_batch_size=mbs, global_batch_size=gbs))
variant("tiny", tiny)
variant("tiny-dec12", with_(tiny, dec(12)))
variant("tiny-vis8", with_(tiny, vis(8)))
variant("tiny-mock", with_(tiny, mock))
variant("tiny-mbs2", with_(tiny, batch(2, 2)))
variant("tiny-gbs4", with_(tiny, batch(1, 4)))
variant("real-mbs1", lambda v: None)
variant("real-mbs1-gbs2", batch(1, 2))
variant("tiny-again", tiny)  # the first row again: the order does not matter
PY

LABELS="tiny tiny-dec12 tiny-vis8 tiny-mock tiny-mbs2 tiny-gbs4 real-mbs1 real-mbs1-gbs2 tiny-again"
if [ -n "${WB_HOST_BIN:-}" ]; then
  for label in $LABELS; do "$BIN/moe-train" --validate "$RESULTS/runs/$label.json" >/dev/null && echo "$label: valid"; done
  exit 0
fi
cat "$ROOT"/.gpu-samples/* >/dev/null 2>&1 || true  # the images in the page cache before the first row
for label in $LABELS; do
  dir="$RESULTS/runs/$label"
  rm -rf "$dir"
  if ! timeout 120 "$BIN/moe-train" --config "$RESULTS/runs/$label.json" --run-dir "$dir" >"$RESULTS/runs/$label.log" 2>&1; then
    echo "-- $label failed:"; tail -5 "$RESULTS/runs/$label.log"
  fi
done

python3 - "$RESULTS/runs" <<'PY'
import json, statistics, sys, os
out = sys.argv[1]
def values(label, key):
    path = os.path.join(out, label, "metrics.jsonl")
    if not os.path.exists(path):
        return []
    steps = [json.loads(l) for l in open(path) if '"type":"step"' in l.replace(" ", "")]
    return [s[key] for s in steps[5:] if key in s]
def med(label, key="step_ms"):
    path = os.path.join(out, label, "metrics.jsonl")
    if not os.path.exists(path):
        return float("nan")
    steps = [json.loads(l) for l in open(path) if '"type":"step"' in l.replace(" ", "")]
    vals = [s[key] for s in steps[5:] if key in s]  # after 5 warm-up steps (allocator growth)
    return statistics.median(vals) if vals else float("nan")
rows = ["tiny", "tiny-dec12", "tiny-vis8", "tiny-mock", "tiny-mbs2", "tiny-gbs4", "real-mbs1", "real-mbs1-gbs2", "tiny-again"]
print("| run | step ms | min–max | vision ms | decoder ms | backward ms | optimizer ms |")
print("|---|---|---|---|---|---|---|")
m = {}
for r in rows:
    m[r] = {k: med(r, k) for k in ("step_ms", "vision_ms", "decoder_ms", "backward_ms", "optimizer_ms")}
    v = values(r, "step_ms") or [float("nan")]
    print(f"| {r} | {m[r]['step_ms']:.1f} | {min(v):.1f}–{max(v):.1f} | " +
          " | ".join(f"{m[r][k]:.1f}" for k in ("vision_ms", "decoder_ms", "backward_ms", "optimizer_ms")) + " |")
s = lambda r: m[r]["step_ms"]
per_dec = (s("tiny-dec12") - s("tiny")) / 6
per_vis = (s("tiny-vis8") - s("tiny")) / 4
per_mb = (s("tiny-gbs4") - s("tiny")) / 3
print()
print(f"host ms per decoder layer (fwd+bwd, one micro-batch): {per_dec:.3f}")
print(f"host ms per vision layer (fwd+bwd, one micro-batch):  {per_vis:.3f}")
print(f"host ms per micro-batch (6 decoder + 4 vision layers): {per_mb:.2f}")
print(f"host ms of the vision path (tiny - tiny-mock):        {s('tiny') - s('tiny-mock'):.2f}")
print(f"host ms of a second sequence in the micro-batch:       {s('tiny-mbs2') - s('tiny'):.2f}")
print(f"host ms per step outside the micro-batches:            {s('tiny') - per_mb:.2f}")
json.dump(m, open(os.path.join(out, "..", "host_overhead.json"), "w"), indent=1)
PY
