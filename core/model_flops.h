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
