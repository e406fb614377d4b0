// Rates are computed per step and then summarised (median of per-step rates), not as total tokens
// over total time: the median of per-step values is what stays put when one step stalls, and the
// ms-per-1k figure is then exactly the reciprocal of the tokens/s figure (a monotone transform
// commutes with the median), so the two columns never tell different stories.
#include "core/compare/run_figures.h"

#include <algorithm>
#include <cmath>

namespace wb::core {

RunFigures computeRunFigures(const std::vector<StepRecord>& steps, const SteadyWindow& window,
                             int worldSize, double peakTflops)
{
    const double world = std::max(worldSize, 1);
    const size_t begin = std::min(window.begin, steps.size());
    const size_t end = std::min(window.end, steps.size());
    const size_t count = end > begin ? end - begin : 0;

    std::vector<double> stepMs, tokens, msPer1k, tflops, mfu, effective;
    for (auto* v : {&stepMs, &tokens, &msPer1k, &tflops, &mfu, &effective})
        v->reserve(count);
    for (size_t i = begin; i < end; ++i) {
        const StepRecord& s = steps[i];
        stepMs.push_back(s.stepMs);
        effective.push_back(static_cast<double>(s.effectiveTokens));
        if (s.stepMs > 0.0 && s.effectiveTokens > 0) {
            const double eff = static_cast<double>(s.effectiveTokens);
            tokens.push_back(eff / (s.stepMs / 1000.0) / world);
            msPer1k.push_back(s.stepMs * world * 1000.0 / eff);
        }
        if (s.tflopsPerGpu > 0.0) {
            tflops.push_back(s.tflopsPerGpu);
            mfu.push_back(peakTflops > 0.0 ? s.tflopsPerGpu / peakTflops : s.mfu);
        } else if (s.mfu > 0.0) {
            mfu.push_back(s.mfu);
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
    for (const auto& s : steps) {
        if (std::isfinite(s.memPeakGib))
            f.peakMemGib = std::max(f.peakMemGib, s.memPeakGib);
        if (std::isfinite(s.memReservedGib))
            f.peakReservedGib = std::max(f.peakReservedGib, s.memReservedGib);
    }
    return f;
}

}  // namespace wb::core
