// The normalized figures of one run over its steady-state window (DESIGN.md §3.2 definitions):
// what makes runs of different world size, batch and layout comparable. Effective tokens are
// text + image tokens without padding, summed over ranks in the step record.
// Pure functions; any thread.
#pragma once

#include "core/compare/robust_stats.h"
#include "core/compare/steady_state.h"
#include "core/compare/step_series.h"
#include "core/metrics_schema.h"

#include <array>
#include <span>
#include <vector>

namespace wb::core {

/// The parts of a step's time split (metrics.jsonl data_ms … optimizer_ms), in stream order.
struct StepPhase {
    const char* key;    ///< the stream's key, also the comparison's JSON key
    const char* label;  ///< table text
    std::vector<double> StepSeries::*series;
};
inline constexpr size_t kStepPhaseCount = 6;
inline constexpr size_t kSplitSamples = 8192;
std::span<const StepPhase, kStepPhaseCount> stepPhases();

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
    /// Each part of the time split, per step, in stepPhases() order (over at most kSplitSamples
    /// evenly spaced steps of the window: every step of windows up to that size). All invalid (count 0) when
    /// no part is above 0 in the window: the stream has no split (a foreign trainer, an old run).
    /// Multi-rank streams give each part as the max over ranks, so the parts can sum above step_ms.
    std::array<RobustStats, kStepPhaseCount> phaseMs;
    /// GPU system samples ("gpu" records) taken after a step of the window, per sample over the
    /// node's GPUs: mean utilization and power, the hottest temperature, the slowest SM clock.
    /// Invalid (count 0) for a run without samples (a CPU run, another trainer).
    RobustStats gpuUtilPct, gpuPowerW, gpuTempC, gpuSmClockMhz;
    double peakMemGib = 0.0;      ///< max of mem_peak_gib over the whole run (warm-up included)
    double peakReservedGib = 0.0; ///< max of mem_reserved_gib over the whole run
};

/// Figures over steps[window.begin, window.end). `worldSize` < 1 counts as 1; `peakTflops` <= 0
/// means unknown. Steps with step_ms <= 0 or no effective tokens are left out of the rates.
RunFigures computeRunFigures(const StepSeries& steps, const SteadyWindow& window, int worldSize, double peakTflops);
/// Adds the GPU figures of `samples` whose step lies in the window (steps[window.begin] ..
/// steps[window.end − 1]).
void addGpuFigures(RunFigures& figures, const StepSeries& steps, const SteadyWindow& window,
                   const std::vector<GpuRecord>& samples);
/// The same for records (converted first).
RunFigures computeRunFigures(const std::vector<StepRecord>& steps, const SteadyWindow& window,
                             int worldSize, double peakTflops);

}  // namespace wb::core
