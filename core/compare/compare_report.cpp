#include "core/compare/compare_report.h"

#include "core/atomic_file.h"

#include "core/compare/smoothing.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <set>

#include <unistd.h>

namespace wb::core {
namespace {

constexpr const char* kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

std::string xmlEscape(const std::string& text)
{
    return markupEscape(text);
}

std::string fmt(const char* format, double value)
{
    char text[64];
    std::snprintf(text, sizeof text, format, value);
    return text;
}

std::string px(double value)
{
    return fmt("%.1f", value);
}

/// Tick label: SI suffix for large values, otherwise just enough decimals for the tick step.
std::string tickLabel(double value, double step)
{
    const double a = std::abs(value);
    if (a >= 1e9)
        return fmt("%.4g", value / 1e9) + "G";
    if (a >= 1e6)
        return fmt("%.4g", value / 1e6) + "M";
    if (a >= 1e4)
        return fmt("%.4g", value / 1e3) + "k";
    int decimals = 0;
    if (step > 0.0 && std::isfinite(step))
        decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step) - 1e-9)), 0, 6);
    char format[16];
    std::snprintf(format, sizeof format, "%%.%df", decimals + (std::abs(step * std::pow(10.0, decimals) -
                                                                        std::round(step * std::pow(10.0, decimals))) > 1e-6
                                                                   ? 1
                                                                   : 0));
    return fmt(format, value);
}

/// Widens [lo, hi] to round ticks (1-2-2.5-5 × 10^k, at most 6 intervals); returns the step.
double niceRange(double& lo, double& hi)
{
    constexpr int kMaxIntervals = 6;
    if (!(hi > lo)) {
        const double pad = std::max(std::abs(hi) * 0.1, 1e-3);
        lo -= pad;
        hi += pad;
    }
    const double raw = (hi - lo) / kMaxIntervals;
    const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
    for (double decade : {1.0, 10.0, 100.0})
        for (double m : {1.0, 2.0, 2.5, 5.0}) {
            const double step = m * decade * magnitude;
            const double niceLo = std::floor(lo / step + 1e-9) * step;
            const double niceHi = std::ceil(hi / step - 1e-9) * step;
            if (std::lround((niceHi - niceLo) / step) <= kMaxIntervals) {
                lo = niceLo;
                hi = niceHi;
                return step;
            }
        }
    return (hi - lo) / kMaxIntervals;
}

struct Series {
    std::vector<double> x, raw, smooth;
};

/// Keeps the first, min, max and last point of every pixel column (in x order), so 100k steps
/// draw as ~4 × width points and a one-step spike survives.
std::string decimatedPolyline(const std::vector<double>& xs, const std::vector<double>& ys, double x0, double xScale,
                              double plotLeft, const std::function<double(double)>& yPixel)
{
    std::string out;
    out.reserve(4096);
    auto emit = [&](size_t i) {
        out += px(plotLeft + (xs[i] - x0) * xScale);
        out += ',';
        out += px(yPixel(ys[i]));
        out += ' ';
    };
    size_t begin = 0;
    while (begin < xs.size()) {
        const long column = std::lround((xs[begin] - x0) * xScale);
        size_t end = begin + 1, lo = begin, hi = begin;
        while (end < xs.size() && std::lround((xs[end] - x0) * xScale) == column) {
            if (ys[end] < ys[lo])
                lo = end;
            if (ys[end] > ys[hi])
                hi = end;
            ++end;
        }
        size_t picks[4] = {begin, lo, hi, end - 1};
        std::sort(std::begin(picks), std::end(picks));
        for (int k = 0; k < 4; ++k)
            if (k == 0 || picks[k] != picks[k - 1])
                emit(picks[k]);
        begin = end;
    }
    return out;
}

