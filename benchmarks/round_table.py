#!/usr/bin/env python3
"""The table of one benchmark round (benchmarks/gpu_round.sh): every row, measured or not, and the
issue's targets checked from the medians.

usage: round_table.py --skip N --rows ROWS.tsv [--out table.md]
ROWS.tsv: one line per row, tab-separated: label, implementation (ours | eager), status ("ok" or
why there is no number: OOM, not supported by this build, timed out, failed ...), metrics.jsonl
path (may be missing), and for eager rows the label of our row on the same batches.
Medians over the step records after the first N (warm-up). Standard library only.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import load  # noqa: E402

COLS = [("step ms", "step_ms", "{:.1f}"), ("eff. tokens/s", "tokens_per_s_per_gpu", "{:,.0f}"),
        ("TFLOP/s", "tflops_per_gpu", "{:.1f}"), ("MFU", "mfu", "pct"), ("peak GiB", "mem_peak_gib", "{:.1f}"),
        ("data", "data_ms", "{:.1f}"), ("vision", "vision_ms", "{:.1f}"), ("proj", "projector_ms", "{:.1f}"),
        ("decoder fwd", "decoder_ms", "{:.1f}"), ("backward", "backward_ms", "{:.1f}"),
        ("optim", "optimizer_ms", "{:.1f}"), ("tokens/step", "effective_tokens", "{:,.0f}"),
        ("images/step", "images", "{:.0f}")]


def medians(path, skip):
    if not path or not os.path.isfile(path):
        return None, None, "no metrics file"
    meta, steps, _ = load(path)
    used = steps[skip:] if len(steps) > skip else steps
    if not used:
        return meta, None, "no step records"
    med = {}
    for _, key, _ in COLS + [("loss", "loss", "")]:
        values = [s[key] for s in used if key in s]
        med[key] = statistics.median(values) if values else None
    med["loss_last"] = used[-1].get("loss")
    med["steps"] = len(used)
    return meta, med, None


def cell(value, fmt):
    if value is None:
        return "—"
    if fmt == "pct":
        return f"{100 * value:.1f} %"
    return fmt.format(value)


def main(argv):
    skip, rows_path, out_path = 3, None, None
    args = iter(argv)
    for a in args:
        if a == "--skip":
            skip = int(next(args))
        elif a == "--rows":
            rows_path = next(args)
        elif a == "--out":
            out_path = next(args)
        else:
            raise SystemExit(f"round_table.py: unknown argument {a}")
    rows = []
    with open(rows_path) as f:
        for line in f:
            if line.strip():
                parts = line.rstrip("\n").split("\t") + [""] * 5
                rows.append(dict(label=parts[0], impl=parts[1], status=parts[2], metrics=parts[3], pair=parts[4]))
    rows.sort(key=lambda r: r["impl"] != "ours")  # ours first, then eager, each in run order
    lines = ["| run | impl | steps | " + " | ".join(c[0] for c in COLS) + " | loss (last) |",
             "|---" * (len(COLS) + 4) + "|"]
    by_label, notes = {}, []
    for r in rows:
        # A row stopped by its time limit keeps the steps it finished (shown with its status).
        meta, med, why = medians(r["metrics"], skip) if r["metrics"] else (None, None, None)
        r["med"] = med
        by_label[r["label"]] = r
        source = f" ({meta.get('data_source')})" if meta and meta.get("data_source") else ""
        if med is not None and r["status"] != "ok":
            source += f", {r['status']}"
        if med is None:
            status = r["status"] if r["status"] != "ok" else f"no numbers: {why}"
            lines.append(f"| {r['label']}{source} | {r['impl']} | — | **{status}** |" + " |" * (len(COLS) - 1) + " — |")
            continue
        lines.append(f"| {r['label']}{source} | {r['impl']} | {med['steps']} | " +
                     " | ".join(cell(med[k], fmt) for _, k, fmt in COLS) + f" | {cell(med['loss_last'], '{:.3f}')} |")
        if meta and r["impl"] == "eager" and meta.get("versions", {}).get("eager"):
            notes.append(f"{r['label']}: {meta['versions']['eager']}, torch {meta['versions'].get('torch')}")
        elif meta and r["impl"] == "ours" and r["label"] in ("real", "real-mbs4"):
            notes.append(f"{r['label']}: device {meta.get('device')}, peak {meta.get('peak_tflops')} TFLOP/s, "
                         f"libtorch {meta.get('versions', {}).get('libtorch')}")

    def med_of(label, key):
        r = by_label.get(label)
        return r["med"][key] if r and r["med"] and r["med"].get(key) is not None else None

    lines += ["", "Ours / eager on the same dumped micro-batches (effective tokens/s; issue 17's target against "
              "torch.compile ≥ 1.65×):", ""]
    for r in rows:
        if r["impl"] != "eager":
            continue
        a, b = med_of(r["pair"], "tokens_per_s_per_gpu"), med_of(r["label"], "tokens_per_s_per_gpu")
        ratio = f"**{a / b:.2f}×**" if a and b else "— (" + ("no eager number" if a else "no number of ours") + ")"
        lines.append(f"- {r['pair']} / {r['label']}: {ratio}")
    real_mfu, mock_mfu, mbs8_mfu = med_of("real", "mfu"), med_of("mock", "mfu"), med_of("real-mbs8", "mfu")
    ours_tps, compiled_tps = med_of("real", "tokens_per_s_per_gpu"), med_of("eager-real-compile", "tokens_per_s_per_gpu")

    def pct(v, target):
        return f"{100 * v:.1f} % ({'met' if v >= target else 'not met'})" if v else "—"
    lines += ["", "Targets (issue 17):"]
    lines.append("- MFU of real, MBS 4 ≥ 40 %: " + pct(real_mfu, 0.40))
    lines.append("- MFU of real-mbs8 ≥ 44 %: " + pct(mbs8_mfu, 0.44))
    lines.append("- real / eager-real-compile (effective tokens/s) ≥ 1.65×: " +
                 (f"{ours_tps / compiled_tps:.2f}× ({'met' if ours_tps / compiled_tps >= 1.65 else 'not met'})"
                  if ours_tps and compiled_tps else "—"))
    lines.append("- real-image MFU ≥ 0.9 × mock MFU: " +
                 (f"{real_mfu / mock_mfu:.2f}×" if real_mfu and mock_mfu else "—"))
    if notes:
        lines += [""] + notes
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if out_path:
        with open(out_path, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
