#!/usr/bin/env python3
"""A/B of two rows of one round, step by step: the same data order makes step n of both rows the
same micro-batch, so the per-step difference cancels the batch-to-batch spread that medians of
each row keep (on one H100 at MBS 1 a row's steps span 100-137 ms).

usage: paired_rows.py RUNS_DIR REFERENCE ROW [ROW ...] [--skip N]
RUNS_DIR holds LABEL.metrics.jsonl (gpu_round.sh's $WB_ROUND_RESULTS/runs, or round-runs.tar.gz
unpacked). For each ROW: median of ROW − REFERENCE per step (steps after the first N, default 3)
for the step and each phase, with the smallest and largest step difference, and the losses'
largest relative difference.
"""
import json
import statistics
import sys

PHASES = ["step_ms", "vision_ms", "projector_ms", "decoder_ms", "backward_ms", "optimizer_ms"]


def steps(path, skip):
    out = {}
    try:
        f = open(path)
    except OSError:
        return out  # the row did not run (budget, OOM): reported as such
    with f:
        for line in f:
            r = json.loads(line)
            if r.get("type") == "step" and r["step"] > skip:
                out[r["step"]] = r
    return out


def main(argv):
    skip = 3
    if "--skip" in argv:
        i = argv.index("--skip")
        skip = int(argv[i + 1])
        del argv[i:i + 2]
    if len(argv) < 3:
        sys.exit(__doc__)
    runs, ref_label, rows = argv[0], argv[1], argv[2:]
    ref = steps(f"{runs}/{ref_label}.metrics.jsonl", skip)
    print(f"| row − {ref_label} (median per step, ms) | steps | " + " | ".join(p[:-3] for p in PHASES) +
          " | step diff range | loss max rel. diff |")
    print("|---|---|" + "---|" * len(PHASES) + "---|---|")
    for label in rows:
        other = steps(f"{runs}/{label}.metrics.jsonl", skip)
        common = sorted(set(ref) & set(other))
        if not common:
            print(f"| {label} | 0 | " + " | ".join("—" for _ in PHASES) + " | — | — |")
            continue
        cells = []
        for p in PHASES:
            d = [other[s].get(p, 0.0) - ref[s].get(p, 0.0) for s in common]
            cells.append(f"{statistics.median(d):+.1f}")
        d = [other[s]["step_ms"] - ref[s]["step_ms"] for s in common]
        loss = max(abs(other[s]["loss"] - ref[s]["loss"]) / abs(ref[s]["loss"]) for s in common)
        print(f"| {label} | {len(common)} | " + " | ".join(cells) + f" | {min(d):+.1f} … {max(d):+.1f} | {loss:.1e} |")


if __name__ == "__main__":
    main(sys.argv[1:])
