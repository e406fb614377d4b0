#!/usr/bin/env bash
# One GPU round of moe-train and its PyTorch-eager baseline, one command, one table:
#   benchmarks/gpu_round.sh [STEPS]          (default 12 steps per row; medians after 3 warm-up steps)
# 1. builds the runtime (cmake -S runtime, WB_WITH_CUDA=ON) against the machine's PyTorch wheel
#    LibTorch, with the header-only deps from .gpu-deps/usr (cached in $WB_GPU_BUILD between calls
#    on one machine);
# 2. runs the GPU unit checks (test_runtime_gpu: grouped GEMM vs loop, varlen flash vs dense mask,
#    CUDA vs CPU; test_runtime_gpu_graphs: the router's CUDA graphs vs the eager router);
# 3. trains the standard workload (benchmarks/configs/qwen3vl-30b-slice.json: Qwen3-VL-30B-A3B dims,
#    6 decoder + 4 vision layers, seq 4096, MBS 4, bf16) on real images from .gpu-samples
#    (built here with: moe-sample-set --from /usr/share/openclipart/png --out .gpu-samples --count 400
#    --min-side 256 --max-side 896 --caption-bytes 64:256), then the guide's claims, one row each:
#    real vs mock (text only), MBS 1/2/4/8, frozen vs trainable vision, recompute none / selective /
#    full, CUDA graphs on / off, and bf16 Adam moments (train.exp_avg_dtype / exp_avg_sq_dtype: the
#    optimizer column and peak memory against "real"; WB_ROUND_ROWS="real real-bf16-moments" runs
#    just that pair);
# 4. dumps the real and mock runs' micro-batches (moe-train --dump-batches) and trains the same model
#    in PyTorch eager on them (benchmarks/eager/qwen3vl_eager.py: per-expert loop, and
#    torch._grouped_mm experts), and prints the ratio ours / eager;
# 5. prints the table (benchmarks/round_table.py) and writes it to $OUT/table.md.
# A row that cannot run says why in the table instead of stopping the round: "OOM" (moe-train exit
# 3, or CUDA out of memory in Python), "not supported by this build: ..." (moe-train --validate
# refuses the config, e.g. recompute or CUDA graphs before they land), "timed out", "failed".
#
# Environment:
#   WB_ROUND_TINY=1        CPU dry run of the whole logic: sample-tiny (fp32, CPU), binaries from
#                          WB_ROUND_BIN (default build/bin), a 48-image sample set made here, no build
#                          and no GPU checks. For checking this script, not for numbers.
#   WB_ROUND_PYTHON        Python with torch for the eager rows (default: python3, or /usr/bin/python3
#                          when python3 has no torch)
#   WB_ROUND_ROW_TIMEOUT   seconds per row of ours before it is stopped and reported "timed out"
#                          (default 150); WB_ROUND_EAGER_TIMEOUT the same for eager rows (default 240)
#   WB_ROUND_ROWS="real mock"  run only these rows (labels as in the table; eager rows need their
#                          dump's row, e.g. "real eager-real-grouped"); default all
#   WB_ROUND_EAGER=0       skip the batch dumps and the eager rows (the planner's rows need neither)
#   WB_ROUND_BASE=FILE     another base config for every row (e.g. the slice at MBS 2, for the
#                          A/B rows on an 80 GB card; the table's rows keep their labels)
#   WB_ROUND_OVERLAP_BENCH=1  also build and run moe-overlap-bench (the SM budget's physics;
#                          WB_ROUND_OVERLAP_BENCH_SMS="16 24 32 48" the budgets)
#   WB_ROUND_PROFILE=real  after the rows, gpu_profile_ours.sh on that workload (same build and
#                          environment, plus WB_ROUND_PROFILE_ENV="WB_ROW_KERNELS=1 …"), its category
#                          table appended to the table (own limit: WB_ROUND_PROFILE_TIMEOUT, 120 s)
#   WB_ROUND_CHECKS=0      skip the GPU unit checks;  WB_ROUND_DENSE=1  add the MBS 1 dense-mask
#                          decoder-attention row (the measurement behind choosing varlen flash)
# Logs, configs, dumps and metrics go to $WB_ROUND_RESULTS (default /tmp/gpu_round).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
STEPS=${1:-12}
RESULTS=${WB_ROUND_RESULTS:-/tmp/gpu_round}
BUILD=${WB_GPU_BUILD:-/tmp/wb-rt-build}
ROW_TIMEOUT=${WB_ROUND_ROW_TIMEOUT:-150}
EAGER_TIMEOUT=${WB_ROUND_EAGER_TIMEOUT:-240}
BUDGET=${WB_ROUND_BUDGET:-540}   # seconds for the whole round: the device tool stops a command at 600
TINY=${WB_ROUND_TINY:-0}
ROWS="$RESULTS/rows.tsv"
START=$(date +%s)
mkdir -p "$RESULTS"
rm -rf "$RESULTS"/runs "$RESULTS"/dump-* "$ROWS"
mkdir -p "$RESULTS/runs"
cd "$ROOT"
elapsed() { echo "$(( $(date +%s) - START )) s"; }
# Seconds a row may still take: its own limit, or what is left of the round's budget (so the table
# is always printed before the device tool's 10-minute limit); 0 = skip the row.
allowance() {  # limit
  local left=$(( BUDGET - ($(date +%s) - START) - 15 ))
  if [ $left -lt 20 ]; then echo 0; elif [ $left -lt "$1" ]; then echo $left; else echo "$1"; fi
}

