#!/usr/bin/env python3
"""Varlen attention backends on moe-train's two shapes: FA2 (what moe-train calls) vs cuDNN (GPU, torch).

usage: attention_backends.py [--json OUT.json] [--reps N]

moe-train runs at::_flash_attention_forward over packed segments (runtime/model/attention.cpp):
the decoder's samples (32 query heads, 4 KV groups, d 128, causal) and the vision encoder's
images (16 heads, d 72, bidirectional; FA2 pads d 72 to its d 96 kernel, and its backward ran at
145 TFLOP/s on 4096-patch images: docs/benchmarks.md). This script times the same packed
batches through at::_cudnn_attention_forward with cum_seq_q/k (cuDNN's ragged-offset SDPA, the
path PyTorch's nested tensors take), forward and forward + backward through autograd, checks
that both backends compute the same function (output and input gradients against FA2, relative
L2 error), and prints the op schemas this LibTorch has. moe-train's cuDNN path was removed after
its input gradients came out wrong on LibTorch 2.11 (docs/runtime.md, "cuDNN's varlen SDPA"; the
likely cause, pytorch/pytorch#186142: the varlen backward sizes its dQ accumulator from d instead
of the longest segment): this script is the re-check for a newer LibTorch.
For the vision shape (no causal mask, no GQA) it also times `cudnn-4d`: cuDNN's padded 4-D path,
which does not take the varlen backward, one SDPA call per distinct image length (images of one
length batched), the copies into and out of the packed layout included; its first call (every
length's graph built) is printed apart.
Lengths: the benchmark slice's real workload (images of 256..896 px per side, 16-px patches:
256..3136 patches, about 60 k per step; decoder samples packed into 4096-token sequences).
"""
import argparse
import json
import math
import random
import sys
import time

from gpu_timing import median_ms, write_result

SHAPES = {
    "decoder": dict(heads=32, kv=4, d=128, causal=True),
    "vision": dict(heads=16, kv=16, d=72, causal=False),
}


