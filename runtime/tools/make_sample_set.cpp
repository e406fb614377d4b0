// moe-sample-set: builds a small real-image data set for moe-train from a folder of PNGs
// (Debian's openclipart-png): N images picked deterministically (sorted paths, seeded shuffle),
// copied as DIR/images/NNNNN.png, every K-th re-encoded as JPEG on white so both decoders are
// exercised, and DIR/manifest.jsonl with captions made from the category path and file name.
// Options for benchmarks: --min-side/--max-side keep only images whose sides already lie in a range
// (so a pixel budget of min-side² … max-side² only rounds them to the patch grid and every side
// stays in the range), --caption-bytes MIN:MAX lengthens each caption by repetition to a seeded
// length in [MIN, MAX] bytes (the byte tokenizer makes that the token count).
// Single-threaded command-line tool; needs no LibTorch.
//   moe-sample-set --from /usr/share/openclipart/png --out DIR [--count N] [--jpeg-every K] [--seed S]
//                  [--min-side PX] [--max-side PX] [--caption-bytes MIN:MAX]
#include "runtime/data/image_io.h"

#include <nlohmann/json.hpp>
#include <stb_image.h>
#include <stb_image_write.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// "science/medicine/siringa_architetto_franc_01.png" → "science / medicine: siringa architetto franc"
std::string captionFor(const fs::path& relative)
{
    std::string caption;
    for (auto it = relative.begin(); it != relative.end(); ++it) {
        if (std::next(it) == relative.end())
            break;
        caption += (caption.empty() ? "" : " / ") + it->string();
    }
    std::string stem = relative.stem().string();
    // Drop a trailing _NN counter; underscores and dashes become spaces.
    const size_t cut = stem.find_last_of('_');
    if (cut != std::string::npos && cut + 1 < stem.size() &&
        std::all_of(stem.begin() + static_cast<long>(cut) + 1, stem.end(), [](unsigned char c) { return std::isdigit(c); }))
        stem.erase(cut);
    std::replace(stem.begin(), stem.end(), '_', ' ');
    std::replace(stem.begin(), stem.end(), '-', ' ');
    return caption.empty() ? stem : caption + ": " + stem;
}

// Repeats `caption` (" | " between copies) up to `bytes`, cut at a UTF-8 character boundary.
std::string lengthened(const std::string& caption, size_t bytes)
{
    std::string out = caption;
    while (!caption.empty() && out.size() < bytes)
        out += " | " + caption;
    if (out.size() > bytes) {
        size_t cut = bytes;
        while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80)
            --cut;
        out.resize(cut);
    }
    return out;
}

int fail(const std::string& message)
{
    std::cerr << "moe-sample-set: " << message << "\n";
    return 2;
}

}  // namespace

