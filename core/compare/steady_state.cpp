// Steady-state detection. The level is taken from the second half of the run, which is warm-up
// free for any run long enough to compare; the band adapts to the run's own noise (MAD-based
// sigma) so a jittery CPU run and a quiet GPU run are both judged against what "settled" means for
// them. A rolling median (not mean) makes a single checkpoint stall or GC pause invisible, so such
// a spike late in the run does not push the window's start to after it.
#include "core/compare/steady_state.h"

#include "core/compare/robust_stats.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace wb::core {
namespace {

// Reorders `v` (callers pass scratch copies).
double medianOf(std::vector<double>& v)
{
    if (v.empty())
        return 0.0;
    const auto mid = v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2);
    std::nth_element(v.begin(), mid, v.end());
    if (v.size() % 2 == 1)
        return *mid;
    const double upper = *mid;
    const double lower = *std::max_element(v.begin(), mid);
    return 0.5 * (lower + upper);
}

SteadyWindow fallback(size_t n, double level, double band, std::string note)
{
    SteadyWindow w;
    w.begin = n >= 2 ? n / 2 : 0;
    w.end = n;
    w.level = level;
    w.band = band;
    w.note = std::move(note);
    return w;
}

std::optional<int64_t> parseStep(std::string_view text, bool& bad)
{
    if (text.empty())
        return std::nullopt;
    int64_t value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || ptr != text.data() + text.size() || value < 0)
        bad = true;
    return value;
}

}  // namespace

SteadyWindow detectSteadyState(const std::vector<double>& stepMs, const SteadyStateOptions& options)
{
    const size_t n = stepMs.size();
    std::vector<double> tail(stepMs.begin() + static_cast<std::ptrdiff_t>(n / 2), stepMs.end());
    const double level = medianOf(tail);
    if (n < 2 * options.minSteadySteps || !(level > 0.0)) {
        auto w = fallback(n, level, options.minBand,
                          "too few steps to find a steady state: using the second half");
        return w;
    }
    std::vector<double> deviations;
    deviations.reserve(tail.size());
    for (double v : tail)
        deviations.push_back(std::abs(v - level));
    const double sigma = 1.4826 * medianOf(deviations);  // MAD → sigma for normal noise
    const double band = std::clamp(options.noiseSigmas * sigma / level, options.minBand, options.maxBand);
    const double halfWidth = band * level;
    auto inBand = [&](double v) { return std::isfinite(v) && std::abs(v - level) <= halfWidth; };

    // Scan backwards: the last rolling window that is out of band bounds the start from below.
    // The median of an odd-sized window is outside the band exactly when more than half of its
    // values are above it (or below it), so sliding counts replace a selection per position: O(n).
    // The windows that run past the end shrink; the same majority rule decides for them.
    const size_t w = std::max<size_t>(1, options.rollingWindow) | 1;  // odd
    auto side = [&](double v) { return !(v <= level + halfWidth) ? 1 : v < level - halfWidth ? -1 : 0; };  // NaN: above
    size_t above = 0, below = 0;  // in the window [k, min(n, k + w))
    size_t start = 0;
    for (size_t k = n; k-- > 0;) {
        const int entering = side(stepMs[k]);
        above += entering > 0;
        below += entering < 0;
        if (k + w < n) {
            const int leaving = side(stepMs[k + w]);
            above -= leaving > 0;
            below -= leaving < 0;
        }
        const size_t size = std::min(n, k + w) - k;
        if (2 * above > size || 2 * below > size) {
            start = k + 1;
            break;
        }
    }
    while (start < n && !inBand(stepMs[start]))
        ++start;
    if (n - start < options.minSteadySteps)
        return fallback(n, level, band, "step time never settled: using the second half");

    SteadyWindow result;
    result.begin = start;
    result.end = n;
    result.detected = true;
    result.level = level;
    result.band = band;
    result.note = start == 0 ? "no warm-up detected"
                             : "skipped " + std::to_string(start) + " warm-up step(s)";
    return result;
}

Result<StepWindow> parseStepWindow(std::string_view text)
{
    const size_t colon = text.find(':');
    bool bad = colon == std::string_view::npos || text.find(':', colon + 1) != std::string_view::npos;
    StepWindow window;
    if (!bad) {
        window.first = parseStep(text.substr(0, colon), bad);
        window.last = parseStep(text.substr(colon + 1), bad);
    }
    if (!bad && window.first && window.last && *window.first > *window.last)
        bad = true;
    if (bad)
        return makeError(ErrorCode::InvalidArgument,
                         "a window is FIRST:LAST in step numbers, either end may be left open "
                         "(e.g. 100:500, 100:, :500) and FIRST <= LAST",
                         std::string(text));
    return window;
}

Result<SteadyWindow> resolveWindow(const StepSeries& steps, const std::optional<StepWindow>& userWindow,
                                   const SteadyStateOptions& options)
{
    if (!userWindow)
        return detectSteadyState(steps.stepMs, options);
    const auto first = userWindow->first
                           ? std::lower_bound(steps.step.begin(), steps.step.end(), *userWindow->first)
                           : steps.step.begin();
    const auto last = userWindow->last
                          ? std::lower_bound(steps.step.begin(), steps.step.end(), *userWindow->last + 1)
                          : steps.step.end();
    if (first >= last)
        return makeError(ErrorCode::InvalidArgument,
                         "the window selects no step of this run; pick steps it has (see `show RUN`)");
    SteadyWindow w;
    w.begin = static_cast<size_t>(first - steps.step.begin());
    w.end = static_cast<size_t>(last - steps.step.begin());
    w.userOverride = true;
    w.level = robustStats(std::vector<double>(steps.stepMs.begin() + static_cast<std::ptrdiff_t>(w.begin),
                                              steps.stepMs.begin() + static_cast<std::ptrdiff_t>(w.end)))
                  .median;
    w.note = "window chosen by the user";
    return w;
}

Result<SteadyWindow> resolveWindow(const std::vector<StepRecord>& steps,
                                   const std::optional<StepWindow>& userWindow,
                                   const SteadyStateOptions& options)
{
    return resolveWindow(StepSeries::fromRecords(steps), userWindow, options);
}

}  // namespace wb::core
