// Workload fingerprint: what work a run's step actually did — data source, sequence length, images
// and image tokens per sample, frozen modules, batch, world size, model — and the warnings raised
// when compared runs differ in it. Decision guide cautions 1 and 3: mock data made runs look about
// 2x faster than real multimodal input, and runs whose effective work differs must not be compared
// by step time. Mock vs real is always the first and loudest warning.
// Pure functions; any thread.
#pragma once

#include "core/compare/robust_stats.h"
#include "core/compare/steady_state.h"
#include "core/compare/step_series.h"
#include "core/metrics_schema.h"

#include <optional>
#include <string>
#include <vector>

namespace wb::core {

struct WorkloadFingerprint {
    std::string dataSource;        ///< "real" | "mock" | "" (unknown: no meta line, no config)
    int seqLength = 0;
    int microBatchSize = 0;
    int globalBatchSize = 0;
    int worldSize = 1;
    std::string layout;            ///< meta's "tp1 pp1 ... dp1"
    std::string device;
    std::string precision;
    int imagesPerSampleConfigured = 0;
    int64_t minPixels = 0;
    int64_t maxPixels = 0;
    int mockImageSize = 0;
    double imagesPerSample = 0.0;        ///< measured: median over the window of images / GBS
    RobustStats imageTokensPerSample;    ///< measured: image_tokens / GBS per step
    RobustStats textTokensPerSample;     ///< measured: text_tokens / GBS per step
    std::vector<std::string> frozenModules;  ///< "vision", "projection", "language"
    std::string model;                   ///< "decoder 2L×128 E8 top2 · vision 2L×64"
    std::string trainer = "moe-train";   ///< "moe-train" | "megatron-bridge" | "megatron-lm"
    std::string tokenCounting;           ///< meta's: "" effective tokens, "slots" GBS × seq with padding
    std::string runtimeSwitches;         ///< meta's, "WB_ROW_KERNELS=1, …"; "" = none set (or not told)
};

/// Builds the fingerprint from the stored canonical config JSON (may be empty), the meta line (if it
/// arrived; it wins over the config for world size, batch, sequence and data source) and the steps
/// in the window.
WorkloadFingerprint makeFingerprint(const std::string& configJson, const std::optional<MetaRecord>& meta,
                                    const StepSeries& steps, const SteadyWindow& window);

enum class WarningSeverity { Critical, Warning, Info };
const char* severityName(WarningSeverity severity);

struct CompareWarning {
    WarningSeverity severity = WarningSeverity::Warning;
    std::string code;     ///< stable id: "data_source", "seq_length", "no_steady_state", ...
    std::string message;  ///< for the user: what differs, in which runs, and why it matters
};

/// Warnings for every fingerprint field in which the runs differ (and for all-mock or unknown data),
/// sorted Critical first; stable within a severity. `labels` name the runs in messages.
std::vector<CompareWarning> compareWorkloads(const std::vector<std::string>& labels,
                                             const std::vector<WorkloadFingerprint>& fingerprints);

}  // namespace wb::core