int main(int argc, char** argv)
{
    std::string from, out;
    long count = 200, jpegEvery = 5;
    unsigned long long seed = 1234;
    int minSide = 0, maxSide = 0;
    long captionMin = 0, captionMax = 0;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool hasValue = i + 1 < argc;
        if (a == "--help" || a == "-h") {
            std::printf("moe-sample-set: builds the workbench's sample data set from real images: resized PNG and\n"
                        "JPEG copies of the images in DIR and a manifest.jsonl ({\"image\", \"caption\"}) for\n"
                        "moe-train's loader.\n\n"
                        "usage: moe-sample-set --from DIR --out DIR [--count N] [--jpeg-every K] [--seed S]\n"
                        "                      [--min-side PX] [--max-side PX] [--caption-bytes MIN:MAX]\n"
                        "       moe-sample-set --version | --help\n");
            return 0;
        }
        if (a == "--version") {
            std::printf("moe-sample-set %s\n", WB_RUNTIME_VERSION);
            return 0;
        }
        if (a == "--from" && hasValue) from = argv[++i];
        else if (a == "--out" && hasValue) out = argv[++i];
        else if (a == "--count" && hasValue) count = std::stol(argv[++i]);
        else if (a == "--jpeg-every" && hasValue) jpegEvery = std::stol(argv[++i]);
        else if (a == "--seed" && hasValue) seed = std::stoull(argv[++i]);
        else if (a == "--min-side" && hasValue) minSide = std::stoi(argv[++i]);
        else if (a == "--max-side" && hasValue) maxSide = std::stoi(argv[++i]);
        else if (a == "--caption-bytes" && hasValue && std::sscanf(argv[i + 1], "%ld:%ld", &captionMin, &captionMax) == 2 &&
                 captionMin > 0 && captionMax >= captionMin) ++i;
        else
            return fail("usage: moe-sample-set --from DIR --out DIR [--count N] [--jpeg-every K] [--seed S]"
                        " [--min-side PX] [--max-side PX] [--caption-bytes MIN:MAX] (bad argument " + a + ")");
    }
    if (from.empty() || out.empty())
        return fail("--from and --out are required");
    std::error_code ec;
    if (!fs::is_directory(from, ec))
        return fail(from + " is not a folder of PNG images; install openclipart-png: apt-get install openclipart-png");

    std::vector<fs::path> pngs;
    for (auto it = fs::recursive_directory_iterator(from, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (ec)
            break;
        if (it->is_regular_file(ec) && it->path().extension() == ".png")
            pngs.push_back(fs::relative(it->path(), from));
    }
    if (pngs.empty())
        return fail("no .png files under " + from + "; install openclipart-png: apt-get install openclipart-png");
    std::sort(pngs.begin(), pngs.end());
    std::mt19937_64 rng(seed);  // own Fisher–Yates: std::shuffle's algorithm is not portable
    for (size_t i = pngs.size(); i > 1; --i)
        std::swap(pngs[i - 1], pngs[rng() % i]);
    // Header read only (stbi_info), in shuffled order. Besides the optional side range, files that
    // are unreadable or huge are left out: openclipart ships a few PNGs of hundreds of megapixels,
    // which a sample set for a laptop should not make every epoch decode.
    {
        constexpr int64_t kSampleMaxPixels = 16'000'000;
        std::vector<fs::path> kept;
        for (const auto& png : pngs) {
            int w = 0, h = 0, channels = 0;
            if (!stbi_info((fs::path(from) / png).c_str(), &w, &h, &channels))
                continue;
            if (static_cast<int64_t>(w) * h > kSampleMaxPixels)
                continue;
            if (std::min(w, h) >= minSide && (maxSide <= 0 || std::max(w, h) <= maxSide))
                kept.push_back(png);
            if (static_cast<long>(kept.size()) >= count)
                break;
        }
        pngs = std::move(kept);
        if (pngs.empty())
            return fail("no readable image under " + from + " of at most 16 Mpx" +
                        (minSide > 0 || maxSide > 0 ? " with both sides in [" + std::to_string(minSide) + ", " +
                                                          std::to_string(maxSide) + "] px" : std::string()));
    }
    pngs.resize(std::min<size_t>(pngs.size(), static_cast<size_t>(std::max(1L, count))));
    std::mt19937_64 captionRng(seed + 1);

    fs::create_directories(fs::path(out) / "images", ec);
    if (ec)
        return fail("cannot create " + out + "/images: " + ec.message());
    std::ofstream manifest(fs::path(out) / "manifest.jsonl", std::ios::trunc);
    long written = 0, jpegs = 0;
    for (size_t i = 0; i < pngs.size(); ++i) {
        char name[32];
        const bool asJpeg = jpegEvery > 0 && (i + 1) % static_cast<size_t>(jpegEvery) == 0;
        std::snprintf(name, sizeof name, "%05zu.%s", i, asJpeg ? "jpg" : "png");
        const fs::path source = fs::path(from) / pngs[i];
        const fs::path target = fs::path(out) / "images" / name;
        if (asJpeg) {
            auto image = wb::rt::decodeImage(source.string());  // alpha composited over white
            if (!image || !stbi_write_jpg(target.c_str(), image->width, image->height, 3, image->rgb.data(), 90)) {
                std::cerr << "moe-sample-set: skipping " << source << " (cannot re-encode)\n";
                continue;
            }
            ++jpegs;
        } else {
            fs::copy_file(source, target, fs::copy_options::overwrite_existing, ec);
            if (ec) {
                std::cerr << "moe-sample-set: skipping " << source << " (" << ec.message() << ")\n";
                continue;
            }
        }
        std::string caption = captionFor(pngs[i]);
        if (captionMax > 0)
            caption = lengthened(caption, static_cast<size_t>(captionMin + static_cast<long>(captionRng() % static_cast<unsigned long long>(captionMax - captionMin + 1))));
        manifest << nlohmann::json{{"image", std::string("images/") + name}, {"caption", caption}}.dump() << "\n";
        ++written;
    }
    std::cout << "moe-sample-set: " << written << " images (" << jpegs << " as JPEG) → "
              << (fs::path(out) / "manifest.jsonl").string() << "\n";
    return written > 0 ? 0 : 1;
}
