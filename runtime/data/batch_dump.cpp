// Batch dumps (see batch_dump.h for the format).
#include "runtime/data/batch_dump.h"

#include "runtime/data/batch_loader.h"
#include "runtime/data/image_io.h"
#include "runtime/data/manifest.h"

#include <nlohmann/json.hpp>

#include <bit>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

namespace wb::rt {

// The files are defined as little-endian; the arrays are written straight from memory.
static_assert(std::endian::native == std::endian::little, "batch dumps are written on little-endian hosts only");

namespace {

constexpr int64_t kAlign = 64;

template <typename T>
const char* dtypeName();
template <>
const char* dtypeName<int64_t>() { return "int64"; }
template <>
const char* dtypeName<int32_t>() { return "int32"; }
template <>
const char* dtypeName<float>() { return "float32"; }
template <>
const char* dtypeName<uint8_t>() { return "uint8"; }

std::string batchFileName(size_t index)
{
    char name[32];
    std::snprintf(name, sizeof name, "batch_%04zu.bin", index);
    return name;
}

// Appends one array to the batch's byte buffer (64-byte aligned) and records it in the index.
class ArrayWriter {
public:
    template <typename T>
    void add(const std::string& name, const std::vector<T>& values, std::vector<int64_t> shape)
    {
        int64_t count = 1;
        for (int64_t d : shape)
            count *= d;
        // A bug, not an input error: the packer's arrays always match their shapes.
        if (count != static_cast<int64_t>(values.size()))
            throw std::logic_error("batch dump: array " + name + " has " + std::to_string(values.size()) +
                                   " values for a shape of " + std::to_string(count));
        const int64_t offset = (static_cast<int64_t>(m_bytes.size()) + kAlign - 1) / kAlign * kAlign;
        const int64_t bytes = count * static_cast<int64_t>(sizeof(T));
        m_bytes.resize(static_cast<size_t>(offset + bytes), 0);
        if (bytes > 0)
            std::memcpy(m_bytes.data() + offset, values.data(), static_cast<size_t>(bytes));
        m_index[name] = {{"dtype", dtypeName<T>()}, {"shape", shape}, {"offset", offset}, {"bytes", bytes}};
    }
    const std::vector<char>& bytes() const { return m_bytes; }
    const nlohmann::json& index() const { return m_index; }

private:
    std::vector<char> m_bytes;
    nlohmann::json m_index = nlohmann::json::object();
};

// Reads one array back, checking dtype, byte count and (where the reader knows it) the shape.
class ArrayReader {
public:
    ArrayReader(const std::string& path, std::vector<char> bytes, const nlohmann::json& arrays)
        : m_path(path), m_bytes(std::move(bytes)), m_arrays(arrays)
    {
    }

