// `compare RUN RUN... [--baseline RUN] [--window A:B] [--json]`: the runs' steady-state figures side
// by side with deltas against the baseline, the workload warnings first (mock vs real above all),
// then the config keys that differ. The analysis is core/compare/run_comparison; this file prints.
#include "app/cli/cli.h"

#include "core/compare/compare_report.h"
#include "core/compare/html_report.h"
#include "core/compare/run_comparison.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace wb::app {

namespace {

constexpr const char* kCompareSynopsis =
    "compare RUN RUN... [--baseline RUN] [--window A:B] [--json] [--report DIR|FILE.html [--chart-x step|time|tokens] "
    "[--log-y] [--smoothing W]]";

std::string format(double value, int decimals)
{
    if (!std::isfinite(value))
        return "-";
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return text;
}

std::string formatDelta(std::optional<double> delta)
{
    if (!delta)
        return "";
    char text[32];
    std::snprintf(text, sizeof text, " (%+.1f%%)", *delta * 100.0);
    return text;
}

/// Prints rows of cells as left-aligned columns, two spaces apart.
void printTable(const std::vector<std::vector<std::string>>& rows)
{
    std::vector<size_t> widths;
    for (const auto& row : rows)
        for (size_t i = 0; i < row.size(); ++i) {
            widths.resize(std::max(widths.size(), row.size()));
            // Column width in characters; the multi-byte "×" and "·" only make it generous.
            widths[i] = std::max(widths[i], row[i].size());
        }
    for (const auto& row : rows) {
        std::string line;
        for (size_t i = 0; i < row.size(); ++i) {
            line += row[i];
            if (i + 1 < row.size())
                line += std::string(widths[i] - row[i].size() + 2, ' ');
        }
        std::printf("%s\n", line.c_str());
    }
}

std::string windowText(const core::ComparedRun& r)
{
    if (r.window.size() == 0)
        return "-";
    return std::to_string(r.steps().step[r.window.begin]) + ".." + std::to_string(r.steps().step[r.window.end - 1]) +
           " (" + std::to_string(r.window.size()) + (r.window.detected ? "" : r.window.userOverride ? ", user" : ", fallback") +
           ")";
}

void printWarnings(const core::Comparison& c)
{
    if (c.warnings.empty()) {
        std::printf("No workload differences found: the runs did the same work per step.\n\n");
        return;
    }
    std::printf("WARNINGS\n");
    for (const auto& w : c.warnings) {
        const char* tag = w.severity == core::WarningSeverity::Critical  ? "!!! CRITICAL"
                          : w.severity == core::WarningSeverity::Warning ? "!   warning "
                                                                         : "    note    ";
        std::printf("  %s  %s\n", tag, w.message.c_str());
    }
    std::printf("\n");
}

void printFigures(const core::Comparison& c)
{
    const auto& base = c.runs[c.baseline];
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> header{"FIGURE (median over the steady window)"};
    for (size_t i = 0; i < c.runs.size(); ++i)
        header.push_back(c.runs[i].label() + (i == c.baseline ? " [baseline]" : ""));
    rows.push_back(header);
    for (const auto& spec : core::figureSpecs()) {
        std::vector<std::string> row{std::string(spec.label) + " (" + spec.unit + ")"};
        std::vector<std::string> range{"  p10..p90"};
        for (size_t i = 0; i < c.runs.size(); ++i) {
            const double v = spec.value(c.runs[i].figures);
            row.push_back(format(v, spec.decimals) +
                          (i == c.baseline ? "" : formatDelta(core::relativeDelta(v, spec.value(base.figures)))));
            if (spec.stats) {
                const auto* s = spec.stats(c.runs[i].figures);
                const double scale = spec.statsScale;
                range.push_back(s->valid() ? format(s->p10 * scale, spec.decimals) + ".." +
                                                 format(s->p90 * scale, spec.decimals)
                                           : "-");
            }
        }
        rows.push_back(row);
        if (spec.stats)
            rows.push_back(range);
    }
    auto add = [&](const char* name, auto field) {
        std::vector<std::string> row{name};
        for (const auto& r : c.runs)
            row.push_back(field(r));
        rows.push_back(row);
    };
    add("steady window (steps)", windowText);
    add("data source", [](const auto& r) { return r.fingerprint.dataSource.empty() ? std::string("?") : r.fingerprint.dataSource; });
    add("world size / layout", [](const auto& r) { return std::to_string(r.fingerprint.worldSize) + " / " + r.fingerprint.layout; });
    add("seq / MBS / GBS", [](const auto& r) {
        return std::to_string(r.fingerprint.seqLength) + " / " + std::to_string(r.fingerprint.microBatchSize) + " / " +
               std::to_string(r.fingerprint.globalBatchSize);
    });
    add("images, image tokens per sample", [](const auto& r) {
        return format(r.fingerprint.imagesPerSample, 2) + ", " + format(r.fingerprint.imageTokensPerSample.median, 1);
    });
    add("status", [](const auto& r) { return core::runStateName(r.summary.status) + std::string(" (") + std::to_string(r.steps().size()) + " steps)"; });
    printTable(rows);
    std::printf("\n");
}

std::string predictionCell(const core::PredictionRow& row)
{
    std::string cell = format(row.predicted, row.decimals) + " / " + format(row.measured, row.decimals);
    if (row.errorPct) {
        char text[32];
        std::snprintf(text, sizeof text, " (%+.1f%%)", *row.errorPct);
        cell += text;
    }
    return cell;
}

// One row per run: each predicted figure as "predicted / measured (error)", then the mean absolute
// error across the runs that have a prediction — the planner's accuracy.
void printPredictions(const core::Comparison& c)
{
    const bool any = std::any_of(c.runs.begin(), c.runs.end(), [](const auto& r) { return r.predictionCheck.has_value(); });
    if (!any) {
        std::printf("PREDICTED VS MEASURED: no prediction for these runs (not launched from a plan)\n\n");
        return;
    }
    std::printf("PREDICTED VS MEASURED (predicted / measured (error); error = (predicted - measured) / measured)\n");
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> header{"  RUN"};
    const auto& first = std::find_if(c.runs.begin(), c.runs.end(), [](const auto& r) { return r.predictionCheck.has_value(); })
                            ->predictionCheck->rows;
    for (const auto& row : first)
        header.push_back(std::string(row.label) + " (" + row.unit + ")");
    header.push_back("predicted for");
    rows.push_back(header);
    std::vector<std::string> notes;
    for (const auto& r : c.runs) {
        std::vector<std::string> row{"  " + r.label()};
        if (!r.predictionCheck) {  // after the table: one long cell would widen a whole column
            notes.push_back(r.label() + ": no prediction (not launched from a plan)");
            continue;
        }
        for (const auto& figure : r.predictionCheck->rows)
            row.push_back(predictionCell(figure));
        const auto& p = r.predictionCheck->prediction;
        row.push_back(std::to_string(p.gpus) + " x " + (p.hardware.empty() ? std::string("?") : p.hardware));
        rows.push_back(row);
        if (!r.predictionCheck->note.empty())
            notes.push_back(r.label() + ": note: " + r.predictionCheck->note);
    }
    std::vector<std::string> mae{"  mean |error|"};
    for (const auto& a : c.predictionAccuracy)
        mae.push_back(a.runs ? format(a.meanAbsErrorPct, 1) + "% (" + std::to_string(a.runs) + " run" + (a.runs == 1 ? "" : "s") + ")"
                             : std::string("-"));
    rows.push_back(mae);
    printTable(rows);
    for (const auto& note : notes)
        std::printf("  %s\n", note.c_str());
    std::printf("\n");
}

void printConfigDiff(const core::Comparison& c)
{
    if (c.configDiff.empty()) {
        std::printf("CONFIG DIFF: identical configs (%zu keys compared; the run name is ignored)\n",
                    c.configDiff.keysCompared);
        return;
    }
    std::printf("CONFIG DIFF (%zu of %zu keys differ)\n", c.configDiff.rows.size(), c.configDiff.keysCompared);
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> header{"  KEY"};
    for (const auto& r : c.runs)
        header.push_back(r.label());
    rows.push_back(header);
    for (const auto& diffRow : c.configDiff.rows) {
        std::vector<std::string> row{"  " + diffRow.key};
        for (const auto& v : diffRow.values)
            row.push_back(v.empty() ? "(absent)" : v);
        rows.push_back(row);
    }
    printTable(rows);
}

}  // namespace

