// Comparison exports without Qt: the compare charts as SVG (what the CLI's report embeds, and what
// the GUI writes for "SVG"), and the comparison report — Markdown a user can paste into a review:
// the warnings first, the figures with deltas against the baseline, the config diff, then the
// charts as image files beside it. The chart series (metric per step, x as step / wall time /
// effective tokens seen) are defined here once, so the GUI's charts and the exported ones agree.
// Pure functions except writeComparisonReport (files); any thread.
#pragma once

#include "core/compare/run_comparison.h"
#include "core/atomic_file.h"  // writeFileAtomically, used with the reports
#include "core/result.h"

#include <algorithm>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace wb::core {

enum class ChartMetric { StepTime, Throughput, Loss, Memory };
enum class ChartXAxis { Step, WallTime, EffectiveTokens };

const std::vector<ChartMetric>& chartMetrics();  ///< all four, in display order
const char* chartMetricKey(ChartMetric metric);     ///< file stem: "step_time", "throughput", ...
const char* chartMetricTitle(ChartMetric metric);   ///< "Step time"
const char* chartMetricYTitle(ChartMetric metric);  ///< "Step time (ms)"
bool chartMetricFromZero(ChartMetric metric);       ///< linear y axis starts at 0
const char* chartXAxisTitle(ChartXAxis axis);

/// The metric of every step: step_ms; effective tokens / s / GPU recomputed from the definition
/// (so the line means what the figures table means); loss; mem_peak_gib. NaN where undefined.
std::vector<double> chartMetricValues(ChartMetric metric, const StepSeries& steps, int worldSize);
/// x of every step: its step number, seconds since the run's first step, or effective tokens seen
/// up to and including it.
std::vector<double> chartXValues(const StepSeries& steps, ChartXAxis axis);

struct ChartOptions {
    ChartXAxis xAxis = ChartXAxis::Step;
    double smoothing = 0.6;         ///< EMA weight (debiased); 0 draws the raw series only
    bool logY = false;              ///< log10 y axis; values <= 0 are left out
    bool shadeSteadyWindow = true;  ///< each run's steady window as a faint band in its colour
    int width = 900;
    int height = 420;
};

/// Tableau-10 colour of run `index` as "#rrggbb" (the GUI's palette).
std::string runColor(size_t index);

/// One chart of every run overlaid, as a standalone SVG document (axes with ticks, titles, legend;
/// raw series faint behind the smoothed one; min/max per pixel column decimation, so spikes stay).
std::string renderChartSvg(const Comparison& comparison, ChartMetric metric, const ChartOptions& options = {});

struct ReportOptions {
    ChartOptions chart;
    /// Extension of the chart images the report links ("svg", or "png" when the caller — the GUI —
    /// has written <key>.png files itself). SVGs are written either way.
    std::string imageExtension = "svg";
    std::string title;  ///< default: "Run comparison: A vs B"
};

/// The report as Markdown; `imageFiles` are linked under "Charts" (relative paths), in order.
std::string comparisonToMarkdown(const Comparison& comparison, const std::vector<std::string>& imageFiles,
                                 const std::string& title = {});

/// Creates `directory` if needed and writes report.md plus one <key>.svg per chart, each
/// atomically. Returns the paths written (report.md first).
Result<std::vector<std::string>> writeComparisonReport(const Comparison& comparison, const std::string& directory,
                                                       const ReportOptions& options = {});



/// Text for an SVG/XML or HTML document: & < > " ' as entities (one rule for the Markdown
/// report's SVG charts and the HTML report).
std::string markupEscape(std::string_view text);

}  // namespace wb::core