def lengths_for(name, seed):
    rng = random.Random(seed)
    if name == "vision":  # 40 images, sides 256..896 px rounded to 32 px, 16-px patches
        out = []
        for _ in range(40):
            h, w = (rng.randrange(256, 897) // 32 * 32 for _ in range(2))
            out.append((h // 16) * (w // 16))
        return out
    out = []  # 4 sequences of 4096 tokens of samples: ~10 per sequence, an image's tokens + caption
    for _ in range(4):
        left = 4096
        while left > 0:
            s = min(left, max(16, int(rng.expovariate(1 / 400))))
            out.append(s)
            left -= s
    return out


def flops(lengths, k, backward):
    per = sum(s * s for s in lengths) * k["heads"] * k["d"] * 4 * (0.5 if k["causal"] else 1.0)
    return per * (3.5 if backward else 1.0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", default="")
    ap.add_argument("--reps", type=int, default=10)
    args = ap.parse_args()
    import torch

    for op in ("_cudnn_attention_forward", "_cudnn_attention_backward", "_flash_attention_forward"):
        packet = getattr(torch.ops.aten, op, None)
        print(f"schema {op}: {packet.default._schema if packet is not None else 'absent'}")
    print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}, {torch.cuda.get_device_name()}")
    result = {"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(), "rows": []}
    print("| shape | backend | fwd ms | fwd+bwd ms | fwd TFLOP/s | fwd+bwd TFLOP/s | out err | dq err | dk err | dv err |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, k in SHAPES.items():
        lengths = lengths_for(name, 7)
        total, mx = sum(lengths), max(lengths)
        dev = "cuda"
        torch.manual_seed(3)
        q = torch.randn(total, k["heads"], k["d"], device=dev, dtype=torch.bfloat16, requires_grad=True)
        kk = torch.randn(total, k["kv"], k["d"], device=dev, dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(total, k["kv"], k["d"], device=dev, dtype=torch.bfloat16, requires_grad=True)
        grad = torch.randn(total, k["heads"], k["d"], device=dev, dtype=torch.bfloat16)
        offsets = [0]
        for s in lengths:
            offsets.append(offsets[-1] + s)
        cu32 = torch.tensor(offsets, device=dev, dtype=torch.int32)
        scale = 1.0 / math.sqrt(k["d"])

        def flash():
            return torch.ops.aten._flash_attention_forward(q, kk, v, cu32, cu32, mx, mx, 0.0, k["causal"], False,
                                                           scale=scale)[0]

        def cudnn_with(cu, kv_expand):
            def f():
                kx, vx = kk, v
                if kv_expand and k["kv"] != k["heads"]:
                    kx = kk.repeat_interleave(k["heads"] // k["kv"], dim=1)
                    vx = v.repeat_interleave(k["heads"] // k["kv"], dim=1)
                return torch.ops.aten._cudnn_attention_forward(q, kx, vx, None, cu, cu, mx, mx, True, 0.0,
                                                               k["causal"], False, scale=scale)[0]
            return f

        # cuDNN's 4-D path, one call per distinct segment length (vision only: bidirectional, no GQA).
        groups = {}
        for i, s in enumerate(lengths):
            groups.setdefault(s, []).append(i)

        def cudnn_4d():
            from torch.nn.attention import SDPBackend, sdpa_kernel
            pieces = [None] * len(lengths)
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                for s, members in groups.items():
                    def batch(t):
                        return torch.stack([t[offsets[i]:offsets[i] + s] for i in members]).transpose(1, 2)
                    o = torch.nn.functional.scaled_dot_product_attention(batch(q), batch(kk), batch(v), scale=scale)
                    for j, i in enumerate(members):
                        pieces[i] = o[j].transpose(0, 1)
            return torch.cat(pieces)

        reference = None
        backends = ("flash", "cudnn") + (("cudnn-4d",) if not k["causal"] and k["kv"] == k["heads"] else ())
        for backend in backends:
            fn = flash
            why = ""
            if backend == "cudnn":
                fn = None
                for cu, expand in ((cu32, False), (cu32.to(torch.int64), False), (cu32, True)):
                    try:
                        out = cudnn_with(cu, expand)()
                        out.backward(grad)
                        torch.cuda.synchronize()
                        fn = cudnn_with(cu, expand)
                        why = f"cum_seq {cu.dtype}" + (", KV heads expanded" if expand else "")
                        break
                    except Exception as e:  # noqa: BLE001 - report what this LibTorch refuses
                        why = f"{type(e).__name__}: {str(e).splitlines()[0][:160]}"
                    finally:
                        q.grad = kk.grad = v.grad = None
                if fn is None:
                    print(f"| {name} | cudnn | refused: {why} |")
                    result["rows"].append({"shape": name, "backend": "cudnn", "refused": why})
                    continue
            if backend == "cudnn-4d":
                fn = cudnn_4d
                try:
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                    fn().backward(grad)
                    torch.cuda.synchronize()
                    why = (f"{len(groups)} calls of {len(lengths)} segments; first call "
                           f"{(time.perf_counter() - start) * 1e3:.0f} ms (graphs built)")
                except Exception as e:  # noqa: BLE001 - report what this LibTorch refuses
                    print(f"| {name} | cudnn-4d | refused: {type(e).__name__}: {str(e).splitlines()[0][:160]} |")
                    continue
                finally:
                    q.grad = kk.grad = v.grad = None
            out = fn()
            out.backward(grad)
            got = [out.detach().float(), q.grad.float(), kk.grad.float(), v.grad.float()]
            q.grad = kk.grad = v.grad = None
            if reference is None:
                reference = got
            errs = [((a - b).norm() / b.norm()).item() for a, b in zip(got, reference)]
            state = {}

            def fwd_only():
                with torch.no_grad():
                    fn()

            def clear():
                q.grad = kk.grad = v.grad = None

            f_ms = median_ms(torch, fwd_only, args.reps)
            fb_ms = median_ms(torch, lambda: state["out"].backward(grad), args.reps,
                              before=lambda: state.update(out=fn()), after=clear)
            fb_ms += f_ms  # backward timed after an untimed forward: add the forward
            tf = flops(lengths, k, False) / (f_ms * 1e-3) / 1e12
            tfb = flops(lengths, k, True) / (fb_ms * 1e-3) / 1e12
            print(f"| {name} ({len(lengths)} segments, {total} tokens, max {mx}) | {backend} {why} | {f_ms:.3f} | "
                  f"{fb_ms:.3f} | {tf:.0f} | {tfb:.0f} | " + " | ".join(f"{e:.1e}" for e in errs) + " |")
            result["rows"].append({"shape": name, "backend": backend, "how": why, "fwd_ms": f_ms,
                                   "fwd_bwd_ms": fb_ms, "errors": errs, "segments": len(lengths), "tokens": total})
    return write_result(args.json, result)


if __name__ == "__main__":
    sys.exit(main())