    template <typename T>
    std::vector<T> get(const std::string& name, std::vector<int64_t>& shape)
    {
        if (!m_arrays.contains(name))
            throw std::runtime_error("array '" + name + "' is missing from the index");
        const auto& a = m_arrays.at(name);
        if (a.at("dtype").get<std::string>() != dtypeName<T>())
            throw std::runtime_error("array '" + name + "' is " + a.at("dtype").get<std::string>() + ", expected " +
                                     dtypeName<T>());
        shape = a.at("shape").get<std::vector<int64_t>>();
        int64_t count = 1;
        for (int64_t d : shape) {
            if (d < 0)
                throw std::runtime_error("array '" + name + "' has a negative dimension");
            count *= d;
        }
        const int64_t offset = a.at("offset").get<int64_t>();
        const int64_t bytes = count * static_cast<int64_t>(sizeof(T));
        if (a.at("bytes").get<int64_t>() != bytes)
            throw std::runtime_error("array '" + name + "': its byte count does not match its shape");
        if (offset < 0 || offset + bytes > static_cast<int64_t>(m_bytes.size()))
            throw std::runtime_error("array '" + name + "' reaches past the end of " + m_path +
                                     " (truncated file?)");
        std::vector<T> out(static_cast<size_t>(count));
        if (bytes > 0)
            std::memcpy(out.data(), m_bytes.data() + offset, static_cast<size_t>(bytes));
        return out;
    }

private:
    std::string m_path;
    std::vector<char> m_bytes;
    const nlohmann::json& m_arrays;
};

void expectShape(const std::string& name, const std::vector<int64_t>& shape, const std::vector<int64_t>& expected)
{
    if (shape != expected)
        throw std::runtime_error("array '" + name + "' has shape " + nlohmann::json(shape).dump() + ", expected " +
                                 nlohmann::json(expected).dump());
}

}  // namespace

core::Result<void> writeBatchDump(const std::string& dir, const std::string& configJson,
                                  const std::vector<MicroBatch>& batches)
{
    namespace fs = std::filesystem;
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec)
        return core::makeError(core::ErrorCode::IoError, "cannot create the dump directory: " + ec.message(), dir);
    nlohmann::json index;
    index["format"] = "moe-train-batch-dump";
    index["version"] = kBatchDumpVersion;
    index["byte_order"] = "little";
    index["config"] = nlohmann::json::parse(configJson, nullptr, /*allow_exceptions=*/false);
    index["batches"] = nlohmann::json::array();
    for (size_t i = 0; i < batches.size(); ++i) {
        const MicroBatch& b = batches[i];
        const int64_t B = b.rows, T = b.seqLength, P = b.totalPatches();
        // One frame of raw bytes per patch + the byte→value table: the model's input is
        // byte_values[patch_pixels] with the frame repeated temporal_patch_size times (toTensors).
        const int64_t C = P > 0 ? static_cast<int64_t>(b.patchPixels.size()) / P : 0;
        const auto I = static_cast<int64_t>(b.imageGridH.size());
        ArrayWriter w;
        w.add("token_ids", b.tokenIds, {B, T});
        w.add("labels", b.labels, {B, T});
        w.add("doc_ids", b.docIds, {B, T});
        w.add("pos1d", b.pos1d, {B, T});
        w.add("pos3", b.pos3, {3, B, T});
        w.add("patch_pixels", b.patchPixels, {P, C});
        w.add("byte_values", patchByteValues(), {256});
        w.add("patch_image", b.patchImage, {P});
        w.add("patch_row", b.patchRow, {P});
        w.add("patch_col", b.patchCol, {P});
        w.add("image_grid_h", b.imageGridH, {I});
        w.add("image_grid_w", b.imageGridW, {I});
        w.add("sample_lengths", b.sampleLengths, {static_cast<int64_t>(b.sampleLengths.size())});
        const std::string file = batchFileName(i);
        {
            std::ofstream out(dir + "/" + file, std::ios::binary | std::ios::trunc);
            out.write(w.bytes().data(), static_cast<std::streamsize>(w.bytes().size()));
            if (!out)
                return core::makeError(core::ErrorCode::IoError, "cannot write the batch file (disk full?)",
                                       dir + "/" + file);
        }
        index["batches"].push_back({{"file", file}, {"rows", B}, {"seq_length", T}, {"images", b.images}, {"temporal_patch_size", b.temporalPatchSize},
                                    {"image_tokens", b.imageTokens}, {"text_tokens", b.textTokens},
                                    {"pad_tokens", b.padTokens}, {"samples", b.samples},
                                    {"skipped_images", b.skippedImages}, {"next_sample_seq", b.nextSampleSeq},
                                    {"arrays", w.index()}});
    }
    std::ofstream out(dir + "/index.json", std::ios::trunc);
    out << index.dump(1) << "\n";
    if (!out)
        return core::makeError(core::ErrorCode::IoError, "cannot write the dump index", dir + "/index.json");
    return {};
}

