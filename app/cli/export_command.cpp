// `export RUN --csv FILE`: every stored step of a run as CSV (header row, metrics.jsonl key names),
// written atomically; FILE "-" writes to stdout. `export RUN RUN... --report DIR|FILE.html`: the
// comparison report (a folder with Markdown + SVG charts, or one HTML file with the charts inline)
// without the printout of `compare` (compare_command.cpp).
#include "app/cli/cli.h"

#include "core/compare/steps_csv.h"

#include <cstdio>

namespace wb::app {

namespace {
constexpr const char* kExportSynopsis =
    "export RUN --csv FILE | export RUN RUN... --report DIR|FILE.html [--baseline RUN] [--window A:B] "
    "[--chart-x step|time|tokens] [--log-y] [--smoothing W]";
}  // namespace

int exportReportCommand(const CliContext& context, Args args, const std::string& directory, const char* synopsis);

int exportCommand(const CliContext& context, Args args)
{
    bool missing = false;
    const auto reportDir = args.takeOption("--report", missing);
    if (missing || (reportDir && reportDir->empty()))
        return reportUsage("--report needs a folder (Markdown) or a FILE.html", kExportSynopsis);
    const auto csvPath = args.takeOption("--csv", missing);
    if (reportDir) {
        if (csvPath)
            return reportUsage("--csv and --report are separate exports: run export once for each", kExportSynopsis);
        return exportReportCommand(context, std::move(args), *reportDir, kExportSynopsis);
    }
    if (missing || !csvPath || csvPath->empty())
        return reportUsage("--csv FILE (\"-\" for stdout) or --report DIR|FILE.html is required", kExportSynopsis);
    if (const std::string unknown = args.unknownOption(); !unknown.empty())
        return reportUsage("unknown option '" + unknown + "'", kExportSynopsis);
    if (args.rest().size() != 1)
        return reportUsage("export takes one RUN id (or prefix)", kExportSynopsis);

    catchUpNamedRuns(context, args.rest());
    auto store = context.openStore();
    if (!store)
        return reportError(store.error());
    auto id = (*store)->resolveRunId(args.rest().front());
    if (!id)
        return reportError(id.error());
    auto steps = (*store)->steps(*id);
    if (!steps)
        return reportError(steps.error());

    if (*csvPath == "-") {
        const std::string csv = core::stepsToCsv(*steps);
        std::fwrite(csv.data(), 1, csv.size(), stdout);
        return kExitOk;
    }
    if (auto written = core::writeStepsCsv(*csvPath, *steps); !written)
        return reportError(written.error());
    std::fprintf(stderr, "exported %zu step(s) of %s to %s\n", steps->size(), id->c_str(), csvPath->c_str());
    return kExitOk;
}

}  // namespace wb::app
