// ChartSeries: the compare charts' lines, ready to draw. Per chart and run: the raw series and its
// EMA (debiased), decimated to min / max per pixel column for the chart's plot width and x axis
// (so a one-step spike survives), the data bounds the axes are fitted to, and the run's steady
// window in x. This is what the compare view's loading thread computes, so the GUI thread only
// hands finished point arrays to the charts; it is also what a resize or an x-axis switch
// recomputes off the GUI thread.
// Pure functions; any thread. The runs' steps are shared and immutable, so a Comparison may be
// read from several threads at once as long as nobody changes it.
#pragma once

#include "core/compare/compare_report.h"
#include "core/compare/run_comparison.h"

#include <array>
#include <limits>
#include <optional>
#include <vector>

namespace wb::core {

/// A polyline in data coordinates (x ascending, y finite; > 0 on a log axis).
struct ChartLine {
    std::vector<double> x, y;
    size_t size() const { return x.size(); }
    bool empty() const { return x.empty(); }
};

/// Extent of what a chart draws; min > max when it draws nothing.
struct ChartBounds {
    double xMin = std::numeric_limits<double>::infinity(), xMax = -std::numeric_limits<double>::infinity();
    double yMin = std::numeric_limits<double>::infinity(), yMax = -std::numeric_limits<double>::infinity();
    double yPositiveMin = std::numeric_limits<double>::infinity();  ///< smallest y > 0 (log axes)
    bool empty() const { return !(xMin <= xMax) || !(yMin <= yMax); }
    void add(const ChartLine& line);
};

struct ChartRunLines {
    ChartLine raw;     ///< the raw series, drawn faint; empty when smoothing is off
    ChartLine smooth;  ///< the EMA on top (the raw series itself when smoothing is off)
    /// The steady window in x (first and last step of it); NaN when the run has none.
    double windowFrom = std::numeric_limits<double>::quiet_NaN();
    double windowTo = std::numeric_limits<double>::quiet_NaN();
    bool hasWindow() const { return windowFrom == windowFrom && windowTo == windowTo; }
};

struct ChartLines {
    ChartMetric metric = ChartMetric::StepTime;
    std::vector<ChartRunLines> runs;  ///< in the comparison's run order
    ChartBounds bounds;               ///< over every drawn point of every run
    size_t points() const;            ///< points drawn (raw + smooth, all runs)
};

/// What the lines were computed for: the same request gives the same lines.
struct ChartLinesRequest {
    ChartXAxis xAxis = ChartXAxis::Step;
    double smoothing = 0.6;  ///< EMA weight in [0, 1); 0 = raw only
    bool logY = false;       ///< leave out y <= 0 (raw and smoothed the same steps)
    /// Pixel columns of each chart's plot area, in chartMetrics() order: the decimation target.
    std::array<int, 4> columns{600, 600, 600, 600};
    bool operator==(const ChartLinesRequest&) const = default;
};

struct ChartSet {
    ChartLinesRequest request;
    std::array<ChartLines, 4> charts;  ///< chartMetrics() order
    size_t points() const;
};

/// Min and max of each of `columns` equal-width x columns over [x0, x1], in step order, plus the
/// first and last point: at most two points per column (+ 2), and a spike of a single step is
/// always one of them. Points with a non-finite
/// x or y are left out (a diverged loss is a gap, not a 0); with `logY` also those with y <= 0 or
/// `also[i]` <= 0 (so raw and smoothed leave out the same steps). With no more than 2 × columns
/// usable points, or columns <= 0, every usable point is kept. x must be ascending.
ChartLine decimateMinMax(const std::vector<double>& xs, const std::vector<double>& ys, const std::vector<double>* also,
                         bool logY, int columns, double x0, double x1);

/// Every chart of `comparison` for `request` (or only chart `only`; the others stay empty), on up
/// to `threads` threads (0: one per core, at most one per run). Each run's x values are computed
/// once for all charts.
ChartSet computeChartSet(const Comparison& comparison, const ChartLinesRequest& request, unsigned threads = 0,
                         std::optional<ChartMetric> only = std::nullopt);

}  // namespace wb::core