namespace {

/// Options shared by `compare --report` and `export --report`: the charts' x axis, log scale and
/// smoothing. Returns an empty string or the usage problem.
std::string takeChartOptions(Args& args, core::ChartOptions& chart)
{
    bool missing = false;
    const auto x = args.takeOption("--chart-x", missing);
    const auto smoothing = args.takeOption("--smoothing", missing);
    chart.logY = args.takeFlag("--log-y");
    if (missing)
        return "--chart-x and --smoothing each need a value";
    if (x) {
        if (*x == "step")
            chart.xAxis = core::ChartXAxis::Step;
        else if (*x == "time")
            chart.xAxis = core::ChartXAxis::WallTime;
        else if (*x == "tokens")
            chart.xAxis = core::ChartXAxis::EffectiveTokens;
        else
            return "--chart-x must be step, time or tokens";
    }
    if (smoothing) {
        char* end = nullptr;
        const double w = std::strtod(smoothing->c_str(), &end);
        if (end == smoothing->c_str() || *end != '\0' || !(w >= 0.0 && w < 1.0))
            return "--smoothing must be an EMA weight in [0, 1), e.g. 0.6";
        chart.smoothing = w;
    }
    return {};
}

/// Parses the comparison options (`--baseline`, `--window`) and the runs; nullopt after printing
/// the usage problem (exit code in `exitCode`).
std::optional<core::CompareRequest> takeCompareRequest(Args& args, const char* synopsis, int& exitCode)
{
    bool missing = false;
    core::CompareRequest request;
    request.baseline = args.takeOption("--baseline", missing);
    const auto windowArg = args.takeOption("--window", missing);
    if (missing) {
        exitCode = reportUsage("--baseline and --window each need a value", synopsis);
        return std::nullopt;
    }
    if (const std::string unknown = args.unknownOption(); !unknown.empty()) {
        exitCode = reportUsage("unknown option '" + unknown + "'", synopsis);
        return std::nullopt;
    }
    if (args.rest().empty()) {
        exitCode = reportUsage("name the runs to compare (ids or unique prefixes)", synopsis);
        return std::nullopt;
    }
    request.runs = args.rest();
    if (windowArg) {
        auto window = core::parseStepWindow(*windowArg);
        if (!window) {
            exitCode = reportUsage("--window " + window.error().message, synopsis);
            return std::nullopt;
        }
        request.window = *window;
    }
    return request;
}

/// `--report FILE.html`: one self-contained HTML file; any other path: a folder with report.md and
/// the charts as SVG beside it.
int writeReport(const core::Comparison& comparison, const std::string& directory, const core::ChartOptions& chart)
{
    core::ReportOptions options;
    options.chart = chart;
    if (core::isHtmlReportPath(directory)) {
        if (auto r = core::writeComparisonHtml(comparison, directory, options); !r)
            return reportError(r.error());
        std::fprintf(stderr, "wrote the comparison report to %s (one HTML file, charts inline)\n", directory.c_str());
        return kExitOk;
    }
    auto written = core::writeComparisonReport(comparison, directory, options);
    if (!written)
        return reportError(written.error());
    std::fprintf(stderr, "wrote the comparison report to %s (%zu files: report.md and the charts as SVG)\n",
                 written->front().c_str(), written->size());
    return kExitOk;
}

}  // namespace

