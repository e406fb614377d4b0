// The measured side is what the figures table shows, so the two tables never disagree: medians over
// the steady window for step time, tokens/s/GPU and MFU; peak memory over the whole run (the
// planner predicts the most-loaded rank's total, and warm-up has to fit too).
#include "core/compare/prediction_check.h"

#include <cmath>
#include <limits>

namespace wb::core {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A planner figure of 0 (or less) means "not predicted"; a measured 0 means "not recorded" (a CPU
// run has no peak memory, a run without FLOPs no MFU).
double known(double v)
{
    return std::isfinite(v) && v > 0.0 ? v : kNaN;
}

PredictionRow row(const char* key, const char* label, const char* unit, int decimals, double predicted,
                  double measured)
{
    PredictionRow r{key, label, unit, decimals, known(predicted), known(measured), std::nullopt};
    if (std::isfinite(r.predicted) && std::isfinite(r.measured))
        r.errorPct = (r.predicted - r.measured) / r.measured * 100.0;
    return r;
}

}  // namespace

PredictionCheck checkPrediction(const RunPrediction& prediction, const RunFigures& measured, int worldSize)
{
    PredictionCheck check;
    check.prediction = prediction;
    check.rows = {
        row("step_ms", "step time", "ms", 1, prediction.stepMs, measured.stepMs.median),
        row("peak_mem_gib", "peak memory", "GiB", 2, prediction.memoryGib, measured.peakMemGib),
        row("tokens_per_s_per_gpu", "effective tokens/s/GPU", "tok/s", 1, prediction.tokensPerSPerGpu,
            measured.tokensPerSPerGpu.median),
        row("mfu", "MFU", "%", 2, prediction.mfu * 100.0, measured.mfu.valid() ? measured.mfu.median * 100.0 : kNaN),
    };
    if (prediction.gpus > 0 && worldSize > 0 && prediction.gpus != worldSize)
        check.note = "predicted for " + std::to_string(prediction.gpus) + " GPU(s), the run used " +
                     std::to_string(worldSize) + ": step time and memory are not comparable";
    return check;
}

std::vector<PredictionAccuracy> predictionAccuracy(const std::vector<PredictionCheck>& checks)
{
    std::vector<PredictionAccuracy> out;
    if (checks.empty())
        return out;
    for (size_t i = 0; i < checks.front().rows.size(); ++i) {
        PredictionAccuracy a{checks.front().rows[i].key, checks.front().rows[i].label, kNaN, 0};
        double sum = 0.0;
        for (const auto& check : checks)
            if (i < check.rows.size() && check.rows[i].errorPct) {
                sum += std::abs(*check.rows[i].errorPct);
                ++a.runs;
            }
        if (a.runs > 0)
            a.meanAbsErrorPct = sum / static_cast<double>(a.runs);
        out.push_back(a);
    }
    return out;
}

}  // namespace wb::core
