#!/usr/bin/env python3
"""The expert grouped GEMMs moe-train runs (torch._grouped_mm), timed by tokens per expert (GPU).

usage: grouped_gemm.py [--json OUT.json] [--reps N]

moe-train's MoE layer (runtime/model/moe_layer.cpp runExpertsGrouped) sorts the routed rows by
expert and runs two grouped GEMMs per layer — gate/up [A, D] x [E, D, 2F] and down [A, F] x
[E, F, D], bf16 operands, fp32 accumulate — through at::_grouped_mm, whose backward runs two more
per projection (dX and dW). The planner's expert term divides the expert FLOPs by peak x an
efficiency that saturates with tokens per expert (core/planner/throughput_model.h groupedGemm,
groupedGemmHalfTokens), Megatron's factors. This script measures what moe-train's op reaches on
this GPU: forward and forward+backward of both projections for E experts with m tokens each
(equal counts, and a routed-like spread), for the shapes of the models the catalog holds, and
prints the fraction of the dense bf16 peak (the DESIGN.md peak, 989 TFLOP/s on H100/H200).
Not yet used by the planner (docs/planner.md says what would change).
"""
import argparse
import random
import sys

from gpu_timing import median_ms, write_result

SHAPES = {
    # name: hidden D, expert FFN F, experts E (per rank)
    "qwen3-30b-a3b (D 2048, F 768, 128 experts)": (2048, 768, 128),
    "qwen3-235b-a22b (D 4096, F 1536, 128 experts)": (4096, 1536, 128),
    "the same, EP 8 (16 experts per rank)": (4096, 1536, 16),
}
TOKENS_PER_EXPERT = [64, 128, 256, 512, 1024, 2048, 4096]
PEAK_TFLOPS = {"H100": 989.0, "H200": 989.0, "B200": 2250.0, "GB200": 2450.0}


def peak_of(name):
    for key in sorted(PEAK_TFLOPS, key=len, reverse=True):
        if key in name:
            return PEAK_TFLOPS[key]
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json")
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        print("SKIP: no torch in this Python")
        return 77
    if not torch.cuda.is_available() or not hasattr(torch, "_grouped_mm"):
        print("SKIP: no CUDA device or no torch._grouped_mm")
        return 77
    name = torch.cuda.get_device_name(0)
    peak = peak_of(name)
    print(f"device: {name}, torch {torch.__version__}, peak {peak} TFLOP/s (dense bf16)")
    dev = "cuda"
    rng = random.Random(3)
    result = {"device": name, "torch": torch.__version__, "peak_tflops": peak, "shapes": {}}

    for label, (D, F, E) in SHAPES.items():
        print(f"\n== {label}")
        print(f"{'m/expert':>9} {'spread':>7} {'fwd ms':>8} {'fwd+bwd ms':>11} {'fwd %peak':>10} {'f+b %peak':>10}")
        rows = []
        w1 = torch.randn(E, D, 2 * F, device=dev, dtype=torch.bfloat16, requires_grad=True)
        w2 = torch.randn(E, F, D, device=dev, dtype=torch.bfloat16, requires_grad=True)
        for m in TOKENS_PER_EXPERT:
            if E * m * D * 2 > 6e9:  # keep the activations to a few GB
                continue
            for spread in ("equal", "routed"):
                if spread == "equal":
                    counts = [m] * E
                else:  # a routed-like spread: gamma-distributed loads with CV 0.3, same total
                    raw = [rng.gammavariate(1 / 0.09, 0.09) for _ in range(E)]
                    scale = m * E / sum(raw)
                    counts = [max(0, int(round(r * scale))) for r in raw]
                A = sum(counts)
                offs = torch.tensor(list(__import__("itertools").accumulate(counts)), device=dev, dtype=torch.int32)
                x = torch.randn(A, D, device=dev, dtype=torch.bfloat16, requires_grad=True)
                g = torch.randn(A, D, device=dev, dtype=torch.bfloat16)

                def forward():
                    h = torch._grouped_mm(x, w1, offs=offs)
                    a = torch.nn.functional.silu(h[:, :F]) * h[:, F:]
                    return torch._grouped_mm(a, w2, offs=offs)

                def fwd():
                    with torch.no_grad():
                        forward()

                def fwd_bwd():
                    forward().backward(g)
                    x.grad = w1.grad = w2.grad = None

                f_ms, fb_ms = median_ms(torch, fwd, args.reps), median_ms(torch, fwd_bwd, args.reps)
                flops = 2.0 * A * D * 3 * F  # gate+up (2F) and down (F), one multiply-add = 2 FLOPs
                fe = flops / (f_ms * 1e-3) / 1e12 / peak if peak else 0
                fbe = 3 * flops / (fb_ms * 1e-3) / 1e12 / peak if peak else 0
                rows.append({"tokens_per_expert": m, "spread": spread, "rows": A, "fwd_ms": f_ms, "fwd_bwd_ms": fb_ms,
                             "fwd_peak_fraction": fe, "fwd_bwd_peak_fraction": fbe})
                print(f"{m:>9} {spread:>7} {f_ms:>8.3f} {fb_ms:>11.3f} {fe * 100:>9.1f}% {fbe * 100:>9.1f}%")
                del x, g
        result["shapes"][label] = {"hidden": D, "ffn": F, "experts": E, "rows": rows}
    return write_result(args.json, result)


if __name__ == "__main__":
    sys.exit(main())
