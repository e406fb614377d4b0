// What one training sample looks like to the planner: a packed sequence of `seqLength` tokens that
// holds `imagesPerSample` images (each becoming patches/merge² decoder tokens) and text for the
// rest. Plain data; any thread.
#pragma once

#include "core/run_config.h"

#include <cstdint>

namespace wb::core::planner {

struct Workload {
    int seqLength = 4096;
    int imagesPerSample = 1;
    int imageWidth = 448;         ///< pixels; rounded down to a multiple of patch × merge
    int imageHeight = 448;
    bool mockTextOnly = false;    ///< mock data without images (the case that flatters, guide caution 1)
    /// Tokens on the most-loaded expert rank / the mean. 1.0 = forced balance (the published perf
    /// rows use moe_router_force_load_balancing); dropless routing on real data is worse.
    double routingImbalance = 1.0;

    /// Patches of one image before the merge (a still image fills the temporal patch by repetition).
    int64_t patchesPerImage(const VisionConfig& v) const
    {
        const int unit = v.patchSize * v.spatialMergeSize;
        if (unit <= 0 || imagesPerSample <= 0 || mockTextOnly)
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
    /// Images that actually reach the vision encoder per sample (0 for text-only mock data).
    int visionImagesPerSample() const { return mockTextOnly ? 0 : imagesPerSample; }
};

}  // namespace wb::core::planner
