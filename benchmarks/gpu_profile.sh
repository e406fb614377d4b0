#!/usr/bin/env bash
# Where the step time goes, kernel by kernel: builds moe-train (cached like gpu_round.sh), dumps
# a few real micro-batches of the benchmark slice, and profiles one step of the same model in
# PyTorch eager on them (torch.profiler, top kernels by CUDA time). The eager model runs the same
# ATen kernels as moe-train (grouped GEMM, varlen flash, fused AdamW), so the table says where
# the compute and the memory traffic of this workload go.
#   benchmarks/gpu_profile.sh [loop|grouped]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
EXPERTS=${1:-grouped}
RESULTS=/tmp/gpu_profile
BUILD=${WB_GPU_BUILD:-/tmp/wb-rt-build}
mkdir -p "$RESULTS"
BIN=$(RESULTS="$RESULTS" WB_GPU_BUILD="$BUILD" "$ROOT/benchmarks/build_gpu.sh" moe-train)
python3 - "$ROOT/benchmarks/configs/qwen3vl-30b-slice.json" "$ROOT/.gpu-samples/manifest.jsonl" "$RESULTS/real.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1])); c["data"]["manifest"] = sys.argv[2]; c["train"]["train_iters"] = 6
json.dump(c, open(sys.argv[3], "w"), indent=1)
PY
rm -rf "$RESULTS/dump"
"$BUILD/bin/moe-train" --config "$RESULTS/real.json" --dump-batches "$RESULTS/dump" --dump-count 6 >/dev/null
python3 "$ROOT/benchmarks/eager/qwen3vl_eager.py" --dump "$RESULTS/dump" --steps 5 --experts "$EXPERTS" \
  --profile-step 4 2>&1 | tee "$RESULTS/profile.txt" | grep -v "^step "
[ -n "${OUT:-}" ] && cp "$RESULTS/profile.txt" "$OUT/" || true
