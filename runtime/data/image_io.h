// Image decode (stb_image: PNG, JPEG, ...), aspect-keeping resize into a pixel budget, and
// patchification into the vision encoder's input layout. Pure functions; any thread.
#pragma once

#include "core/result.h"

#include <cstdint>
#include <string>
#include <vector>

namespace wb::rt {

struct RgbImage {
    int width = 0;
    int height = 0;
    std::vector<uint8_t> rgb;  ///< height*width*3, row-major, alpha already composited over white
};

/// Patches of one image, ordered so that every spatialMerge×spatialMerge group of neighbouring
/// patches is contiguous (groups row-major over the merged grid, patches row-major inside a group):
/// the projector then merges by a plain reshape.
struct ImagePatches {
    int gridH = 0;                   ///< patches per column (height / patchSize)
    int gridW = 0;                   ///< patches per row
    /// numPatches × pixelDim raw RGB bytes of ONE frame, patch = [channel][y][x]. The model sees
    /// value = byte / 127.5 − 1 with the still frame repeated temporalPatchSize times
    /// (patchValues()); keeping bytes of one frame makes the host→device upload 8× smaller than
    /// fp32 values of every frame (the vision phase on the GPU was dominated by that copy).
    std::vector<uint8_t> pixels;
    int temporalPatchSize = 1;
    std::vector<int32_t> patchRow;   ///< row of each patch in the patch grid
    std::vector<int32_t> patchCol;
    int64_t numPatches() const { return static_cast<int64_t>(gridH) * gridW; }
};

/// Largest image decodeImage accepts (w×h): 64 Mpx, i.e. 256 MB of RGBA while decoding.
inline constexpr int64_t kMaxDecodePixels = 64'000'000;

/// Decodes a file; alpha is composited over white. Error if missing, undecodable, or larger
/// than kMaxDecodePixels (checked from the header, before anything is allocated).
core::Result<RgbImage> decodeImage(const std::string& path);

/// Target size keeping the aspect ratio: both sides multiples of `factor`, and
/// minPixels <= w*h <= maxPixels whenever a multiple-of-factor size can satisfy it.
void fitToPixelBudget(int width, int height, int64_t minPixels, int64_t maxPixels, int factor,
                      int& outWidth, int& outHeight);

/// Area-average when shrinking, bilinear when enlarging (per axis).
RgbImage resizeImage(const RgbImage& image, int width, int height);

/// Cuts patches of patchSize² pixels (one frame; the model repeats it over temporalPatchSize
/// frames). Width and height must be multiples of patchSize × mergeSize.
ImagePatches patchify(const RgbImage& image, int patchSize, int temporalPatchSize, int mergeSize);

/// Values per patch the model sees: 3 × temporalPatchSize × patchSize².
inline int patchDim(int patchSize, int temporalPatchSize) { return 3 * temporalPatchSize * patchSize * patchSize; }
/// Bytes per patch as stored (one frame): 3 × patchSize².
inline int pixelDim(int patchSize) { return 3 * patchSize * patchSize; }

/// value(byte) = byte / 127.5 − 1 in fp32, as a 256-entry table: the one definition the host
/// reference, the device upload (toTensors) and batch dumps use, so every path has the same bits.
const std::vector<float>& patchByteValues();

/// The model's input for `count` patches of one-frame bytes: numPatches × patchDim floats,
/// [channel][frame][y][x], value = byte / 127.5 − 1 (the reference the device path must equal).
std::vector<float> patchValues(const uint8_t* pixels, int64_t count, int patchSize, int temporalPatchSize);
inline std::vector<float> patchValues(const ImagePatches& p, int patchSize)
{
    return patchValues(p.pixels.data(), p.numPatches(), patchSize, p.temporalPatchSize);
}

}  // namespace wb::rt
