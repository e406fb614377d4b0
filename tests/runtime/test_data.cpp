// The data path without LibTorch: PNG and JPEG decode (alpha over white), the pixel budget, a
// corrupt and a missing image skipped and counted by the loader, deterministic order, packing.
#include "check.h"

#include "runtime/data/batch_loader.h"
#include "runtime/data/image_io.h"
#include "runtime/data/manifest.h"

#include <stb_image_write.h>

#include <fstream>

using namespace wb;
namespace fs = std::filesystem;

static void writeTestImages(const fs::path& dir)
{
    // 40×30 RGBA PNG: left half opaque red, right half fully transparent (→ white).
    std::vector<uint8_t> rgba(40 * 30 * 4);
    for (int y = 0; y < 30; ++y)
        for (int x = 0; x < 40; ++x) {
            uint8_t* p = &rgba[(y * 40 + x) * 4];
            p[0] = 255; p[1] = 0; p[2] = 0; p[3] = x < 20 ? 255 : 0;
        }
    WB_CHECK(stbi_write_png((dir / "a.png").c_str(), 40, 30, 4, rgba.data(), 40 * 4));
    // 64×32 RGB JPEG, uniform blue-ish.
    std::vector<uint8_t> rgb(64 * 32 * 3);
    for (size_t i = 0; i < rgb.size(); i += 3) { rgb[i] = 20; rgb[i + 1] = 60; rgb[i + 2] = 200; }
    WB_CHECK(stbi_write_jpg((dir / "b.jpg").c_str(), 64, 32, 3, rgb.data(), 95));
    std::ofstream(dir / "corrupt.png") << "this is not a png";
    // A PNG whose header declares 16000×16000 px: 1 GB of RGBA, just under stb_image's own limit
    // (openclipart has files this large). Only the header is written: the size check must come
    // before decoding.
    const unsigned char bomb[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R',
                                  0, 0, 0x3e, 0x80, 0, 0, 0x3e, 0x80, 8, 6, 0, 0, 0, 0, 0, 0, 0};
    std::ofstream(dir / "huge.png", std::ios::binary).write(reinterpret_cast<const char*>(bomb), sizeof bomb);
}

static void testDecode(const fs::path& dir)
{
    auto png = rt::decodeImage((dir / "a.png").string());
    WB_CHECK(png.ok());
    if (png) {
        WB_CHECK(png->width == 40 && png->height == 30);
        const uint8_t* left = &png->rgb[(10 * 40 + 5) * 3];
        const uint8_t* right = &png->rgb[(10 * 40 + 35) * 3];
        WB_CHECK(left[0] == 255 && left[1] == 0 && left[2] == 0);
        WB_CHECK(right[0] == 255 && right[1] == 255 && right[2] == 255);  // transparent → white
    }
    auto jpg = rt::decodeImage((dir / "b.jpg").string());
    WB_CHECK(jpg.ok());
    if (jpg) {
        WB_CHECK(jpg->width == 64 && jpg->height == 32);
        const uint8_t* p = &jpg->rgb[(16 * 64 + 32) * 3];
        WB_CHECK(std::abs(p[0] - 20) < 8 && std::abs(p[1] - 60) < 8 && std::abs(p[2] - 200) < 8);
    }
    WB_CHECK(!rt::decodeImage((dir / "corrupt.png").string()).ok());
    WB_CHECK(!rt::decodeImage((dir / "missing.png").string()).ok());
    auto huge = rt::decodeImage((dir / "huge.png").string());
    WB_CHECK(!huge.ok() && huge.error().message.find("too large") != std::string::npos &&
             huge.error().message.find("16000") != std::string::npos);
}