PY=${WB_ROUND_PYTHON:-python3}
if ! "$PY" -c 'import torch' 2>/dev/null && [ -z "${WB_ROUND_PYTHON:-}" ] && /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  PY=/usr/bin/python3
fi

if [ "$TINY" = 1 ]; then
  BIN=${WB_ROUND_BIN:-$ROOT/build/bin}
  [ -x "$BIN/moe-train" ] || { echo "WB_ROUND_TINY: no $BIN/moe-train (build it: cmake --build build --target moe-train moe-sample-set)"; exit 1; }
  BASE="$ROOT/resources/configs/sample-tiny.json"
  SAMPLES="$RESULTS/tiny-samples"
  [ -f "$SAMPLES/manifest.jsonl" ] || "$BIN/moe-sample-set" --from /usr/share/openclipart/png --out "$SAMPLES" --count 48 >/dev/null
  MANIFEST="$SAMPLES/manifest.jsonl"
  echo "== CPU dry run (WB_ROUND_TINY=1): sample-tiny, $STEPS steps per row, binaries from $BIN"
else
  MANIFEST="$ROOT/.gpu-samples/manifest.jsonl"
  [ -f "$MANIFEST" ] || { echo "no $MANIFEST: build the sample set (see the top of this script) and carry .gpu-samples"; exit 1; }
  BASE=${WB_ROUND_BASE:-$ROOT/benchmarks/configs/qwen3vl-30b-slice.json}
  TARGETS="moe-train"  # the GPU checks' binaries only when they run (WB_ROUND_CHECKS=0 saves their build)
  [ "${WB_ROUND_CHECKS:-1}" = 0 ] || TARGETS="$TARGETS test_runtime_gpu test_runtime_gpu_graphs"
  [ "${WB_ROUND_OVERLAP_BENCH:-0}" = 0 ] || TARGETS="$TARGETS moe-overlap-bench"
  BIN=$(RESULTS="$RESULTS" WB_GPU_BUILD="$BUILD" "$ROOT/benchmarks/build_gpu.sh" $TARGETS)
  echo "built in $BUILD ($(elapsed))"
  # The device's own ceilings (bf16 matmul, HBM copy) beside the catalog's: the planner's runtime
  # profile for this hardware is measured against these (docs/planner.md).
  "$BIN/moe-train" --self-check >"$RESULTS/self_check.json" 2>"$RESULTS/self_check.err" || true
  python3 -c "import json,sys;p=json.load(open(sys.argv[1])).get('peak_probe',{});print('self-check:',json.dumps(p))" "$RESULTS/self_check.json" || true
  # The overlapped optimizer's SM budget in isolation (runtime/tools/overlap_bench.cpp).
  if [ "${WB_ROUND_OVERLAP_BENCH:-0}" != 0 ]; then
    echo "== moe-overlap-bench (AdamW on k SMs, carved GEMMs, both at once)"
    timeout 120 "$BIN/moe-overlap-bench" ${WB_ROUND_OVERLAP_BENCH_SMS:-} 2>&1 | tee "$RESULTS/overlap_bench.md" || true
  fi
  if [ "${WB_ROUND_CHECKS:-1}" != 0 ]; then
    echo "== GPU checks"
    if timeout 120 "$BIN/test_runtime_gpu" >"$RESULTS/test_gpu.log" 2>&1; then echo "test_runtime_gpu: passed"
    else echo "test_runtime_gpu FAILED (the benchmark still runs)"; fi
    grep -v '^frame #' "$RESULTS/test_gpu.log" | head -20 || true
    # Session 27's row kernels (WB_ROW_KERNELS=1: the vectorized norm rows and cross-entropy, off by
    # default until this check and the real-row-kernels row have run on a GPU) through the same checks.
    if WB_ROW_KERNELS=1 timeout 120 "$BIN/test_runtime_gpu" >"$RESULTS/test_gpu_row_kernels.log" 2>&1; then
      echo "test_runtime_gpu with WB_ROW_KERNELS=1: passed"
    else echo "test_runtime_gpu with WB_ROW_KERNELS=1 FAILED (the real-row-kernels row is not trustworthy)"; fi
    grep -E 'rmsnorm|layernorm|cross-entropy|FAIL' "$RESULTS/test_gpu_row_kernels.log" | head -40 || true
    if timeout 120 "$BIN/test_runtime_gpu_graphs" >"$RESULTS/test_gpu_graphs.log" 2>&1; then echo "test_runtime_gpu_graphs: passed"
    else echo "test_runtime_gpu_graphs FAILED (the benchmark still runs; the cuda-graphs row may fail too)"; fi
    grep -v '^frame #' "$RESULTS/test_gpu_graphs.log" | head -20 || true
    # train.overlap_optimizer "auto" in the trainer: sample-tiny (bf16) on this GPU for 6 steps,
    # "auto" (fits: the overlap goes on at step 2) against false (serial): the switch's event and
    # the same losses step by step (the same updates, written later).
    python3 - "$ROOT/resources/configs/sample-tiny.json" "$MANIFEST" "$RESULTS/auto" <<'PY'
