// Steady-state window of a run: the steps after warm-up (graph capture, allocator growth, kernel
// autotuning, the first data-loader fill) where step time has settled. Comparisons use only this
// window, so a run with a slow compilation phase is not penalised for it — nor a short run flattered.
// Pure functions; any thread.
#pragma once

#include "core/compare/step_series.h"
#include "core/metrics_schema.h"
#include "core/result.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wb::core {

struct SteadyStateOptions {
    size_t rollingWindow = 9;   ///< steps in the rolling median
    double minBand = 0.05;      ///< the band is at least ±5 % of the steady level
    double maxBand = 0.25;      ///< and at most ±25 % (noisier, or drifting: no steady state)
    double noiseSigmas = 3.0;   ///< band = max(minBand, noiseSigmas × robust sigma / level)
    size_t minSteadySteps = 10; ///< fewer steady steps than this: not detected
};

/// An index range [begin, end) into a run's steps.
struct SteadyWindow {
    size_t begin = 0;
    size_t end = 0;
    bool detected = false;      ///< false: the fallback (second half / everything) is used
    bool userOverride = false;  ///< chosen with --window A:B
    double level = 0.0;         ///< steady step time (ms): median of the second half
    double band = 0.0;          ///< relative half-width of the band that was used (0.05 = ±5 %)
    std::string note;           ///< why the window is what it is, for the user
    size_t size() const { return end - begin; }
};

/// Finds the first index after which the forward rolling median of `stepMs` stays within the band
/// around the steady level, and whose own value is inside it too (so the window never opens on a
/// warm-up step hidden by the median). Not detected (window = second half) when the series is
/// shorter than 2 × minSteadySteps or never settles for minSteadySteps steps.
SteadyWindow detectSteadyState(const std::vector<double>& stepMs, const SteadyStateOptions& options = {});

/// A user's window in step numbers (inclusive); either end may be open ("100:", ":500").
struct StepWindow {
    std::optional<int64_t> first;
    std::optional<int64_t> last;
};

/// Parses "A:B", "A:", ":B". InvalidArgument with the fix in the message otherwise.
Result<StepWindow> parseStepWindow(std::string_view text);

/// The window of a run: the user's override when given (InvalidArgument when it selects no step),
/// otherwise detectSteadyState over step_ms. `steps` must be sorted by step.
Result<SteadyWindow> resolveWindow(const StepSeries& steps, const std::optional<StepWindow>& userWindow,
                                   const SteadyStateOptions& options = {});
/// The same for records (converted first).
Result<SteadyWindow> resolveWindow(const std::vector<StepRecord>& steps,
                                   const std::optional<StepWindow>& userWindow,
                                   const SteadyStateOptions& options = {});

}  // namespace wb::core
