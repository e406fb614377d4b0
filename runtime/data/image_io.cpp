// Image decode, resize and patchify (see image_io.h). The stb implementations live in this one
// translation unit (header-only libraries; the Debian libstb.so is not needed on GPU nodes).
#include "runtime/data/image_io.h"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wall"
#pragma GCC diagnostic ignored "-Wextra"
#pragma GCC diagnostic ignored "-Wpedantic"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image.h>
#include <stb_image_write.h>
#pragma GCC diagnostic pop

#include <algorithm>
#include <cmath>
#include <memory>

namespace wb::rt {

core::Result<RgbImage> decodeImage(const std::string& path)
{
    int w = 0, h = 0, channels = 0;
    // The header first: a legitimate-looking PNG can declare 25000×25000 px (openclipart has
    // such files), 2.5 GB once decoded. Refuse it before allocating; the loader counts it as a
    // skipped image like a corrupt one.
    if (stbi_info(path.c_str(), &w, &h, &channels) &&
        static_cast<int64_t>(w) * h > kMaxDecodePixels)
        return core::makeError(core::ErrorCode::InvalidArgument,
                               "image too large to decode: " + std::to_string(w) + "×" + std::to_string(h) +
                                   " px (limit " + std::to_string(kMaxDecodePixels / 1'000'000) +
                                   " Mpx); downscale it in the data set",
                               path);
    std::unique_ptr<stbi_uc, void (*)(void*)> pixels(stbi_load(path.c_str(), &w, &h, &channels, 4),
                                                     stbi_image_free);
    if (!pixels) {
        const char* why = stbi_failure_reason();
        return core::makeError(core::ErrorCode::Corrupt,
                               std::string("cannot decode image: ") + (why ? why : "unknown"), path);
    }
    RgbImage image;
    image.width = w;
    image.height = h;
    image.rgb.resize(static_cast<size_t>(w) * h * 3);
    const stbi_uc* src = pixels.get();
    for (size_t i = 0, n = static_cast<size_t>(w) * h; i < n; ++i) {
        const int alpha = src[4 * i + 3];
        for (int c = 0; c < 3; ++c)  // composite over white: c·a + 255·(1 − a)
            image.rgb[3 * i + c] =
                static_cast<uint8_t>((src[4 * i + c] * alpha + 255 * (255 - alpha) + 127) / 255);
    }
    return image;
}

void fitToPixelBudget(int width, int height, int64_t minPixels, int64_t maxPixels, int factor,
                      int& outWidth, int& outHeight)
{
    // Qwen2-VL's smart_resize: round to the factor, then scale down (floor) or up (ceil) by the
    // square root of the pixel ratio so the budget holds after rounding.
    const double w = std::max(1, width), h = std::max(1, height);
    auto roundTo = [factor](double v) { return std::max(factor, static_cast<int>(std::lround(v / factor)) * factor); };
    auto floorTo = [factor](double v) { return std::max(factor, static_cast<int>(std::floor(v / factor)) * factor); };
    auto ceilTo = [factor](double v) { return std::max(factor, static_cast<int>(std::ceil(v / factor)) * factor); };
    int ow = roundTo(w), oh = roundTo(h);
    if (static_cast<int64_t>(ow) * oh > maxPixels) {
        const double beta = std::sqrt(w * h / static_cast<double>(maxPixels));
        ow = floorTo(w / beta);
        oh = floorTo(h / beta);
    } else if (static_cast<int64_t>(ow) * oh < minPixels) {
        const double beta = std::sqrt(static_cast<double>(minPixels) / (w * h));
        ow = ceilTo(w * beta);
        oh = ceilTo(h * beta);
    }
    // Very elongated images can still overflow after flooring one side to the minimum factor.
    while (static_cast<int64_t>(ow) * oh > maxPixels && (ow > factor || oh > factor)) {
        if (ow >= oh) ow -= factor; else oh -= factor;
    }
    outWidth = ow;
    outHeight = oh;
}

namespace {

// One axis of the resampling: for each output coordinate, source indices and weights.
struct AxisTaps {
    std::vector<int> first;
    std::vector<std::vector<float>> weights;
};

AxisTaps makeTaps(int in, int out)
{
    AxisTaps taps;
    taps.first.resize(out);
    taps.weights.resize(out);
    const double scale = static_cast<double>(in) / out;
    for (int o = 0; o < out; ++o) {
        if (scale > 1.0) {  // shrink: average the covered source interval (box filter)
            const double lo = o * scale, hi = (o + 1) * scale;
            const int i0 = static_cast<int>(std::floor(lo));
            const int i1 = std::min(in, static_cast<int>(std::ceil(hi)));
            taps.first[o] = i0;
            double sum = 0.0;
            for (int i = i0; i < i1; ++i) {
                const double wgt = std::min<double>(hi, i + 1) - std::max<double>(lo, i);
                taps.weights[o].push_back(static_cast<float>(wgt));
                sum += wgt;
            }
            for (float& wgt : taps.weights[o]) wgt = static_cast<float>(wgt / sum);
        } else {  // enlarge: bilinear between the two nearest source centres
            const double x = std::clamp((o + 0.5) * scale - 0.5, 0.0, in - 1.0);
            const int i0 = std::min(static_cast<int>(std::floor(x)), in - 1);
            const int i1 = std::min(i0 + 1, in - 1);
            const float t = static_cast<float>(x - i0);
            taps.first[o] = i0;
            taps.weights[o] = i1 == i0 ? std::vector<float>{1.0f} : std::vector<float>{1.0f - t, t};
        }
    }
    return taps;
}

}  // namespace

RgbImage resizeImage(const RgbImage& image, int width, int height)
{
    if (image.width == width && image.height == height)
        return image;
    const AxisTaps tx = makeTaps(image.width, width), ty = makeTaps(image.height, height);
    // Separable: horizontal pass into a float buffer, then vertical.
    std::vector<float> rows(static_cast<size_t>(image.height) * width * 3);
    for (int y = 0; y < image.height; ++y)
        for (int x = 0; x < width; ++x)
            for (int c = 0; c < 3; ++c) {
                float acc = 0.0f;
                for (size_t k = 0; k < tx.weights[x].size(); ++k)
                    acc += tx.weights[x][k] * image.rgb[(static_cast<size_t>(y) * image.width + tx.first[x] + k) * 3 + c];
                rows[(static_cast<size_t>(y) * width + x) * 3 + c] = acc;
            }
    RgbImage out;
    out.width = width;
    out.height = height;
    out.rgb.resize(static_cast<size_t>(width) * height * 3);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x)
            for (int c = 0; c < 3; ++c) {
                float acc = 0.0f;
                for (size_t k = 0; k < ty.weights[y].size(); ++k)
                    acc += ty.weights[y][k] * rows[((ty.first[y] + k) * width + x) * 3 + c];
                out.rgb[(static_cast<size_t>(y) * width + x) * 3 + c] =
                    static_cast<uint8_t>(std::clamp(std::lround(acc), 0L, 255L));
            }
    return out;
}