import json, os, sys
c = json.load(open(sys.argv[1]))
c["data"]["manifest"] = sys.argv[2]
c["runtime"]["device"] = "cuda"
c["train"].update(train_iters=6, lr_warmup_iters=2, precision="bf16")
os.makedirs(sys.argv[3], exist_ok=True)
for mode in ("auto", False):
    c["train"]["overlap_optimizer"] = mode
    json.dump(c, open(os.path.join(sys.argv[3], f"{str(mode).lower()}.json"), "w"))
PY
    for mode in auto false; do
      rm -rf "$RESULTS/auto/run-$mode"
      timeout 120 "$BIN/moe-train" --config "$RESULTS/auto/$mode.json" --run-dir "$RESULTS/auto/run-$mode" \
        >"$RESULTS/auto/$mode.log" 2>&1 || echo "overlap auto check: the $mode run failed: $(tail -1 "$RESULTS/auto/$mode.log")"
    done
    python3 - "$RESULTS/auto/run-auto/metrics.jsonl" "$RESULTS/auto/run-false/metrics.jsonl" <<'PY' || true
import json, sys
def read(path):
    losses, events = {}, []
    for line in open(path):
        r = json.loads(line)
        if r.get("type") == "step":
            losses[r["step"]] = r["loss"]
        elif r.get("type") == "event" and "optimizer step" in r.get("msg", ""):
            events.append(r["msg"])
    return losses, events
