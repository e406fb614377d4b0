#!/usr/bin/env python3
"""The planner's prediction for every row of benchmarks/gpu_layouts.sh, made on the CPU machine.

usage: layout_predictions.py --cli MOE_WORKBENCH_CLI [--gpus "1 2 4 8"] [--hardware h200]
                             [--out FILE | --check FILE]

For each GPU count G: `WB_LAYOUTS_CONFIGS_ONLY=DIR WB_LAYOUTS_GPUS=G gpu_layouts.sh` writes the
configs the GPU run on G GPUs trains (the same writer, so rows added there are predicted here
without a change), then `moe-workbench-cli generate --format runtime --from ROW.json --hardware H
--gpus <the row's world size>` predicts each one. The result (predicted step ms, tokens/s/GPU,
TFLOP/s/GPU, MFU, memory GiB, or why the planner could not predict the row) goes to FILE
(default benchmarks/predictions/layouts.json), which gpu_layouts.sh's table reads on the GPU machine.
--check FILE regenerates and compares instead of writing: exit 1 naming every difference when FILE
is not what the planner says now (test layout_predictions_current). Standard library only.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FILE = os.path.join(ROOT, "benchmarks", "predictions", "layouts.json")
FIGURES = ("step_ms", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "memory_gib")
# Figures are stored rounded; a check allows this relative difference (compilers may round the
# last digit differently), far below what any change of the planner's model moves.
CHECK_TOLERANCE = 1e-4

# What the runtime does that the planner's model does not describe, whatever the row (how to read
# the errors in the table). Kept here, beside the predictions they qualify.
MODEL_DIFFERENCES = [
    "memory: predicted with moe-train's own state layout (MemoryOptions::moeTrain): fp32 parameters that "
    "are the master copy, autocast's bf16 copies kept for backward, fp32 (or bf16) Adam moments, gradients "
    "held through the forward only when accumulated or bucketed by the overlapped reducer; the allocator's "
    "peak, as moe-train reports it (no CUDA context, no allocator slack). FSDP rows keep Megatron's sharded forms",
    "time: the planner assumes DP/FSDP gradient and parameter collectives mostly hidden behind the "
    "backward (15% exposed, EfficiencyFactors::dpExposed); moe-train does not overlap them yet "
    "(docs/parallel.md), so rows with DP > 1 should measure slower than predicted",
    "time: data loading is not modelled (the loader threads are assumed to keep up; data_ms shows it)",
    "the planner predicts moe-train without a distributed optimizer (it has none): without FSDP every "
    "rank holds and steps the whole optimizer state",
]


def row_notes(cfg):
    """Knobs of this row's runtime config that the prediction does not follow, one sentence each."""
    notes = []
    data, model, train = cfg.get("data", {}), cfg.get("model", {}), cfg.get("train", {})
    if data.get("source", "real") == "real":
        side = int((data.get("max_pixels", 128 * 128)) ** 0.5)
        notes.append(f"real data: the planner assumes data.images_per_sample = {data.get('images_per_sample', 1)} "
                     f"image(s) of {side}x{side} px (√max_pixels) per {train.get('seq_length')}-token sequence; "
                     f"moe-train packs as many captioned images of min_pixels..max_pixels as fit (first-fit), so "
                     f"images, patches and vision time per step follow the manifest, not the config")
    if train.get("precision", "fp32") != "bf16":
        notes.append(f"train.precision {train.get('precision', 'fp32')}: the planner assumes bf16 compute")
    if bool(model.get("freeze_vision_projection", False)) != bool(model.get("freeze_vision_model", False)):
        notes.append("model.freeze_vision_projection differs from freeze_vision_model: the planner freezes "
                     "(or trains) both as freeze_vision_model says")
    return notes


WORKLOAD = os.path.join(ROOT, "benchmarks", "predictions", "layouts.workload.json")