core::Result<std::vector<MicroBatch>> readBatchDump(const std::string& dir)
{
    const std::string indexPath = dir + "/index.json";
    std::ifstream in(indexPath);
    if (!in)
        return core::makeError(core::ErrorCode::NotFound,
                               "no batch dump index here: write one with moe-train --config RUN.json "
                               "--dump-batches DIR --dump-count N",
                               indexPath);
    nlohmann::json index = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (index.is_discarded() || !index.is_object() || index.value("format", "") != "moe-train-batch-dump")
        return core::makeError(core::ErrorCode::Corrupt, "not a moe-train batch dump index (bad JSON or format)",
                               indexPath);
    if (index.value("version", 0) > kBatchDumpVersion)
        return core::makeError(core::ErrorCode::Incompatible,
                               "dump version " + std::to_string(index.value("version", 0)) +
                                   " is newer than this reader (" + std::to_string(kBatchDumpVersion) +
                                   "): re-dump with this moe-train",
                               indexPath);
    std::vector<MicroBatch> out;
    std::string where = indexPath;
    try {
        for (const auto& entry : index.at("batches")) {
            where = dir + "/" + entry.at("file").get<std::string>();
            std::ifstream file(where, std::ios::binary);
            if (!file)
                throw std::runtime_error("the batch file is missing");
            std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
            ArrayReader r(where, std::move(bytes), entry.at("arrays"));
            MicroBatch b;
            b.rows = entry.at("rows").get<int>();
            b.seqLength = entry.at("seq_length").get<int>();
            const std::vector<int64_t> BT{b.rows, b.seqLength};
            std::vector<int64_t> shape;
            b.tokenIds = r.get<int64_t>("token_ids", shape);
            expectShape("token_ids", shape, BT);
            b.labels = r.get<int64_t>("labels", shape);
            expectShape("labels", shape, BT);
            b.docIds = r.get<int32_t>("doc_ids", shape);
            expectShape("doc_ids", shape, BT);
            b.pos1d = r.get<int64_t>("pos1d", shape);
            expectShape("pos1d", shape, BT);
            b.pos3 = r.get<int64_t>("pos3", shape);
            expectShape("pos3", shape, {3, b.rows, b.seqLength});
            b.patchPixels = r.get<uint8_t>("patch_pixels", shape);
            const int64_t P = shape.empty() ? 0 : shape[0];
            b.patchImage = r.get<int32_t>("patch_image", shape);
            expectShape("patch_image", shape, {P});
            b.patchRow = r.get<int32_t>("patch_row", shape);
            expectShape("patch_row", shape, {P});
            b.patchCol = r.get<int32_t>("patch_col", shape);
            expectShape("patch_col", shape, {P});
            b.imageGridH = r.get<int32_t>("image_grid_h", shape);
            b.imageGridW = r.get<int32_t>("image_grid_w", shape);
            expectShape("image_grid_w", shape, {static_cast<int64_t>(b.imageGridH.size())});
            b.sampleLengths = r.get<int64_t>("sample_lengths", shape);
            b.images = entry.at("images").get<int64_t>();
            b.temporalPatchSize = entry.at("temporal_patch_size").get<int>();
            b.imageTokens = entry.at("image_tokens").get<int64_t>();
            b.textTokens = entry.at("text_tokens").get<int64_t>();
            b.padTokens = entry.at("pad_tokens").get<int64_t>();
            b.samples = entry.at("samples").get<int64_t>();
            b.skippedImages = entry.at("skipped_images").get<int64_t>();
            b.nextSampleSeq = entry.at("next_sample_seq").get<int64_t>();
            if (b.images != static_cast<int64_t>(b.imageGridH.size()))
                throw std::runtime_error("the index counts " + std::to_string(b.images) + " images, the arrays " +
                                         std::to_string(b.imageGridH.size()));
            out.push_back(std::move(b));
        }
    } catch (const std::exception& e) {
        return core::makeError(core::ErrorCode::Corrupt, std::string("bad batch dump: ") + e.what(), where);
    }
    return out;
}

namespace {

// The first `count` micro-batches of `config`'s loader, set up as Trainer::setUp does (same
// manifest handling, same seed, stream from position 0): a real source needs its manifest; mock
// uses the manifest's captions if it loads, else 256 synthetic captions.
core::Result<std::vector<MicroBatch>> loaderBatches(const core::RunConfig& config, int count)
{
    std::vector<ManifestEntry> entries;
    if (!config.data.manifest.empty()) {
        auto loaded = loadManifest(config.data.manifest);
        if (loaded)
            entries = std::move(*loaded);
        else if (config.data.source == "real")
            return loaded.error();
    }
    if (entries.empty())
        for (int i = 0; i < 256; ++i)
            entries.push_back({"", "mock sample " + std::to_string(i) + ": noise image"});
    std::vector<MicroBatch> batches;
    BatchLoader loader(std::move(entries), LoaderOptions::fromConfig(config));
    for (int i = 0; i < count; ++i) {
        std::optional<MicroBatch> b = loader.next();
        if (!b)
            return core::makeError(core::ErrorCode::Failed, "the data loader stopped after " + std::to_string(i) +
                                                                " micro-batches");
        batches.push_back(std::move(*b));
    }
    return batches;
}

// "--dump-count" as a number of micro-batches (empty: `fallback`); nullopt after printing why.
std::optional<int> countArgument(const std::string& countText, int fallback)
{
    if (countText.empty())
        return fallback;
    char* end = nullptr;
    const long count = std::strtol(countText.c_str(), &end, 10);
    if (*end != '\0' || count < 1 || count > 100000) {
        std::cerr << "moe-train: --dump-count needs a number of micro-batches from 1 to 100000, not '" << countText
                  << "'\n";
        return std::nullopt;
    }
    return static_cast<int>(count);
}

// The config and the micro-batch count of a loader command; nullopt after printing why not.
std::optional<std::pair<core::RunConfig, int>> loaderArguments(const std::string& configPath, const std::string& countText,
                                                               int fallback)
{
    const std::optional<int> count = countArgument(countText, fallback);
    if (!count)
        return std::nullopt;
    auto config = core::loadRunConfig(configPath);
    if (!config) {
        std::cerr << "moe-train: " << config.error().toString() << "\n";
        return std::nullopt;
    }
    return std::make_pair(std::move(*config), *count);
}

}  // namespace