auto, events = read(sys.argv[1])
serial, _ = read(sys.argv[2])
common = sorted(set(auto) & set(serial))
worst = max((abs(auto[s] - serial[s]) / abs(serial[s]) for s in common), default=float("nan"))
print("overlap auto check: %s; losses over %d steps against the serial run: max rel. difference %.2e (%s)" % (
    events[0] if events else "NO decision event", len(common), worst,
    "passed" if events and "overlaps" in events[0] and len(common) == 6 and worst < 1e-3 else "FAILED"))
PY
  fi
fi

# Every row's config, derived from one base (python3 of the machine: standard library only).
python3 - "$BASE" "$MANIFEST" "$STEPS" "$RESULTS/runs" <<'PY'
import json, sys
base, manifest, steps, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
c = json.load(open(base))
c["train"]["train_iters"] = steps
c["train"]["lr_warmup_iters"] = min(c["train"].get("lr_warmup_iters", 0), steps - 1)
c["train"]["log_interval"] = 1
c["data"]["manifest"] = manifest
def variant(name, edit):
    v = json.loads(json.dumps(c))
    edit(v)
    json.dump(v, open(f"{out}/{name}.json", "w"), indent=1)
def mbs(n):
    def edit(v):
        v["train"]["micro_batch_size"] = v["train"]["global_batch_size"] = n
    return edit
variant("real", lambda v: None)
variant("mock", lambda v: v["data"].update(source="mock", mock_image_size=0))  # same captions, no images
for n in (1, 2, 8):
    variant(f"real-mbs{n}", mbs(n))
variant("real-frozen-vision", lambda v: v["model"].update(freeze_vision_model=True))
variant("real-recompute-selective", lambda v: v.update(recompute={
    "granularity": "selective", "modules": ["core_attn", "moe_act", "layernorm"]}))
variant("real-recompute-full", lambda v: v.update(recompute={
    "granularity": "full", "method": "uniform", "recompute_num_layers": 1}))
# The router captured (moe-train refuses the scopes it cannot capture: docs/runtime.md "CUDA
# graphs"); graphs from step 3, inside the round's 3 warm-up steps.
variant("real-cuda-graphs", lambda v: v.update(cuda_graph={
    "impl": "local", "scope": ["moe_router"], "warmup_steps": 2}))
variant("real-mbs1-dense", mbs(1))
# Megatron's precision-aware optimizer: moments stored in bf16 (20 instead of 28 bytes per element
# of the fused AdamW pass, 4 instead of 8 bytes of state per parameter).
variant("real-bf16-moments", lambda v: v["train"].update(exp_avg_dtype="bf16", exp_avg_sq_dtype="bf16"))
# The optimizer step on a side stream behind the next step (train.overlap_optimizer;
# runtime/train/optimizer_overlap.h): forced on, and forced off (the serial step) against "real",
# whose "auto" (the default) turns it on from the second step where the memory allows: same
# update, same losses.
variant("real-overlap-optimizer", lambda v: v["train"].update(overlap_optimizer=True))
variant("real-serial-optimizer", lambda v: v["train"].update(overlap_optimizer=False))
# The serial step on 132 resident AdamW blocks (WB_ADAMW_RESIDENT=132; experimental): its
# bandwidth against real-serial-optimizer's default grid.
variant("real-serial-resident", lambda v: v["train"].update(overlap_optimizer=False))
# The weights cast to bf16 by autocast in every forward, as before train.bf16_weight_copies (on by
# default: runtime/model/bf16_weights.h) — against "real": same values, so the same losses.
variant("real-casting", lambda v: v["train"].update(bf16_weight_copies=False))
# The bf16 weight gradients widened to fp32 before the norm and AdamW, as before
# train.bf16_gradients (on by default, one GPU) — against "real": the same update.
variant("real-widening", lambda v: v["train"].update(bf16_gradients=False))
variant("real-scalar-kernels", lambda v: None)  # real's config; moe-train runs with WB_NEW_KERNELS=0
variant("real-aten-passes", lambda v: None)  # real's config; moe-train runs with WB_PASS_KERNELS=0
variant("real-early-norm", lambda v: None)  # real's config; moe-train runs with WB_EARLY_GRAD_NORM=1
variant("real-row-kernels", lambda v: None)  # real's config; moe-train runs with WB_ROW_KERNELS=1
# The serial step (the host ahead only applies to it), moe-train run with WB_HOST_AHEAD=0: against
# real-serial-optimizer.
variant("real-host-wait", lambda v: v["train"].update(overlap_optimizer=False))
# The overlapped updates on N SMs and the forward's matmuls on the others (WB_OVERLAP_SMS=N,
# OptimizerOverlap::setSmBudget; experimental): real's config, against "real" (the updates filling
# the gaps the training stream leaves).
for sms in (16, 24, 32, 48):
    variant("real-overlap-sms%d" % sms, lambda v: None)