def configs_for(gpus, directory):
    env = dict(os.environ, WB_LAYOUTS_CONFIGS_ONLY=directory, WB_LAYOUTS_GPUS=str(gpus))
    r = subprocess.run(["bash", os.path.join(ROOT, "benchmarks", "gpu_layouts.sh")], env=env,
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"layout_predictions: gpu_layouts.sh (configs only, {gpus} GPUs) failed ({r.returncode}):\n"
                 f"{r.stdout}{r.stderr}")
    rows = []
    with open(os.path.join(directory, "rows.tsv")) as f:
        for line in f:
            name, world = line.rstrip("\n").split("\t")
            rows.append((name, int(world)))
    return rows


def predict_row(cli, hardware, configs, name, world, scratch):
    config = os.path.join(configs, name + ".json")
    out = os.path.join(scratch, name)
    # The rows train on the sample set (.gpu-samples): their packed shape, measured by moe-train's
    # loader once (layouts.workload.json; the loader is deterministic), is what the prediction is for.
    cmd = [cli, "generate", "--from", config, "--format", "runtime", "--out", out, "--force",
           "--hardware", hardware, "--gpus", str(world), "--workload", WORKLOAD]
    shown = (f"moe-workbench-cli generate --from CONFIGS/{name}.json --format runtime --out DIR "
             f"--hardware {hardware} --gpus {world} --workload benchmarks/predictions/layouts.workload.json")
    with open(config) as f:
        cfg = json.load(f)
    row = {"world_size": world, "command": shown, "notes": row_notes(cfg)}
    r = subprocess.run(cmd, capture_output=True, text=True)
    path = os.path.join(out, "prediction.json")
    if r.returncode != 0 or not os.path.exists(path):
        why = (r.stderr.strip() or r.stdout.strip() or f"exit {r.returncode}").replace(configs, "CONFIGS")
        row["unpredicted"] = why.replace("moe-workbench-cli: ", "")
        return row
    with open(path) as f:
        p = json.load(f)
    detail = p.get("detail", {})
    row.update({
        "layout": detail.get("describe", ""),
        "step_ms": round(p["step_ms"], 3),
        "tokens_per_s_per_gpu": round(p["tokens_per_s_per_gpu"], 1),
        "tflops_per_gpu": round(p["tflops_per_gpu"], 3),
        "mfu": round(p["mfu"], 5),
        "memory_gib": round(p["memory_gib"], 3),
        "memory_gib_terms": detail.get("memory_gib", {}),
        "step_ms_terms": {t["name"]: round(t["ms"], 3) for t in detail.get("step_terms", [])},
    })
    row["_source"] = p.get("source", "")
    row["_calibration"] = p.get("calibration", "")
    return row


def build(cli, hardware, gpu_counts):
    result = {
        "about": "The planner's prediction beside each row of benchmarks/gpu_layouts.sh (per GPU count the "
                 "GPU machine may have). Made by benchmarks/layout_predictions.sh; do not edit by hand.",
        "made_by": "benchmarks/layout_predictions.sh (for each G: WB_LAYOUTS_CONFIGS_ONLY=CONFIGS "
                   "WB_LAYOUTS_GPUS=G benchmarks/gpu_layouts.sh, then each row's command)",
        "base_config": "benchmarks/configs/qwen3vl-30b-slice.json",
        "hardware": hardware,
        "planner": {},
        "model_differences": MODEL_DIFFERENCES,
        "gpus": {},
    }
    sources = set()
    with tempfile.TemporaryDirectory(prefix="wb-layout-pred-") as tmp:
        for g in gpu_counts:
            configs = os.path.join(tmp, f"configs-{g}")
            rows = {}
            for name, world in configs_for(g, configs):
                row = predict_row(cli, hardware, configs, name, world, os.path.join(tmp, f"out-{g}"))
                if "_source" in row:
                    sources.add((row.pop("_source"), row.pop("_calibration")))
                rows[name] = row
            result["gpus"][str(g)] = rows
    if len(sources) > 1:
        sys.exit(f"layout_predictions: the rows were predicted by different planners: {sorted(sources)}")
    if sources:
        source, calibration = sources.pop()
        result["planner"] = {"source": source, "calibration": calibration or "none (the catalog's efficiency factors)"}
    return result


