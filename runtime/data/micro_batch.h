// What the loader hands the trainer: one micro-batch of packed samples as plain arrays (no
// LibTorch here, so the data path compiles and tests fast; the trainer wraps them with from_blob).
// Layout per packed sample: [image tokens][caption bytes][eos], or [bos][caption][eos] without an
// image. Samples are packed into `rows` sequences of `seqLength` tokens; the rest is padding.
#pragma once

#include "runtime/data/image_io.h"

#include <cstdint>
#include <string>
#include <vector>

namespace wb::rt {

/// One sample after decode, before packing (produced by a loader worker).
struct PreparedSample {
    int64_t seq = 0;            ///< position in the deterministic sample stream
    bool hasImage = false;
    bool skipped = false;       ///< the image was missing or corrupt: the sample is dropped
    std::string warning;        ///< why it was skipped
    ImagePatches image;
    std::vector<int64_t> caption;  ///< caption bytes, no specials
};

struct MicroBatch {
    int rows = 0;
    int seqLength = 0;
    // Per token, rows × seqLength, row-major.
    std::vector<int64_t> tokenIds;  ///< image tokens carry kImageId, padding kPadId
    std::vector<int64_t> labels;    ///< next-token target, kIgnoreLabel except before caption/eos tokens
    std::vector<int32_t> docIds;    ///< packed-sample index inside the micro-batch; −1 = padding
    std::vector<int64_t> pos1d;     ///< position inside the sample (1-D RoPE)
    std::vector<int64_t> pos3;      ///< 3 planes (t, h, w) of rows × seqLength (M-RoPE)
    // Vision, all images of the micro-batch packed; image order = order of their tokens in the rows.
    /// totalPatches × pixelDim raw bytes of one frame (ImagePatches::pixels); toTensors makes the
    /// model's values on the device (byte / 127.5 − 1, frame repeated temporalPatchSize times).
    std::vector<uint8_t> patchPixels;
    int temporalPatchSize = 1;
    std::vector<int32_t> patchImage;  ///< image index of each patch
    std::vector<int32_t> patchRow, patchCol;
    std::vector<int32_t> imageGridH, imageGridW;  ///< per image, in patches
    std::vector<int64_t> sampleLengths;  ///< tokens of each packed sample (block-diagonal attention)
    int64_t images = 0;
    int64_t imageTokens = 0;
    int64_t textTokens = 0;
    int64_t padTokens = 0;
    int64_t skippedImages = 0;
    int64_t samples = 0;
    int64_t nextSampleSeq = 0;  ///< first stream position not in this or an earlier micro-batch
    std::vector<std::string> warnings;  ///< skip reasons (the trainer turns the first few into events)

    int64_t totalPatches() const { return static_cast<int64_t>(patchImage.size()); }
};

}  // namespace wb::rt
