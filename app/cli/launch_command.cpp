// `launch --target local --config FILE [--name NAME] [--prediction FILE]`: validate the config,
// record the run in the store (with the plan's prediction when given, or when the generator's
// prediction.json sits beside the config), start moe-train detached, print the run id (alone, on
// stdout). Progress phases of remote targets go to stderr.
// `launch --target slurm:HOST --bridge DIR [--name NAME] [--detach]`: a Megatron-Bridge job from
// the folder generate --format megatron-bridge wrote (core/bridge/bridge_launch.h): node check,
// record, submit, print the run id, then follow its output like `watch` until the job ends.
#include "app/cli/cli.h"
#include "app/cli/planner_cli.h"

#include "core/bridge/bridge_launch.h"
#include "core/run_config.h"
#include "core/run_launch.h"
#include "core/run_prediction.h"

#include <filesystem>

#include <cstdio>

namespace wb::app {

namespace {

constexpr const char* kSynopsis =
    "launch --target local|ssh:HOST|ssh:HOST1,HOST2,...|slurm:HOST --config FILE [--name NAME] [--steps N]\n"
    "       [--manifest PATH] [--prediction FILE|--no-prediction]\n"
    "       (--steps N: train N steps instead of train.train_iters; --manifest: train on this image set\n"
    "        instead of the config's data.manifest, e.g. the one moe-sample-set built)\n"
    "       launch --target slurm:HOST --bridge DIR [--name NAME] [--detach] [--interval-ms N] [--catalog DIR]\n"
    "       (DIR: written by generate --format megatron-bridge; follows the job's output until it ends\n"
    "        unless --detach)";

void printProgress(const core::LaunchProgress& p)
{
    std::fprintf(stderr, "%s%s%s: %s%s\n", p.phase.c_str(), p.node.empty() ? "" : " on ", p.node.c_str(),
                 p.detail.c_str(), p.fraction >= 0 ? (" (" + std::to_string(int(100 * p.fraction)) + "%)").c_str() : "");
}

int launchBridge(const CliContext& context, const std::string& targetName, const std::string& dir,
                 const std::optional<std::string>& name, bool detach, const std::optional<std::string>& interval,
                 const std::optional<std::string>& catalogDir)
{
    if (targetName.rfind("slurm:", 0) != 0)
        return reportUsage("--bridge needs --target slurm:HOST (a registered login node): Megatron-Bridge jobs are "
                           "submitted with sbatch",
                           kSynopsis);
    // The folder first: a wrong folder never reaches the cluster or the store.
    auto folder = core::bridge::readBridgeLaunchFolder(dir);
    if (!folder)
        return reportError(folder.error());
    auto catalog = loadCliCatalog(catalogDir.value_or(""));
    if (!catalog)
        return reportError(catalog.error());
    auto target = context.target(targetName);
    if (!target)
        return reportError(target.error());
    auto store = context.openStore();
    if (!store)
        return reportError(store.error());
    if (folder->prediction)
        std::fprintf(stderr, "prediction from %s/prediction.json: %.0f ms/step, %.1f GiB, MFU %.1f%% (%s, %d GPUs)\n",
                     dir.c_str(), folder->prediction->stepMs, folder->prediction->memoryGib,
                     100.0 * folder->prediction->mfu, folder->prediction->hardware.c_str(), folder->prediction->gpus);
    (*target)->setProgressCallback(printProgress);
    std::vector<std::string> notes;
    auto started = core::bridge::startBridgeLaunch(**store, *catalog, **target, *folder, name.value_or(""), &notes);
    if (!started)
        return reportError(started.error());
    std::printf("%s\n", started->id.c_str());
    for (const std::string& note : notes)
        std::fprintf(stderr, "note: %s\n", note.c_str());
    std::fflush(stdout);
    if (detach)
        return kExitOk;
    std::vector<std::string> watchArgs = {started->id};
    if (interval)
        watchArgs.insert(watchArgs.end(), {"--interval-ms", *interval});
    store->reset();  // watch opens its own
    return watchCommand(context, Args(std::move(watchArgs)));
}

}  // namespace

int launchCommand(const CliContext& context, Args args)
{
    bool missing = false;
    const auto targetName = args.takeOption("--target", missing);
    const auto configPath = args.takeOption("--config", missing);
    const auto name = args.takeOption("--name", missing);
    auto predictionPath = args.takeOption("--prediction", missing);
    const bool noPrediction = args.takeFlag("--no-prediction");
    const auto stepsText = args.takeOption("--steps", missing);
    const auto manifest = args.takeOption("--manifest", missing);
    const auto bridgeDir = args.takeOption("--bridge", missing);
    const bool detach = args.takeFlag("--detach");
    const auto interval = args.takeOption("--interval-ms", missing);
    const auto catalogDir = args.takeOption("--catalog", missing);
    if (auto usage = rejectLeftovers(args, missing, kSynopsis))
        return *usage;
    if (bridgeDir) {
        if (configPath || stepsText || manifest || predictionPath || noPrediction)
            return reportUsage("--bridge DIR takes the job, its config and its prediction from DIR: leave out --config, "
                               "--steps, --manifest and --prediction",
                               kSynopsis);
        if (!targetName)
            return reportUsage("--bridge needs --target slurm:HOST", kSynopsis);
        return launchBridge(context, *targetName, *bridgeDir, name, detach, interval, catalogDir);
    }
    if (detach || interval || catalogDir)
        return reportUsage("--detach, --interval-ms and --catalog go with --bridge (launch --config never follows)", kSynopsis);
    std::optional<int> steps;
    if (stepsText) {
        steps = parsePositive(*stepsText);
        if (!steps)
            return reportUsage("--steps needs a whole number from 1 to " + std::to_string(kMaxCliCount) + " (the steps to train), got '" + *stepsText + "'", kSynopsis);
    }
    if (!configPath)
        return reportUsage("--config FILE is required", kSynopsis);

    // Validation comes first (core's, then the target's own): a malformed config never creates a
    // run, in the store or on disk.
    auto config = core::loadRunConfig(*configPath);
    if (!config)
        return reportError(config.error());
    if (manifest) {
        // Real data from this manifest (absolute: the run directory is elsewhere).
        std::error_code ec;
        const auto absolute = std::filesystem::absolute(*manifest, ec);
        config->data.source = "real";
        config->data.manifest = ec ? *manifest : absolute.lexically_normal().string();
    }
    if (steps) {
        // A quick try of a config: fewer steps, warm-up and decay inside them (validated below).
        config->train.trainIters = *steps;
        config->train.lrWarmupIters = std::min<int64_t>(config->train.lrWarmupIters, std::max(0, *steps - 1));
    }
    if (predictionPath && noPrediction)
        return reportUsage("--prediction and --no-prediction exclude each other", kSynopsis);
    // `generate --format runtime` writes prediction.json beside config.json: use it unless told.
    bool predictionBesideConfig = false;
    if (!predictionPath && !noPrediction) {
        const auto beside = std::filesystem::path(*configPath).parent_path() / "prediction.json";
        std::error_code ec;
        if (std::filesystem::is_regular_file(beside, ec)) {
            predictionPath = beside.string();
            predictionBesideConfig = true;
        }
    }
    std::optional<core::RunPrediction> prediction;
    if (predictionPath) {
        auto loaded = core::loadPrediction(*predictionPath);
        if (!loaded) {
            core::Error error = loaded.error();
            if (predictionBesideConfig)
                error.message += "\n(found beside the config; pass --no-prediction to launch without it)";
            return reportError(error);
        }
        prediction = std::move(*loaded);
        std::fprintf(stderr, "prediction from %s: %.0f ms/step, %.1f GiB, MFU %.1f%% (%s, %d GPUs)\n",
                     predictionPath->c_str(), prediction->stepMs, prediction->memoryGib,
                     100.0 * prediction->mfu, prediction->hardware.c_str(), prediction->gpus);
    }
    auto target = context.target(targetName.value_or("local"));
    if (!target)
        return reportError(target.error());
    auto store = context.openStore();
    if (!store)
        return reportError(store.error());
    (*target)->setProgressCallback(printProgress);
    auto started = core::startRun(**store, **target, *config, name.value_or(config->name),
                                  prediction ? &*prediction : nullptr);
    if (!started) {
        // "moe-train rejects the config: ..." names the user's file, not a copy of it.
        core::Error error = started.error();
        if (error.code == core::ErrorCode::InvalidArgument && error.context.empty())
            error.context = *configPath;
        return reportError(error);
    }
    std::printf("%s\n", started->id.c_str());
    return kExitOk;
}

}  // namespace wb::app
