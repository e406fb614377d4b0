#!/usr/bin/env bash
# Parallel layouts of moe-train over NCCL on one host: the benchmark slice on real images at MBS 1,
# GBS = G (the GPUs found), trained once on 1 GPU (G micro-batches accumulated) as the reference,
# then with `--nproc-per-node G` for each layout: plain DP, FSDP optim / optim_grads /
# optim_grads_params, EP 2, EP 2 + FSDP optim_grads_params, PP 2 (3 + 3 layers) and PP 2 with an
# uneven 2 + 4 split (a deepstack feature then travels between the stages) over 1F1B, TP 2 + SP
# (ETP 2 and ETP 1), TP 2 without SP, TP 2 × EP 2 + SP, TP 2 × PP 2 + SP (layouts that need more GPUs than found
# are skipped; with one GPU the FSDP and EP code paths still run at world size 1). Same global
# batch, so every layout's losses must match the reference's (bf16: ~1e-3 relative); the table
# shows step time, tokens/s/GPU, MFU and peak memory per layout.   benchmarks/gpu_layouts.sh [STEPS]
# The rows dp-sync and ep2-sync are dp and ep2 with parallel.overlap_grad_reduce false (the DP
# gradient allreduce after the backward instead of overlapped with it): the overlap's baseline,
# measured in the same round.
# LAYOUTS="pp2 tp2-sp" benchmarks/gpu_layouts.sh 8   runs only those (plus the reference), so a
# round fits the 10-minute limit of one command. RESUME="pp2 tp2-sp" also checks multi-rank
# checkpoints and --resume of those layouts over NCCL (below).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STEPS=${1:-8}
RESULTS=/tmp/gpu_layouts
MANIFEST="$ROOT/.gpu-samples/manifest.jsonl"
# --- configs only (no GPU): WB_LAYOUTS_CONFIGS_ONLY=DIR WB_LAYOUTS_GPUS=G benchmarks/gpu_layouts.sh
# writes DIR/<row>.json, exactly the configs a run on G GPUs trains (the same writer below), and
# DIR/rows.tsv ("row<TAB>world size"), then exits: benchmarks/layout_predictions.sh predicts them.
CONFIGS_ONLY=${WB_LAYOUTS_CONFIGS_ONLY:-}
if [ -n "$CONFIGS_ONLY" ]; then
  G=${WB_LAYOUTS_GPUS:?WB_LAYOUTS_CONFIGS_ONLY needs WB_LAYOUTS_GPUS=G (the GPUs the run would find)}
  RESULTS=$CONFIGS_ONLY
  mkdir -p "$RESULTS" && rm -f "$RESULTS"/*.json "$RESULTS/rows.tsv"  # no rows of an earlier call
else
  mkdir -p "$RESULTS"
  G=$(nvidia-smi -L | wc -l)
  BIN=$(RESULTS="$RESULTS" "$ROOT/benchmarks/build_gpu.sh" moe-train)
  [ -f "$MANIFEST" ] || { echo "no $MANIFEST: carry .gpu-samples (see gpu_round.sh)"; exit 1; }
fi
# --- end configs only
python3 - "$ROOT/benchmarks/configs/qwen3vl-30b-slice.json" "$MANIFEST" "$STEPS" "$G" "$RESULTS" <<'PY'
import json, sys
src, manifest, steps, g, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
base = json.load(open(src))
base["train"].update(train_iters=steps, micro_batch_size=1, global_batch_size=g)
# The serial optimizer step and autocast's weight casts: the layout table measures the collectives
# of each layout, comparable with the committed 2-GPU rows (measured before train.overlap_optimizer
# and train.bf16_weight_copies); gpu_round.sh measures both (real-overlap-optimizer, real-casting).
base["train"]["overlap_optimizer"] = False
base["train"]["bf16_weight_copies"] = False
base["data"]["manifest"] = manifest
layouts = {"ref": {}, "dp": {},
           "fsdp-optim": {"use_megatron_fsdp": True, "data_parallel_sharding_strategy": "optim"},
           "fsdp-optim_grads": {"use_megatron_fsdp": True, "data_parallel_sharding_strategy": "optim_grads"},
           "fsdp-optim_grads_params": {"use_megatron_fsdp": True, "data_parallel_sharding_strategy": "optim_grads_params"},
           "ep2": {"expert_model_parallel_size": 2},
           # FSDP's two knobs (docs/parallel.md): ZeRO-3 kept gathered from forward to backward, and
           # ZeRO-2 with the gradients reduce-scattered in bf16.
           "fsdp-keep-gathered": {"use_megatron_fsdp": True, "data_parallel_sharding_strategy": "optim_grads_params",
                                  "fsdp_reshard_after_forward": False},
           "fsdp-bf16-reduce": {"use_megatron_fsdp": True, "data_parallel_sharding_strategy": "optim_grads",
                                "grad_reduce_in_fp32": False},
           "dp-sync": {"overlap_grad_reduce": False},
           "ep2-sync": {"expert_model_parallel_size": 2, "overlap_grad_reduce": False},
           "ep2-fsdp": {"expert_model_parallel_size": 2, "use_megatron_fsdp": True,
                        "data_parallel_sharding_strategy": "optim_grads_params"},
           "pp2": {"pipeline_model_parallel_size": 2},
           "pp2-uneven": {"pipeline_model_parallel_size": 2, "num_layers_in_first_pipeline_stage": 2,
                          "num_layers_in_last_pipeline_stage": 4},
           "tp2-sp": {"tensor_model_parallel_size": 2, "sequence_parallel": True, "expert_tensor_parallel_size": 2},
           "tp2-sp-etp1": {"tensor_model_parallel_size": 2, "sequence_parallel": True, "expert_tensor_parallel_size": 1},
           "tp2": {"tensor_model_parallel_size": 2, "expert_tensor_parallel_size": 2},
           "tp2-ep2-sp": {"tensor_model_parallel_size": 2, "sequence_parallel": True, "expert_tensor_parallel_size": 2,
                          "expert_model_parallel_size": 2},
           "tp2-pp2-sp": {"tensor_model_parallel_size": 2, "sequence_parallel": True, "expert_tensor_parallel_size": 2,
                          "pipeline_model_parallel_size": 2},
           # FSDP × TP (docs/parallel.md): ZeRO-3 inside each TP coordinate (DP = G / 2).
           "tp2-sp-fsdp": {"tensor_model_parallel_size": 2, "sequence_parallel": True, "expert_tensor_parallel_size": 2,
                           "use_megatron_fsdp": True, "data_parallel_sharding_strategy": "optim_grads_params"},
           "tp2-ep2-sp-fsdp": {"tensor_model_parallel_size": 2, "sequence_parallel": True, "expert_tensor_parallel_size": 1,
                               "expert_model_parallel_size": 2, "use_megatron_fsdp": True,
                               "data_parallel_sharding_strategy": "optim_grads_params"}}
for name, par in layouts.items():
    c = json.loads(json.dumps(base))
    c["name"] += "-" + name
    c.setdefault("parallel", {}).update(par)
    json.dump(c, open(f"{out}/{name}.json", "w"), indent=1)
PY
# --- configs only: the reference trains on one GPU, every other row on G (as run below)
if [ -n "$CONFIGS_ONLY" ]; then
  : >"$RESULTS/rows.tsv"
  for f in "$RESULTS"/*.json; do
    n=$(basename "$f" .json); ws=$G; [ "$n" = ref ] && ws=1
    printf '%s\t%s\n' "$n" "$ws" >>"$RESULTS/rows.tsv"
  done
  exit 0
fi
# --- end configs only
run() {  # name, extra args
  rm -rf "/tmp/run-$1"
  local t0=$SECONDS
  if timeout 150 "$BIN/moe-train" --config "$RESULTS/$1.json" --run-dir "/tmp/run-$1" "${@:2}" >"$RESULTS/$1.log" 2>&1; then
    echo "-- $1: ok ($((SECONDS - t0)) s)"
  else
    echo "-- $1: FAILED ($((SECONDS - t0)) s)"; tail -8 "$RESULTS/$1.log"
    for f in /tmp/run-$1/rank*.log; do [ -f "$f" ] && { echo "   == $f"; tail -6 "$f"; }; done
  fi
  grep -h "per rank parameters" "$RESULTS/$1.log" | head -2 || true
  # overlap_grad_reduce: how many gradient buckets went out inside backward (rank 0, end of run)
  grep -h "gradient reduction overlapped\|FSDP optim" "/tmp/run-$1/rank0.log" 2>/dev/null | tail -1 || true
  cp "/tmp/run-$1/metrics.jsonl" "$RESULTS/$1.metrics.jsonl" 2>/dev/null || true
}
run ref
names=(ref)
for layout in ${LAYOUTS:-dp dp-sync fsdp-optim fsdp-optim_grads fsdp-optim_grads_params fsdp-keep-gathered fsdp-bf16-reduce ep2 ep2-sync ep2-fsdp pp2 pp2-uneven tp2-sp tp2-sp-etp1 tp2 tp2-ep2-sp tp2-pp2-sp tp2-sp-fsdp tp2-ep2-sp-fsdp}; do
  need=1; case $layout in ep2*|pp2*|tp2*) need=2 ;; esac
  case $layout in tp2-ep2*|tp2-pp2*) need=4 ;; esac
  if [ "$G" -lt "$need" ]; then echo "-- $layout: skipped (needs $need GPUs, found $G)"; continue; fi
  run "$layout" --nproc-per-node "$G"
  names+=("$layout")
done
# RESUME="pp2 tp2-sp": multi-rank checkpoints over NCCL. Per layout: STEPS uninterrupted, then
# STEPS/2 saved by checkpoint_interval and --resume'd to STEPS in the same run directory (constant
# LR so both runs see the same schedule); the resumed steps' losses must match the uninterrupted
# run's (GPU kernels are not bit-deterministic: ~1e-4 relative), and the resume must say so.
for layout in ${RESUME:-}; do
  [ -f "$RESULTS/$layout.json" ] || { echo "-- resume $layout: no such layout"; continue; }
  half=$((STEPS / 2))
  python3 - "$RESULTS/$layout.json" "$STEPS" "$half" <<'PY'
import json, sys
src, steps, half = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
c = json.load(open(src))
c["train"]["lr_decay_style"] = "constant"
json.dump(c, open(src.replace(".json", "-whole.json"), "w"), indent=1)
c["train"].update(train_iters=half, checkpoint_interval=half)
json.dump(c, open(src.replace(".json", "-first.json"), "w"), indent=1)
PY
  run "$layout-whole" --nproc-per-node "$G"
  run "$layout-first" --nproc-per-node "$G"
  # Resumed in place: a checkpoint of the 30B slice is ~50 GB (fp32 weights and both moments), so
  # a copy of the run directory does not fit beside the next layout's on a 128 GB disk.
  rm -rf "/tmp/run-$layout-resumed" && mv "/tmp/run-$layout-first" "/tmp/run-$layout-resumed"
  t0=$SECONDS
  if timeout 150 "$BIN/moe-train" --config "$RESULTS/$layout-whole.json" --run-dir "/tmp/run-$layout-resumed" \
      --nproc-per-node "$G" --resume >"$RESULTS/$layout-resumed.log" 2>&1; then
    echo "-- $layout-resumed: ok ($((SECONDS - t0)) s)"
  else
    echo "-- $layout-resumed: FAILED ($((SECONDS - t0)) s)"; tail -8 "$RESULTS/$layout-resumed.log"
  fi
  python3 - "/tmp/run-$layout-whole/metrics.jsonl" "/tmp/run-$layout-resumed/metrics.jsonl" "$half" "$layout" <<'PY'
import json, sys
whole, resumed, half, name = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def steps(p):
    try:
        return {r["step"]: r for r in map(json.loads, open(p)) if r.get("type") == "step"}
    except OSError:
        return {}
a, b = steps(whole), steps(resumed)
text = open(resumed).read() if b else ""
later = [s for s in sorted(a) if s > half]
worst = max((abs(a[s]["loss"] - b[s]["loss"]) / abs(a[s]["loss"]) for s in later if s in b), default=float("nan"))
ok = all(s in b for s in later) and "resumed from" in text and worst < 5e-3
print(f"resume {name:20s} saved at {half}, resumed to {max(later, default=0)}: steps {sum(s in b for s in later)}/{len(later)}, "
      f"worst relative loss difference vs uninterrupted {worst:.2e} -> {'ok' if ok else 'MISMATCH'}")
PY
  rm -rf "/tmp/run-$layout-resumed/ckpt" "/tmp/run-$layout-whole/ckpt"  # free the disk for the next layout
done
echo "== losses vs the 1-GPU reference (same global batch)"
python3 - "$RESULTS" "${names[@]}" <<'PY'
import json, os, sys
out, names = sys.argv[1], sys.argv[2:]
def steps(n):
    p = f"{out}/{n}.metrics.jsonl"
    return [json.loads(l) for l in open(p) if '"type":"step"' in l] if os.path.exists(p) else []
ref = steps("ref")
for n in names[1:]:
    s = steps(n)
    worst = max((abs(a["loss"] - b["loss"]) / abs(a["loss"]) for a, b in zip(ref, s)), default=float("nan"))
    print(f"{n:26s} steps {len(s):3d}/{len(ref)}  worst relative loss difference {worst:.2e}")
PY
echo "== table ($(date -u +%Y-%m-%dT%H:%MZ), $G GPU(s), medians after 3 warm-up steps)"
args=()
for n in "${names[@]}"; do [ -f "$RESULTS/$n.metrics.jsonl" ] && args+=("$n=$RESULTS/$n.metrics.jsonl"); done
# The planner's predictions beside each row: made on the workbench machine by
# benchmarks/layout_predictions.sh from the same configs (WB_LAYOUTS_CONFIGS_ONLY above).
python3 "$ROOT/benchmarks/summarize.py" --skip 3 --predictions "$ROOT/benchmarks/predictions/layouts.json" --gpus "$G" \
  "${args[@]}" | tee "$RESULTS/table.md"
[ -n "${OUT:-}" ] && mkdir -p "$OUT/layouts" && cp "$RESULTS"/*.metrics.jsonl "$RESULTS/table.md" "$RESULTS"/*.log "$OUT/layouts/" 2>/dev/null || true
