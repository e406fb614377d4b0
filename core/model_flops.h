// Model FLOPs as DESIGN.md §3.2 defines them (forward + backward, i.e. the factor 3 included):
// Megatron's num_floating_point_operations for the decoder plus Megatron-Bridge's ViT term for the
// vision encoder (reference/megatron-bridge.md §7). Shared by the planner and moe-train so that
// predicted and measured MFU use the same numerator. Pure functions, any thread; depends on std only.
#pragma once

#include "core/run_config.h"

#include <cstdint>
#include <vector>

namespace wb::core {

/// Decoder FLOPs for one micro-batch of packed sequences. `sequenceLengths` are the lengths of the
/// independent (block-diagonal) sequences whose attention is computed, tokens = their sum.
double decoderFlops(const DecoderConfig& decoder, const std::vector<int64_t>& sequenceLengths);

/// Gated DeltaNet's widths (Megatron-Core's GatedDeltaNet), one place for the FLOP count, the
/// parameter count and the activation bytes: q and k each keyHeads × keyDim, v valueHeads ×
/// valueDim; in_proj writes q, k, v, z (v wide) and the b, a gates (one per value head); the
/// depthwise conv runs over q, k, v.
struct GatedDeltaNetWidths {
    double qk = 0;      ///< the width of q (and of k)
    double v = 0;       ///< the width of v (and of z, and of the core's output)
    double inProj = 0;  ///< in_proj's output: 2·qk + 2·v + 2·valueHeads
    double conv = 0;    ///< the conv's channels: 2·qk + v
};
inline GatedDeltaNetWidths gatedDeltaNetWidths(const DecoderConfig& d)
{
    GatedDeltaNetWidths w;
    w.qk = double(d.linearKeyHeadDim) * d.linearNumKeyHeads;
    w.v = double(d.linearValueHeadDim) * d.linearNumValueHeads;
    w.inProj = 2.0 * w.qk + 2.0 * w.v + 2.0 * d.linearNumValueHeads;
    w.conv = 2.0 * w.qk + w.v;
    return w;
}

/// Per token, fwd+bwd: the part of decoderFlops that gated DeltaNet's core runs (the causal conv
/// and the delta rule's KK^T, VK^T, state update and read-out, as Megatron counts them); 0 for a
/// decoder without linear-attention layers. Not GEMMs: the planner times it apart.
double linearAttentionCoreFlops(const DecoderConfig& decoder);

/// Vision FLOPs for one image of `numPatches` patches (before the merge), including the patch
/// merger that maps to `outHidden` (the decoder width).
double visionFlops(const VisionConfig& vision, int outHidden, int64_t numPatches);

/// Nominal FLOPs of one training sample: one image of `imagePatches` patches (0 = none) and
/// `textTokens` caption tokens, as one sequence. Used for the meta line and for planning.
double sampleFlops(const ModelConfig& model, int64_t imagePatches, int64_t textTokens);

}  // namespace wb::core
