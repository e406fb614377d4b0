#!/usr/bin/env python3
"""Prints the benchmark table from moe-train metrics.jsonl files (one per run).

usage: summarize.py --skip N LABEL=metrics.jsonl [LABEL=metrics.jsonl ...]
Medians over the step records after the first N (warm-up: allocator growth, cuBLAS/flash setup).
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


def main(argv):
    skip = 3
    runs = []
    args = iter(argv)
    for a in args:
        if a == "--skip":
            skip = int(next(args))
        else:
            label, path = a.split("=", 1)
            runs.append((label, path))
    cols = ["step_ms", "tokens/s", "TFLOP/s", "MFU", "peak GiB", "data", "vision", "proj", "decoder", "backward", "optim"]
    keys = ["step_ms", "tokens_per_s_per_gpu", "tflops_per_gpu", "mfu", "mem_peak_gib",
            "data_ms", "vision_ms", "projector_ms", "decoder_ms", "backward_ms", "optimizer_ms"]
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
        eff = statistics.median(s.get("effective_tokens", 0) for s in used)
        imgs = statistics.median(s.get("images", 0) for s in used)
        print(f"| {label} ({meta.get('data_source', '?') if meta else '?'}) | {len(used)} | " + " | ".join(cells) +
              f" | {eff:,.0f} | {imgs:.0f} | {used[-1].get('loss', 0):.3f} |")
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