// Text from a run (names, warning texts) inside report.md: a table cell's `|` escaped, line breaks
// and other control characters as spaces, and `<`, `>`, `&` as entities — Markdown passes raw
// HTML through, so a run called `<script>…` would otherwise run in the rendered report.
std::string cell(std::string text)
{
    std::string out;
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '|')
            out += "\\|";
        else if (c == '<')
            out += "&lt;";
        else if (c == '>')
            out += "&gt;";
        else if (c == '&')
            out += "&amp;";
        else if (u < 0x20 || u == 0x7f)
            out += ' ';
        else
            out += c;
    }
    return out;
}

std::string number(double value, int decimals)
{
    if (!std::isfinite(value))
        return "–";
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return text;
}

std::string windowText(const ComparedRun& r)
{
    if (r.window.size() == 0)
        return "–";
    return std::to_string(r.steps().step[r.window.begin]) + "–" + std::to_string(r.steps().step[r.window.end - 1]) +
           " (" + std::to_string(r.window.size()) + " steps" +
           (r.window.detected ? "" : r.window.userOverride ? ", user" : ", fallback") + ")";
}

// "Predicted vs measured": one row per run, each figure as predicted / measured (error).
std::string predictionMarkdown(const Comparison& c)
{
    const auto withPrediction = std::find_if(c.runs.begin(), c.runs.end(),
                                             [](const ComparedRun& r) { return r.predictionCheck.has_value(); });
    std::string md = "## Predicted vs measured\n\n";
    if (withPrediction == c.runs.end())
        return md + "No prediction for these runs (not launched from a plan).\n\n";
    const auto& columns = withPrediction->predictionCheck->rows;
    md += "Each cell: predicted / measured (error = (predicted − measured) / measured). Measured as in the "
          "figures above: medians over the steady window, peak memory over the whole run.\n\n| run |";
    for (const auto& col : columns)
        md += " " + cell(std::string(col.label) + " (" + col.unit + ")") + " |";
    md += " predicted for |\n|---|";
    for (size_t i = 0; i <= columns.size(); ++i)
        md += "---:|";
    md += "\n";
    std::string notes;
    for (const auto& r : c.runs) {
        md += "| " + cell(r.label()) + " |";
        if (!r.predictionCheck) {
            md += " no prediction (not launched from a plan) |";
            for (size_t i = 0; i < columns.size(); ++i)
                md += " |";
            md += "\n";
            continue;
        }
        for (const auto& row : r.predictionCheck->rows) {
            std::string text = number(row.predicted, row.decimals) + " / " + number(row.measured, row.decimals);
            if (row.errorPct) {
                char err[32];
                std::snprintf(err, sizeof err, " (%+.1f%%)", *row.errorPct);
                text += err;
            }
            md += " " + cell(text) + " |";
        }
        const auto& p = r.predictionCheck->prediction;
        md += " " + cell(std::to_string(p.gpus) + " × " + (p.hardware.empty() ? std::string("?") : p.hardware)) + " |\n";
        if (!r.predictionCheck->note.empty())
            notes += "- " + cell(r.label()) + ": " + r.predictionCheck->note + "\n";
    }
    md += "| **mean \\|error\\|** |";
    for (const auto& a : c.predictionAccuracy)
        md += " " + (a.runs ? number(a.meanAbsErrorPct, 1) + "% (" + std::to_string(a.runs) + (a.runs == 1 ? " run)" : " runs)")
                            : std::string("–")) + " |";
    md += " |\n\n";
    if (!notes.empty())
        md += notes + "\n";
    return md;
}

}  // namespace

const std::vector<ChartMetric>& chartMetrics()
{
    static const std::vector<ChartMetric> kAll = {ChartMetric::StepTime, ChartMetric::Throughput, ChartMetric::Loss,
                                                  ChartMetric::Memory};
    return kAll;
}

const char* chartMetricKey(ChartMetric metric)
{
    switch (metric) {
    case ChartMetric::StepTime: return "step_time";
    case ChartMetric::Throughput: return "throughput";
    case ChartMetric::Loss: return "loss";
    case ChartMetric::Memory: return "peak_memory";
    }
    return "chart";
}

