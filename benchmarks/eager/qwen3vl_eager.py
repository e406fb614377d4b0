#!/usr/bin/env python3
"""The moe-train model written plainly in PyTorch eager: the baseline of the GPU benchmark.

usage: qwen3vl_eager.py --dump DIR [--steps S] [--warmup W] [--experts loop|grouped] [--compile]
                        [--attention auto|varlen|sdpa|explicit] [--load-weights CKPT]
                        [--first-batch K] [--metrics FILE] [--device cpu|cuda]

It trains the model of runtime/model/ (same architecture, same parameter names and layouts) on the
micro-batches that `moe-train --config RUN.json --dump-batches DIR --dump-count N` wrote, cycling
over them, with the run config stored in the dump. Written the way a PyTorch user would write it:
nn.Modules, no CUDA graphs, no custom kernels; torch.compile only with --compile.

  --compile torch.compile (default mode) of every vision block and decoder layer, each on its own as
            torchtitan compiles per block; the attention core stays outside the graphs
            (torch.compiler.disable: its segment lists are Python lists that change every
            micro-batch, and the varlen kernel is already one fused call), so each block compiles
            into the part before and the part after it. The warm-up runs whole passes over the
            micro-batches the measured steps read (at most 4) until a pass compiles no new graph,
            so no shape the measured steps meet compiles inside them; then the measured steps
            start from the first dumped batch again (the weights have trained through the
            warm-up: losses are not comparable with the eager rows'). The log says how many
            graphs were compiled, in how many warm-up steps, the graph breaks by reason, and any
            graph compiled after the warm-up.

  vision    ViT over all patches of the micro-batch, 2-D RoPE (patch row, column), attention
            block-diagonal per image; 2x2 merger + deepstack projectors (LayerNorm, Linear, GELU).
  decoder   token embedding, GQA attention with M-RoPE (t, h, w planes), RMSNorm, top-k softmax
            router in fp32 with renormalized weights and the Switch load-balancing loss, SwiGLU
            experts; LM loss on the caption tokens (logits of labelled positions only, as moe-train).
  experts   --experts loop: the per-expert loop of Hugging Face's Qwen3-MoE (one_hot mask, where(),
            gather, two matmuls, index_add_); --experts grouped: torch._grouped_mm (torch >= 2.8).
  attention --attention auto picks, once, after a self-check against the explicit masked softmax:
            varlen  torch.nn.attention.varlen.varlen_attn (flash, cu_seqlens: images and packed
                    documents without padding; torch >= 2.9; signature probed: is_causal or
                    window_size, enable_gqa where present);
            sdpa    F.scaled_dot_product_attention with a boolean mask (decoder: document-causal
                    B x T x T; vision: images padded to the longest with a key mask);
            explicit softmax(QK^T/sqrt(d) + mask) V (the only one on torch < 2.0, e.g. Debian's 1.13).
  training  bf16 autocast on CUDA with fp32 master weights (the router, norms and the loss in fp32),
            AdamW (fused=True where torch has it) with weight decay on matrices only, global-norm
            clipping, moe-train's warm-up + cosine/linear/constant schedule; gradient accumulation
            over global_batch_size / micro_batch_size micro-batches.

The step time covers the host-to-device copy of the micro-batch, forward, backward, clipping and
the optimizer step (one synchronize at the end). FLOPs: DESIGN.md section 3.2, ported from
core/model_flops.cpp (Megatron's decoder count + Megatron-Bridge's ViT term). MFU against the
dense bf16 peak of resources/catalog/hardware.json. --load-weights reads a moe-train checkpoint
(DIR/ckpt/latest.pt, a torch::serialize archive that torch.jit.load opens) so losses can be
compared on the same weights. Runs on torch 1.13 (CPU) through 2.11 (CUDA); standard library +
torch only.
"""
import argparse
import contextlib
import inspect
import json
import math
import os
import resource
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

IMAGE_ID = 259       # runtime/data/tokenizer.h
IGNORE_LABEL = -100
VISION_ROPE_BASE = 10000.0  # runtime/model/vision_encoder.cpp
EXIT_UNSUPPORTED = 4  # the requested path does not exist in this torch (the round prints "n/a")

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class Unsupported(Exception):
    pass


# ----------------------------------------------------------------------------- the dumped batches

DTYPES = {"int64": torch.int64, "int32": torch.int32, "float32": torch.float32, "uint8": torch.uint8}


def read_dump(path):
    """index.json + batch_*.bin -> (config dict, list of micro-batches as host tensors)."""
    index_path = os.path.join(path, "index.json")
    if not os.path.isfile(index_path):
        raise SystemExit(f"{index_path}: no batch dump here; write one with "
                         "moe-train --config RUN.json --dump-batches DIR --dump-count N")
    with open(index_path) as f:
        index = json.load(f)
    if index.get("format") != "moe-train-batch-dump" or index.get("version", 0) > 1:
        raise SystemExit(f"{index_path}: not a version-1 moe-train batch dump")
    batches = []
    for entry in index["batches"]:
        file = os.path.join(path, entry["file"])
        with open(file, "rb") as f:
            data = bytearray(f.read())  # writable: frombuffer shares it without a warning
        b = {k: entry[k] for k in ("rows", "seq_length", "images", "temporal_patch_size", "image_tokens", "text_tokens",
                                   "pad_tokens", "samples")}
        for name, a in entry["arrays"].items():
            count = math.prod(a["shape"])
            if a["offset"] + a["bytes"] > len(data):
                raise SystemExit(f"{file}: array {name} reaches past the end (truncated dump?)")
            if count == 0:
                t = torch.zeros(a["shape"], dtype=DTYPES[a["dtype"]])
            else:
                t = torch.frombuffer(data, dtype=DTYPES[a["dtype"]], count=count, offset=a["offset"])
            b[name] = t.reshape(a["shape"])
        b["_buffer"] = data
        batches.append(prepare(b))
    if not batches:
        raise SystemExit(f"{index_path}: the dump holds no micro-batches")
    return index["config"], batches