static void testPixelBudget()
{
    struct Case { int w, h; int64_t minPx, maxPx; int factor; };
    const Case cases[] = {{1000, 700, 1024, 16384, 32}, {40, 30, 1024, 16384, 32}, {10, 10, 4096, 16384, 32},
                          {3000, 100, 1024, 16384, 32}, {100, 3000, 1024, 9216, 32}, {128, 128, 1024, 16384, 32},
                          {500, 400, 32 * 32, 128 * 128, 16}};
    for (const Case& c : cases) {
        int w = 0, h = 0;
        rt::fitToPixelBudget(c.w, c.h, c.minPx, c.maxPx, c.factor, w, h);
        WB_CHECK_MSG(w % c.factor == 0 && h % c.factor == 0, c.w << "×" << c.h << " → " << w << "×" << h);
        WB_CHECK_MSG(int64_t{w} * h <= c.maxPx && int64_t{w} * h >= std::min<int64_t>(c.minPx, c.maxPx),
                     c.w << "×" << c.h << " → " << w << "×" << h);
        // Aspect kept within the rounding of one factor step (unless clamped at one factor).
        if (w > c.factor && h > c.factor)
            WB_CHECK_MSG(std::fabs(double(w) / h - double(c.w) / c.h) / (double(c.w) / c.h) < 0.35,
                         c.w << "×" << c.h << " → " << w << "×" << h);
    }
    int w = 0, h = 0;
    rt::fitToPixelBudget(1000, 700, 1024, 16384, 32, w, h);
    WB_CHECK(w == 128 && h == 96);  // sqrt(700000/16384)=6.54 → 152.9×107 → floor to 128×96
    rt::RgbImage img{40, 30, std::vector<uint8_t>(40 * 30 * 3, 77)};
    rt::RgbImage resized = rt::resizeImage(img, 64, 32);
    WB_CHECK(resized.width == 64 && resized.height == 32 && resized.rgb[100] == 77);
}

static void testLoaderSkipsAndCounts(const fs::path& dir)
{
    {
        std::ofstream m(dir / "manifest.jsonl");
        m << R"({"image": "a.png", "caption": "a red square"})" << "\n"
          << R"({"image": "b.jpg", "caption": "a blue square"})" << "\n"
          << R"({"image": "corrupt.png", "caption": "broken"})" << "\n"
          << R"({"image": "missing.png", "caption": "gone"})" << "\n";
    }
    auto entries = rt::loadManifest((dir / "manifest.jsonl").string());
    WB_CHECK(entries.ok() && entries->size() == 4);
    if (!entries)
        return;
    WB_CHECK((*entries)[0].imagePath == (dir / "a.png").lexically_normal().string());
    rt::LoaderOptions o;
    o.rows = 2; o.seqLength = 64; o.patchSize = 16; o.mergeSize = 2; o.minPixels = 1024; o.maxPixels = 64 * 64;
    o.numWorkers = 2; o.prefetchBatches = 2; o.seed = 7;
    // 8 samples = two epochs; the 4 broken ones must be skipped and counted, never fatal.
    int64_t skipped = 0, images = 0, samples = 0;
    std::vector<int64_t> firstIds;
    {
        rt::BatchLoader loader(*entries, o);
        while (samples + skipped < 8) {
            auto b = loader.next();
            WB_CHECK(b.has_value());
            if (!b) break;
            if (firstIds.empty()) firstIds = b->tokenIds;
            skipped += b->skippedImages;
            images += b->images;
            samples += b->samples;
            for (const auto& w : b->warnings)
                WB_CHECK(w.find("skipped image") != std::string::npos);
            WB_CHECK(b->imageTokens + b->textTokens + b->padTokens == 2 * 64);
            for (size_t i = 0; i < b->imageGridH.size(); ++i) {
                const int64_t px = int64_t{b->imageGridH[i]} * 16 * b->imageGridW[i] * 16;
                WB_CHECK(px <= 64 * 64 && px >= 1024 && b->imageGridH[i] % 2 == 0 && b->imageGridW[i] % 2 == 0);
            }
        }
    }
    WB_CHECK_MSG(skipped >= 4, "skipped " << skipped);
    WB_CHECK(images == samples);
    // Same seed → same first micro-batch (worker scheduling must not change the order).
    rt::BatchLoader again(*entries, o);
    auto b = again.next();
    WB_CHECK(b && b->tokenIds == firstIds);
    // The mock source needs no files and makes noise images of the requested size.
    rt::LoaderOptions mock = o;
    mock.mock = true;
    mock.mockImageSize = 64;
    rt::BatchLoader mockLoader(*entries, mock);
    auto mb = mockLoader.next();
    WB_CHECK(mb && mb->skippedImages == 0 && mb->images == mb->samples && mb->imageGridH.at(0) == 4);
}

int main()
{
    const fs::path dir = test::makeTempDir("wb-runtime-data");
    writeTestImages(dir);
    testDecode(dir);
    testPixelBudget();
    testLoaderSkipsAndCounts(dir);
    fs::remove_all(dir);
    return test::checkExitCode("test_runtime_data");
}
