// `generate --from PLAN_OR_CONFIG --format runtime|megatron-bridge|slurm|ssh --out DIR`: the files
// of one format, from a plan (`plan --json` output; layout 0 unless --layout) or a runtime config.
// The config is linted first: one that Megatron or the runtime would reject is not written. Each
// file is written atomically; existing files are never replaced without --force.
#include "app/cli/cli.h"
#include "app/cli/planner_cli.h"

#include "core/planner/generators.h"
#include "core/planner/lint.h"
#include "core/planner/plan_artifacts.h"
#include "core/planner/plan_json.h"
#include "core/planner/prediction.h"
#include "core/run_prediction.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <cstdlib>
#include <filesystem>
#include <sstream>

namespace wb::app {

namespace fs = std::filesystem;
using namespace core::planner;

namespace {

constexpr const char* kSynopsis =
    "generate --from PLAN_OR_CONFIG --format runtime|megatron-bridge|slurm|ssh --out DIR [--force]\n"
    "       [--layout N] [--manifest PATH] [--hardware H] [--gpus N] [--nodes K] [--model M]\n"
    "       [--hosts H1,H2,...] [--account A] [--partition P] [--time HH:MM:SS] [--master-port P]\n"
    "       [--trainer PATH] [--catalog DIR] [--workload WORKLOAD.json]";

std::vector<std::string> splitCommas(const std::string& text)
{
    std::vector<std::string> out;
    std::stringstream s(text);
    for (std::string item; std::getline(s, item, ',');)
        if (!item.empty())
            out.push_back(item);
    return out;
}

}  // namespace

int generateCommand(const CliContext&, Args args)
{
    bool missing = false;
    const auto from = args.takeOption("--from", missing);
    const auto format = args.takeOption("--format", missing);
    const auto outDir = args.takeOption("--out", missing);
    const auto layoutIndex = args.takeOption("--layout", missing);
    const auto manifest = args.takeOption("--manifest", missing);
    const auto hardwareName = args.takeOption("--hardware", missing);
    const auto gpusText = args.takeOption("--gpus", missing);
    const auto nodesText = args.takeOption("--nodes", missing);
    const auto modelName = args.takeOption("--model", missing);
    const auto hosts = args.takeOption("--hosts", missing);
    const auto account = args.takeOption("--account", missing);
    const auto partition = args.takeOption("--partition", missing);
    const auto timeLimit = args.takeOption("--time", missing);
    const auto masterPort = args.takeOption("--master-port", missing);
    const auto moeTrain = args.takeOption("--trainer", missing);
    const auto catalogDir = args.takeOption("--catalog", missing);
    const auto workloadPath = args.takeOption("--workload", missing);
    const bool force = args.takeFlag("--force");
    if (auto usage = rejectLeftovers(args, missing, kSynopsis))
        return *usage;
    if (!from || !format || !outDir)
        return reportUsage("--from, --format and --out are required", kSynopsis);
    const auto& formats = generatorFormats();
    if (std::find(formats.begin(), formats.end(), *format) == formats.end())
        return reportUsage("unknown --format '" + *format + "'; use runtime, megatron-bridge, slurm or ssh", kSynopsis);

    auto read = core::readTextFile(*from, "file");
    if (!read)
        return reportError(read.error());
    const std::string text = std::move(*read);

    auto catalog = loadCliCatalog(catalogDir.value_or(""));
    if (!catalog)
        return reportError(catalog.error());

    // The packed shape of the real data (moe-train --data-stats), for the prediction.
    std::optional<PackedShape> packed;
    if (workloadPath) {
        auto parsed = readWorkloadFile(*workloadPath);
        if (!parsed)
            return reportError(parsed.error());
        packed = *parsed;
    }

    core::RunConfig config;
    GeneratorTarget target;
    int gpus = 0;
    std::optional<core::RunPrediction> prediction;
    if (looksLikePlan(text)) {
        auto plan = parsePlanJson(text);
        if (!plan)
            return reportError(core::Error{plan.error().code, plan.error().message, *from});
        PlanArtifactOptions options;
        if (layoutIndex) {
            char* end = nullptr;
            const long v = std::strtol(layoutIndex->c_str(), &end, 10);
            if (layoutIndex->empty() || *end != '\0' || v < 0 || v > 100000)
                return reportUsage("--layout needs a layout number (0 = the best)", kSynopsis);
            options.layout = static_cast<int>(v);
        }
        options.manifest = manifest.value_or("manifest.jsonl");
        options.packed = packed;
        // The same function the planning view's preview calls (plan_artifacts.h).
        auto planned = planLayout(*catalog, *plan, *format, options);
        if (!planned) {
            core::Error error = planned.error();
            if (error.context.empty())
                error.context = *from;
            return reportError(error);
        }
        if (!planned->replannedNote.empty())
            std::fprintf(stderr, "note: %s\n", planned->replannedNote.c_str());
        config = planned->config;
        target = planned->target;
        gpus = planned->gpus;
        prediction = planned->prediction;
    } else {
        auto loaded = core::loadRunConfig(*from);
        if (!loaded)
            return reportError(loaded.error());
        config = *loaded;
        if (manifest)
            config.data.manifest = *manifest;
        if (modelName)
            target.modelName = *modelName;
        if (hardwareName) {
            auto hw = catalog->hardware(*hardwareName);
            if (!hw)
                return reportError(hw.error());
            target.hardware = *hw;
        } else if (*format == "megatron-bridge") {
            return reportUsage("--hardware is needed for megatron-bridge from a runtime config (the environment "
                               "depends on it)", kSynopsis);
        }
        gpus = 1;
        if (gpusText) {
            const auto v = parsePositive(*gpusText);
            if (!v)
                return reportUsage("--gpus needs a whole number from 1 to " + std::to_string(kMaxCliCount), kSynopsis);
            gpus = *v;
        } else if (*format != "runtime") {
            return reportUsage("--gpus is needed for " + *format + " from a runtime config", kSynopsis);
        }
        target.nodes = 1;
        if (nodesText) {
            const auto v = parsePositive(*nodesText);
            if (!v)
                return reportUsage("--nodes needs a whole number from 1 to " + std::to_string(kMaxCliCount), kSynopsis);
            target.nodes = *v;
        } else if (hardwareName && gpus > target.hardware.gpusPerNode) {
            target.nodes = (gpus + target.hardware.gpusPerNode - 1) / target.hardware.gpusPerNode;
        }
    }
    // A plain config with hardware and GPUs given: predict it the way the planner would.
    if (!prediction && hardwareName && gpusText) {
        ModelSpec spec;
        spec.name = modelName.value_or(config.name);
        spec.model = config.model;
        Workload workload = workloadForRunConfig(config);
        if (packed)
            workload.packed = *packed;
        Layout layout = layoutFromRunConfig(config, gpus);
        MemoryOptions memory;
        ThroughputOptions options;
        // Every format but megatron-bridge runs moe-train; Megatron's prediction is the planner's default.
        if (*format != "megatron-bridge") {
            // moe-train has no distributed optimizer: without FSDP every rank holds and steps the
            // whole optimizer state (the planner's Megatron default shards it).
            layout.useDistributedOptimizer = false;
            memory.moeTrain = true;  // the runtime's own state layout and allocator peak
            options.runtime = TrainingRuntime::MoeTrain;  // and its own passes, at its measured rates
            options.rates = catalog->runtimeRates("moe-train", target.hardware.name);
        }
        prediction = predictionForCandidate(evaluateLayout(spec, layout, workload, target.hardware, options, memory),
                                            target.hardware);
    }
    if (gpus % target.nodes != 0)
        return reportUsage(std::to_string(gpus) + " GPUs do not split evenly over " + std::to_string(target.nodes) +
                               " node(s); give --nodes that divides --gpus",
                           kSynopsis);
    target.gpusPerNode = gpus / target.nodes;
    if (hosts)
        target.hosts = splitCommas(*hosts);
    if (!target.hosts.empty() && static_cast<int>(target.hosts.size()) != target.nodes)
        return reportUsage("--hosts names " + std::to_string(target.hosts.size()) + " host(s) for " +
                               std::to_string(target.nodes) + " node(s)",
                           kSynopsis);
    target.account = account.value_or("");
    target.partition = partition.value_or("");
    target.timeLimit = timeLimit.value_or("");
    if (masterPort) {
        const auto v = parsePositive(*masterPort);
        if (!v || *v > 65535)
            return reportUsage("--master-port needs a port number", kSynopsis);
        target.masterPort = *v;
    }
    if (moeTrain)
        target.moeTrain = *moeTrain;

    // A config that cannot run is not worth writing: lint it for this world first, and check the
    // whole config (data section included) the way launch and the runtime will.
    const auto findings = lintRunConfig(config, gpus, target.hardware.name.empty() ? nullptr : &target.hardware);
    auto problems = core::validateRunConfig(config);
    if (*format != "megatron-bridge")  // every other format runs moe-train
        for (core::ConfigProblem& p : core::moeTrainModelProblems(config.model.decoder))
            problems.push_back(std::move(p));
    if (hasErrors(findings) || !problems.empty()) {
        std::fprintf(stderr, "moe-workbench-cli: %s: the config cannot run on %d GPU(s):\n", from->c_str(), gpus);
        for (const LintFinding& f : findings)
            if (f.severity == LintSeverity::Error)
                std::fprintf(stderr, "  %s\n", f.toString().c_str());
        for (const core::ConfigProblem& p : problems) {
            const bool reported = std::any_of(findings.begin(), findings.end(), [&](const LintFinding& f) {
                return f.severity == LintSeverity::Error && f.field == p.path;
            });
            if (!reported)
                std::fprintf(stderr, "  %s\n", p.toString().c_str());
        }
        return kExitUsage;
    }

    auto bundle = generateArtifacts(*format, config, target, prediction);
    if (!bundle)
        return reportError(bundle.error());
    // launch --config DIR/run.json and launch --bridge DIR pick prediction.json up from the
    // folder. Without a prediction, an older prediction.json there would be stored with the wrong
    // run: it goes too (with --force; otherwise the overwrite check below refuses, naming it).
    const bool removeStalePrediction =
        !prediction && formatCarriesPrediction(*format) && fs::exists(fs::path(*outDir) / "prediction.json");

    std::error_code ec;
    fs::create_directories(*outDir, ec);
    if (ec)
        return reportError(core::makeError(core::ErrorCode::IoError, "cannot create the folder: " + ec.message(), *outDir));
    // Check every file before writing any, so a refusal leaves the folder as it was.
    if (!force) {
        std::string existing;
        for (const GeneratedFile& f : bundle->files)
            if (fs::exists(fs::path(*outDir) / f.name, ec))
                existing += (existing.empty() ? "" : ", ") + f.name;
        if (removeStalePrediction)
            existing += std::string(existing.empty() ? "" : ", ") +
                        "prediction.json (from an earlier plan; it would be stored with this config — give --hardware "
                        "and --gpus to predict it, or --force to remove it)";
        if (!existing.empty())
            return reportError(core::makeError(core::ErrorCode::InvalidArgument,
                                               "would overwrite " + existing + "; pass --force to replace them",
                                               *outDir));
    }
    if (removeStalePrediction) {
        fs::remove(fs::path(*outDir) / "prediction.json", ec);
        if (ec)
            return reportError(core::makeError(core::ErrorCode::IoError, "cannot remove the old prediction.json: " + ec.message(),
                                               *outDir));
        std::fprintf(stderr, "moe-workbench-cli: note: removed %s/prediction.json (it described another config)\n",
                     outDir->c_str());
    }
    for (const GeneratedFile& f : bundle->files) {
        const std::string path = (fs::path(*outDir) / f.name).string();
        if (auto written = writeFileAtomically(path, f.content, f.executable); !written)
            return reportError(written.error());
        std::printf("%s\n", path.c_str());
    }
    for (const std::string& w : bundle->warnings)
        std::fprintf(stderr, "moe-workbench-cli: note: %s\n", w.c_str());
    return kExitOk;
}

}  // namespace wb::app
