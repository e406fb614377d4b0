// Batch dumps (runtime/data/batch_dump.h), CPU, tiny config: the micro-batches written by
// `moe-train --dump-batches` read back equal, field by field, to the ones a fresh loader produces
// for the same config; and a truncated, missing or newer dump is refused with a clear error.
// `moe-train --data-stats` summarizes the same micro-batches as the packed shape per sequence.
#include "check.h"

#include "core/run_config.h"
#include "runtime/data/batch_dump.h"
#include "runtime/data/batch_loader.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;
using namespace wb;

namespace {

// sample-tiny's shapes on mock data with 64-px noise images, so every array is non-empty
// (patches, grids, M-RoPE planes of image tokens) and nothing depends on files.
core::RunConfig tinyMockConfig()
{
    core::RunConfig c;
    c.name = "dump-tiny";
    c.model.vision.temporalPatchSize = 2;
    c.train.microBatchSize = 2;
    c.train.globalBatchSize = 2;
    c.train.seqLength = 96;
    c.data.source = "mock";
    c.data.mockImageSize = 64;
    c.data.captionMaxTokens = 40;
    c.data.numWorkers = 2;
    return c;
}

bool sameBatch(const rt::MicroBatch& a, const rt::MicroBatch& b)
{
    return a.rows == b.rows && a.seqLength == b.seqLength && a.tokenIds == b.tokenIds && a.labels == b.labels &&
           a.docIds == b.docIds && a.pos1d == b.pos1d && a.pos3 == b.pos3 && a.patchPixels == b.patchPixels && a.temporalPatchSize == b.temporalPatchSize &&
           a.patchImage == b.patchImage && a.patchRow == b.patchRow && a.patchCol == b.patchCol &&
           a.imageGridH == b.imageGridH && a.imageGridW == b.imageGridW && a.sampleLengths == b.sampleLengths &&
           a.images == b.images && a.imageTokens == b.imageTokens && a.textTokens == b.textTokens &&
           a.padTokens == b.padTokens && a.samples == b.samples && a.nextSampleSeq == b.nextSampleSeq;
}

std::vector<rt::MicroBatch> loaderBatches(const core::RunConfig& c, int count)
{
    std::vector<rt::ManifestEntry> entries;
    for (int i = 0; i < 256; ++i)
        entries.push_back({"", "mock sample " + std::to_string(i) + ": noise image"});
    rt::BatchLoader loader(std::move(entries), rt::LoaderOptions::fromConfig(c));
    std::vector<rt::MicroBatch> out;
    for (int i = 0; i < count; ++i)
        out.push_back(*loader.next());
    return out;
}

void roundTripInProcess(const fs::path& tmp)
{
    const core::RunConfig c = tinyMockConfig();
    const std::string dir = (tmp / "inproc").string();
    auto written = rt::dumpLoaderBatches(c, dir, 3);
    WB_CHECK(written.ok() && *written == 3);
    auto read = rt::readBatchDump(dir);
    WB_CHECK_MSG(read.ok(), (read.ok() ? "" : read.error().toString()));
    if (!read.ok())
        return;
    const auto expected = loaderBatches(c, 3);
    WB_CHECK(read->size() == 3);
    for (size_t i = 0; i < std::min<size_t>(3, read->size()); ++i) {
        WB_CHECK_MSG(sameBatch((*read)[i], expected[i]), "micro-batch " << i << " differs after the round trip");
        WB_CHECK((*read)[i].totalPatches() > 0);
        // One frame of bytes per patch; the model repeats it over temporal patch 2.
        WB_CHECK((*read)[i].patchPixels.size() == static_cast<size_t>((*read)[i].totalPatches() * 3 * 16 * 16));
        WB_CHECK((*read)[i].temporalPatchSize == 2);
    }
    // The index carries the config, so a reader needs nothing else, and 64-byte aligned offsets.
    const auto index = nlohmann::json::parse(test::readFile(fs::path(dir) / "index.json"));
    WB_CHECK(index["config"]["train"]["seq_length"] == 96);
    WB_CHECK(index["config"]["model"]["vision"]["temporal_patch_size"] == 2);
    for (const auto& [name, a] : index["batches"][0]["arrays"].items())
        WB_CHECK_MSG(a["offset"].get<int64_t>() % 64 == 0, name << " is not 64-byte aligned");
    WB_CHECK(index["batches"][0]["arrays"]["pos3"]["shape"] == nlohmann::json({3, 2, 96}));
    WB_CHECK(index["batches"][0]["arrays"]["token_ids"]["dtype"] == "int64");
    WB_CHECK(index["batches"][0]["arrays"]["patch_pixels"]["dtype"] == "uint8");
    WB_CHECK(index["batches"][0]["arrays"]["byte_values"]["shape"] == nlohmann::json({256}));

    // Text-only micro-batches: the vision arrays are empty but present.
    core::RunConfig text = c;
    text.data.mockImageSize = 0;
    const std::string textDir = (tmp / "text").string();
    WB_CHECK(rt::dumpLoaderBatches(text, textDir, 1).ok());
    auto textRead = rt::readBatchDump(textDir);
    WB_CHECK(textRead.ok() && textRead->size() == 1 && (*textRead)[0].totalPatches() == 0 &&
             (*textRead)[0].images == 0 && (*textRead)[0].textTokens > 0);
}

void refusesBadDumps(const fs::path& tmp)
{
    auto missing = rt::readBatchDump((tmp / "nothing-here").string());
    WB_CHECK(!missing.ok() && missing.error().code == core::ErrorCode::NotFound &&
             missing.error().message.find("--dump-batches") != std::string::npos);

    const std::string dir = (tmp / "bad").string();
    WB_CHECK(rt::dumpLoaderBatches(tinyMockConfig(), dir, 2).ok());
    fs::resize_file(fs::path(dir) / "batch_0001.bin", 100);  // truncated
    auto truncated = rt::readBatchDump(dir);
    WB_CHECK_MSG(!truncated.ok() && truncated.error().code == core::ErrorCode::Corrupt &&
                     truncated.error().toString().find("batch_0001.bin") != std::string::npos &&
                     truncated.error().message.find("truncated") != std::string::npos,
                 (truncated.ok() ? "accepted" : truncated.error().toString()));

    auto index = nlohmann::json::parse(test::readFile(fs::path(dir) / "index.json"));
    index["batches"][0]["arrays"]["labels"]["dtype"] = "float32";
    std::ofstream(fs::path(dir) / "index.json") << index.dump();
    auto wrongType = rt::readBatchDump(dir);
    WB_CHECK(!wrongType.ok() && wrongType.error().message.find("'labels' is float32, expected int64") != std::string::npos);

    index["version"] = rt::kBatchDumpVersion + 1;
    std::ofstream(fs::path(dir) / "index.json") << index.dump();
    auto newer = rt::readBatchDump(dir);
    WB_CHECK(!newer.ok() && newer.error().code == core::ErrorCode::Incompatible);

    WB_CHECK(!rt::dumpLoaderBatches(tinyMockConfig(), dir, 0).ok());
}

// The command line: moe-train --config RUN.json --dump-batches DIR --dump-count N.
void commandLine(const fs::path& tmp)
{
    const core::RunConfig c = tinyMockConfig();
    const fs::path configPath = tmp / "run.json";
    std::ofstream(configPath) << core::runConfigToJson(c);
    const std::string dir = (tmp / "cli").string();
    const std::string log = (tmp / "cli.log").string();
    const int rc = test::runProcess({MOE_TRAIN_PATH, "--config", configPath.string(), "--dump-batches", dir,
                                     "--dump-count", "2"}, log, 120);
    WB_CHECK_MSG(rc == 0, "moe-train --dump-batches exited " << rc << ": " << test::readFile(log));
    auto read = rt::readBatchDump(dir);
    const auto expected = loaderBatches(c, 2);
    WB_CHECK(read.ok() && read->size() == 2 && sameBatch((*read)[0], expected[0]) && sameBatch((*read)[1], expected[1]));

    const int bad = test::runProcess({MOE_TRAIN_PATH, "--config", configPath.string(), "--dump-batches", dir,
                                      "--dump-count", "zero"}, log, 60);
    WB_CHECK(bad == 2);
    WB_CHECK(test::readFile(log).find("--dump-count needs a number") != std::string::npos);
    const int noConfig = test::runProcess({MOE_TRAIN_PATH, "--dump-batches", dir}, log, 60);
    WB_CHECK(noConfig == 2);
}

// moe-train --data-stats: the packed shape per sequence, from the same loader (sums of the
// micro-batches' counts over their rows; patches and their squares from the image grids).
void dataStats(const fs::path& tmp)
{
    const core::RunConfig c = tinyMockConfig();
    const auto batches = loaderBatches(c, 3);
    const rt::PackedWorkload w = rt::packedWorkload(batches);
    double rows = 0, images = 0, patches = 0, squares = 0, text = 0, pad = 0, image = 0, samples = 0, lengths2 = 0;
    for (const rt::MicroBatch& b : batches) {
        rows += b.rows, images += double(b.images), text += double(b.textTokens), pad += double(b.padTokens);
        image += double(b.imageTokens), samples += double(b.samples);
        for (size_t i = 0; i < b.imageGridH.size(); ++i) {
            const double p = double(b.imageGridH[i]) * b.imageGridW[i];
            patches += p, squares += p * p;
        }
        for (int64_t len : b.sampleLengths)
            lengths2 += double(len) * double(len);
    }
    WB_CHECK(rows == 6 && w.sequences == rows && w.seqLength == 96);
    WB_CHECK(images > 0 && std::abs(w.images - images / rows) < 1e-12 && std::abs(w.patches - patches / rows) < 1e-9);
    WB_CHECK(std::abs(w.patchesSquared - squares / rows) < 1e-6 && std::abs(w.sampleTokensSquared - lengths2 / rows) < 1e-6);
    WB_CHECK(std::abs(w.imageTokens + w.textTokens + w.padTokens - 96.0) < 1e-9);  // every position is one of them
    WB_CHECK(std::abs(w.textTokens - text / rows) < 1e-12 && std::abs(w.padTokens - pad / rows) < 1e-12 &&
             std::abs(w.imageTokens - image / rows) < 1e-12 && std::abs(w.samples - samples / rows) < 1e-12);
    // 64 px at patch 16, merge 2: 4 × 4 patches, 4 image tokens per image.
    WB_CHECK_MSG(std::abs(w.patches - 16.0 * w.images) < 1e-9 && std::abs(w.imageTokens - 4.0 * w.images) < 1e-9,
                 w.patches << " patches, " << w.imageTokens << " image tokens for " << w.images << " images");

    const fs::path configPath = tmp / "stats.json";
    std::ofstream(configPath) << core::runConfigToJson(c);
    const std::string out = (tmp / "stats.out").string();
    const int rc = test::runProcess({MOE_TRAIN_PATH, "--config", configPath.string(), "--data-stats", "--dump-count", "3"},
                                    out, 120);
    WB_CHECK_MSG(rc == 0, "moe-train --data-stats exited " << rc << ": " << test::readFile(out));
    const auto j = nlohmann::json::parse(test::readFile(out), nullptr, false);
    WB_CHECK_MSG(!j.is_discarded() && j.value("format", "") == "moe-train-workload" && j.value("version", 0) == 1,
                 test::readFile(out));
    if (!j.is_discarded() && j.contains("per_sequence")) {
        WB_CHECK(j["sequences"].get<double>() == 6 && j["seq_length"].get<int>() == 96);
        WB_CHECK(std::abs(j["per_sequence"]["patches"].get<double>() - w.patches) < 1e-9);
        WB_CHECK(std::abs(j["per_sequence"]["sample_tokens_squared"].get<double>() - w.sampleTokensSquared) < 1e-6);
    }
    WB_CHECK(test::runProcess({MOE_TRAIN_PATH, "--data-stats"}, out, 60) == 2);
    WB_CHECK(test::readFile(out).find("--data-stats needs --config") != std::string::npos);
    WB_CHECK(test::runProcess({MOE_TRAIN_PATH, "--config", configPath.string(), "--data-stats", "--dump-count", "0"}, out,
                              60) == 2);
}

}  // namespace

int main()
{
    const fs::path tmp = test::makeTempDir("wb-batch-dump");
    roundTripInProcess(tmp);
    refusesBadDumps(tmp);
    commandLine(tmp);
    dataStats(tmp);
    fs::remove_all(tmp);
    return test::checkExitCode("test_batch_dump");
}