# Both: the norm summed during the backward, then the updates behind the next forward.
variant("real-overlap-early-norm", lambda v: v["train"].update(overlap_optimizer=True))
PY

# WB_ROUND_ROWS: is this row (or the dump an eager row of it needs) selected?
selected() {  # label
  [ -z "${WB_ROUND_ROWS:-}" ] && return 0
  case " $WB_ROUND_ROWS " in *" $1 "*) return 0 ;; esac
  return 1
}

row() {  # label impl status metrics [pair]
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5:-}" >>"$ROWS"
}

ours() {  # label [env assignments for moe-train...]
  local label=$1 cfg="$RESULTS/runs/$1.json" log="$RESULTS/runs/$1.log" dir="$RESULTS/runs/$1" rc=0 why
  shift
  selected "$label" || return 0
  if ! "$BIN/moe-train" --validate "$cfg" >"$log.validate" 2>&1; then
    why=$(grep -m1 -E '^\s*[a-z_]+\.[a-z_.]+:' "$log.validate" | sed 's/^ *//' | cut -c1-150 || true)
    echo "-- $label: not supported by this build: ${why:-see $log.validate}"
    row "$label" ours "not supported by this build: ${why:-moe-train --validate refused it}" ""
    return 0
  fi
  local limit
  limit=$(allowance "$ROW_TIMEOUT")
  if [ "$limit" = 0 ]; then
    row "$label" ours "skipped: the round's $BUDGET s budget is spent" ""
    return 0
  fi
  rm -rf "$dir"
  env "$@" timeout "$limit" "$BIN/moe-train" --config "$cfg" --run-dir "$dir" >"$log" 2>&1 || rc=$?
  cp "$dir/metrics.jsonl" "$RESULTS/runs/$label.metrics.jsonl" 2>/dev/null || true
  case $rc in
    0) row "$label" ours ok "$RESULTS/runs/$label.metrics.jsonl" ;;
    3) row "$label" ours "OOM (moe-train exit 3)" "" ;;
    124) row "$label" ours "timed out after $limit s" "$RESULTS/runs/$label.metrics.jsonl" ;;
    *) row "$label" ours "failed (exit $rc): $(tail -1 "$log" | cut -c1-120 | tr '\t|' '  ')" "" ;;
  esac
  echo "-- $label: exit $rc, $(grep -c '"type":"step"' "$RESULTS/runs/$label.metrics.jsonl" 2>/dev/null || true) step records ($(elapsed))"
  grep -o 'the optimizer step [^"]*' "$RESULTS/runs/$label.metrics.jsonl" 2>/dev/null | head -1 | sed 's/^/   /' || true
  grep -o 'the overlapped updates run on [^"]*' "$RESULTS/runs/$label.metrics.jsonl" 2>/dev/null | head -1 | sed 's/^/   /' || true
  # GPU system metrics (NVML through moe-train's GpuMonitor): the newest sample, or why there is none.
  python3 - "$RESULTS/runs/$label.metrics.jsonl" <<'PY' || true
import json, sys
gpu, why = None, "no gpu records and no warning about them"
for line in open(sys.argv[1], errors="replace"):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("type") == "gpu":
        gpu = r
    elif r.get("type") == "event" and "GPU system metrics" in r.get("msg", ""):
        why = r["msg"]