const char* chartMetricTitle(ChartMetric metric)
{
    switch (metric) {
    case ChartMetric::StepTime: return "Step time";
    case ChartMetric::Throughput: return "Throughput (effective tokens)";
    case ChartMetric::Loss: return "Loss";
    case ChartMetric::Memory: return "Peak memory per GPU";
    }
    return "";
}

const char* chartMetricYTitle(ChartMetric metric)
{
    switch (metric) {
    case ChartMetric::StepTime: return "Step time (ms)";
    case ChartMetric::Throughput: return "Tokens/s/GPU";  // the chart title says effective; a long axis title is cut at the default size
    case ChartMetric::Loss: return "Loss";
    case ChartMetric::Memory: return "Memory (GiB)";
    }
    return "";
}

bool chartMetricFromZero(ChartMetric metric)
{
    return metric != ChartMetric::Loss;
}

const char* chartXAxisTitle(ChartXAxis axis)
{
    switch (axis) {
    case ChartXAxis::Step: return "Step";
    case ChartXAxis::WallTime: return "Wall time since the first step (s)";
    case ChartXAxis::EffectiveTokens: return "Effective tokens seen";
    }
    return "";
}

std::vector<double> chartXValues(const StepSeries& steps, ChartXAxis axis)
{
    const size_t n = steps.size();
    std::vector<double> xs(n);
    if (axis == ChartXAxis::Step) {
        for (size_t i = 0; i < n; ++i)
            xs[i] = static_cast<double>(steps.step[i]);
    } else if (axis == ChartXAxis::WallTime) {
        const double t0 = n ? steps.time.front() : 0.0;
        for (size_t i = 0; i < n; ++i)
            xs[i] = steps.time[i] - t0;
    } else {
        double tokensSeen = 0.0;
        for (size_t i = 0; i < n; ++i) {
            const double tokens = steps.effectiveTokens[i];
            tokensSeen += std::isfinite(tokens) ? tokens : 0.0;
            xs[i] = tokensSeen;
        }
    }
    return xs;
}

std::vector<double> chartMetricValues(ChartMetric metric, const StepSeries& steps, int worldSize)
{
    switch (metric) {
    case ChartMetric::StepTime: return steps.stepMs;
    case ChartMetric::Loss: return steps.loss;
    case ChartMetric::Memory: return steps.memPeakGib;
    case ChartMetric::Throughput: {
        const double world = std::max(worldSize, 1);
        std::vector<double> ys(steps.size());
        for (size_t i = 0; i < ys.size(); ++i) {
            const double ms = steps.stepMs[i];
            ys[i] = ms > 0.0 ? steps.effectiveTokens[i] / (ms / 1000.0) / world : std::numeric_limits<double>::quiet_NaN();
        }
        return ys;
    }
    }
    return std::vector<double>(steps.size(), std::numeric_limits<double>::quiet_NaN());
}

std::string runColor(size_t index)
{
    return kPalette[index % (sizeof kPalette / sizeof kPalette[0])];
}

