// `import --bridge LOG [--config YAML] [--name N] [--model M] [--hardware H] [--gpus N] [--json]`:
// a finished Megatron-Bridge (or Megatron-LM) run into the store from the files its job left, with
// the planner's prediction for its layout beside what it measured (core/bridge/bridge_run_import.h).
// One transaction: a log that is not Megatron's or a config that does not read stores nothing.
#include "app/cli/cli.h"
#include "app/cli/planner_cli.h"

#include "core/bridge/bridge_follow.h"
#include "core/bridge/bridge_run_import.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>

namespace wb::app {

namespace {

constexpr const char* kSynopsis =
    "import --bridge LOG [--config YAML] [--tensorboard DIR] [--name NAME] [--model M] [--hardware H] [--gpus N]\n"
    "        [--catalog DIR] [--json]   (LOG: the job's stdout/stderr, e.g. the Slurm output file;\n"
    "        YAML: the resolved ConfigContainer, logger.save_config_filepath)\n"
    "       import --bridge LOG --follow [--target local|ssh:HOST] [--config YAML] [--model M] [--hardware H]\n"
    "        [--gpus N] [--interval-ms N] [--idle-exit-s N]   (a running job: LOG is a path on the target;\n"
    "        prints the run id, then follows the log like `watch`)";

std::string toJson(const core::bridge::BridgeImportSummary& s)
{
    nlohmann::ordered_json j;
    j["run_id"] = s.runId;
    j["kind"] = core::kRunKindBridge;
    j["steps"] = s.steps;
    j["memory_reports"] = s.memoryReports;
    j["tensorboard"] = {{"points", s.tensorboardPoints}, {"steps_added", s.tensorboardSteps}, {"steps_filled", s.tensorboardFilled}};
    const core::bridge::LogCounts& c = s.counts;
    j["lines"] = {{"total", c.lines},
                  {"iteration", c.iterationLines},
                  {"memory", c.memoryLines},
                  {"repeated_iterations", c.repeatedIterations},
                  {"nan_iterations", c.nanIterations},
                  {"skipped_iterations", c.skippedIterations},
                  {"rank_prefixed", c.rankPrefixedLines},
                  {"shared", c.sharedLines},
                  {"cut_short", c.unreadableIterationLines},
                  {"non_utf8", c.nonUtf8Lines},
                  {"other", c.otherLines},
                  {"torn_tail", s.tornTail}};
    j["meta"] = nlohmann::ordered_json::parse(core::toJsonLine(s.meta));
    if (s.check) {
        nlohmann::ordered_json rows = nlohmann::ordered_json::array();
        for (const core::PredictionRow& r : s.check->rows) {
            nlohmann::ordered_json row = {{"figure", r.key}};
            row["predicted"] = std::isfinite(r.predicted) ? nlohmann::ordered_json(r.predicted) : nlohmann::ordered_json();
            row["measured"] = std::isfinite(r.measured) ? nlohmann::ordered_json(r.measured) : nlohmann::ordered_json();
            row["error_pct"] = r.errorPct ? nlohmann::ordered_json(*r.errorPct) : nlohmann::ordered_json();
            rows.push_back(row);
        }
        j["predicted_vs_measured"] = rows;
    } else {
        j["predicted_vs_measured"] = nullptr;
    }
    j["notes"] = s.notes;
    return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

}  // namespace

int importCommand(const CliContext& context, Args args)
{
    bool missing = false;
    const auto log = args.takeOption("--bridge", missing);
    const auto config = args.takeOption("--config", missing);
    const auto tensorboard = args.takeOption("--tensorboard", missing);
    const auto name = args.takeOption("--name", missing);
    const auto model = args.takeOption("--model", missing);
    const auto hardware = args.takeOption("--hardware", missing);
    const auto gpusText = args.takeOption("--gpus", missing);
    const auto catalogDir = args.takeOption("--catalog", missing);
    const bool json = args.takeFlag("--json");
    const bool follow = args.takeFlag("--follow");
    const auto targetName = args.takeOption("--target", missing);
    const auto interval = args.takeOption("--interval-ms", missing);
    const auto idle = args.takeOption("--idle-exit-s", missing);
    if (auto usage = rejectLeftovers(args, missing, kSynopsis))
        return *usage;
    if (!follow && (targetName || interval || idle))
        return reportUsage("--target, --interval-ms and --idle-exit-s go with --follow", kSynopsis);
    if (follow && (tensorboard || json))
        return reportUsage("--tensorboard and --json are for a finished run's import, not with --follow", kSynopsis);
    if (!log)
        return reportUsage("--bridge LOG is needed: the log of the Megatron-Bridge job to import", kSynopsis);
    core::bridge::BridgeImportRequest request;
    request.logPath = *log;
    request.configPath = config;
    request.tensorboardDir = tensorboard;
    request.name = name.value_or("");
    request.model = model;
    request.hardware = hardware;
    if (gpusText) {
        request.gpus = parsePositive(*gpusText);
        if (!request.gpus)
            return reportUsage("--gpus needs a whole number from 1 to " + std::to_string(kMaxCliCount), kSynopsis);
    }
    auto catalog = loadCliCatalog(catalogDir.value_or(""));
    if (!catalog)
        return reportError(catalog.error());
    auto store = context.openStore();
    if (!store)
        return reportError(store.error());
    if (follow) {
        const std::string where = targetName.value_or("local");
        auto target = context.target(where);  // checks the host before anything is stored
        if (!target)
            return reportError(target.error());
        if (!request.logPath.empty() && request.logPath.front() != '/' && where == "local")
            request.logPath = std::filesystem::absolute(request.logPath).string();
        std::vector<std::string> notes;
        auto id = core::bridge::startBridgeFollow(**store, *catalog, request, where, &notes);
        if (!id)
            return reportError(id.error());
        std::printf("%s\n", id->c_str());
        for (const std::string& note : notes)
            std::fprintf(stderr, "note: %s\n", note.c_str());
        std::fflush(stdout);
        std::vector<std::string> watchArgs = {*id};
        if (interval)
            watchArgs.insert(watchArgs.end(), {"--interval-ms", *interval});
        if (idle)
            watchArgs.insert(watchArgs.end(), {"--idle-exit-s", *idle});
        store->reset();  // watch opens its own
        return watchCommand(context, Args(std::move(watchArgs)));
    }
    auto imported = core::bridge::importBridgeRun(**store, *catalog, request);
    if (!imported)
        return reportError(imported.error());
    if (json)
        std::printf("%s\n", toJson(*imported).c_str());
    else
        std::printf("%s", core::bridge::describeImport(*imported).c_str());
    return kExitOk;
}

}  // namespace wb::app
