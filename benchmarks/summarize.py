#!/usr/bin/env python3
"""Prints the benchmark table from moe-train metrics.jsonl files (one per run).

usage: summarize.py --skip N [--predictions FILE --gpus G] LABEL=metrics.jsonl [LABEL=metrics.jsonl ...]
Medians over the step records after the first N (warm-up: allocator growth, cuBLAS/flash setup).
--predictions (benchmarks/predictions/layouts.json, made by benchmarks/layout_predictions.sh) adds
the planner's step ms and memory GiB beside each row whose LABEL names a row of the file for G GPUs,
with the error (predicted - measured) / measured; other rows show "—" and why under the table.
"""
import json
import statistics
import sys


def load(path):
    meta, steps, events = None, [], []
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            kind = rec.get("type")
            if kind == "meta":
                meta = rec
            elif kind == "step":
                steps.append(rec)
            elif kind == "event":
                events.append(rec)
    return meta, steps, events


class Predictions:
    """The planner's predictions for the rows of one GPU count (benchmarks/predictions/layouts.json)."""

    PREDICTED = {"step_ms": "step_ms", "mem_peak_gib": "memory_gib"}

    def __init__(self, path, gpus):
        self.path, self.gpus, self.why_not, self.used = path, gpus, {}, []
        try:
            with open(path) as f:
                self.data = json.load(f)
        except (OSError, ValueError) as e:
            self.data, self.problem = {}, f"cannot read {path}: {e}"
        else:
            self.problem = None
        rows = self.data.get("gpus", {}).get(str(gpus)) if gpus else None
        if self.problem is None and rows is None:
            self.problem = (f"{path} has no predictions for {gpus} GPU(s) (it has {sorted(self.data.get('gpus', {}), key=int)}): "
                            f"run WB_PRED_GPUS=\"... {gpus}\" benchmarks/layout_predictions.sh on the workbench machine")
        self.rows = rows or {}

    def row(self, label, meta):
        """The prediction for this run, or None with the reason kept for the notes."""
        if self.problem:
            self.why_not[label] = self.problem
            return None
        r = self.rows.get(label)
        if r is None:
            self.why_not[label] = f"no row '{label}' in {self.path} for {self.gpus} GPU(s) (a row added after the file was made: refresh it)"
            return None
        if "unpredicted" in r:
            self.why_not[label] = "the planner cannot predict it: " + " ".join(r["unpredicted"].split())
            return None
        world = meta.get("world_size") if meta else None
        if world is not None and world != r.get("world_size"):
            self.why_not[label] = f"predicted for world size {r.get('world_size')}, the run had {world}"
            return None
        if label not in self.used:
            self.used.append(label)
        return r

    def cells(self, label, meta, key, measured):
        r = self.row(label, meta)
        if r is None or self.PREDICTED[key] not in r:
            return ["—", "—"]
        p = r[self.PREDICTED[key]]
        err = f"{100 * (p - measured) / measured:+.0f}%" if measured > 0 else "—"
        return [f"{p:.1f}", err]

    def print_notes(self):
        print(f"Predicted: moe-workbench-cli generate --format runtime --hardware {self.data.get('hardware', '?')} "
              f"--gpus <the row's world size> on each row's config ({self.data.get('planner', {}).get('source', '?')}, "
              f"calibration: {self.data.get('planner', {}).get('calibration', '?')}); err. = (predicted − measured) / measured.")
        if self.problem:
            print(f"no predictions: {self.problem}")
        else:
            for label, why in self.why_not.items():
                print(f"{label}: no prediction — {why}")
        notes = []
        for label in self.used:
            for n in self.rows[label].get("notes", []):
                if n not in notes:
                    notes.append(n)
        for n in self.data.get("model_differences", []) + notes:
            print(f"- {n}")


def main(argv):
    skip = 3
    runs = []
    predictions_path, gpus = None, None
    args = iter(argv)
    for a in args:
        if a == "--skip":
            skip = int(next(args))
        elif a == "--predictions":
            predictions_path = next(args)
        elif a == "--gpus":
            gpus = next(args)
        else:
            label, path = a.split("=", 1)
            runs.append((label, path))
    pred = Predictions(predictions_path, gpus) if predictions_path else None
    cols = ["step_ms", "tokens/s", "TFLOP/s", "MFU", "peak GiB", "data", "vision", "proj", "decoder", "backward", "optim"]
    keys = ["step_ms", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "mem_peak_gib",
            "data_ms", "vision_ms", "projector_ms", "decoder_ms", "backward_ms", "optimizer_ms"]
    if pred:  # the planner's figure and its error right after the measured one
        cols[1:1] = ["pred. ms", "err. ms"]
        cols[7:7] = ["pred. GiB", "err. GiB"]
    print("| run | steps | " + " | ".join(cols) + " | eff. tokens/step | images/step | loss (last) |")
    print("|---" * (len(cols) + 5) + "|")
    for label, path in runs:
        meta, steps, events = load(path)
        used = steps[skip:] if len(steps) > skip else steps
        if not used:
            print(f"| {label} | 0 | (no step records: see the run's stdout) |")
            continue
        med = {k: statistics.median(s.get(k, 0.0) for s in used) for k in keys}
        cells = []
        for k in keys:
            v = med[k]
            if k == "mfu":
                cells.append(f"{100 * v:.1f}%")
            elif k in ("tokens_per_s_per_gpu",):
                cells.append(f"{v:,.0f}")
            else:
                cells.append(f"{v:.1f}")
            if pred and k in ("step_ms", "mem_peak_gib"):
                cells += pred.cells(label, meta, k, v)
        eff = statistics.median(s.get("effective_tokens", 0) for s in used)
        imgs = statistics.median(s.get("images", 0) for s in used)
        print(f"| {label} ({meta.get('data_source', '?') if meta else '?'}) | {len(used)} | " + " | ".join(cells) +
              f" | {eff:,.0f} | {imgs:.0f} | {used[-1].get('loss', 0):.3f} |")
    if pred:
        pred.print_notes()
    for label, path in runs:
        meta, _, events = load(path)
        if meta:
            print(f"{label}: device {meta.get('device')}, peak {meta.get('peak_tflops')} TFLOP/s, "
                  f"versions {json.dumps(meta.get('versions', {}), sort_keys=True)}")
        for e in events:
            if e.get("level") in ("warning", "error"):
                print(f"{label}: {e.get('level')}: {e.get('msg')}")


if __name__ == "__main__":
    main(sys.argv[1:])
