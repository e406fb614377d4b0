#!/usr/bin/env python3
"""The varlen flash-attention kernels moe-train runs, timed by segment length (GPU, torch).

usage: attention_kernels.py [--json OUT.json] [--reps N]  |  attention_kernels.py --refit SAVED.json

moe-train calls at::_flash_attention_forward with cu_seqlens (runtime/model/attention.cpp): every
packed sample is its own causal segment in the decoder (32 query heads, 4 KV groups, d 128) and
every image its own bidirectional segment in the vision encoder (16 heads, d 72, which FA2 runs
with its d 96 kernel). Those kernels work in tiles (FA2's launch templates for sm90: forward
128 x 64 query x key blocks, backward 64 x 128), so a short segment costs far more than its
s^2 FLOPs: diagonal and partial tiles, and one CTA per query block (forward) or key block
(backward) with its own prologue and epilogue.

This script times the same aten op (autograd backward included: the GQA reduction of dK/dV and
FA2's dO·O and dQ-conversion passes are part of what attention costs) on equal-length segments
(s = 32 .. 4096, about 32 k tokens per launch: the efficiency by length), then on smooth length
distributions (exponential and uniform, 32 k tokens each), on which it fits per kernel and
direction
    time = t_tile * tiles + t_cta * ctas + t_token * tokens * heads
with tiles, CTAs and tokens counted exactly from the block sizes. Equal lengths are not the fit
set: every segment ends at the same place inside its last block, which a real length
distribution averages out. It then checks the fit on other distributions using only the moments
the planner has (Σs², Σs, segment count; core/planner/throughput_model.cpp) and prints predicted
beside measured. The fitted times go into resources/catalog/runtime-profiles.json ("attention").
"""
import argparse
import json
import math
import random
import sys

from gpu_timing import median_ms, write_result

KERNELS = {
    # name: query heads, kv heads, head dim, causal, fwd block (M, N), bwd block (M, N)
    "decoder": dict(heads=32, kv=4, d=128, causal=True, fwd=(128, 64), bwd=(64, 128)),
    "vision": dict(heads=16, kv=16, d=72, causal=False, fwd=(128, 64), bwd=(64, 128)),
}
LENGTHS = [32, 64, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 4096]
TOKENS = 32768


def tiles_fwd(s, bm, bn, causal):
    m, n = math.ceil(s / bm), math.ceil(s / bn)
    if not causal:
        return m * n, m
    return sum(min(n, math.ceil((i + 1) * bm / bn)) for i in range(m)), m


