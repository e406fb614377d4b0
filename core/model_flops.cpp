// FLOPs exactly as reference/megatron-bridge.md §7 writes them, so our MFU is comparable with
// Megatron-Bridge's logged MFU. Factor 3 = forward + backward (backward = 2× forward), 2 = FMA.
#include "core/model_flops.h"

namespace wb::core {

double decoderFlops(const DecoderConfig& d, const std::vector<int64_t>& sequenceLengths)
{
    const double h = d.hiddenSize;
    const double q = double(d.numAttentionHeads) * d.kvChannels;
    const double kv = double(d.numQueryGroups) * d.kvChannels;
    const double layers = d.numLayers;
    const double swiglu = 3.0;  // gate, up and down projections
    double tokens = 0.0;
    double attentionScores = 0.0;
    for (int64_t s : sequenceLengths) {
        tokens += double(s);
        attentionScores += double(s) * double(s);
    }
    const double experts = 3.0 * 2.0 * h * (swiglu * d.moeFfnHiddenSize * d.moeRouterTopk * layers);
    const double projections = layers * 3.0 * 2.0 * (h * (q + 2.0 * kv) + q * h);
    const double logits = 3.0 * 2.0 * h * d.vocabSize;
    const double coreAttention = attentionScores * layers * 3.0 * 2.0 * q;
    return tokens * (experts + projections + logits) + coreAttention;
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