std::string renderChartSvg(const Comparison& comparison, ChartMetric metric, const ChartOptions& options)
{
    const int width = std::max(options.width, 200);
    const int height = std::max(options.height, 150);
    const size_t runCount = comparison.runs.size();
    constexpr double kLegendEntry = 180.0;
    const double left = 78.0, right = 18.0, top = 34.0;
    const int perRow = std::max(1, static_cast<int>((width - left - right) / kLegendEntry));
    const int legendRows = static_cast<int>((runCount + perRow - 1) / perRow);
    const double bottom = 50.0 + 18.0 * legendRows;
    const double plotW = width - left - right;
    const double plotH = height - top - bottom;

    // Series: finite values (and > 0 on a log axis); the smoothed line is the EMA of all of them.
    std::vector<Series> series(runCount);
    std::vector<std::vector<double>> runXs(runCount);
    double xMin = std::numeric_limits<double>::infinity(), xMax = -xMin, yMin = xMin, yMax = -xMin;
    const double w = std::clamp(options.smoothing, 0.0, 0.99);
    for (size_t r = 0; r < runCount; ++r) {
        const ComparedRun& run = comparison.runs[r];
        runXs[r] = chartXValues(run.steps(), options.xAxis);
        const std::vector<double>& xs = runXs[r];
        const std::vector<double> ys = chartMetricValues(metric, run.steps(), run.worldSize());
        const std::vector<double> smooth = emaDebiased(ys, w);
        Series& s = series[r];
        for (size_t i = 0; i < ys.size(); ++i) {
            if (!std::isfinite(ys[i]) || !std::isfinite(xs[i]) || (options.logY && (ys[i] <= 0.0 || smooth[i] <= 0.0)))
                continue;
            s.x.push_back(xs[i]);
            s.raw.push_back(ys[i]);
            s.smooth.push_back(smooth[i]);
            xMin = std::min(xMin, xs[i]);
            xMax = std::max(xMax, xs[i]);
            yMin = std::min({yMin, ys[i], smooth[i]});
            yMax = std::max({yMax, ys[i], smooth[i]});
        }
    }
    const bool empty = !std::isfinite(xMin);
    if (empty) {
        xMin = 0.0, xMax = 10.0, yMin = options.logY ? 1.0 : 0.0, yMax = options.logY ? 10.0 : 1.0;
    }
    if (!(xMax > xMin))
        xMax = xMin + 1.0;
    double xLo = xMin, xHi = xMax;
    const double xStep = niceRange(xLo, xHi);

    // y axis: linear with round ticks, or log10 with decade ticks (and 2, 5 when few decades).
    double yLo, yHi, yStep = 0.0;
    std::vector<double> yTicks;
    if (options.logY) {
        yLo = std::floor(std::log10(yMin));
        yHi = std::ceil(std::log10(yMax));
        if (yHi <= yLo)
            yHi = yLo + 1.0;
        for (double d = yLo; d <= yHi + 1e-9; d += 1.0) {
            yTicks.push_back(std::pow(10.0, d));
            if (yHi - yLo <= 2.0 && d < yHi) {
                yTicks.push_back(2.0 * std::pow(10.0, d));
                yTicks.push_back(5.0 * std::pow(10.0, d));
            }
        }
        std::sort(yTicks.begin(), yTicks.end());
    } else {
        yLo = chartMetricFromZero(metric) ? std::min(0.0, yMin) : yMin;
        yHi = yMax;
        const double span = yHi - yLo > 0.0 ? yHi - yLo : std::max(std::abs(yHi) * 0.1, 1e-3);
        if (!chartMetricFromZero(metric))
            yLo -= 0.05 * span;
        yHi += 0.05 * span;
        yStep = niceRange(yLo, yHi);
        for (double t = yLo; t <= yHi + yStep * 1e-6; t += yStep)
            yTicks.push_back(std::abs(t) < yStep * 1e-9 ? 0.0 : t);
    }
    const double xScale = plotW / (xHi - xLo);
    auto xPixel = [&](double x) { return left + (x - xLo) * xScale; };
    std::function<double(double)> yPixel = [&](double y) {
        const double v = options.logY ? std::log10(y) : y;
        return top + plotH - (v - yLo) / (yHi - yLo) * plotH;
    };

    std::string svg;
    svg.reserve(64 * 1024);
    svg += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) + "\" height=\"" +
           std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(height) +
           "\" font-family=\"sans-serif\" font-size=\"11\">\n";
    svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    svg += "<text x=\"" + px(width / 2.0) + "\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">" +
           xmlEscape(std::string(chartMetricTitle(metric)) + (options.logY ? " (log scale)" : "")) + "</text>\n";

    // Steady-state windows, behind everything else.
    if (options.shadeSteadyWindow) {
        const double opacity = std::max(0.05, 0.16 / std::max<size_t>(runCount, 1));
        for (size_t r = 0; r < runCount; ++r) {
            const ComparedRun& run = comparison.runs[r];
            if (run.window.size() == 0)
                continue;
            const double a = std::clamp(xPixel(runXs[r][run.window.begin]), left, left + plotW);
            const double b = std::clamp(xPixel(runXs[r][run.window.end - 1]), left, left + plotW);
            svg += "<rect class=\"steady-window\" x=\"" + px(a) + "\" y=\"" + px(top) + "\" width=\"" +
                   px(std::max(b - a, 1.0)) + "\" height=\"" + px(plotH) + "\" fill=\"" + runColor(r) +
                   "\" fill-opacity=\"" + fmt("%.3f", opacity) + "\"><title>" +
                   xmlEscape(run.label() + ": steady window " + windowText(run)) + "</title></rect>\n";
        }
    }

    // Grid, ticks and labels.
    svg += "<g stroke=\"#e0e0e0\" stroke-width=\"1\">\n";
    for (double t : yTicks)
        svg += "<line x1=\"" + px(left) + "\" x2=\"" + px(left + plotW) + "\" y1=\"" + px(yPixel(t)) + "\" y2=\"" +
               px(yPixel(t)) + "\"/>\n";
    for (double t = xLo; t <= xHi + xStep * 1e-6; t += xStep)
        svg += "<line x1=\"" + px(xPixel(t)) + "\" x2=\"" + px(xPixel(t)) + "\" y1=\"" + px(top) + "\" y2=\"" +
               px(top + plotH) + "\"/>\n";
    svg += "</g>\n<g fill=\"#333\">\n";
    for (double t : yTicks) {
        const double step = options.logY ? t / 10.0 : yStep;
        svg += "<text x=\"" + px(left - 6) + "\" y=\"" + px(yPixel(t) + 4) + "\" text-anchor=\"end\">" +
               tickLabel(t, step) + "</text>\n";
    }
    for (double t = xLo; t <= xHi + xStep * 1e-6; t += xStep)
        svg += "<text x=\"" + px(xPixel(t)) + "\" y=\"" + px(top + plotH + 16) + "\" text-anchor=\"middle\">" +
               tickLabel(t, xStep) + "</text>\n";
    svg += "<text x=\"" + px(left + plotW / 2) + "\" y=\"" + px(top + plotH + 34) + "\" text-anchor=\"middle\">" +
           xmlEscape(chartXAxisTitle(options.xAxis)) + "</text>\n";
    svg += "<text transform=\"translate(16," + px(top + plotH / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
           xmlEscape(chartMetricYTitle(metric)) + "</text>\n</g>\n";
    svg += "<rect x=\"" + px(left) + "\" y=\"" + px(top) + "\" width=\"" + px(plotW) + "\" height=\"" + px(plotH) +
           "\" fill=\"none\" stroke=\"#888\"/>\n";

    // The lines: raw faint, smoothed on top; decimated per pixel column.
    svg += "<g fill=\"none\" stroke-linejoin=\"round\">\n";
    for (size_t r = 0; r < runCount; ++r) {
        const Series& s = series[r];
        if (s.x.empty())
            continue;
        const std::string color = runColor(r);
        if (w > 0.0)
            svg += "<polyline class=\"raw\" stroke=\"" + color + "\" stroke-opacity=\"0.25\" stroke-width=\"1\" points=\"" +
                   decimatedPolyline(s.x, s.raw, xLo, xScale, left, yPixel) + "\"/>\n";
        svg += "<polyline class=\"series\" stroke=\"" + color + "\" stroke-width=\"1.8\" points=\"" +
               decimatedPolyline(s.x, w > 0.0 ? s.smooth : s.raw, xLo, xScale, left, yPixel) + "\"><title>" +
               xmlEscape(comparison.runs[r].label()) + "</title></polyline>\n";
    }
    svg += "</g>\n";

    // Legend: one entry per run, under the x axis title.
    svg += "<g>\n";
    for (size_t r = 0; r < runCount; ++r) {
        const double lx = left + static_cast<double>(r % perRow) * kLegendEntry;
        const double ly = top + plotH + 50 + 18.0 * static_cast<double>(r / perRow);
        std::string label = comparison.runs[r].label() + (r == comparison.baseline ? " (baseline)" : "");
        if (label.size() > 26)
            label = label.substr(0, 25) + "…";
        svg += "<rect x=\"" + px(lx) + "\" y=\"" + px(ly - 8) + "\" width=\"14\" height=\"4\" fill=\"" + runColor(r) +
               "\"/><text x=\"" + px(lx + 18) + "\" y=\"" + px(ly - 2) + "\">" + xmlEscape(label) + "</text>\n";
    }
    if (empty)
        svg += "<text x=\"" + px(left + plotW / 2) + "\" y=\"" + px(top + plotH / 2) +
               "\" text-anchor=\"middle\" fill=\"#888\">no data</text>\n";
    svg += "</g>\n</svg>\n";
    return svg;
}

