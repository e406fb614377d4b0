// FLOPs exactly as reference/megatron-bridge.md §7 writes them, so our MFU is comparable with
// Megatron-Bridge's logged MFU. Factor 3 = forward + backward (backward = 2× forward), 2 = FMA.
#include "core/model_flops.h"

namespace wb::core {

namespace {

// Megatron counts the MTP layers as decoder layers (MoE like the last one) and the linear-attention
// pattern over all of them (training.py, transformer_flops).
double layersCounted(const DecoderConfig& d) { return double(d.numLayers + d.mtpNumLayers); }

double linearLayersCounted(const DecoderConfig& d)
{
    return double(d.linearAttentionLayers(d.numLayers + d.mtpNumLayers));
}

}  // namespace

double linearAttentionCoreFlops(const DecoderConfig& d)
{
    if (!d.hybridAttention())
        return 0.0;
    const double conv = d.linearConvKernelDim * gatedDeltaNetWidths(d).conv;
    const double deltaRule = double(d.linearNumValueHeads) * d.linearValueHeadDim * d.linearValueHeadDim * 4.0;
    return linearLayersCounted(d) * 3.0 * 2.0 * (conv + deltaRule);
}

double decoderFlops(const DecoderConfig& d, const std::vector<int64_t>& sequenceLengths)
{
    const double h = d.hiddenSize;
    const double q = double(d.numAttentionHeads) * d.kvChannels;
    const double kv = double(d.numQueryGroups) * d.kvChannels;
    const double gate = d.attentionOutputGate ? q : 0.0;
    const double layers = layersCounted(d);
    const double linearLayers = linearLayersCounted(d);
    const double softmaxLayers = layers - linearLayers;
    const double swiglu = 3.0;  // gate, up and down projections
    double tokens = 0.0;
    double attentionScores = 0.0;
    for (int64_t s : sequenceLengths) {
        tokens += double(s);
        attentionScores += double(s) * double(s);
    }
    const double experts = 3.0 * 2.0 * h * (swiglu * d.moeFfnHiddenSize * d.moeRouterTopk * layers);
    const double shared = 3.0 * 2.0 * h * swiglu * d.moeSharedExpertFfnHiddenSize * layers;
    double projections = softmaxLayers * 3.0 * 2.0 * (h * (q + 2.0 * kv + gate) + q * h);
    if (d.hybridAttention()) {
        // Gated DeltaNet's in_proj (q, k, v, z, and the b, a gates per value head) and out_proj.
        const GatedDeltaNetWidths w = gatedDeltaNetWidths(d);
        projections += linearLayers * 3.0 * 2.0 * (h * w.inProj + h * w.v);
    }
    const double mtp = 3.0 * 2.0 * d.mtpNumLayers * (3.0 * h + 2.0 * h * h);  // MTP norms and projection
    const double logits = 3.0 * 2.0 * h * d.vocabSize * (1.0 + d.mtpNumLayers);
    const double coreAttention = attentionScores * softmaxLayers * 3.0 * 2.0 * q;
    return tokens * (experts + shared + projections + linearAttentionCoreFlops(d) + mtp + logits) + coreAttention;
}

double visionFlops(const VisionConfig& v, int outHidden, int64_t numPatches)
{
    if (numPatches <= 0 || v.numLayers <= 0)
        return 0.0;
    const double n = double(numPatches);
    const double h = v.hiddenSize;
    const double m2 = double(v.spatialMergeSize) * v.spatialMergeSize;
    const double blocks = 3.0 * n * v.numLayers * (8.0 * h * h + 4.0 * h * n + 4.0 * h * v.ffnHiddenSize);
    const double merged = h * m2;
    const double merger = 3.0 * (n / m2) * (2.0 * merged * merged + 2.0 * merged * outHidden);
    return blocks + merger;
}

double sampleFlops(const ModelConfig& model, int64_t imagePatches, int64_t textTokens)
{
    const int64_t merge2 = int64_t(model.vision.spatialMergeSize) * model.vision.spatialMergeSize;
    const int64_t imageTokens = merge2 > 0 ? imagePatches / merge2 : 0;
    return decoderFlops(model.decoder, {imageTokens + textTokens}) +
           visionFlops(model.vision, model.decoder.hiddenSize, imagePatches);
}

}  // namespace wb::core