/// `export RUN RUN... --report DIR [...]` (export_command.cpp): the report without the printout.
int exportReportCommand(const CliContext& context, Args args, const std::string& directory, const char* synopsis)
{
    core::ChartOptions chart;
    if (const std::string problem = takeChartOptions(args, chart); !problem.empty())
        return reportUsage(problem, synopsis);
    int exitCode = kExitOk;
    auto request = takeCompareRequest(args, synopsis, exitCode);
    if (!request)
        return exitCode;
    catchUpNamedRuns(context, request->runs);
    auto comparison = core::compareRuns(context.dbPath, *request);
    if (!comparison)
        return reportError(comparison.error());
    return writeReport(*comparison, directory, chart);
}

int compareCommand(const CliContext& context, Args args)
{
    const bool json = args.takeFlag("--json");
    bool missing = false;
    const auto reportDir = args.takeOption("--report", missing);
    if (missing || (reportDir && reportDir->empty()))
        return reportUsage("--report needs a folder (Markdown) or a FILE.html", kCompareSynopsis);
    core::ChartOptions chart;
    if (const std::string problem = takeChartOptions(args, chart); !problem.empty())
        return reportUsage(problem, kCompareSynopsis);
    int exitCode = kExitOk;
    auto request = takeCompareRequest(args, kCompareSynopsis, exitCode);
    if (!request)
        return exitCode;

    catchUpNamedRuns(context, request->runs);
    auto comparison = core::compareRuns(context.dbPath, *request);
    if (!comparison)
        return reportError(comparison.error());

    if (json) {
        std::printf("%s\n", core::comparisonToJson(*comparison).c_str());
    } else {
        printWarnings(*comparison);
        printFigures(*comparison);
        printPredictions(*comparison);
        printConfigDiff(*comparison);
    }
    std::fflush(stdout);
    if (reportDir)
        return writeReport(*comparison, *reportDir, chart);
    return kExitOk;
}

}  // namespace wb::app