std::string comparisonToMarkdown(const Comparison& c, const std::vector<std::string>& imageFiles,
                                 const std::string& title)
{
    std::string md;
    std::string heading = title;
    if (heading.empty()) {
        heading = "Run comparison: ";
        for (size_t i = 0; i < c.runs.size(); ++i)
            heading += (i ? " vs " : "") + c.runs[i].label();
    }
    md += "# " + cell(heading) + "\n\n";
    if (c.runs.empty())
        return md + "No runs.\n";
    const auto& base = c.runs[c.baseline];
    md += "Baseline: **" + cell(base.label()) + "** (`" + cell(base.summary.id) +
          "`). Figures are medians over each run's steady-state window (warm-up skipped); p10–p90 below "
          "each; deltas are (run − baseline) / |baseline|.\n\n";

    md += "## Warnings\n\n";
    if (c.warnings.empty())
        md += "No workload differences found: the runs did the same work per step.\n\n";
    for (const auto& w : c.warnings) {
        if (w.severity == WarningSeverity::Critical)
            md += "> **⛔ CRITICAL (" + w.code + ")**: " + cell(w.message) + "\n\n";
        else
            md += std::string("- **") + (w.severity == WarningSeverity::Warning ? "⚠ warning" : "note") + " (" +
                  w.code + ")**: " + cell(w.message) + "\n";
    }
    if (!c.warnings.empty() && c.warnings.back().severity != WarningSeverity::Critical)
        md += "\n";
    if (c.hasCritical())
        md += "**No throughput conclusion is possible from the deltas below: see the critical warning.**\n\n";

    md += "## Figures\n\n| figure |";
    for (size_t i = 0; i < c.runs.size(); ++i)
        md += " " + cell(c.runs[i].label() + (i == c.baseline ? " (baseline)" : "")) + " |";
    md += "\n|---|";
    for (size_t i = 0; i < c.runs.size(); ++i)
        md += "---:|";
    md += "\n";
    for (const auto& spec : figureSpecs()) {
        md += "| " + cell(std::string(spec.label) + " (" + spec.unit + ")") + " |";
        const double b = spec.value(base.figures);
        for (size_t i = 0; i < c.runs.size(); ++i) {
            const double v = spec.value(c.runs[i].figures);
            std::string text = number(v, spec.decimals);
            if (i != c.baseline)
                if (const auto d = relativeDelta(v, b)) {
                    char delta[32];
                    std::snprintf(delta, sizeof delta, " (%+.1f%%)", *d * 100.0);
                    text += delta;
                }
            if (spec.stats) {
                const auto* s = spec.stats(c.runs[i].figures);
                const double scale = spec.statsScale;
                if (s->valid())
                    text += "<br><sub>" + number(s->p10 * scale, spec.decimals) + "–" +
                            number(s->p90 * scale, spec.decimals) + "</sub>";
            }
            md += ' ';
            md += cell(text);
            md += " |";
        }
        md += "\n";
    }
    auto row = [&](const char* name, auto field) {
        md += std::string("| ") + name + " |";
        for (const auto& r : c.runs) {
            md += ' ';
            md += cell(field(r));
            md += " |";
        }
        md += '\n';
    };
    row("steady window", windowText);
    row("data source", [](const ComparedRun& r) { return r.fingerprint.dataSource.empty() ? std::string("unknown") : r.fingerprint.dataSource; });
    row("world size / layout", [](const ComparedRun& r) { return std::to_string(r.fingerprint.worldSize) + " / " + r.fingerprint.layout; });
    row("seq / MBS / GBS", [](const ComparedRun& r) {
        return std::to_string(r.fingerprint.seqLength) + " / " + std::to_string(r.fingerprint.microBatchSize) + " / " +
               std::to_string(r.fingerprint.globalBatchSize);
    });
    row("images, image tokens per sample", [](const ComparedRun& r) {
        return number(r.fingerprint.imagesPerSample, 2) + ", " + number(r.fingerprint.imageTokensPerSample.median, 1);
    });
    row("status (steps)", [](const ComparedRun& r) { return runStateName(r.summary.status) + std::string(" (") + std::to_string(r.steps().size()) + ")"; });
    row("run id", [](const ComparedRun& r) { return r.summary.id; });
    md += "\n";

    md += predictionMarkdown(c);

    md += "## Config diff\n\n";
    if (c.configDiff.empty()) {
        md += "Identical configs (" + std::to_string(c.configDiff.keysCompared) + " keys compared; the run name is ignored).\n\n";
    } else {
        md += std::to_string(c.configDiff.rows.size()) + " of " + std::to_string(c.configDiff.keysCompared) +
              " keys differ.\n\n| key |";
        for (const auto& r : c.runs)
            md += " " + cell(r.label()) + " |";
        md += "\n|---|";
        for (size_t i = 0; i < c.runs.size(); ++i)
            md += "---|";
        md += "\n";
        for (const auto& diffRow : c.configDiff.rows) {
            md += "| `" + cell(diffRow.key) + "` |";
            for (const auto& v : diffRow.values) {
                md += v.empty() ? std::string(" *(absent)*") : " `" + cell(v);
                md += v.empty() ? " |" : "` |";
            }
            md += "\n";
        }
        md += "\n";
    }

    if (!imageFiles.empty()) {
        md += "## Charts\n\nRaw series faint, EMA-smoothed on top; the shaded band is each run's steady-state "
              "window.\n\n";
        for (const auto& file : imageFiles)
            md += "![" + std::filesystem::path(file).stem().string() + "](" + file + ")\n\n";
    }
    return md;
}

std::string markupEscape(std::string_view text)
{
    std::string out;
    out.reserve(text.size());
    for (char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
        }
    }
    return out;
}

Result<std::vector<std::string>> writeComparisonReport(const Comparison& comparison, const std::string& directory,
                                                       const ReportOptions& options)
{
    std::error_code ec;
    std::filesystem::create_directories(directory, ec);
    if (ec)
        return makeError(ErrorCode::IoError, "cannot create the report folder: " + ec.message(), directory);
    const std::filesystem::path dir(directory);
    std::vector<std::string> written{(dir / "report.md").string()};
    std::vector<std::string> images;
    for (ChartMetric metric : chartMetrics()) {
        const std::string stem = chartMetricKey(metric);
        const std::string svgPath = (dir / (stem + ".svg")).string();
        if (auto r = writeFileAtomically(svgPath, renderChartSvg(comparison, metric, options.chart)); !r)
            return r.error();
        written.push_back(svgPath);
        images.push_back(stem + "." + (options.imageExtension.empty() ? std::string("svg") : options.imageExtension));
    }
    if (auto r = writeFileAtomically(written.front(), comparisonToMarkdown(comparison, images, options.title)); !r)
        return r.error();
    return written;
}

}  // namespace wb::core
