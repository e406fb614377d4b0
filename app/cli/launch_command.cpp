// `launch --target local --config FILE [--name NAME]`: validate the config, record the run in the
// store, start moe-train detached, print the run id (alone, on stdout).
#include "app/cli/cli.h"

#include "core/run_config.h"
#include "core/run_launch.h"

#include <cstdio>

namespace wb::app {

namespace {

constexpr const char* kSynopsis = "launch --target local --config FILE [--name NAME]";

}  // namespace

int launchCommand(const CliContext& context, Args args)
{
    bool missing = false;
    const auto targetName = args.takeOption("--target", missing);
    const auto configPath = args.takeOption("--config", missing);
    const auto name = args.takeOption("--name", missing);
    if (auto usage = rejectLeftovers(args, missing, kSynopsis))
        return *usage;
    if (!configPath)
        return reportUsage("--config FILE is required", kSynopsis);

    // Validation comes first (core's, then the target's own): a malformed config never creates a
    // run, in the store or on disk.
    auto config = core::loadRunConfig(*configPath);
    if (!config)
        return reportError(config.error());
    auto target = context.target(targetName.value_or("local"));
    if (!target)
        return reportError(target.error());
    auto store = context.openStore();
    if (!store)
        return reportError(store.error());
    auto started = core::startRun(**store, **target, *config, name.value_or(config->name));
    if (!started)
        return reportError(started.error());
    std::printf("%s\n", started->id.c_str());
    return kExitOk;
}

}  // namespace wb::app
