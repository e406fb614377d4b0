// Rates are computed per step and then summarised (median of per-step rates), not as total tokens
// over total time: the median of per-step values is what stays put when one step stalls, and the
// ms-per-1k figure is then exactly the reciprocal of the tokens/s figure (a monotone transform
// commutes with the median), so the two columns never tell different stories.
#include "core/compare/run_figures.h"

#include <algorithm>
#include <cmath>

namespace wb::core {

std::span<const StepPhase, kStepPhaseCount> stepPhases()
{
    static constexpr StepPhase kPhases[kStepPhaseCount] = {
        {"data_ms", "time: data wait", &StepSeries::dataMs},
        {"vision_ms", "time: vision encoder fwd", &StepSeries::visionMs},
        {"projector_ms", "time: projector fwd", &StepSeries::projectorMs},
        {"decoder_ms", "time: decoder fwd + loss", &StepSeries::decoderMs},
        {"backward_ms", "time: backward", &StepSeries::backwardMs},
        {"optimizer_ms", "time: optimizer", &StepSeries::optimizerMs},
    };
    return std::span<const StepPhase, kStepPhaseCount>(kPhases);
}

RunFigures computeRunFigures(const StepSeries& steps, const SteadyWindow& window, int worldSize, double peakTflops)
{
    const double world = std::max(worldSize, 1);
    const size_t begin = std::min(window.begin, steps.size());
    const size_t end = std::min(window.end, steps.size());
    const size_t count = end > begin ? end - begin : 0;

    std::vector<double> stepMs(steps.stepMs.begin() + static_cast<std::ptrdiff_t>(begin),
                               steps.stepMs.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<double> effective(steps.effectiveTokens.begin() + static_cast<std::ptrdiff_t>(begin),
                                  steps.effectiveTokens.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<double> tokens, msPer1k, tflops, mfu;
    for (auto* v : {&tokens, &msPer1k, &tflops, &mfu})
        v->reserve(count);
    for (size_t i = begin; i < end; ++i) {
        const double ms = steps.stepMs[i], eff = steps.effectiveTokens[i];
        if (ms > 0.0 && eff > 0.0) {
            tokens.push_back(eff / (ms / 1000.0) / world);
            msPer1k.push_back(ms * world * 1000.0 / eff);
        }
        const double tf = steps.tflopsPerGpu[i], recorded = steps.mfu[i];
        if (tf > 0.0)
            tflops.push_back(tf);
        // MFU needs a peak: the meta's, else the trainer's own figure. A CPU run has neither (its
        // records say 0): no MFU at all rather than a 0 % that reads like a measurement.
        if (tf > 0.0 && peakTflops > 0.0)
            mfu.push_back(tf / peakTflops);
        else if (recorded > 0.0)
            mfu.push_back(recorded);
    }

    RunFigures f;
    f.windowSteps = count;
    f.stepMs = robustStats(std::move(stepMs));
    f.tokensPerSPerGpu = robustStats(std::move(tokens));
    f.gpuMsPer1kTokens = robustStats(std::move(msPer1k));
    f.tflopsPerGpu = robustStats(std::move(tflops));
    f.mfu = robustStats(std::move(mfu));
    f.effectiveTokensPerStep = robustStats(std::move(effective));
    bool hasSplit = false;
    for (const auto& phase : stepPhases()) {
        const auto& series = steps.*(phase.series);
        for (size_t i = begin; i < end && i < series.size() && !hasSplit; ++i)
            hasSplit = series[i] > 0.0;  // NaN (a column not read) compares false
    }
    if (hasSplit) {
        // The split is a diagnostic beside the headline figures: over long windows its percentiles
        // come from at most kSplitSamples evenly spaced steps (every step up to that), which keeps
        // 20 runs × 100k steps inside the compare view's one-second budget (docs/compare.md).
        const size_t stride = std::max<size_t>(1, (count + kSplitSamples - 1) / kSplitSamples);
        for (size_t k = 0; k < kStepPhaseCount; ++k) {
            const auto& series = steps.*(stepPhases()[k].series);
            std::vector<double> sample;
            sample.reserve(count / stride + 1);
            for (size_t i = begin; i < end && i < series.size(); i += stride)
                sample.push_back(series[i]);
            f.phaseMs[k] = robustStats(std::move(sample));
        }
    }
    for (double v : steps.memPeakGib)
        if (std::isfinite(v))
            f.peakMemGib = std::max(f.peakMemGib, v);
    for (double v : steps.memReservedGib)
        if (std::isfinite(v))
            f.peakReservedGib = std::max(f.peakReservedGib, v);
    return f;
}

void addGpuFigures(RunFigures& figures, const StepSeries& steps, const SteadyWindow& window,
                   const std::vector<GpuRecord>& samples)
{
    const size_t begin = std::min(window.begin, steps.size());
    const size_t end = std::min(window.end, steps.size());
    if (end <= begin)
        return;
    const int64_t first = steps.step[begin], last = steps.step[end - 1];
    std::vector<double> util, power, temp, clock;
    for (const GpuRecord& r : samples) {
        if (!r.step || *r.step < first || *r.step > last)
            continue;
        const GpuSummary g = summarizeGpus(r);
        for (auto [value, into] : {std::pair{g.utilPct, &util}, {g.powerW, &power}, {g.tempC, &temp}, {g.smClockMhz, &clock}})
            if (std::isfinite(value))
                into->push_back(value);
    }
    figures.gpuUtilPct = robustStats(std::move(util));
    figures.gpuPowerW = robustStats(std::move(power));
    figures.gpuTempC = robustStats(std::move(temp));
    figures.gpuSmClockMhz = robustStats(std::move(clock));
}

RunFigures computeRunFigures(const std::vector<StepRecord>& steps, const SteadyWindow& window,
                             int worldSize, double peakTflops)
{
    return computeRunFigures(StepSeries::fromRecords(steps), window, worldSize, peakTflops);
}

}  // namespace wb::core