if gpu:
    g = gpu["gpus"][0]
    print("   gpu samples: last after step %s: %s %% busy, %s/%s GiB, %s W, %s C, SM %s MHz" % (
        gpu.get("step"), g.get("util_pct"), g.get("mem_used_gib"), g.get("mem_total_gib"), g.get("power_w"),
        g.get("temp_c"), g.get("sm_clock_mhz")))
else:
    print("   gpu samples: none (%s)" % why)
PY
  [ $rc = 0 ] || tail -3 "$log"
}

dump() {  # label: the micro-batches our run of that label trained on
  local label=$1 cfg="$RESULTS/runs/$1.json" per
  selected "$label" || return 0
  [ "${WB_ROUND_EAGER:-1}" != 0 ] || return 0
  if [ "$(allowance 60)" = 0 ]; then echo "budget spent" >"$RESULTS/runs/dump-$label.log"; return 1; fi
  per=$(python3 -c "import json,sys;t=json.load(open(sys.argv[1]))['train'];print(max(1,t['global_batch_size']//t['micro_batch_size']))" "$cfg")
  "$BIN/moe-train" --config "$cfg" --dump-batches "$RESULTS/dump-$label" --dump-count $((STEPS * per)) \
    >"$RESULTS/runs/dump-$label.log" 2>&1
}

eager() {  # label dump-of experts pair [extra flags of qwen3vl_eager.py]
  local label=$1 from=$2 experts=$3 pair=$4 extra=${5:-} log="$RESULTS/runs/$1.log" rc=0 why
  selected "$label" || return 0
  [ "${WB_ROUND_EAGER:-1}" != 0 ] || return 0
  if [ ! -f "$RESULTS/dump-$from/index.json" ]; then
    row "$label" eager "no dump: $(tail -1 "$RESULTS/runs/dump-$from.log" 2>/dev/null | cut -c1-120)" "" "$pair"
    return 0
  fi
  if ! "$PY" -c 'import torch' 2>/dev/null; then
    row "$label" eager "no Python with torch ($PY)" "" "$pair"
    return 0
  fi
  local limit
  limit=$(allowance "$EAGER_TIMEOUT")
  if [ "$limit" = 0 ]; then
    row "$label" eager "skipped: the round's $BUDGET s budget is spent" "" "$pair"
    return 0
  fi
  PYTHONUNBUFFERED=1 timeout "$limit" "$PY" "$ROOT/benchmarks/eager/qwen3vl_eager.py" --dump "$RESULTS/dump-$from" \
    --steps "$STEPS" --warmup 3 --experts "$experts" --label "$label" $extra \
    --metrics "$RESULTS/runs/$label.metrics.jsonl" >"$log" 2>&1 || rc=$?
  if [ $rc = 0 ]; then row "$label" eager ok "$RESULTS/runs/$label.metrics.jsonl" "$pair"
  elif [ $rc = 4 ]; then row "$label" eager "n/a: $(tail -1 "$log" | sed 's/^eager: //' | cut -c1-120)" "" "$pair"
  elif grep -q -E 'OutOfMemoryError|out of memory' "$log"; then row "$label" eager "OOM (CUDA out of memory)" "" "$pair"
  elif [ $rc = 124 ]; then row "$label" eager "timed out after $limit s" "$RESULTS/runs/$label.metrics.jsonl" "$pair"
  else row "$label" eager "failed (exit $rc): $(grep -v '^ ' "$log" | tail -1 | cut -c1-120 | tr '\t|' '  ')" "" "$pair"; fi
  echo "-- $label: exit $rc ($(elapsed))"
  grep -E '^eager: (attention|medians|torch.compile)' "$log" || tail -3 "$log"
}

