#!/usr/bin/env bash
# The planner's prediction for every row of benchmarks/gpu_layouts.sh, made HERE (the CPU machine
# with the workbench built), committed as benchmarks/predictions/layouts.json; the GPU run's table
# prints it beside each measured row. Run it after changing the planner or a layout row, and commit
# the file (test layout_predictions_current fails until then).
#   benchmarks/layout_predictions.sh            write benchmarks/predictions/layouts.json
#   benchmarks/layout_predictions.sh --check    compare the committed file with a fresh prediction
# WB_CLI (default build/bin/moe-workbench-cli), WB_PRED_GPUS (GPU counts, default "1 2 4 8"),
# WB_PRED_HARDWARE (catalog id, default h200).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
FILE="$ROOT/benchmarks/predictions/layouts.json"
args=(--cli "${WB_CLI:-$ROOT/build/bin/moe-workbench-cli}" --gpus "${WB_PRED_GPUS:-1 2 4 8}"
      --hardware "${WB_PRED_HARDWARE:-h200}")
case "${1:-}" in
  "") exec python3 "$ROOT/benchmarks/layout_predictions.py" "${args[@]}" --out "$FILE" ;;
  --check) exec python3 "$ROOT/benchmarks/layout_predictions.py" "${args[@]}" --check "$FILE" ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac
