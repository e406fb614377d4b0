// Synthetic runs for the comparison tests, the compare-view UI test and the loading benchmark:
// a metrics.jsonl stream (meta + steps) with a known warm-up, ingested into a RunStore like a real
// run. Deterministic (hash noise, no global RNG). Header-only; depends on core only.
#pragma once

#include "core/metrics_schema.h"
#include "core/run_config.h"
#include "core/run_store.h"

#include <array>
#include <cmath>
#include <cstdint>
#include <string>

namespace wb::test {

struct SyntheticRun {
    std::string name = "synthetic";
    std::string dataSource = "real";
    int worldSize = 2;
    int globalBatchSize = 8;
    int64_t steps = 200;
    int64_t warmupSteps = 5;      ///< these steps run warmupFactor × slower
    double warmupFactor = 4.0;
    double stepMs = 100.0;        ///< steady step time
    double noise = 0.02;          ///< ± relative noise of the steady steps
    int64_t effectiveTokens = 4096;
    int64_t imageTokens = 1024;   ///< per step (the rest are text tokens)
    int64_t images = 8;
    double tflopsPerGpu = 50.0;
    double peakTflops = 100.0;
    double memPeakGib = 10.0;
    /// Each step's time split as fractions of its step time (data, vision, projector, decoder,
    /// backward, optimizer), shaped like the H200 benchmark step; all 0 = a stream without a split.
    std::array<double, 6> splitFractions{0.01, 0.07, 0.02, 0.2, 0.55, 0.15};
    wb::core::RunConfig config;
};

/// Deterministic noise in [-1, 1] for step i (splitmix64).
inline double hashNoise(uint64_t i)
{
    uint64_t z = i + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<double>(z >> 11) / static_cast<double>(1ull << 52) - 1.0;
}

inline std::string syntheticStream(const SyntheticRun& run)
{
    wb::core::MetaRecord meta;
    meta.runId = run.name;
    meta.name = run.name;
    meta.worldSize = run.worldSize;
    meta.layout = "tp1 pp1 cp1 ep1 etp1 dp" + std::to_string(run.worldSize);
    meta.device = "synthetic";
    meta.dataSource = run.dataSource;
    meta.peakTflops = run.peakTflops;
    meta.seqLength = run.config.train.seqLength;
    meta.microBatchSize = run.config.train.microBatchSize;
    meta.globalBatchSize = run.globalBatchSize;
    std::string out = wb::core::toJsonLine(meta) + "\n";
    for (int64_t i = 0; i < run.steps; ++i) {
        wb::core::StepRecord s;
        s.step = i + 1;
        const bool warm = i < run.warmupSteps;
        s.stepMs = run.stepMs * (warm ? run.warmupFactor : 1.0 + run.noise * hashNoise(static_cast<uint64_t>(i)));
        s.time = 1.7e9 + static_cast<double>(i) * run.stepMs / 1000.0;
        s.effectiveTokens = run.effectiveTokens;
        s.imageTokens = run.imageTokens;
        s.textTokens = run.effectiveTokens - run.imageTokens;
        s.images = run.images;
        s.loss = 5.0 * std::exp(-static_cast<double>(i) / 100.0) + 1.0;
        s.tflopsPerGpu = run.tflopsPerGpu * run.stepMs / s.stepMs;
        s.mfu = s.tflopsPerGpu / run.peakTflops;
        s.tokensPerSPerGpu = static_cast<double>(s.effectiveTokens) / (s.stepMs / 1000.0) / run.worldSize;
        s.memPeakGib = run.memPeakGib + (warm ? 0.5 : 0.0);
        s.memAllocGib = run.memPeakGib * 0.8;
        s.memReservedGib = run.memPeakGib * 1.1;
        const auto& f = run.splitFractions;
        s.dataMs = f[0] * s.stepMs;
        s.visionMs = f[1] * s.stepMs;
        s.projectorMs = f[2] * s.stepMs;
        s.decoderMs = f[3] * s.stepMs;
        s.backwardMs = f[4] * s.stepMs;
        s.optimizerMs = f[5] * s.stepMs;
        out += wb::core::toJsonLine(s);
        out += '\n';
    }
    return out;
}

/// Creates the run in `store`, ingests its whole stream; returns the id ("" on failure).
inline std::string addSyntheticRun(wb::core::RunStore& store, const SyntheticRun& run)
{
    wb::core::RunConfig config = run.config;
    config.name = run.name;
    config.data.source = run.dataSource;
    config.train.globalBatchSize = run.globalBatchSize;
    auto id = store.createRun({"", run.name, "local", "", wb::core::runConfigToJson(config),
                               wb::core::runConfigHash(config)});
    if (!id)
        return {};
    const std::string stream = syntheticStream(run);
    auto ingested = store.ingest(*id, 0, stream);
    if (!ingested)
        return {};
    return *id;
}

}  // namespace wb::test
