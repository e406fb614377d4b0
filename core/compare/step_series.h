// StepSeries: the steps of one run as the comparison reads them — structure-of-arrays, only the
// fields compare uses (window, figures with the time split, fingerprint, the four charts). Built from the store's
// column read without copying (RunStore::stepColumns' vectors are moved in), or from StepRecords
// (tests, small callers). Counts (images, tokens) are doubles, exact below 2^53.
// Plain data; any thread.
#pragma once

#include "core/metrics_schema.h"
#include "core/run_store.h"

#include <span>
#include <vector>

namespace wb::core {

struct StepSeries {
    std::vector<int64_t> step;
    std::vector<double> time, stepMs, images, imageTokens, textTokens, effectiveTokens, loss, memReservedGib,
        memPeakGib, tflopsPerGpu, mfu;
    /// The step's time split (DESIGN.md §3.2): data wait and the forward/backward/optimizer parts.
    std::vector<double> dataMs, visionMs, projectorMs, decoderMs, backwardMs, optimizerMs;

    size_t size() const { return step.size(); }
    bool empty() const { return step.empty(); }

    /// The store columns these fields come from (what compareRuns asks RunStore::stepColumns for).
    static std::span<const StepField> fields();
    /// Moves the columns in; a field that was not read is NaN throughout.
    static StepSeries fromColumns(StepColumns&& columns);
    static StepSeries fromRecords(const std::vector<StepRecord>& records);
    /// Appends later steps (same run, steps after the last one held).
    void append(const StepSeries& more);
};

}  // namespace wb::core
