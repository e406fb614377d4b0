// The normalized figures of one run over its steady-state window (DESIGN.md §3.2 definitions):
// what makes runs of different world size, batch and layout comparable. Effective tokens are
// text + image tokens without padding, summed over ranks in the step record.
// Pure functions; any thread.
#pragma once

#include "core/compare/robust_stats.h"
#include "core/compare/steady_state.h"
#include "core/compare/step_series.h"
#include "core/metrics_schema.h"

#include <vector>

namespace wb::core {

struct RunFigures {
    size_t windowSteps = 0;
    RobustStats stepMs;
    /// effective_tokens / (step_ms / 1000) / world_size, per step.
    RobustStats tokensPerSPerGpu;
    /// GPU-milliseconds per 1,000 effective tokens: step_ms × world_size × 1000 / effective_tokens,
    /// per step — the cost of the work, whatever the batch or world size. Equals 1e6 / tokens/s/GPU.
    RobustStats gpuMsPer1kTokens;
    /// The step records' tflops_per_gpu (model FLOPs as moe-train counts them).
    RobustStats tflopsPerGpu;
    /// tflops_per_gpu / meta.peak_tflops when the peak is known, else the records' mfu.
    RobustStats mfu;
    RobustStats effectiveTokensPerStep;
    double peakMemGib = 0.0;      ///< max of mem_peak_gib over the whole run (warm-up included)
    double peakReservedGib = 0.0; ///< max of mem_reserved_gib over the whole run
};

/// Figures over steps[window.begin, window.end). `worldSize` < 1 counts as 1; `peakTflops` <= 0
/// means unknown. Steps with step_ms <= 0 or no effective tokens are left out of the rates.
RunFigures computeRunFigures(const StepSeries& steps, const SteadyWindow& window, int worldSize, double peakTflops);
/// The same for records (converted first).
RunFigures computeRunFigures(const std::vector<StepRecord>& steps, const SteadyWindow& window,
                             int worldSize, double peakTflops);

}  // namespace wb::core
