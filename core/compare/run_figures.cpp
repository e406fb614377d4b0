// Rates are computed per step and then summarised (median of per-step rates), not as total tokens
// over total time: the median of per-step values is what stays put when one step stalls, and the
// ms-per-1k figure is then exactly the reciprocal of the tokens/s figure (a monotone transform
// commutes with the median), so the two columns never tell different stories.
#include "core/compare/run_figures.h"

#include <algorithm>
#include <cmath>

namespace wb::core {

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
        if (tf > 0.0) {
            tflops.push_back(tf);
            mfu.push_back(peakTflops > 0.0 ? tf / peakTflops : recorded);
        } else if (recorded > 0.0) {
            mfu.push_back(recorded);
        }
    }

    RunFigures f;
    f.windowSteps = count;
    f.stepMs = robustStats(std::move(stepMs));
    f.tokensPerSPerGpu = robustStats(std::move(tokens));
    f.gpuMsPer1kTokens = robustStats(std::move(msPer1k));
    f.tflopsPerGpu = robustStats(std::move(tflops));
    f.mfu = robustStats(std::move(mfu));
    f.effectiveTokensPerStep = robustStats(std::move(effective));
    for (double v : steps.memPeakGib)
        if (std::isfinite(v))
            f.peakMemGib = std::max(f.peakMemGib, v);
    for (double v : steps.memReservedGib)
        if (std::isfinite(v))
            f.peakReservedGib = std::max(f.peakReservedGib, v);
    return f;
}

RunFigures computeRunFigures(const std::vector<StepRecord>& steps, const SteadyWindow& window,
                             int worldSize, double peakTflops)
{
    return computeRunFigures(StepSeries::fromRecords(steps), window, worldSize, peakTflops);
}

}  // namespace wb::core