# Whatever happens after this point (an unexpected error under set -e included), the rows measured
# so far are printed and saved.
finish() {
  local rc=$?
  trap - EXIT
  [ -f "$ROWS" ] || exit $rc
  echo "== table ($(date -u +%Y-%m-%dT%H:%MZ), medians over steps 4..$STEPS, round took $(elapsed))"
  python3 "$ROOT/benchmarks/round_table.py" --skip 3 --rows "$ROWS" --out "$RESULTS/table.md" || rc=1
  # The A/B rows against "real", step by step (paired_rows.py: the same micro-batch in both).
  if [ -f "$RESULTS/runs/real.metrics.jsonl" ]; then
    python3 "$ROOT/benchmarks/paired_rows.py" "$RESULTS/runs" real real-aten-passes real-scalar-kernels real-row-kernels real-early-norm real-host-wait \
      real-widening real-casting real-overlap-optimizer real-serial-optimizer real-overlap-early-norm \
      real-overlap-sms16 real-overlap-sms24 real-overlap-sms32 real-overlap-sms48 2>/dev/null | grep -v ' | 0 | ' \
      | tee -a "$RESULTS/table.md" || true
  fi
  if [ -s "$RESULTS/profile.txt" ]; then
    { echo; echo "Profile of ${WB_ROUND_PROFILE:-?} ${WB_ROUND_PROFILE_ENV:-} (benchmarks/gpu_profile_ours.sh, steps 6-7):"
      awk '/^window /{on=1} on{print} /^\| kernel category/{cat=1} cat && /^$/{exit}' "$RESULTS/profile.txt"
    } | tee -a "$RESULTS/table.md"
  fi
  # The device tool brings back at most 8 files from $OUT: the table, the GPU checks, and one
  # archive of every row's log, config and metrics.
  if [ -n "${OUT:-}" ] && [ "$RESULTS" != "$OUT" ]; then
    cp "$RESULTS/table.md" "$OUT/" 2>/dev/null || true
    cp "$RESULTS/test_gpu.log" "$OUT/" 2>/dev/null || true
    cp "$RESULTS/test_gpu_row_kernels.log" "$OUT/" 2>/dev/null || true
    cp "$RESULTS/overlap_bench.md" "$OUT/" 2>/dev/null || true
    cp "$RESULTS/test_gpu_graphs.log" "$OUT/" 2>/dev/null || true
    cp "$RESULTS/self_check.json" "$OUT/" 2>/dev/null || true
    # The whole profile (top kernels by name, the gaps) travels in the archive, not as a file of its own.
    extra=""; [ -s "$RESULTS/profile.txt" ] && extra=profile.txt
    # shellcheck disable=SC2086  # extra: one name or none
    tar -C "$RESULTS" -czf "$OUT/round-runs.tar.gz" runs rows.tsv $extra 2>/dev/null || true
  fi
  exit $rc
}
trap finish EXIT