def tiles_bwd(s, bm, bn, causal):
    m, n = math.ceil(s / bm), math.ceil(s / bn)
    if not causal:
        return m * n, n
    return sum(m - (j * bn) // bm for j in range(n)), n


# The planner's moment form of the same counts (throughput_model.cpp attentionTiles), averaged over
# where a segment's end falls inside its last block. Causal forward (query blocks M, key blocks N,
# ρ = M/N): Σ_i min(⌈s/N⌉, ρ(i+1)) = s²/(2MN) + s/N + ½ − ρ/12. Causal backward (one CTA per key
# block, ρ' = N/M): Σ_j (⌈s/M⌉ − ρ'j) = s²/(2MN) + s(1/(2M) + 1/(2N)) + (ρ'+1)/4 − ρ'/12.
# Bidirectional: ⌈s/M⌉⌈s/N⌉ = s²/(MN) + s(1/M + 1/N)/2 + ¼. CTAs: ⌈s/B⌉ = s/B + ½.
def moment_tiles(sum_s2, sum_s, count, bm, bn, causal, backward):
    if not causal:
        tiles = sum_s2 / (bm * bn) + 0.5 * sum_s * (1 / bm + 1 / bn) + 0.25 * count
    elif not backward:
        rho = bm / bn
        tiles = sum_s2 / (2 * bm * bn) + sum_s / bn + count * (0.5 - rho / 12)
    else:
        rho = bn / bm
        tiles = sum_s2 / (2 * bm * bn) + sum_s * (0.5 / bm + 0.5 / bn) + count * ((rho + 1) / 4 - rho / 12)
    ctas = sum_s / (bn if backward else bm) + 0.5 * count
    return tiles, ctas


def time_segments(torch, k, lengths, reps):
    dev = "cuda"
    total = sum(lengths)
    q = torch.randn(total, k["heads"], k["d"], device=dev, dtype=torch.bfloat16, requires_grad=True)
    kk = torch.randn(total, k["kv"], k["d"], device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(total, k["kv"], k["d"], device=dev, dtype=torch.bfloat16, requires_grad=True)
    cu = torch.tensor([0] + list(itertools_accumulate(lengths)), device=dev, dtype=torch.int32)
    mx = max(lengths)
    grad = torch.randn(total, k["heads"], k["d"], device=dev, dtype=torch.bfloat16)
    op = torch.ops.aten._flash_attention_forward

    def forward():
        return op(q, kk, v, cu, cu, mx, mx, 0.0, k["causal"], False, scale=1.0 / math.sqrt(k["d"]))[0]

    state = {}

    def forward_only():
        with torch.no_grad():
            forward()

    def clear_grads():
        q.grad = kk.grad = v.grad = None

    def backward():
        state["out"].backward(grad)

    def run(with_backward):
        if not with_backward:
            return median_ms(torch, forward_only, reps)
        return median_ms(torch, backward, reps, before=lambda: state.update(out=forward()), after=clear_grads)

    return run(False), run(True)


def itertools_accumulate(xs):
    acc = 0
    for x in xs:
        acc += x
        yield acc


def lsq(xs, ys):
    """Least squares for y ≈ Σ a_i·x_i, each row weighted by 1/y² (relative errors count), with no
    negative a_i: a regressor whose coefficient comes out negative (a cost cannot be) is dropped
    and the rest fitted again."""
    active = list(range(len(xs[0])))
    while True:
        k = len(active)
        w = [1.0 / (y * y) for y in ys]
        m = [[sum(wi * x[active[a]] * x[active[b]] for wi, x in zip(w, xs)) for b in range(k)] +
             [sum(wi * x[active[a]] * y for wi, x, y in zip(w, xs, ys))] for a in range(k)]
        for i in range(k):  # Gauss-Jordan with partial pivoting
            p = max(range(i, k), key=lambda r: abs(m[r][i]))
            m[i], m[p] = m[p], m[i]
            for r in range(k):
                if r != i:
                    f = m[r][i] / m[i][i]
                    m[r] = [a - f * b for a, b in zip(m[r], m[i])]
        coef = [m[i][k] / m[i][i] for i in range(k)]
        if min(coef) >= 0 or k == 1:
            out = [0.0] * len(xs[0])
            for i, c in zip(active, coef):
                out[i] = max(0.0, c)
            return out
        active.pop(coef.index(min(coef)))


def refit(path):
    """The fit again from a saved --json file (no GPU): what goes into the catalog."""
    saved = json.load(open(path))
    for name, k in saved["kernels"].items():
        parts = []
        for d, rows in k["fit_rows"].items():
            coef = lsq([r["regressors"] for r in rows], [r["ms"] for r in rows])
            resid = [sum(a * x for a, x in zip(coef, r["regressors"])) / r["ms"] - 1 for r in rows]
            parts.append(f'"{d}": {{"block": {k[d]}, "ns_per_tile": {coef[0] * 1e6:.3f}, "ns_per_cta": {coef[1] * 1e6:.3f}, '
                         f'"ns_per_token_head": {coef[2] * 1e6:.4f}}}  (residual {min(resid) * 100:+.1f} .. {max(resid) * 100:+.1f} %)')
        print(f"{name} (d {k['d']}, {'causal' if k['causal'] else 'bidirectional'}, {saved['device']}, torch {saved['torch']}):")
        for part in parts:
            print("   ", part)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--refit", metavar="SAVED.json", help="fit again from a saved --json file (no GPU)")
    args = ap.parse_args()
    if args.refit:
        return refit(args.refit)
    try:
        import torch
    except ImportError:
        print("SKIP: no torch in this Python")
        return 77
    if not torch.cuda.is_available():
        print("SKIP: no CUDA device")
        return 77
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "kernels": {}}
    rng = random.Random(7)
    for name, k in KERNELS.items():
        heads = k["heads"]
        print(f"\n== {name}: {heads} heads ({k['kv']} kv), d {k['d']}, {'causal' if k['causal'] else 'bidirectional'}, "
              f"blocks fwd {k['fwd']}, bwd {k['bwd']}")
        print(f"{'s':>6} {'segs':>5} {'fwd ms':>8} {'bwd ms':>8} {'fwd tiles':>10} {'bwd tiles':>10} "
              f"{'fwd TF/s':>9} {'bwd TF/s':>9}")
        equal = []
        for s in LENGTHS:
            n = max(1, TOKENS // s)
            f_ms, b_ms = time_segments(torch, k, [s] * n, args.reps)
            useful = (2.0 if k["causal"] else 4.0) * s * s * k["d"] * heads * n  # fwd FLOPs as the model counts them
            tf, tb = tiles_fwd(s, *k["fwd"], k["causal"])[0] * n * heads, tiles_bwd(s, *k["bwd"], k["causal"])[0] * n * heads
            equal.append({"s": s, "segments": n, "fwd_ms": f_ms, "bwd_ms": b_ms})
            print(f"{s:>6} {n:>5} {f_ms:>8.3f} {b_ms:>8.3f} {tf:>10} {tb:>10} {useful / f_ms / 1e9:>9.1f} "
                  f"{2 * useful / b_ms / 1e9:>9.1f}")

        def draw(kind, a, b, seed):
            r = random.Random(seed)
            out = []
            while sum(out) < TOKENS:
                x = int(r.expovariate(1 / a)) if kind == "exp" else r.randint(a, b)
                out.append(min(4096, max(8, x)))
            return out

        def regressors(lengths, direction):
            count = tiles_bwd if direction == "bwd" else tiles_fwd
            t = sum(count(x, *k[direction], k["causal"])[0] for x in lengths)
            c = sum(count(x, *k[direction], k["causal"])[1] for x in lengths)
            return [t * heads, c * heads, sum(lengths) * heads]

        fitset = [("exp", m, 0) for m in (48, 96, 192, 384, 768, 1536)] + [("uni", 16, 256), ("uni", 16, 1024), ("uni", 256, 4096)]
        rows = {"fwd": [], "bwd": []}
        for i, (kind, a, b) in enumerate(fitset):
            lengths = draw(kind, a, b, 100 + i)
            f_ms, b_ms = time_segments(torch, k, lengths, args.reps)
            rows["fwd"].append((regressors(lengths, "fwd"), f_ms))
            rows["bwd"].append((regressors(lengths, "bwd"), b_ms))
        coef = {d: lsq([r[0] for r in rows[d]], [r[1] for r in rows[d]]) for d in rows}
        for d in rows:
            resid = [sum(a * x for a, x in zip(coef[d], r[0])) / r[1] - 1 for r in rows[d]]
            print(f"fit {d}: {coef[d][0] * 1e6:.3f} ns/tile + {coef[d][1] * 1e6:.3f} ns/CTA + "
                  f"{coef[d][2] * 1e6:.4f} ns/(token·head); residual on the {len(resid)} fit distributions "
                  f"{min(resid) * 100:+.1f} .. {max(resid) * 100:+.1f} %")
        # Other distributions, predicted from moments only.
        print(f"{'check (moments only)':>24} {'segs':>5} {'fwd ms':>8} {'pred':>8} {'bwd ms':>8} {'pred':>8}")
        mixes = {
            "exponential mean 400": draw("exp", 400, 0, 7),
            "exponential mean 250": draw("exp", 250, 0, 8),
            "uniform 64..1536": draw("uni", 64, 1536, 9),
            "long + short": [2048, 1536] + [rng.randint(20, 120) for _ in range(60)],
            "images 256..2304": [rng.choice([256, 576, 1024, 1296, 2304]) for _ in range(24)],
        }
        checks = []
        for label, lengths in mixes.items():
            f_ms, b_ms = time_segments(torch, k, lengths, args.reps)
            s2, s1, c = sum(x * x for x in lengths), sum(lengths), len(lengths)
            pred = {}
            for d, backward in (("fwd", False), ("bwd", True)):
                t, ctas = moment_tiles(s2, s1, c, *k[d], k["causal"], backward)
                pred[d] = (coef[d][0] * t + coef[d][1] * ctas + coef[d][2] * s1) * heads
            checks.append({"mix": label, "fwd_ms": f_ms, "fwd_pred_ms": pred["fwd"], "bwd_ms": b_ms, "bwd_pred_ms": pred["bwd"]})
            print(f"{label:>24} {c:>5} {f_ms:>8.3f} {pred['fwd']:>8.3f} {b_ms:>8.3f} {pred['bwd']:>8.3f}")
        result["kernels"][name] = {
            **{key: k[key] for key in ("heads", "kv", "d", "causal", "fwd", "bwd")},
            **{f"{d}_ns_per_{what}": coef[d][i] * 1e6 for d in coef for i, what in enumerate(("tile", "cta", "token_head"))},
            "equal_lengths": equal,
            "fit_rows": {d: [{"regressors": r[0], "ms": r[1]} for r in rows[d]] for d in rows},
            "checks": checks,
        }
    return write_result(args.json, result)


if __name__ == "__main__":
    sys.exit(main())
