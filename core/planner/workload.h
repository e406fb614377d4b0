// What one training sample looks like to the planner: a packed sequence of `seqLength` tokens that
// holds `imagesPerSample` images (each becoming patches/merge² decoder tokens) and text for the
// rest. Plain data; any thread.
#pragma once

#include "core/run_config.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace wb::core::planner {

/// The packed shape of a dataset as the runtime's loader packs it, per sequence of seqLength
/// tokens (means over the sequences measured): `moe-train --data-stats` prints it (format
/// "moe-train-workload", parsed by parsePackedShape in prediction.h). Real data packs several
/// samples per sequence — the sample set of docs/benchmarks.md ≈ 10 images of varied size per
/// 4096 tokens — so images, patches and the attention cost differ from one image of the largest
/// size per sequence, the planner's default.
struct PackedShape {
    double images = 0;               ///< images reaching the vision encoder
    double patches = 0;              ///< their patches before the merge (sum)
    double patchesSquared = 0;       ///< sum over images of patches² (per-image vision attention)
    double imageTokens = 0;
    double textTokens = 0;           ///< caption and special tokens (the labelled ones)
    double padTokens = 0;
    double samples = 0;              ///< packed samples
    double sampleTokensSquared = 0;  ///< sum over samples of length² (block-diagonal attention)
    std::string source;              ///< what was measured ("moe-train --data-stats on FILE")
    bool measured() const { return samples > 0; }
    double effectiveTokens() const { return imageTokens + textTokens; }
};

struct Workload {
    int seqLength = 4096;
    int imagesPerSample = 1;
    int imageWidth = 448;         ///< pixels; rounded down to a multiple of patch × merge
    int imageHeight = 448;
    bool mockTextOnly = false;    ///< mock data without images (the case that flatters, guide caution 1)
    /// Mock data (the guide's caution 1: the plan says so loudly); what the mock samples look like
    /// is in the other fields (mockWorkload in throughput_model.h: Bridge's or moe-train's).
    bool mock = false;
    /// Adam moments stored in bf16 (Megatron's precision-aware optimizer: exp_avg_dtype and
    /// exp_avg_sq_dtype bf16, master weights and grads fp32): optimizer state 8 instead of 12 bytes
    /// per parameter. Needs the distributed optimizer (or Megatron FSDP) in Megatron.
    bool bf16AdamMoments = false;
    /// Tokens on the most-loaded expert rank / the mean, as an explicit factor (memory model and
    /// throughput model). 1.0 = no extra factor.
    double routingImbalance = 1.0;
    /// The published perf rows use moe_router_force_load_balancing: every expert gets the same
    /// tokens. Without it (real training, dropless), the throughput model adds the statistical
    /// imbalance of `expertRankImbalance`.
    bool forceBalancedRouting = false;
    /// Coefficient of variation of one expert's load around the mean with an aux-loss-balanced
    /// router on real data (assumption: 0.3 — aux-loss 1e-3 keeps experts within tens of percent).
    double expertLoadCv = 0.3;
    /// The measured packed shape (when measured() it replaces imagesPerSample × the image size,
    /// one sample per sequence, for FLOPs and time; mockTextOnly still drops the images).
    PackedShape packed;

    /// Load of the most-loaded of `ep` expert ranks / the mean, dropless. A rank holds E/EP experts,
    /// so its load's CV is cv/√(E/EP) (independent experts, assumption); the maximum of EP such
    /// loads sits about √(2 ln EP) standard deviations above the mean (Gaussian extreme value).
    /// EP 8 of 128 experts → ≈1.15, EP 64 → ≈1.6. Times `routingImbalance`.
    double expertRankImbalance(int ep, int experts) const
    {
        double r = routingImbalance;
        if (!forceBalancedRouting && ep > 1 && experts > 0) {
            const double cvRank = expertLoadCv / std::sqrt(double(experts) / ep);
            r *= 1.0 + cvRank * std::sqrt(2.0 * std::log(double(ep)));
        }
        return r;
    }

    /// Patches of one image before the merge (a still image fills the temporal patch by repetition).
    /// A text-only model (no vision layers: Qwen3-30B-A3B) sees no images, whatever the data.
    int64_t patchesPerImage(const VisionConfig& v) const
    {
        const int unit = v.patchSize * v.spatialMergeSize;
        if (unit <= 0 || imagesPerSample <= 0 || mockTextOnly || v.numLayers <= 0)
            return 0;
        const int64_t w = imageWidth / unit * v.spatialMergeSize;
        const int64_t h = imageHeight / unit * v.spatialMergeSize;
        return w * h;
    }
    int64_t imageTokensPerImage(const VisionConfig& v) const
    {
        const int64_t m2 = int64_t(v.spatialMergeSize) * v.spatialMergeSize;
        return m2 > 0 ? patchesPerImage(v) / m2 : 0;
    }
    int64_t imageTokensPerSample(const VisionConfig& v) const
    {
        return mockTextOnly ? 0 : imageTokensPerImage(v) * imagesPerSample;
    }
    /// Patches (before the merge) of all images of one sample / packed sequence.
    double visionPatchesPerSample(const VisionConfig& v) const
    {
        return mockTextOnly ? 0.0 : packed.measured() ? packed.patches : double(imagesPerSample) * double(patchesPerImage(v));
    }
    /// Images that actually reach the vision encoder per sample (0 for text-only mock data).
    double visionImagesPerSample() const
    {
        return mockTextOnly ? 0.0 : packed.measured() ? packed.images : double(imagesPerSample);
    }
};

/// The workload as model `m` sees it: a text-only model (no vision layers: Qwen3-30B-A3B) takes
/// no images, so its samples are all text whatever the data's images.
inline Workload workloadSeenBy(Workload w, const ModelConfig& m)
{
    if (m.vision.numLayers <= 0) {
        w.imagesPerSample = 0;
        w.packed.images = w.packed.patches = w.packed.patchesSquared = 0;
    }
    return w;
}

}  // namespace wb::core::planner