ImagePatches patchify(const RgbImage& image, int patchSize, int temporalPatchSize, int mergeSize)
{
    ImagePatches out;
    out.gridH = image.height / patchSize;
    out.gridW = image.width / patchSize;
    out.temporalPatchSize = temporalPatchSize;
    out.pixels.reserve(static_cast<size_t>(out.numPatches()) * pixelDim(patchSize));
    for (int mr = 0; mr < out.gridH / mergeSize; ++mr)
        for (int mc = 0; mc < out.gridW / mergeSize; ++mc)
            for (int ir = 0; ir < mergeSize; ++ir)
                for (int ic = 0; ic < mergeSize; ++ic) {
                    const int row = mr * mergeSize + ir, col = mc * mergeSize + ic;
                    out.patchRow.push_back(row);
                    out.patchCol.push_back(col);
                    for (int c = 0; c < 3; ++c)
                        for (int y = 0; y < patchSize; ++y)
                            for (int x = 0; x < patchSize; ++x) {
                                const size_t px = (static_cast<size_t>(row * patchSize + y) * image.width +
                                                   col * patchSize + x) * 3 + c;
                                out.pixels.push_back(image.rgb[px]);
                            }
                }
    return out;
}

const std::vector<float>& patchByteValues()
{
    static const std::vector<float> table = [] {
        std::vector<float> lut(256);
        for (int i = 0; i < 256; ++i)
            lut[static_cast<size_t>(i)] = static_cast<float>(i) / 127.5f - 1.0f;
        return lut;
    }();
    return table;
}

std::vector<float> patchValues(const uint8_t* pixels, int64_t count, int patchSize, int temporalPatchSize)
{
    const auto& lut = patchByteValues();
    const int64_t plane = int64_t{patchSize} * patchSize;
    std::vector<float> out;
    out.reserve(static_cast<size_t>(count * 3 * temporalPatchSize * plane));
    for (int64_t p = 0; p < count; ++p)
        for (int c = 0; c < 3; ++c)
            for (int t = 0; t < temporalPatchSize; ++t)
                for (int64_t i = 0; i < plane; ++i)
                    out.push_back(lut[pixels[(p * 3 + c) * plane + i]]);
    return out;
}

}  // namespace wb::rt
