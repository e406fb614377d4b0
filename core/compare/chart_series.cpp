#include "core/compare/chart_series.h"

#include "core/compare/smoothing.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <thread>

namespace wb::core {
namespace {

/// Runs fn(0..count-1) on up to `threads` threads (the calling one included).
template <typename Fn>
void forEachParallel(size_t count, unsigned threads, Fn&& fn)
{
    if (threads == 0)
        threads = std::max(1u, std::thread::hardware_concurrency());
    threads = static_cast<unsigned>(std::min<size_t>(threads, count));
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i = next++; i < count; i = next++)
            fn(i);
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t)
        pool.emplace_back(work);
    work();
    for (auto& t : pool)
        t.join();
}

}  // namespace

void ChartBounds::add(const ChartLine& line)
{
    if (line.empty())
        return;
    xMin = std::min(xMin, line.x.front());  // x ascending
    xMax = std::max(xMax, line.x.back());
    for (double y : line.y) {
        yMin = std::min(yMin, y);
        yMax = std::max(yMax, y);
        if (y > 0.0)
            yPositiveMin = std::min(yPositiveMin, y);
    }
}

size_t ChartLines::points() const
{
    size_t total = 0;
    for (const auto& run : runs)
        total += run.raw.size() + run.smooth.size();
    return total;
}

size_t ChartSet::points() const
{
    size_t total = 0;
    for (const auto& chart : charts)
        total += chart.points();
    return total;
}

ChartLine decimateMinMax(const std::vector<double>& xs, const std::vector<double>& ys, const std::vector<double>* also,
                         bool logY, int columns, double x0, double x1)
{
    const size_t n = std::min(xs.size(), ys.size());
    auto usable = [&](size_t i) {
        if (!std::isfinite(xs[i]) || !std::isfinite(ys[i]))
            return false;
        return !logY || (ys[i] > 0.0 && (!also || (*also)[i] > 0.0));
    };
    ChartLine out;
    const double span = x1 - x0;
    // Decided on the step count, not on the usable points (one pass fewer over 100k steps): a run
    // with fewer usable points than columns comes out the same either way.
    const bool decimate = columns > 0 && span > 0.0 && std::isfinite(span) && n > 2 * static_cast<size_t>(columns);
    const size_t capacity = decimate ? 2 * static_cast<size_t>(columns) + 2 : n;  // + first, last
    out.x.reserve(capacity);
    out.y.reserve(capacity);
    auto emit = [&](size_t i) {
        out.x.push_back(xs[i]);
        out.y.push_back(ys[i]);
    };
    if (!decimate) {
        for (size_t i = 0; i < n; ++i)
            if (usable(i))
                emit(i);
        return out;
    }
    // Min and max of the column, in step order: the line's extent in each pixel column is exact
    // and a spike survives. First and last of the column would add nothing a 1-px column can show,
    // only paint time (4 → 2 points per column halved the paint).
    const double scale = columns / span;
    int column = -1;
    size_t lo = 0, hi = 0, firstUsable = n, lastUsable = 0;
    // The first and the last usable step are kept too: the line spans the run's whole extent (the
    // axes are fitted to it), not just to the extreme points of its end columns.
    auto flush = [&](bool last) {
        size_t picks[4] = {lo, hi, lo, hi};
        if (out.empty())
            picks[2] = firstUsable;
        if (last)
            picks[3] = lastUsable;
        std::sort(std::begin(picks), std::end(picks));
        for (int k = 0; k < 4; ++k)
            if (k == 0 || picks[k] != picks[k - 1])
                emit(picks[k]);
    };
    for (size_t i = 0; i < n; ++i) {
        if (!usable(i))
            continue;
        firstUsable = std::min(firstUsable, i);
        lastUsable = i;
        const int c = std::clamp(static_cast<int>((xs[i] - x0) * scale), 0, columns - 1);
        if (c != column) {
            if (column >= 0)
                flush(false);
            column = c;
            lo = hi = i;
            continue;
        }
        if (ys[i] < ys[lo])
            lo = i;
        if (ys[i] > ys[hi])
            hi = i;
    }
    if (column >= 0)
        flush(true);
    return out;
}

ChartSet computeChartSet(const Comparison& comparison, const ChartLinesRequest& request, unsigned threads,
                         std::optional<ChartMetric> only)
{
    ChartSet set;
    set.request = request;
    const auto& metrics = chartMetrics();
    const size_t runCount = comparison.runs.size();
    std::vector<std::vector<double>> runXs(runCount);
    for (size_t c = 0; c < set.charts.size(); ++c) {
        set.charts[c].metric = metrics[c];
        set.charts[c].runs.resize(runCount);
    }
    // Phase 1: x of every step (the same for all four charts), and the x extent the pixel columns
    // are laid over — shared by all runs, so every run's column k is the same pixel column.
    forEachParallel(runCount, threads, [&](size_t r) {
        runXs[r] = chartXValues(comparison.runs[r].steps(), request.xAxis);
    });
    double x0 = std::numeric_limits<double>::infinity(), x1 = -x0;
    for (const auto& xs : runXs)
        for (double x : xs)
            if (std::isfinite(x)) {
                x0 = std::min(x0, x);
                x1 = std::max(x1, x);
            }
    const double weight = std::clamp(request.smoothing, 0.0, 0.99);
    // Phase 2: per run, the four metrics: values, EMA, decimation (≈ 5 passes over 100k steps).
    forEachParallel(runCount, threads, [&](size_t r) {
        const ComparedRun& run = comparison.runs[r];
        const std::vector<double>& xs = runXs[r];
        for (size_t c = 0; c < set.charts.size(); ++c) {
            if (only && metrics[c] != *only)
                continue;
            ChartRunLines& lines = set.charts[c].runs[r];
            // Step time, loss and memory are the stored columns as they are: no copy of 100k values.
            const StepSeries& steps = run.steps();
            std::vector<double> computed;
            const std::vector<double>* column = metrics[c] == ChartMetric::StepTime ? &steps.stepMs
                                                : metrics[c] == ChartMetric::Loss   ? &steps.loss
                                                : metrics[c] == ChartMetric::Memory ? &steps.memPeakGib
                                                                                    : nullptr;
            if (!column) {
                computed = chartMetricValues(metrics[c], steps, run.worldSize());
                column = &computed;
            }
            const std::vector<double>& ys = *column;
            const int columns = request.columns[c];
            if (weight > 0.0) {
                const std::vector<double> smooth = emaDebiased(ys, weight);
                lines.raw = decimateMinMax(xs, ys, &smooth, request.logY, columns, x0, x1);
                lines.smooth = decimateMinMax(xs, smooth, &ys, request.logY, columns, x0, x1);
            } else {
                lines.smooth = decimateMinMax(xs, ys, nullptr, request.logY, columns, x0, x1);
            }
            if (run.window.size() > 0 && run.window.end <= xs.size()) {
                lines.windowFrom = xs[run.window.begin];
                lines.windowTo = xs[run.window.end - 1];
            }
        }
    });
    for (auto& chart : set.charts)
        for (const auto& lines : chart.runs) {
            chart.bounds.add(lines.raw);
            chart.bounds.add(lines.smooth);
        }
    return set;
}

}  // namespace wb::core