def differences(old, new):
    """Every way `old` (the file) is not `new` (the planner now), as lines; [] when current."""
    out = []
    if old.get("hardware") != new["hardware"]:
        out.append(f"hardware {old.get('hardware')!r} in the file, {new['hardware']!r} asked for")
    if old.get("planner") != new["planner"]:
        out.append(f"planner {old.get('planner')} in the file, {new['planner']} now")
    og, ng = old.get("gpus", {}), new["gpus"]
    if sorted(og) != sorted(ng):
        out.append(f"GPU counts {sorted(og)} in the file, {sorted(ng)} asked for")
    for g in sorted(set(og) & set(ng), key=int):
        orows, nrows = og[g], ng[g]
        for name in sorted(set(orows) ^ set(nrows)):
            out.append(f"{g} GPUs: row {name} is {'only in the file' if name in orows else 'new (not in the file)'}")
        for name in sorted(set(orows) & set(nrows)):
            o, n = orows[name], nrows[name]
            if o.get("world_size") != n["world_size"]:
                out.append(f"{g} GPUs, {name}: world size {o.get('world_size')} in the file, {n['world_size']} now")
            if ("unpredicted" in o) != ("unpredicted" in n):
                out.append(f"{g} GPUs, {name}: " + ("the planner predicts it now" if "unpredicted" in o
                                                    else "the planner cannot predict it now: " + n["unpredicted"]))
                continue
            for k in FIGURES:
                if k not in n:
                    continue
                a, b = o.get(k), n[k]
                if not isinstance(a, (int, float)) or abs(a - b) > CHECK_TOLERANCE * max(abs(a), abs(b), 1e-12):
                    out.append(f"{g} GPUs, {name}: {k} {a} in the file, {b} from the planner now")
    return out


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", required=True, help="moe-workbench-cli to predict with")
    ap.add_argument("--gpus", default="1 2 4 8", help="GPU counts the GPU machine may have (space separated)")
    ap.add_argument("--hardware", default="h200", help="catalog hardware id (resources/catalog/hardware.json)")
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--out", default=DEFAULT_FILE, help="file to write")
    mode.add_argument("--check", metavar="FILE", help="compare FILE with a fresh prediction instead of writing")
    a = ap.parse_args(argv)
    if not os.access(a.cli, os.X_OK):
        sys.exit(f"layout_predictions: {a.cli} is not an executable moe-workbench-cli: build it "
                 f"(cmake --build build --target moe-workbench-cli) or pass --cli / WB_CLI")
    try:
        counts = sorted({int(x) for x in a.gpus.split()})
    except ValueError:
        counts = []
    if not counts or counts[0] < 1:
        sys.exit(f"layout_predictions: --gpus {a.gpus!r}: give GPU counts >= 1, e.g. \"1 2 4 8\"")
    new = build(a.cli, a.hardware, counts)
    if a.check:
        with open(a.check) as f:
            old = json.load(f)
        diff = differences(old, new)
        if diff:
            print(f"{a.check} is not what the planner predicts now ({len(diff)} difference(s)):", file=sys.stderr)
            for line in diff:
                print("  " + line, file=sys.stderr)
            print("The planner (or a layout row) changed without refreshing the predictions: run "
                  "benchmarks/layout_predictions.sh and commit benchmarks/predictions/layouts.json.", file=sys.stderr)
            return 1
        rows = sum(len(r) for r in new["gpus"].values())
        print(f"{a.check} is current ({rows} rows over {len(counts)} GPU count(s))")
        return 0
    os.makedirs(os.path.dirname(os.path.abspath(a.out)), exist_ok=True)
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(new, f, indent=1, ensure_ascii=False)
        f.write("\n")
    os.replace(tmp, a.out)
    for g, rows in new["gpus"].items():
        for name, row in rows.items():
            what = (f"{row['step_ms']:8.1f} ms {row['memory_gib']:6.1f} GiB  MFU {100 * row['mfu']:4.1f}%  {row['layout']}"
                    if "step_ms" in row else "not predicted: " + row["unpredicted"].splitlines()[-1].strip())
            print(f"{g} GPU(s) {name:26s} {what}")
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