core::Result<int> dumpLoaderBatches(const core::RunConfig& config, const std::string& dir, int count)
{
    if (count < 1)
        return core::makeError(core::ErrorCode::InvalidArgument, "--dump-count needs at least 1 micro-batch");
    auto batches = loaderBatches(config, count);
    if (!batches)
        return batches.error();
    auto written = writeBatchDump(dir, core::runConfigToJson(config), *batches);
    if (!written)
        return written.error();
    return count;
}

PackedWorkload packedWorkload(const std::vector<MicroBatch>& batches)
{
    PackedWorkload w;
    double rows = 0;
    for (const MicroBatch& b : batches) {
        rows += b.rows;
        w.seqLength = b.seqLength;
        w.images += static_cast<double>(b.images);
        w.imageTokens += static_cast<double>(b.imageTokens);
        w.textTokens += static_cast<double>(b.textTokens);
        w.padTokens += static_cast<double>(b.padTokens);
        w.samples += static_cast<double>(b.samples);
        w.skippedImages += static_cast<double>(b.skippedImages);
        for (size_t i = 0; i < b.imageGridH.size() && i < b.imageGridW.size(); ++i) {
            const double patches = double(b.imageGridH[i]) * b.imageGridW[i];
            w.patches += patches;
            w.patchesSquared += patches * patches;
        }
        for (int64_t len : b.sampleLengths)
            w.sampleTokensSquared += double(len) * double(len);
    }
    w.sequences = rows;
    if (rows > 0)
        for (double* v : {&w.images, &w.patches, &w.patchesSquared, &w.imageTokens, &w.textTokens, &w.padTokens,
                          &w.samples, &w.sampleTokensSquared, &w.skippedImages})
            *v /= rows;
    return w;
}

std::string packedWorkloadJson(const PackedWorkload& w, const core::RunConfig& config)
{
    nlohmann::ordered_json j;
    j["format"] = "moe-train-workload";
    j["version"] = 1;
    j["source"] = config.data.source;
    j["manifest"] = config.data.manifest;
    j["seq_length"] = w.seqLength;
    j["micro_batch_size"] = config.train.microBatchSize;
    j["sequences"] = w.sequences;
    nlohmann::ordered_json per;
    per["images"] = w.images;
    per["patches"] = w.patches;
    per["patches_squared"] = w.patchesSquared;
    per["image_tokens"] = w.imageTokens;
    per["text_tokens"] = w.textTokens;
    per["pad_tokens"] = w.padTokens;
    per["samples"] = w.samples;
    per["sample_tokens_squared"] = w.sampleTokensSquared;
    per["skipped_images"] = w.skippedImages;
    j["per_sequence"] = per;
    return j.dump(2);
}

int runDataStatsCommand(const std::string& configPath, const std::string& countText)
{
    if (configPath.empty()) {
        std::cerr << "moe-train: --data-stats needs --config RUN.json\n";
        return 2;
    }
    const auto arguments = loaderArguments(configPath, countText, 16);
    if (!arguments)
        return 2;
    const auto& [config, count] = *arguments;
    auto batches = loaderBatches(config, count);
    if (!batches) {
        std::cerr << "moe-train: " << batches.error().toString() << "\n";
        return 1;
    }
    std::cout << packedWorkloadJson(packedWorkload(*batches), config) << "\n";
    return 0;
}

int runBatchDumpCommand(const std::string& configPath, const std::string& dir, const std::string& countText)
{
    if (configPath.empty() || dir.empty()) {
        std::cerr << "moe-train: --dump-batches needs --config RUN.json and a directory\n";
        return 2;
    }
    const auto arguments = loaderArguments(configPath, countText, 1);
    if (!arguments)
        return 2;
    const auto& [config, count] = *arguments;
    auto written = dumpLoaderBatches(config, dir, count);
    if (!written) {
        std::cerr << "moe-train: " << written.error().toString() << "\n";
        return written.error().code == core::ErrorCode::InvalidArgument ? 2 : 1;
    }
    std::cout << "moe-train: dumped " << *written << " micro-batch(es) of " << config.name << " to " << dir
              << "/index.json\n";
    return 0;
}

}  // namespace wb::rt