# Order = priority: if the budget runs out, the rows behind the issue's targets are already measured.
echo "== ours, real and mock: $STEPS steps per row, $ROW_TIMEOUT s at most each"
ours real
# Rows that change when or where the weights are written, not what: their losses agree with
# "real" to bf16 tolerance step by step (the same micro-batches in the same order).
same_losses() {  # label reference what
  python3 - "$RESULTS/runs/$1.metrics.jsonl" "$RESULTS/runs/$2.metrics.jsonl" "$3" <<'PY' || true
import json, sys
def losses(path):
    out = {}
    try:
        for line in open(path, errors="replace"):
            r = json.loads(line)
            if r.get("type") == "step":
                out[r["step"]] = r["loss"]
    except (OSError, ValueError):
        pass
    return out
a, b = losses(sys.argv[1]), losses(sys.argv[2])
common = sorted(set(a) & set(b))
if common:
    worst = max(abs(a[s] - b[s]) / abs(b[s]) for s in common)
    print("   losses, %s over %d steps: max rel. difference %.2e (%s)" % (
        sys.argv[3], len(common), worst, "same to bf16 tolerance" if worst < 2e-2 else "DIFFERENT"))
PY
}
ours real-casting
ours real-widening
# Session 22's LayerNorm kernel and vectorized RoPE/SwiGLU off (fused_kernels.cu newKernelsOn):
# what they buy, against "real".
ours real-scalar-kernels WB_NEW_KERNELS=0
# Session 23's row kernels off (fused_kernels.cu passKernelsOn: the vectorized MoE combine and its
# one-pass backward, the dispatch's gather-sum, the distinct-row scatter of row_ops.h).
ours real-aten-passes WB_PASS_KERNELS=0
# Session 27's row kernels on (WB_ROW_KERNELS=1: the vectorized RMSNorm/LayerNorm rows of
# norm_kernels.cuh and the cross-entropy's vector loads; off by default until measured): against "real".
ours real-row-kernels WB_ROW_KERNELS=1
same_losses real-row-kernels real "the row kernels vs the kernels before"
# The gradient norm summed layer by layer on a side stream during the backward (early_grad_norm.h;
# experimental, off by default): what it hides of the norm pass, against "real".
ours real-early-norm WB_EARLY_GRAD_NORM=1
# The step's wait for its optimizer, as before the host ran ahead of it (WB_HOST_AHEAD=0; the
# host-ahead step is the default on one GPU: trainer_internal.h m_hostAhead) — against "real".
ours real-host-wait WB_HOST_AHEAD=0
same_losses real-host-wait real "serial, waiting for the optimizer vs the default"
same_losses real-casting real "autocast casts vs kept bf16 copies"
same_losses real-widening real "widened vs bf16 gradients"
same_losses real-scalar-kernels real "session 22's kernels off vs on"
same_losses real-aten-passes real "session 23's passes off vs on"
same_losses real-early-norm real "the norm during the backward vs after it"
ours real-overlap-optimizer
same_losses real-overlap-optimizer real "overlapped vs the default"
ours real-serial-optimizer
same_losses real-serial-optimizer real "serial vs the default"
ours real-serial-resident WB_ADAMW_RESIDENT=132
same_losses real-serial-resident real-serial-optimizer "resident AdamW blocks vs the default grid"
for sms in 16 24 32 48; do
  ours real-overlap-sms$sms WB_OVERLAP_SMS=$sms
  same_losses real-overlap-sms$sms real "updates on $sms SMs vs filling the gaps"
done
ours real-overlap-early-norm WB_EARLY_GRAD_NORM=1
same_losses real-overlap-early-norm real "early norm + overlapped optimizer vs serial"
ours mock
echo "== PyTorch eager on the same micro-batches ($PY)"
dump real || echo "dump of real failed: $(tail -1 "$RESULTS/runs/dump-real.log")"
dump mock || echo "dump of mock failed: $(tail -1 "$RESULTS/runs/dump-mock.log")"
eager eager-real-loop real loop real
eager eager-real-grouped real grouped real
EAGER_TIMEOUT=${WB_ROUND_COMPILE_TIMEOUT:-300} eager eager-real-compile real grouped real --compile
eager eager-mock-loop mock loop mock
echo "== ours, the guide's knobs"
ours real-mbs1
ours real-mbs2
ours real-mbs8
ours real-frozen-vision
ours real-recompute-selective
ours real-recompute-full
ours real-cuda-graphs
ours real-bf16-moments
if [ "${WB_ROUND_DENSE:-0}" = 1 ]; then ours real-mbs1-dense WB_DECODER_ATTENTION=dense; fi
# WB_ROUND_PROFILE=real|mock: after the rows, the kernel profile of that workload
# (gpu_profile_ours.sh on the same build, with this round's environment: e.g. WB_ROW_KERNELS=1),
# its GPU-busy line and category table appended to the round's table (issue 17: the profile's
# categories beside the rows). Its own time limit, outside WB_ROUND_BUDGET.
if [ -n "${WB_ROUND_PROFILE:-}" ]; then
  echo "== profile of $WB_ROUND_PROFILE ($(elapsed))"
  # shellcheck disable=SC2086  # WB_ROUND_PROFILE_ENV: assignments, split on purpose
  if env ${WB_ROUND_PROFILE_ENV:-} WB_GPU_BUILD="$BUILD" timeout "${WB_ROUND_PROFILE_TIMEOUT:-120}" "$ROOT/benchmarks/gpu_profile_ours.sh" \
      "$WB_ROUND_PROFILE" >"$RESULTS/profile.txt" 2>&1; then echo "profile: done ($(elapsed))"
  else echo "profile: failed or timed out: $(tail -2 "$RESULTS/profile.txt" | tr '\n' ' ' | cut -c1-200)"; fi
fi
