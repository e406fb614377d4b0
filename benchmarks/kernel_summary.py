#!/usr/bin/env python3
"""Summarize a Kineto Chrome trace (moe-train's WB_PROFILE_STEPS, or torch.profiler's export):
GPU busy vs idle time over the profiled window, kernel time by ATen op (the op that launched it),
the top kernels by name, and where the GPU idles (gaps between kernels, by the ops around them).
Standard library only.

    benchmarks/kernel_summary.py RUN/kernel_trace.json [--steps N] [--top 25]

--steps divides every time by N (the number of profiled steps) to print per-step milliseconds.
"""
import argparse
import collections
import json
import re
import sys


def load(path):
    with open(path) as f:
        data = json.load(f)
    return data["traceEvents"] if isinstance(data, dict) else data


def union_length(intervals):
    total, end = 0.0, None
    for start, stop in sorted(intervals):
        if end is None or start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


CATEGORIES = [  # first match wins; the names are the kernels' (CUDA) names
    ("nccl", r"nccl"),
    ("grouped GEMM", r"grouped|_grouped_mm|GroupedGemm|cutlass.*[Gg]roup"),
    ("flash attention", r"flash|fmha|attention"),
    ("dense GEMM", r"gemm|sm90_xmma|cutlass|cublas|Kernel2|nvjet"),
    ("AdamW / foreach", r"adam|multi_tensor|foreach"),
    ("copy / cast", r"copy|Memcpy|memcpy|cast|convert"),
    ("memset / fill", r"[Mm]emset|fill"),
    ("reduce / norm / softmax", r"reduce|norm|softmax|sum|max|min|argmax|topk|sort|radix|scan|cub"),
    ("index / gather / scatter", r"index|gather|scatter|embedding|nonzero"),
    ("elementwise", r"elementwise|vectorized|unrolled|pointwise"),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--steps", type=int, default=1)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--gap-us", type=float, default=20.0, help="idle gaps at least this long are listed")
    args = ap.parse_args()
    events = load(args.trace)
    gpu = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    if not gpu:
        sys.exit(f"{args.trace}: no GPU events (was the run on a GPU, with a CUDA build?)")
    ops = {}
    for e in events:
        if e.get("ph") == "X" and e.get("cat") in ("cpu_op", "user_annotation"):
            ext = (e.get("args") or {}).get("External id")
            if ext is not None:
                ops[ext] = e.get("name", "?")
    n = max(1, args.steps)
    begin = min(e["ts"] for e in gpu)
    finish = max(e["ts"] + e["dur"] for e in gpu)
    busy = union_length([(e["ts"], e["ts"] + e["dur"]) for e in gpu])
    kernel_sum = sum(e["dur"] for e in gpu)
    print(f"window {((finish - begin) / 1000 / n):.1f} ms/step, GPU busy {busy / 1000 / n:.1f} ms/step "
          f"({100 * busy / (finish - begin):.1f} %), idle {(finish - begin - busy) / 1000 / n:.1f} ms/step, "
          f"{len(gpu) / n:.0f} GPU events/step, kernel time {kernel_sum / 1000 / n:.1f} ms/step")

    by_cat = collections.Counter()
    by_op = collections.Counter()
    op_count = collections.Counter()
    by_name = collections.Counter()
    name_count = collections.Counter()
    for e in gpu:
        name = e.get("name", "?")
        dur = e["dur"]
        for cat, pattern in CATEGORIES:
            if re.search(pattern, name):
                by_cat[cat] += dur
                break
        else:
            by_cat["other"] += dur
        op = ops.get((e.get("args") or {}).get("External id"), "(no op)")
        by_op[op] += dur
        op_count[op] += 1
        short = re.sub(r"\s+", " ", name)[:110]
        by_name[short] += dur
        name_count[short] += 1

    print("\n| kernel category | ms/step | share |")
    print("|---|---|---|")
    for cat, dur in by_cat.most_common():
        print(f"| {cat} | {dur / 1000 / n:.1f} | {100 * dur / kernel_sum:.1f} % |")
    print("\n| ATen op (launcher) | ms/step | kernels/step |")
    print("|---|---|---|")
    for op, dur in by_op.most_common(args.top):
        print(f"| {op} | {dur / 1000 / n:.1f} | {op_count[op] / n:.0f} |")
    print("\n| kernel | ms/step | launches/step |")
    print("|---|---|---|")
    for name, dur in by_name.most_common(args.top):
        print(f"| `{name}` | {dur / 1000 / n:.2f} | {name_count[name] / n:.0f} |")
    print_gaps(gpu, ops, n, args.gap_us, args.top)


def print_gaps(gpu, ops, n, min_us, top):
    """The GPU's idle stretches, by the launching ops of the kernels on either side: where in the
    step the device waits for the host (a sync, a host-bound stretch of small kernels)."""
    def op_of(e):
        return ops.get((e.get("args") or {}).get("External id"), re.sub(r"\s+", " ", e.get("name", "?"))[:50])
    ordered = sorted(gpu, key=lambda e: e["ts"])
    by_place = collections.Counter()
    place_count = collections.Counter()
    longest = collections.Counter()
    end, last = None, None
    total = 0.0
    for e in ordered:
        if end is not None and e["ts"] - end >= min_us:
            gap = e["ts"] - end
            place = f"{op_of(last)} → {op_of(e)}"
            by_place[place] += gap
            place_count[place] += 1
            longest[place] = max(longest[place], gap)
            total += gap
        if end is None or e["ts"] + e["dur"] > end:
            end, last = e["ts"] + e["dur"], e
    print(f"\nIdle gaps ≥ {min_us:.0f} µs: {total / 1000 / n:.1f} ms/step in {sum(place_count.values()) / n:.0f} gaps/step")
    print("\n| after → before (launching ops) | idle ms/step | gaps/step | longest µs |")
    print("|---|---|---|---|")
    for place, dur in by_place.most_common(top):
        print(f"| {place} | {dur / 1000 / n:.2f} | {place_count[place] / n:.0f} | {longest[place]:.0f} |")


if __name__ == "__main__":
    main()