def run_lengths(ids):
    """Lengths of the runs of equal values of a 1-D host tensor (documents, padding tails, images)."""
    if ids.numel() == 0:
        return []
    change = torch.nonzero(ids[1:] != ids[:-1]).flatten() + 1
    bounds = [0] + change.tolist() + [ids.numel()]
    return [bounds[i + 1] - bounds[i] for i in range(len(bounds) - 1)]


def prepare(b):
    """Host-side index lists, computed once per dumped micro-batch (moe-train's toTensors)."""
    tokens = b["token_ids"].flatten()
    b["image_index"] = torch.nonzero(tokens == IMAGE_ID).flatten()
    b["valid_index"] = torch.nonzero(b["doc_ids"].flatten() >= 0).flatten()
    b["target_index"] = torch.nonzero(b["labels"].flatten() != IGNORE_LABEL).flatten()
    # Varlen segments: per row, runs of equal doc id (documents, and the row's padding tail).
    doc_segments = []
    for row in b["doc_ids"]:
        doc_segments += run_lengths(row)
    b["doc_segments"] = doc_segments
    b["image_segments"] = run_lengths(b["patch_image"])
    return b


def to_device(b, device):
    keys = ("token_ids", "labels", "doc_ids", "pos1d", "pos3", "patch_row", "patch_col",
            "image_index", "valid_index", "target_index")
    out = {k: b[k].to(device) for k in keys}
    # Patches as moe-train makes them on the device: one frame of bytes through the dumped
    # byte->value table (identical bits), the still frame repeated temporal_patch_size times.
    pixels = b["patch_pixels"]
    P, C = pixels.shape
    T = b["temporal_patch_size"]
    plane = C // 3 if P > 0 else 0
    table = b["byte_values"].to(device)
    values = table.index_select(0, pixels.to(device).flatten().long()).view(P, 3, 1, plane)
    out["patch_values"] = values.expand(P, 3, T, plane).reshape(P, 3 * T * plane)
    for k in ("doc_segments", "image_segments"):
        out[k] = b[k]
    return out


# ----------------------------------------------------------------------------- FLOPs (DESIGN.md §3.2)
# Ported from core/model_flops.cpp (decoderFlops, visionFlops): reference/megatron-bridge.md §7,
# factor 3 = forward + backward, 2 = multiply-add.

def decoder_flops(d, sequence_lengths):
    h = d["hidden_size"]
    q = d["num_attention_heads"] * d["kv_channels"]
    kv = d["num_query_groups"] * d["kv_channels"]
    layers = d["num_layers"]
    tokens = float(sum(sequence_lengths))
    scores = float(sum(s * s for s in sequence_lengths))
    experts = 3.0 * 2.0 * h * (3.0 * d["moe_ffn_hidden_size"] * d["moe_router_topk"] * layers)
    projections = layers * 3.0 * 2.0 * (h * (q + 2.0 * kv) + q * h)
    logits = 3.0 * 2.0 * h * d["vocab_size"]
    return tokens * (experts + projections + logits) + scores * layers * 3.0 * 2.0 * q


def vision_flops(v, out_hidden, num_patches):
    if num_patches <= 0 or v["num_layers"] <= 0:
        return 0.0
    n, h = float(num_patches), float(v["hidden_size"])
    m2 = float(v["spatial_merge_size"] ** 2)
    blocks = 3.0 * n * v["num_layers"] * (8.0 * h * h + 4.0 * h * n + 4.0 * h * v["ffn_hidden_size"])
    merged = h * m2
    return blocks + 3.0 * (n / m2) * (2.0 * merged * merged + 2.0 * merged * out_hidden)


def batch_flops(model_config, b):
    flops = decoder_flops(model_config["decoder"], b["sample_lengths"].tolist())
    for gh, gw in zip(b["image_grid_h"].tolist(), b["image_grid_w"].tolist()):
        flops += vision_flops(model_config["vision"], model_config["decoder"]["hidden_size"], gh * gw)
    return flops


def peak_tflops(device_name):
    """Dense bf16 peak per GPU from the hardware catalog; 0 when unknown (MFU not reported)."""
    with open(os.path.join(REPO, "resources", "catalog", "hardware.json")) as f:
        catalog = json.load(f)["hardware"]
    name = device_name.lower()
    best = None
    for hw in catalog:  # the longest catalog name inside the device name ("gb200" before "b200")
        if hw["name"] in name and (best is None or len(hw["name"]) > len(best["name"])):
            best = hw
    return float(best["peak_dense_bf16_tflops"]) if best else 0.0


# ----------------------------------------------------------------------------- attention cores

def explicit_attention(q, k, v, allowed):
    """softmax(QK^T/sqrt(d) masked) V in fp32 softmax; q, k, v [..., H, T, d], allowed [..., T, T]."""
    scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if allowed is not None:
        scores = scores.masked_fill(~allowed, float("-inf"))
    return torch.matmul(torch.softmax(scores.float(), -1).to(q.dtype), v)


