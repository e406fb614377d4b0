// `launch --target local --config FILE [--name NAME]`: validate the config, record the run in the
// store, start moe-train detached, print the run id (alone, on stdout).
#include "app/cli/cli.h"

#include "core/run_config.h"

#include <cstdio>
#include <filesystem>

namespace wb::app {

namespace {

constexpr const char* kSynopsis = "launch --target local --config FILE [--name NAME]";

// A config that passes validation can still point at a manifest that is not there (the sample
// config's relative path before the sample set was built). Catch it before a run is created.
std::optional<std::string> manifestProblem(const core::RunConfig& config)
{
    if (config.data.source != "real")
        return std::nullopt;
    std::error_code ec;
    if (!config.data.manifest.empty() && std::filesystem::is_regular_file(config.data.manifest, ec))
        return std::nullopt;
    return "data.manifest: the manifest '" + config.data.manifest +
           "' does not exist.\n  fix: build the sample set with\n"
           "    moe-sample-set --from /usr/share/openclipart/png --out " +
           core::defaultSamplesDir() +
           "\n  and set data.manifest to its manifest.jsonl (relative paths are relative to the "
           "config file), or set data.source to \"mock\"";
}

}  // namespace

int launchCommand(const CliContext& context, Args args)
{
    bool missing = false;
    const auto targetName = args.takeOption("--target", missing);
    const auto configPath = args.takeOption("--config", missing);
    const auto name = args.takeOption("--name", missing);
    if (missing)
        return reportUsage("an option is missing its value", kSynopsis);
    if (!args.unknownOption().empty())
        return reportUsage("unknown option '" + args.unknownOption() + "'", kSynopsis);
    if (!args.rest().empty())
        return reportUsage("unexpected argument '" + args.rest().front() + "'", kSynopsis);
    if (!configPath)
        return reportUsage("--config FILE is required", kSynopsis);

    // Validation comes first: a malformed config never creates a run, in the store or on disk.
    auto config = core::loadRunConfig(*configPath);
    if (!config)
        return reportError(config.error());
    if (auto problem = manifestProblem(*config)) {
        std::fprintf(stderr, "moe-workbench-cli: %s: %s\n", configPath->c_str(), problem->c_str());
        return kExitUsage;
    }
    auto target = context.target(targetName.value_or("local"));
    if (!target)
        return reportError(target.error());

    auto store = context.openStore();
    if (!store)
        return reportError(store.error());
    core::NewRun newRun;
    newRun.name = name.value_or(config->name);
    newRun.target = (*target)->name();
    newRun.configJson = core::runConfigToJson(*config);
    newRun.configHash = core::runConfigHash(*config);
    auto id = (*store)->createRun(newRun);
    if (!id)
        return reportError(id.error());

    auto launched = (*target)->launch({*id, newRun.name, newRun.configJson});
    if (!launched) {
        // Keep the record (it says what was tried) but mark it, so `runs` does not show a ghost.
        (void)(*store)->setStatus(*id, core::runStateName(core::RunState::Failed), -1);
        return reportError(launched.error());
    }
    if (auto r = (*store)->setRunDir(*id, launched->runDir); !r)
        return reportError(r.error());
    if (auto r = (*store)->setStatus(*id, core::runStateName(core::RunState::Running), -1); !r)
        return reportError(r.error());
    std::printf("%s\n", id->c_str());
    return kExitOk;
}

}  // namespace wb::app
