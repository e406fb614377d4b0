// One file, no scripts, no external resources: styles inline in <head>, charts as inline <svg>
// (core's renderer, the XML declaration dropped). Everything that comes from a run — names, config
// values, warning texts — goes through escapeHtml, so a run called `<b>"a" & b</b>` stays text.
#include "core/compare/html_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace wb::core {
namespace {

std::string escapeHtml(const std::string& text)
{
    return markupEscape(text);
}

std::string number(double value, int decimals)
{
    if (!std::isfinite(value))
        return "–";
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return text;
}

std::string percent(double fraction100)
{
    char text[32];
    std::snprintf(text, sizeof text, "%+.1f%%", fraction100);
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

constexpr const char* kStyle = R"(
body { font-family: -apple-system, "Segoe UI", Roboto, Helvetica, Arial, sans-serif; margin: 24px; color: #222; }
table { border-collapse: collapse; margin: 8px 0 20px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: right; vertical-align: top; }
th:first-child, td:first-child { text-align: left; }
th { background: #f4f4f4; }
.range { color: #777; font-size: 85%; }
.better { color: #2ca02c; } .worse { color: #d62728; }
.banner { padding: 10px 14px; margin-bottom: 16px; border-radius: 4px; }
.banner.critical { background: #d62728; color: #fff; font-weight: bold; border: 2px solid #7f0000; }
.banner.warning { background: #ffbf00; color: #000; border: 1px solid #a07800; }
.banner.info { background: #e3f2fd; color: #0d47a1; }
.banner.none { background: #e8f5e9; color: #1b5e20; }
.banner ul { margin: 4px 0 0 0; padding-left: 20px; }
.noprediction { color: #777; text-align: left; }
code { font-family: Menlo, Consolas, monospace; font-size: 90%; }
.chart { margin: 8px 0; }
)";

void banner(std::string& h, const Comparison& c)
{
    std::optional<WarningSeverity> worst;
    for (const auto& w : c.warnings)
        if (!worst || w.severity < *worst)
            worst = w.severity;
    const char* cls = !worst ? "none" : *worst == WarningSeverity::Critical ? "critical"
                                      : *worst == WarningSeverity::Warning  ? "warning"
                                                                            : "info";
    h += std::string("<div class=\"banner ") + cls + "\" id=\"warnings\">";
    if (c.warnings.empty()) {
        h += "No workload differences found: the runs did the same work per step.</div>\n";
        return;
    }
    h += "Warnings<ul>";
    for (const auto& w : c.warnings) {
        const char* tag = w.severity == WarningSeverity::Critical  ? "CRITICAL"
                          : w.severity == WarningSeverity::Warning ? "warning"
                                                                   : "note";
        h += "<li class=\"warning-item\"><strong>" + std::string(tag) + " (" + escapeHtml(w.code) + "):</strong> " +
             escapeHtml(w.message) + "</li>";
    }
    h += "</ul>";
    if (c.hasCritical())
        h += "No throughput conclusion is possible from the deltas below.";
    h += "</div>\n";
}

void figures(std::string& h, const Comparison& c)
{
    const auto& base = c.runs[c.baseline];
    h += "<h2>Figures</h2>\n<table id=\"figures\"><tr><th>figure</th>";
    for (size_t i = 0; i < c.runs.size(); ++i)
        h += "<th class=\"run\">" + escapeHtml(c.runs[i].label()) + (i == c.baseline ? " (baseline)" : "") + "</th>";
    h += "</tr>\n";
    for (const auto& spec : figureSpecs()) {
        h += "<tr><td>" + escapeHtml(std::string(spec.label) + " (" + spec.unit + ")") + "</td>";
        const double b = spec.value(base.figures);
        for (size_t i = 0; i < c.runs.size(); ++i) {
            const double v = spec.value(c.runs[i].figures);
            h += "<td>" + number(v, spec.decimals);
            if (i != c.baseline)
                if (const auto d = relativeDelta(v, b)) {
                    // No green next to a critical warning: that delta is not a result.
                    const bool better = (*d > 0) == spec.higherIsBetter;
                    const char* cls = c.hasCritical() || std::abs(*d) < 0.01 ? "" : better ? " class=\"better\"" : " class=\"worse\"";
                    h += std::string(" <span") + cls + ">(" + percent(*d * 100.0) + ")</span>";
                }
            if (spec.stats) {
                const auto* s = spec.stats(c.runs[i].figures);
                const double scale = spec.statsScale;
                if (s->valid())
                    h += "<br/><span class=\"range\">" + number(s->p10 * scale, spec.decimals) + "–" +
                         number(s->p90 * scale, spec.decimals) + "</span>";
            }
            h += "</td>";
        }
        h += "</tr>\n";
    }
    auto row = [&](const char* name, auto field) {
        h += std::string("<tr><td>") + name + "</td>";
        for (const auto& r : c.runs)
            h += "<td>" + escapeHtml(field(r)) + "</td>";
        h += "</tr>\n";
    };
    row("steady window", windowText);
    row("data source", [](const ComparedRun& r) { return r.fingerprint.dataSource.empty() ? std::string("unknown") : r.fingerprint.dataSource; });
    row("world size / layout", [](const ComparedRun& r) { return std::to_string(r.fingerprint.worldSize) + " / " + r.fingerprint.layout; });
    row("seq / MBS / GBS", [](const ComparedRun& r) {
        return std::to_string(r.fingerprint.seqLength) + " / " + std::to_string(r.fingerprint.microBatchSize) + " / " +
               std::to_string(r.fingerprint.globalBatchSize);
    });
    row("status (steps)", [](const ComparedRun& r) { return runStateName(r.summary.status) + std::string(" (") + std::to_string(r.steps().size()) + ")"; });
    row("run id", [](const ComparedRun& r) { return r.summary.id; });
    h += "</table>\n";
}

void predictions(std::string& h, const Comparison& c)
{
    h += "<h2>Predicted vs measured</h2>\n";
    const auto first = std::find_if(c.runs.begin(), c.runs.end(), [](const ComparedRun& r) { return r.predictionCheck.has_value(); });
    if (first == c.runs.end()) {
        h += "<p id=\"predictions\">No prediction for these runs (not launched from a plan).</p>\n";
        return;
    }
    const auto& columns = first->predictionCheck->rows;
    h += "<p>Each cell: predicted / measured (error = (predicted − measured) / measured).</p>\n"
         "<table id=\"predictions\"><tr><th>run</th>";
    for (const auto& col : columns)
        h += "<th>" + escapeHtml(std::string(col.label) + " (" + col.unit + ")") + "</th>";
    h += "<th>predicted for</th></tr>\n";
    for (const auto& r : c.runs) {
        h += "<tr><td>" + escapeHtml(r.label()) + "</td>";
        if (!r.predictionCheck) {
            h += "<td class=\"noprediction\" colspan=\"" + std::to_string(columns.size() + 1) +
                 "\">no prediction (not launched from a plan)</td></tr>\n";
            continue;
        }
        for (const auto& row : r.predictionCheck->rows)
            h += "<td>" + number(row.predicted, row.decimals) + " / " + number(row.measured, row.decimals) +
                 (row.errorPct ? " (" + percent(*row.errorPct) + ")" : std::string()) + "</td>";
        const auto& p = r.predictionCheck->prediction;
        h += "<td>" + escapeHtml(std::to_string(p.gpus) + " × " + (p.hardware.empty() ? std::string("?") : p.hardware)) +
             (r.predictionCheck->note.empty() ? std::string() : "<br/><span class=\"worse\">" + escapeHtml(r.predictionCheck->note) + "</span>") +
             "</td></tr>\n";
    }
    h += "<tr><th>mean |error|</th>";
    for (const auto& a : c.predictionAccuracy)
        h += "<th>" + (a.runs ? number(a.meanAbsErrorPct, 1) + "% (" + std::to_string(a.runs) + (a.runs == 1 ? " run)" : " runs)")
                              : std::string("–")) + "</th>";
    h += "<th></th></tr>\n</table>\n";
}

void configDiff(std::string& h, const Comparison& c)
{
    h += "<h2>Config diff</h2>\n";
    if (c.configDiff.empty()) {
        h += "<p id=\"config-diff\">Identical configs (" + std::to_string(c.configDiff.keysCompared) +
             " keys compared; the run name is ignored).</p>\n";
        return;
    }
    h += "<p>" + std::to_string(c.configDiff.rows.size()) + " of " + std::to_string(c.configDiff.keysCompared) +
         " keys differ.</p>\n<table id=\"config-diff\"><tr><th>key</th>";
    for (const auto& r : c.runs)
        h += "<th>" + escapeHtml(r.label()) + "</th>";
    h += "</tr>\n";
    for (const auto& row : c.configDiff.rows) {
        h += "<tr><td><code>" + escapeHtml(row.key) + "</code></td>";
        for (const auto& v : row.values)
            h += v.empty() ? std::string("<td><em>(absent)</em></td>") : "<td><code>" + escapeHtml(v) + "</code></td>";
        h += "</tr>\n";
    }
    h += "</table>\n";
}

}  // namespace

bool isHtmlReportPath(const std::string& path)
{
    std::string lower = path;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char ch) { return std::tolower(ch); });
    auto endsWith = [&](const char* suffix) {
        const std::string s(suffix);
        return lower.size() > s.size() && lower.compare(lower.size() - s.size(), s.size(), s) == 0;
    };
    return endsWith(".html") || endsWith(".htm");
}

std::string comparisonToHtml(const Comparison& c, const ReportOptions& options)
{
    std::string heading = options.title;
    if (heading.empty()) {
        heading = "Run comparison: ";
        for (size_t i = 0; i < c.runs.size(); ++i)
            heading += (i ? " vs " : "") + c.runs[i].label();
    }
    std::string h;
    h += "<!DOCTYPE html>\n<html xmlns=\"http://www.w3.org/1999/xhtml\" lang=\"en\">\n<head>\n"
         "<meta charset=\"utf-8\"/>\n<title>" + escapeHtml(heading) + "</title>\n<style>" + kStyle +
         "</style>\n</head>\n<body>\n";
    if (c.runs.empty())
        return h + "<h1>" + escapeHtml(heading) + "</h1>\n<p>No runs.</p>\n</body>\n</html>\n";
    banner(h, c);  // first, above the heading: nobody reads a table without seeing it
    h += "<h1>" + escapeHtml(heading) + "</h1>\n";
    const auto& base = c.runs[c.baseline];
    h += "<p>Baseline: <strong>" + escapeHtml(base.label()) + "</strong> (<code>" + escapeHtml(base.summary.id) +
         "</code>). Figures are medians over each run's steady-state window (warm-up skipped), p10–p90 "
         "below each; deltas are (run − baseline) / |baseline|.</p>\n";
    figures(h, c);
    predictions(h, c);
    configDiff(h, c);
    h += "<h2>Charts</h2>\n<p>Raw series faint, EMA-smoothed on top; the shaded band is each run's steady-state "
         "window.</p>\n";
    for (ChartMetric metric : chartMetrics()) {
        std::string svg = renderChartSvg(c, metric, options.chart);
        if (svg.rfind("<?xml", 0) == 0)
            svg.erase(0, svg.find("?>") + 2);  // a declaration may only open a document
        h += std::string("<div class=\"chart\" id=\"chart-") + chartMetricKey(metric) + "\">" + svg + "</div>\n";
    }
    h += "</body>\n</html>\n";
    return h;
}

Result<void> writeComparisonHtml(const Comparison& comparison, const std::string& path, const ReportOptions& options)
{
    return writeFileAtomically(path, comparisonToHtml(comparison, options));
}

}  // namespace wb::core