def cu_seqlens(lengths, device):
    cum = [0]
    for n in lengths:
        cum.append(cum[-1] + n)
    return torch.tensor(cum, dtype=torch.int32, device=device), max(lengths)


class Attention:
    """The attention core in use, chosen once: 'varlen', 'sdpa' or 'explicit'."""

    def __init__(self, kind):
        self.kind = kind
        self._varlen = None
        if kind == "varlen":
            from torch.nn.attention.varlen import varlen_attn  # torch >= 2.9
            self._varlen = varlen_attn
            try:
                self._params = set(inspect.signature(varlen_attn).parameters)
            except (TypeError, ValueError):  # no Python signature: try the 2.9 keyword first
                self._params = {"is_causal"}

    def varlen(self, q, k, v, lengths, causal):
        """q [N, H, d], k/v [N, G, d] over segments `lengths` -> [N, H, d]."""
        kw = {}
        if "is_causal" in self._params:
            kw["is_causal"] = causal
        elif "window_size" in self._params:
            kw["window_size"] = (-1, 0) if causal else (-1, -1)
        elif causal:
            raise Unsupported("varlen_attn has neither is_causal nor window_size")
        if k.shape[1] != q.shape[1]:
            if "enable_gqa" in self._params:
                kw["enable_gqa"] = True
            else:
                k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
                v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
        cu, longest = cu_seqlens(lengths, q.device)
        bf = torch.bfloat16
        out = self._varlen(q.to(bf).contiguous(), k.to(bf).contiguous(), v.to(bf).contiguous(),
                           cu, cu, longest, longest, **kw)
        return out.to(q.dtype)

    def vision(self, q, k, v, image_lengths):
        """Block-diagonal over images: q, k, v [P, H, d] -> [P, H, d]."""
        if self.kind == "varlen":
            return self.varlen(q, k, v, image_lengths, causal=False)
        qs, ks, vs = (t.split(image_lengths, 0) for t in (q, k, v))
        if self.kind == "sdpa":
            # Images padded to the longest; padded keys masked out, padded queries dropped.
            pad = lambda parts: nn.utils.rnn.pad_sequence(parts, batch_first=True).transpose(1, 2)
            lengths = torch.tensor(image_lengths, device=q.device)
            longest = max(image_lengths)
            keep = torch.arange(longest, device=q.device)[None, :] < lengths[:, None]  # [I, L]
            o = F.scaled_dot_product_attention(pad(qs), pad(ks), pad(vs), attn_mask=keep[:, None, None, :])
            o = o.transpose(1, 2)  # [I, L, H, d]
            return o[keep]
        outs = [explicit_attention(a.transpose(0, 1), b.transpose(0, 1), c.transpose(0, 1), None).transpose(0, 1)
                for a, b, c in zip(qs, ks, vs)]
        return torch.cat(outs, 0)

    def decoder(self, q, k, v, doc_ids, doc_segments):
        """Document-causal: q [B, H, T, d], k/v [B, G, T, d] -> [B, H, T, d]."""
        B, H, T, d = q.shape
        G = k.shape[1]
        if self.kind == "varlen":
            flat = lambda t: t.transpose(1, 2).reshape(B * T, t.shape[1], d)
            o = self.varlen(flat(q), flat(k), flat(v), doc_segments, causal=True)
            return o.view(B, T, H, d).transpose(1, 2)
        same = doc_ids[:, :, None] == doc_ids[:, None, :]
        causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
        allowed = (same & causal)[:, None]  # padding sees earlier padding: no empty softmax row
        # K/V repeated for GQA rather than SDPA's enable_gqa: with a mask, enable_gqa can fall back
        # to the math kernel (B x H x T x T scores), the repeat keeps the memory-efficient one.
        k = k.repeat_interleave(H // G, dim=1)
        v = v.repeat_interleave(H // G, dim=1)
        if self.kind == "sdpa":
            return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
        return explicit_attention(q, k, v, allowed)


def choose_attention(requested, device, vision_head_dim, decoder_head_dim, log):
    """The fastest core that exists and agrees with the explicit one on random inputs."""
    if requested == "explicit" or device.type != "cuda":
        if requested not in ("auto", "explicit"):
            raise Unsupported(f"--attention {requested} needs CUDA")
        return Attention("explicit")
    candidates = [requested] if requested != "auto" else ["varlen", "sdpa"]
    reference = Attention("explicit")
    for kind in candidates:
        try:
            if kind == "sdpa" and not hasattr(F, "scaled_dot_product_attention"):
                raise Unsupported("no F.scaled_dot_product_attention in this torch")
            core = Attention(kind)
            g = torch.Generator(device="cpu").manual_seed(0)
            rnd = lambda *s: torch.randn(*s, generator=g).to(device, torch.bfloat16).requires_grad_()
            lengths = [37, 64, 27]
            q, k, v = rnd(128, 4, vision_head_dim), rnd(128, 4, vision_head_dim), rnd(128, 4, vision_head_dim)
            got = core.vision(q, k, v, lengths)
            want = reference.vision(q.float(), k.float(), v.float(), lengths)
            err_v = ((got.float() - want).norm() / want.norm()).item()
            got.float().sum().backward()
            docs = torch.tensor([[0] * 50 + [1] * 60 + [-1] * 18, [2] * 128], device=device)
            segs = [50, 60, 18, 128]
            qd, kd, vd = rnd(2, 8, 128, decoder_head_dim), rnd(2, 2, 128, decoder_head_dim), rnd(2, 2, 128, decoder_head_dim)
            got = core.decoder(qd, kd, vd, docs, segs)
            want = reference.decoder(qd.float(), kd.float(), vd.float(), docs, segs)
            err_d = ((got.float() - want).norm() / want.norm()).item()
            got.float().sum().backward()
            if not (err_v < 2e-2 and err_d < 2e-2):
                raise Unsupported(f"disagrees with the explicit core (rel. error vision {err_v:.1e}, decoder {err_d:.1e})")
            log(f"attention: {kind} (self-check rel. error vision {err_v:.1e}, decoder {err_d:.1e})")
            return core
        except Exception as e:  # a missing API or a kernel that refuses these shapes: try the next
            log(f"attention: {kind} not usable here: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
            if requested != "auto":
                raise Unsupported(f"--attention {kind}: {e}")
    log("attention: explicit (masked softmax)")
    return Attention("explicit")


# ----------------------------------------------------------------------------- rotary embeddings

def inverse_frequencies(dims, base, device):
    i = torch.arange(0, dims // 2, dtype=torch.float64)
    return torch.pow(base, -2.0 * i / dims).float().to(device)


def apply_rope(x, angle):
    """Rotate-half RoPE: x [..., T, d] by angle [..., T, d/2] (broadcast over heads)."""
    half = x.shape[-1] // 2
    cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


# ----------------------------------------------------------------------------- the model

class RmsNorm(nn.Module):
    def __init__(self, dim, eps, device):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim, device=device))

    def forward(self, x):
        x32 = x.float()
        return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight.float()).to(x.dtype)


class VisionBlock(nn.Module):
    def __init__(self, dim, heads, ffn, device):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(dim, device=device)
        self.norm2 = nn.LayerNorm(dim, device=device)
        self.qkv = nn.Linear(dim, 3 * dim, device=device)
        self.proj = nn.Linear(dim, dim, device=device)
        self.fc1 = nn.Linear(dim, ffn, device=device)
        self.fc2 = nn.Linear(ffn, dim, device=device)

    def forward(self, x, angle, attention, image_lengths):
        P, D = x.shape
        qkv = self.qkv(self.norm1(x)).view(P, 3, self.heads, D // self.heads)
        q = apply_rope(qkv[:, 0].transpose(0, 1), angle).transpose(0, 1)  # [P, H, d]
        k = apply_rope(qkv[:, 1].transpose(0, 1), angle).transpose(0, 1)
        y = attention.vision(q, k, qkv[:, 2], image_lengths).reshape(P, D)
        h = x + self.proj(y)
        return h + self.fc2(F.gelu(self.fc1(self.norm2(h))))


class VisionEncoder(nn.Module):
    def __init__(self, v, device):
        super().__init__()
        self.config = v
        patch_values = v["in_channels"] * v["temporal_patch_size"] * v["patch_size"] ** 2
        self.patch_embed = nn.Linear(patch_values, v["hidden_size"], device=device)
        self.blocks = nn.ModuleList(VisionBlock(v["hidden_size"], v["num_attention_heads"], v["ffn_hidden_size"], device)
                                    for _ in range(v["num_layers"]))

    def forward(self, patches, rows, cols, image_lengths, attention):
        head_dim = self.config["hidden_size"] // self.config["num_attention_heads"]
        inv = inverse_frequencies(head_dim // 2, VISION_ROPE_BASE, patches.device)
        angle = torch.cat([rows.float()[:, None] * inv, cols.float()[:, None] * inv], -1)  # [P, d/2]
        x = self.patch_embed(patches)
        deepstack = []
        for i, block in enumerate(self.blocks):
            x = block(x, angle, attention, image_lengths)
            if i in self.config["deepstack_layers"]:
                deepstack.append(x)
        return x, deepstack


class Projector(nn.Module):
    """2x2 merger: neighbouring patches are contiguous in the loader's order, so a reshape merges."""

    def __init__(self, vision_hidden, merge, out_hidden, device):
        super().__init__()
        self.merge = merge
        merged = vision_hidden * merge * merge
        self.norm = nn.LayerNorm(merged, device=device)
        self.fc1 = nn.Linear(merged, merged, device=device)
        self.fc2 = nn.Linear(merged, out_hidden, device=device)

    def forward(self, x):
        group = self.merge * self.merge
        return self.fc2(F.gelu(self.fc1(self.norm(x.reshape(x.shape[0] // group, group * x.shape[1])))))


class GqaAttention(nn.Module):
    def __init__(self, dim, heads, groups, head_dim, device):
        super().__init__()
        self.heads, self.groups, self.head_dim = heads, groups, head_dim
        self.q = nn.Linear(dim, heads * head_dim, bias=False, device=device)
        self.k = nn.Linear(dim, groups * head_dim, bias=False, device=device)
        self.v = nn.Linear(dim, groups * head_dim, bias=False, device=device)
        self.out = nn.Linear(heads * head_dim, dim, bias=False, device=device)

    def forward(self, x, angle, attention, doc_ids, doc_segments):
        B, T, _ = x.shape
        q = apply_rope(self.q(x).view(B, T, self.heads, self.head_dim).transpose(1, 2), angle[:, None])
        k = apply_rope(self.k(x).view(B, T, self.groups, self.head_dim).transpose(1, 2), angle[:, None])
        v = self.v(x).view(B, T, self.groups, self.head_dim).transpose(1, 2)
        y = attention.decoder(q, k, v, doc_ids, doc_segments)
        return self.out(y.transpose(1, 2).reshape(B, T, self.heads * self.head_dim))


def no_autocast(device):
    # CPU runs never enter autocast (fp32), and torch 1.13's CPU autocast rejects some dtypes.
    return torch.autocast(device_type="cuda", enabled=False) if device.type == "cuda" else contextlib.nullcontext()


class MoeLayer(nn.Module):
    """Top-k routed SwiGLU experts, stacked weights (gate|up [E, D, 2F], down [E, F, D])."""

    def __init__(self, d, device, experts):
        super().__init__()
        E, D, Fh = d["num_moe_experts"], d["hidden_size"], d["moe_ffn_hidden_size"]
        self.top_k, self.coeff, self.experts = d["moe_router_topk"], d["moe_aux_loss_coeff"], experts
        self.router_dtype = torch.float64 if d.get("moe_router_dtype") == "fp64" else torch.float32
        self.router = nn.Parameter(torch.empty(E, D, device=device).normal_(0.0, 0.02))
        self.gate_up = nn.Parameter(torch.empty(E, D, 2 * Fh, device=device).normal_(0.0, 0.02))
        self.down = nn.Parameter(torch.empty(E, Fh, D, device=device).normal_(0.0, 0.02))

    def forward(self, x):
        T, K, E = x.shape[0], self.top_k, self.router.shape[0]
        with no_autocast(x.device):  # router logits and softmax in fp32: bf16 near-ties flip
            probs = torch.softmax(x.to(self.router_dtype) @ self.router.to(self.router_dtype).t(), -1)
        top, ids = probs.topk(K, -1)
        weights = (top / top.sum(-1, keepdim=True)).float()
        # Switch load balancing: E * coeff * sum_e f_e P_e (f_e: share of assignments, no gradient).
        counts = torch.zeros(E, device=x.device, dtype=probs.dtype).index_add_(
            0, ids.flatten(), torch.ones(T * K, device=x.device, dtype=probs.dtype))
        aux = ((counts / (T * K) * probs.mean(0)).sum() * (E * self.coeff)).float()
        if self.experts == "grouped":
            return self.grouped(x, weights, ids), aux
        return self.loop(x, weights, ids), aux

    def loop(self, x, weights, ids):
        # As Hugging Face's Qwen3-MoE block: for each expert that got tokens, gather them, run the
        # SwiGLU MLP, and add the router-weighted output back (torch.where syncs once per expert).
        Fh = self.down.shape[1]
        out = torch.zeros_like(x)
        mask = F.one_hot(ids, num_classes=self.router.shape[0]).permute(2, 1, 0)  # [E, K, T]
        hit = torch.nonzero(mask.sum((-1, -2)) > 0).flatten().tolist()
        for e in hit:
            slot, token = torch.where(mask[e])
            gate_up = x[token] @ self.gate_up[e]
            h = F.silu(gate_up[:, :Fh]) * gate_up[:, Fh:]
            y = (h @ self.down[e]) * weights[token, slot, None]
            out.index_add_(0, token, y.to(x.dtype))
        return out

    def grouped(self, x, weights, ids):
        # Assignments sorted by expert, one torch._grouped_mm per projection (bf16, int32 offsets).
        Fh, E, K = self.down.shape[1], self.router.shape[0], self.top_k
        flat = ids.flatten()
        order = torch.sort(flat, stable=True)[1]
        token = order // K
        offsets = torch.bincount(flat, minlength=E).cumsum(0).to(torch.int32)
        bf = torch.bfloat16
        gate_up = torch._grouped_mm(x[token].to(bf), self.gate_up.to(bf), offs=offsets)
        h = (F.silu(gate_up[:, :Fh]) * gate_up[:, Fh:]).contiguous()
        y = torch._grouped_mm(h, self.down.to(bf), offs=offsets)
        y = y * weights.flatten()[order][:, None]
        return torch.zeros_like(x).index_add(0, token, y.to(x.dtype))


class DecoderLayer(nn.Module):
    def __init__(self, d, device, experts):
        super().__init__()
        self.attn_norm = RmsNorm(d["hidden_size"], d["norm_epsilon"], device)
        self.mlp_norm = RmsNorm(d["hidden_size"], d["norm_epsilon"], device)
        self.attention = GqaAttention(d["hidden_size"], d["num_attention_heads"], d["num_query_groups"],
                                      d["kv_channels"], device)
        self.moe = MoeLayer(d, device, experts)

    def forward(self, h, angle, attention, b):
        x = h + self.attention(self.attn_norm(h), angle, attention, b["doc_ids"], b["doc_segments"])
        flat = x.reshape(-1, x.shape[-1])
        y, aux = self.moe(self.mlp_norm(flat[b["valid_index"]]))  # padding skips the experts
        return flat.index_add(0, b["valid_index"], y).view_as(x), aux


class Decoder(nn.Module):
    def __init__(self, d, device, experts):
        super().__init__()
        self.config = d
        self.embedding = nn.Embedding(d["vocab_size"], d["hidden_size"], device=device)
        nn.init.normal_(self.embedding.weight, 0.0, 0.02)
        self.layers = nn.ModuleList(DecoderLayer(d, device, experts) for _ in range(d["num_layers"]))
        self.final_norm = RmsNorm(d["hidden_size"], d["norm_epsilon"], device)
        self.output = nn.Linear(d["hidden_size"], d["vocab_size"], bias=False, device=device)

    def angles(self, b):
        d = self.config
        inv = inverse_frequencies(d["kv_channels"], d["rotary_base"], b["pos3"].device)
        sections = d.get("mrope_section") or []
        if not sections:
            return b["pos1d"].float()[..., None] * inv
        parts, start = [], 0
        for plane, size in enumerate(sections):  # M-RoPE: frequency slices follow t, h, w positions
            parts.append(b["pos3"][plane].float()[..., None] * inv[start:start + size])
            start += size
        return torch.cat(parts, -1)

    def forward(self, b, image_embeds, deepstack, attention):
        h = self.embedding(b["token_ids"])
        shape, D = h.shape, h.shape[-1]
        image_index = b["image_index"]
        if image_embeds is not None and image_index.numel() > 0:
            h = h.reshape(-1, D).index_copy(0, image_index, image_embeds.to(h.dtype)).view(shape)
        angle = self.angles(b)
        aux_total = torch.zeros((), device=h.device)
        for i, layer in enumerate(self.layers):
            h, aux = layer(h, angle, attention, b)
            aux_total = aux_total + aux
            if i < len(deepstack) and image_index.numel() > 0:  # deepstack features join the image tokens
                h = h.reshape(-1, D).index_add(0, image_index, deepstack[i].to(h.dtype)).view(shape)
        h = self.final_norm(h)
        target = b["target_index"]  # logits of the labelled positions only, as moe-train
        logits = self.output(h.reshape(-1, D)[target]).float()
        lm = F.cross_entropy(logits, b["labels"].flatten()[target]) if target.numel() > 0 else logits.sum() * 0
        return lm, aux_total


class Qwen3VLEager(nn.Module):
    """Parameter names and layouts as runtime/model/vlm_model.cpp, so moe-train checkpoints load."""

    def __init__(self, model_config, device, experts):
        super().__init__()
        v, d = model_config["vision"], model_config["decoder"]
        self.vision = VisionEncoder(v, device)
        self.projector = Projector(v["hidden_size"], v["spatial_merge_size"], d["hidden_size"], device)
        self.deepstack_projectors = nn.ModuleList(
            Projector(v["hidden_size"], v["spatial_merge_size"], d["hidden_size"], device)
            for _ in v["deepstack_layers"])
        self.decoder = Decoder(d, device, experts)

    def forward(self, b, attention):
        image_embeds, deepstack = None, []
        if b["patch_values"].shape[0] > 0:
            hidden, features = self.vision(b["patch_values"], b["patch_row"], b["patch_col"], b["image_segments"],
                                           attention)
            image_embeds = self.projector(hidden)
            deepstack = [p(f) for p, f in zip(self.deepstack_projectors, features)]
        return self.decoder(b, image_embeds, deepstack, attention)


# ----------------------------------------------------------------------------- training

def compile_blocks(model, attention):
    """torch.compile (default mode) of each vision block and decoder layer, the attention core
    left out of the graphs (see --compile)."""
    import torch._dynamo
    for name in ("recompile_limit", "cache_size_limit"):  # one entry per block and shape family
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, 64)
    if hasattr(torch._dynamo.config, "accumulated_cache_size_limit"):
        torch._dynamo.config.accumulated_cache_size_limit = 1024
    attention.vision = torch.compiler.disable(attention.vision)
    attention.decoder = torch.compiler.disable(attention.decoder)
    for block in list(model.vision.blocks) + list(model.decoder.layers):
        block.compile()


def learning_rate(t, step):
    """runtime/train/lr_schedule.cpp: linear warm-up, then cosine / linear / constant decay."""
    warmup = t.get("lr_warmup_iters", 0)
    if warmup > 0 and step <= warmup:
        return t["lr"] * step / warmup
    style = t.get("lr_decay_style", "cosine")
    if style == "constant":
        return t["lr"]
    progress = min(1.0, max(0.0, (step - warmup) / max(1, t["train_iters"] - warmup)))
    factor = 1.0 - progress if style == "linear" else 0.5 * (1.0 + math.cos(math.pi * progress))
    return t["min_lr"] + (t["lr"] - t["min_lr"]) * factor


def load_weights(model, path):
    """A moe-train checkpoint (torch::serialize archive: a TorchScript module with a 'model' child
    whose parameters are named like ours)."""
    archive = torch.jit.load(path, map_location="cpu")
    saved = dict(archive.model.named_parameters())
    ours = dict(model.named_parameters())
    missing, unexpected = sorted(set(ours) - set(saved)), sorted(set(saved) - set(ours))
    if missing or unexpected:
        raise SystemExit(f"{path}: parameters differ from this model (was the config changed?): "
                         f"missing {missing[:5]}, unexpected {unexpected[:5]}")
    with torch.no_grad():
        for name, p in ours.items():
            if tuple(saved[name].shape) != tuple(p.shape):
                raise SystemExit(f"{path}: {name} has shape {tuple(saved[name].shape)}, the model {tuple(p.shape)}")
            p.copy_(saved[name])
    return int(archive.step.item()) if hasattr(archive, "step") else 0


def make_optimizer(model, t, device):
    decay = [p for p in model.parameters() if p.requires_grad and p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.requires_grad and p.dim() < 2]
    groups = [{"params": decay, "weight_decay": t["weight_decay"]}, {"params": no_decay, "weight_decay": 0.0}]
    kw = dict(lr=t["lr"], betas=(t.get("adam_beta1", 0.9), t.get("adam_beta2", 0.95)), eps=t.get("adam_eps", 1e-8))
    fused = device.type == "cuda" and "fused" in inspect.signature(torch.optim.AdamW).parameters
    if fused:
        kw["fused"] = True
    return torch.optim.AdamW(groups, **kw), ("fused" if fused else "foreach/single-tensor")


def peak_memory_gib(device):
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dump", required=True, help="folder written by moe-train --dump-batches")
    ap.add_argument("--steps", type=int, default=0, help="optimizer steps (default: the config's train_iters)")
    ap.add_argument("--warmup", type=int, default=3, help="steps left out of the medians")
    ap.add_argument("--experts", choices=["loop", "grouped"], default="loop")
    ap.add_argument("--attention", choices=["auto", "varlen", "sdpa", "explicit"], default="auto")
    ap.add_argument("--compile", action="store_true", help="torch.compile each vision block and decoder layer")
    ap.add_argument("--device", choices=["cpu", "cuda"], help="default: the config's runtime.device")
    ap.add_argument("--load-weights", help="moe-train checkpoint (RUN/ckpt/latest.pt) to start from")
    ap.add_argument("--first-batch", type=int, default=0, help="index of the first dumped micro-batch to train on")
    ap.add_argument("--metrics", help="write a metrics.jsonl (DESIGN.md §3.2 records) for benchmarks/summarize.py")
    ap.add_argument("--label", default="eager")
    ap.add_argument("--profile-step", type=int, default=0,
                    help="profile this step with torch.profiler and print the top kernels (CUDA time)")
    args = ap.parse_args(argv)

    log = lambda msg: print(f"eager: {msg}", flush=True)
    config, batches = read_dump(args.dump)
    model_config, t = config["model"], config["train"]
    device = torch.device(args.device or config.get("runtime", {}).get("device", "cpu"))
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("eager: CUDA is not available here; pass --device cpu")
    if config.get("runtime", {}).get("num_threads", 0) > 0 and device.type == "cpu":
        torch.set_num_threads(config["runtime"]["num_threads"])
    steps = args.steps or t["train_iters"]
    num_micro = max(1, t["global_batch_size"] // t["micro_batch_size"])
    bf16 = t.get("precision") == "bf16" and device.type == "cuda"
    if t.get("precision") == "bf16" and not bf16:
        log("precision bf16 runs in fp32 on the CPU (as moe-train refuses bf16 there)")
    if args.experts == "grouped" and not (device.type == "cuda" and hasattr(torch, "_grouped_mm")):
        print(f"eager: --experts grouped needs torch._grouped_mm on CUDA (torch {torch.__version__}: "
              f"{'present' if hasattr(torch, '_grouped_mm') else 'absent'})", file=sys.stderr)
        return EXIT_UNSUPPORTED

    torch.manual_seed(t.get("seed", 1234))
    v, d = model_config["vision"], model_config["decoder"]
    try:
        attention = choose_attention(args.attention, device, v["hidden_size"] // v["num_attention_heads"],
                                     d["kv_channels"], log)
    except Unsupported as e:
        print(f"eager: {e}", file=sys.stderr)
        return EXIT_UNSUPPORTED
    model = Qwen3VLEager(model_config, device, args.experts)
    if args.load_weights:
        log(f"weights from {args.load_weights} (moe-train step {load_weights(model, args.load_weights)})")
    if model_config.get("freeze_vision_model"):
        model.vision.requires_grad_(False)
    if model_config.get("freeze_vision_projection"):
        model.projector.requires_grad_(False)
        model.deepstack_projectors.requires_grad_(False)
    if model_config.get("freeze_language_model"):
        model.decoder.requires_grad_(False)
    if args.compile:
        if device.type != "cuda" or not hasattr(torch, "compile"):
            print(f"eager: --compile needs CUDA and torch.compile (torch {torch.__version__})", file=sys.stderr)
            return EXIT_UNSUPPORTED
        compile_blocks(model, attention)
    optimizer, optimizer_kind = make_optimizer(model, t, device)
    params = [p for p in model.parameters() if p.requires_grad]
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    peak = peak_tflops(name) if device.type == "cuda" else 0.0
    source = config["data"]["source"]
    log(f"{config['name']}: {sum(p.numel() for p in model.parameters()) / 1e9:.3f} G parameters, {steps} steps, "
        f"{len(batches)} dumped micro-batches ({num_micro} per step), data {source}, device {name}, torch "
        f"{torch.__version__}, experts {args.experts}, attention {attention.kind}, AdamW {optimizer_kind}, "
        f"{'bf16 autocast' if bf16 else 'fp32'}{', torch.compile per block' if args.compile else ''}")

    metrics = open(args.metrics, "w") if args.metrics else None
    write = lambda rec: (metrics.write(json.dumps(rec) + "\n"), metrics.flush()) if metrics else None
    write({"v": 1, "type": "meta", "run_id": args.label, "name": config["name"] + "-eager", "device": name,
           "data_source": source, "peak_tflops": peak, "world_size": 1,
           "seq_length": t["seq_length"], "micro_batch_size": t["micro_batch_size"],
           "global_batch_size": t["global_batch_size"],
           "versions": {"torch": torch.__version__, "cuda": str(torch.version.cuda),
                        "eager": f"experts {args.experts}, attention {attention.kind}, AdamW {optimizer_kind}"
                                 + (", torch.compile per block" if args.compile else "")}})
    records = []
    cursor = args.first_batch
    warm = 0
    if args.compile:
        from torch._dynamo.utils import counters
        graphs = lambda: counters["stats"]["unique_graphs"]
        compile_start, before = time.perf_counter(), graphs()
        # Whole passes over exactly the micro-batches the measured steps will read, until a pass
        # compiles nothing new: each shape the measured steps meet has its graph before they start
        # (stopping at the first step without a new graph left 10 graphs, 1.2-1.7 s each, to be
        # compiled inside 4 of the 9 measured steps of round 2026-12-07T18:17Z).
        passes = 0
        while passes < 4:
            compiled = graphs()
            cursor = args.first_batch
            for _ in range(steps):
                for _ in range(num_micro):
                    b = to_device(batches[cursor % len(batches)], device)
                    cursor += 1
                    with torch.autocast(device_type="cuda", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext():
                        lm, aux = model(b, attention)
                    ((lm + aux) / num_micro).backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
                warm += 1
            torch.cuda.synchronize(device)
            passes += 1
            new = graphs() - compiled
            log(f"compile warm-up pass {passes} ({steps} steps over the measured micro-batches): {new} new graph(s)")
            if new == 0:
                break
        breaks = sorted(counters["graph_break"].items(), key=lambda kv: -kv[1])
        log(f"torch.compile: {graphs() - before} graphs compiled in {warm} warm-up steps "
            f"({time.perf_counter() - compile_start:.0f} s); graph breaks: "
            + ("; ".join(f"{n}x {reason.splitlines()[0][:90]}" for reason, n in breaks[:4]) or "none"))
        cursor = args.first_batch
        graphs_after_warmup = graphs()
    for step in range(1, steps + 1):
        lr = learning_rate(t, step)
        for group in optimizer.param_groups:
            group["lr"] = lr
        profiler = None
        if args.profile_step == step:
            activities = [torch.profiler.ProfilerActivity.CPU]
            if device.type == "cuda":
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            profiler = torch.profiler.profile(activities=activities)
            profiler.__enter__()
        start = time.perf_counter()
        lm_total, aux_total = [], []
        flops, counts = 0.0, {"images": 0, "image_tokens": 0, "text_tokens": 0, "pad_tokens": 0}
        for _ in range(num_micro):
            host = batches[cursor % len(batches)]
            cursor += 1
            b = to_device(host, device)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16) if bf16 else contextlib.nullcontext():
                lm, aux = model(b, attention)
            ((lm + aux) / num_micro).backward()
            lm_total.append(lm.detach())
            aux_total.append(aux.detach())
            flops += batch_flops(model_config, host)
            for k in counts:
                counts[k] += host[k]
        clip = t.get("clip_grad", 0.0)
        if clip > 0:
            grad_norm = nn.utils.clip_grad_norm_(params, clip)
        else:
            grad_norm = torch.norm(torch.stack([p.grad.float().norm() for p in params if p.grad is not None]))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        lm_sum = torch.stack(lm_total).sum().item()  # the step's one synchronize
        aux_sum = torch.stack(aux_total).sum().item()
        grad = float(grad_norm)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        ms = (time.perf_counter() - start) * 1000.0
        if profiler is not None:
            profiler.__exit__(None, None, None)
            key = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
            print(profiler.key_averages().table(sort_by=key, row_limit=35, max_name_column_width=70),
                  file=sys.stderr, flush=True)
        effective = counts["image_tokens"] + counts["text_tokens"]
        tflops = flops / (ms / 1000.0) / 1e12
        rec = {"v": 1, "type": "step", "step": step, "time": time.time(), "step_ms": ms,
               "loss": lm_sum / num_micro, "aux_loss": aux_sum / num_micro, "grad_norm": grad, "lr": lr,
               **counts, "effective_tokens": effective,
               "tokens_per_s_per_gpu": effective / (ms / 1000.0), "tflops_per_gpu": tflops,
               "mfu": tflops / peak if peak > 0 else 0.0, "mem_peak_gib": peak_memory_gib(device)}
        records.append(rec)
        write(rec)
        print(f"step {step}/{steps} loss {rec['loss']:.4f} aux {rec['aux_loss']:.4f} lr {lr:.2e} grad {grad:.3f} "
              f"step_ms {ms:.1f} tok/s {rec['tokens_per_s_per_gpu']:.0f}", flush=True)
        if not math.isfinite(rec["loss"]):
            print(f"eager: the loss is not finite at step {step}", file=sys.stderr)
            return 1
    if args.compile:
        from torch._dynamo.utils import counters
        late = counters["stats"]["unique_graphs"] - graphs_after_warmup
        log(f"torch.compile: {late} graph(s) compiled during the measured steps"
            + (" (they count in the step times)" if late else ""))
    used = records[args.warmup:] if len(records) > args.warmup else records
    med = lambda k: statistics.median(r[k] for r in used)
    mfu = f"{100 * med('mfu'):.1f} %" if peak > 0 else "n/a (no peak known for this device)"
    log(f"medians over steps {used[0]['step']}..{used[-1]['step']}: step {med('step_ms'):.1f} ms, "
        f"{med('tokens_per_s_per_gpu'):,.0f} effective tokens/s, {med('tflops_per_gpu'):.1f} TFLOP/s, MFU {mfu}, "
        f"peak memory {max(r['mem_peak_gib'] for r in records):.1f} GiB")
    write({"v": 1, "type": "end", "status": "finished", "exit_code": 0, "step": steps, "time": time.time()})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
