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
#include <cstdlib>
#include <filesystem>
#include <optional>
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

// The command line, as given.
struct GenerateArgs {
    std::optional<std::string> from, format, outDir, layoutIndex, manifest, hardwareName, gpusText, nodesText,
        modelName, hosts, account, partition, timeLimit, masterPort, moeTrain, catalogDir, workloadPath;
    bool force = false;
};

// What the files are made from: a config, where it runs, and its prediction (if any).
struct Prepared {
    core::RunConfig config;
    GeneratorTarget target;
    int gpus = 0;
    std::optional<core::RunPrediction> prediction;
};

// Each step returns the exit code when the command must stop there (the message already printed).
using Stop = std::optional<int>;

Stop fromPlan(const GenerateArgs& a, const Catalog& catalog, const std::string& text,
              const std::optional<PackedShape>& packed, Prepared& out)
{
    auto plan = parsePlanJson(text);
    if (!plan)
        return reportError(core::Error{plan.error().code, plan.error().message, *a.from});
    PlanArtifactOptions options;
    if (a.layoutIndex) {
        char* end = nullptr;
        const long v = std::strtol(a.layoutIndex->c_str(), &end, 10);
        if (a.layoutIndex->empty() || *end != '\0' || v < 0 || v > 100000)
            return reportUsage("--layout needs a layout number (0 = the best)", kSynopsis);
        options.layout = static_cast<int>(v);
    }
    options.manifest = a.manifest.value_or("manifest.jsonl");
    options.packed = packed;
    // The same function the planning view's preview calls (plan_artifacts.h).
    auto planned = planLayout(catalog, *plan, *a.format, options);
    if (!planned) {
        core::Error error = planned.error();
        if (error.context.empty())
            error.context = *a.from;
        return reportError(error);
    }
    if (!planned->replannedNote.empty())
        std::fprintf(stderr, "note: %s\n", planned->replannedNote.c_str());
    out.config = planned->config;
    out.target = planned->target;
    out.gpus = planned->gpus;
    out.prediction = planned->prediction;
    return std::nullopt;
}

Stop fromRunConfig(const GenerateArgs& a, const Catalog& catalog, Prepared& out)
{
    auto loaded = core::loadRunConfig(*a.from);
    if (!loaded)
        return reportError(loaded.error());
    out.config = *loaded;
    if (a.manifest)
        out.config.data.manifest = *a.manifest;
    if (a.modelName)
        out.target.modelName = *a.modelName;
    if (a.hardwareName) {
        auto hw = catalog.hardware(*a.hardwareName);
        if (!hw)
            return reportError(hw.error());
        out.target.hardware = *hw;
    } else if (*a.format == "megatron-bridge") {
        return reportUsage(
            "--hardware is needed for megatron-bridge from a runtime config (the environment "
            "depends on it)",
            kSynopsis);
    }
    out.gpus = 1;
    if (a.gpusText) {
        const auto v = parsePositive(*a.gpusText);
        if (!v)
            return reportUsage("--gpus needs a whole number from 1 to " + std::to_string(kMaxCliCount), kSynopsis);
        out.gpus = *v;
    } else if (*a.format != "runtime") {
        return reportUsage("--gpus is needed for " + *a.format + " from a runtime config", kSynopsis);
    }
    out.target.nodes = 1;
    if (a.nodesText) {
        const auto v = parsePositive(*a.nodesText);
        if (!v)
            return reportUsage("--nodes needs a whole number from 1 to " + std::to_string(kMaxCliCount), kSynopsis);
        out.target.nodes = *v;
    } else if (a.hardwareName && out.gpus > out.target.hardware.gpusPerNode) {
        out.target.nodes = (out.gpus + out.target.hardware.gpusPerNode - 1) / out.target.hardware.gpusPerNode;
    }
    return std::nullopt;
}

// A plain config with hardware and GPUs given: predicted the way the planner would.
core::RunPrediction predictRunConfig(const GenerateArgs& a, const Catalog& catalog, const Prepared& p,
                                     const std::optional<PackedShape>& packed)
{
    ModelSpec spec;
    spec.name = a.modelName.value_or(p.config.name);
    spec.model = p.config.model;
    Workload workload = workloadForRunConfig(p.config);
    if (packed)
        workload.packed = *packed;
    Layout layout = layoutFromRunConfig(p.config, p.gpus);
    MemoryOptions memory;
    ThroughputOptions options;
    // Every format but megatron-bridge runs moe-train; Megatron's prediction is the planner's default.
    if (*a.format != "megatron-bridge") {
        // moe-train has no distributed optimizer: without FSDP every rank holds and steps the
        // whole optimizer state (the planner's Megatron default shards it).
        layout.useDistributedOptimizer = false;
        memory.moeTrain = true;                       // the runtime's own state layout and allocator peak
        options.runtime = TrainingRuntime::MoeTrain;  // and its own passes, at its measured rates
        options.rates = catalog.runtimeRates("moe-train", p.target.hardware.name);
    }
    return predictionForCandidate(evaluateLayout(spec, layout, workload, p.target.hardware, options, memory),
                                  p.target.hardware);
}

// The Slurm / SSH settings of the command line onto the target.
Stop applyTargetOptions(const GenerateArgs& a, Prepared& p)
{
    GeneratorTarget& target = p.target;
    if (p.gpus % target.nodes != 0)
        return reportUsage(std::to_string(p.gpus) + " GPUs do not split evenly over " + std::to_string(target.nodes) +
                               " node(s); give --nodes that divides --gpus",
                           kSynopsis);
    target.gpusPerNode = p.gpus / target.nodes;
    if (a.hosts)
        target.hosts = splitCommas(*a.hosts);
    if (!target.hosts.empty() && static_cast<int>(target.hosts.size()) != target.nodes)
        return reportUsage("--hosts names " + std::to_string(target.hosts.size()) + " host(s) for " +
                               std::to_string(target.nodes) + " node(s)",
                           kSynopsis);
    target.account = a.account.value_or("");
    target.partition = a.partition.value_or("");
    target.timeLimit = a.timeLimit.value_or("");
    if (a.masterPort) {
        const auto v = parsePositive(*a.masterPort);
        if (!v || *v > 65535)
            return reportUsage("--master-port needs a port number", kSynopsis);
        target.masterPort = *v;
    }
    if (a.moeTrain)
        target.moeTrain = *a.moeTrain;
    return std::nullopt;
}

// A config that cannot run is not worth writing: lint it for this world first, and check the
// whole config (data section included) the way launch and the runtime will.
Stop refuseUnrunnable(const GenerateArgs& a, const Prepared& p)
{
    const auto findings =
        lintRunConfig(p.config, p.gpus, p.target.hardware.name.empty() ? nullptr : &p.target.hardware);
    auto problems = core::validateRunConfig(p.config);
    if (*a.format != "megatron-bridge")  // every other format runs moe-train
        for (core::ConfigProblem& problem : core::moeTrainModelProblems(p.config.model.decoder))
            problems.push_back(std::move(problem));
    if (!hasErrors(findings) && problems.empty())
        return std::nullopt;
    std::fprintf(stderr, "moe-workbench-cli: %s: the config cannot run on %d GPU(s):\n", a.from->c_str(), p.gpus);
    for (const LintFinding& f : findings)
        if (f.severity == LintSeverity::Error)
            std::fprintf(stderr, "  %s\n", f.toString().c_str());
    for (const core::ConfigProblem& problem : problems) {
        const bool reported = std::any_of(findings.begin(), findings.end(), [&](const LintFinding& f) {
            return f.severity == LintSeverity::Error && f.field == problem.path;
        });
        if (!reported)
            std::fprintf(stderr, "  %s\n", problem.toString().c_str());
    }
    return kExitUsage;
}

// Every file into --out, atomically; nothing is replaced without --force, and a refusal leaves
// the folder as it was.
int writeFiles(const GenerateArgs& a, const GeneratedBundle& bundle, bool havePrediction)
{
    const std::string& outDir = *a.outDir;
    // launch --config DIR/run.json and launch --bridge DIR pick prediction.json up from the
    // folder. Without a prediction, an older prediction.json there would be stored with the wrong
    // run: it goes too (with --force; otherwise the overwrite check below refuses, naming it).
    const bool removeStalePrediction =
        !havePrediction && formatCarriesPrediction(*a.format) && fs::exists(fs::path(outDir) / "prediction.json");
    std::error_code ec;
    fs::create_directories(outDir, ec);
    if (ec)
        return reportError(
            core::makeError(core::ErrorCode::IoError, "cannot create the folder: " + ec.message(), outDir));
    if (!a.force) {
        std::string existing;
        for (const GeneratedFile& f : bundle.files)
            if (fs::exists(fs::path(outDir) / f.name, ec))
                existing += (existing.empty() ? "" : ", ") + f.name;
        if (removeStalePrediction)
            existing += std::string(existing.empty() ? "" : ", ") +
                        "prediction.json (from an earlier plan; it would be stored with this config — give --hardware "
                        "and --gpus to predict it, or --force to remove it)";
        if (!existing.empty())
            return reportError(core::makeError(core::ErrorCode::InvalidArgument,
                                               "would overwrite " + existing + "; pass --force to replace them",
                                               outDir));
    }
    if (removeStalePrediction) {
        fs::remove(fs::path(outDir) / "prediction.json", ec);
        if (ec)
            return reportError(core::makeError(core::ErrorCode::IoError,
                                               "cannot remove the old prediction.json: " + ec.message(), outDir));
        std::fprintf(stderr, "moe-workbench-cli: note: removed %s/prediction.json (it described another config)\n",
                     outDir.c_str());
    }
    for (const GeneratedFile& f : bundle.files) {
        const std::string path = (fs::path(outDir) / f.name).string();
        if (auto written = writeFileAtomically(path, f.content, f.executable); !written)
            return reportError(written.error());
        std::printf("%s\n", path.c_str());
    }
    for (const std::string& w : bundle.warnings)
        std::fprintf(stderr, "moe-workbench-cli: note: %s\n", w.c_str());
    return kExitOk;
}

}  // namespace

int generateCommand(const CliContext&, Args args)
{
    bool missing = false;
    GenerateArgs a;
    for (auto [flag, value] : {std::pair{"--from", &a.from},
                               {"--format", &a.format},
                               {"--out", &a.outDir},
                               {"--layout", &a.layoutIndex},
                               {"--manifest", &a.manifest},
                               {"--hardware", &a.hardwareName},
                               {"--gpus", &a.gpusText},
                               {"--nodes", &a.nodesText},
                               {"--model", &a.modelName},
                               {"--hosts", &a.hosts},
                               {"--account", &a.account},
                               {"--partition", &a.partition},
                               {"--time", &a.timeLimit},
                               {"--master-port", &a.masterPort},
                               {"--trainer", &a.moeTrain},
                               {"--catalog", &a.catalogDir},
                               {"--workload", &a.workloadPath}})
        *value = args.takeOption(flag, missing);
    a.force = args.takeFlag("--force");
    if (auto usage = rejectLeftovers(args, missing, kSynopsis))
        return *usage;
    if (!a.from || !a.format || !a.outDir)
        return reportUsage("--from, --format and --out are required", kSynopsis);
    const auto& formats = generatorFormats();
    if (std::find(formats.begin(), formats.end(), *a.format) == formats.end())
        return reportUsage("unknown --format '" + *a.format + "'; use runtime, megatron-bridge, slurm or ssh",
                           kSynopsis);

    auto text = core::readTextFile(*a.from, "file");
    if (!text)
        return reportError(text.error());
    auto catalog = loadCliCatalog(a.catalogDir.value_or(""));
    if (!catalog)
        return reportError(catalog.error());
    // The packed shape of the real data (moe-train --data-stats), for the prediction.
    std::optional<PackedShape> packed;
    if (a.workloadPath) {
        auto parsed = readWorkloadFile(*a.workloadPath);
        if (!parsed)
            return reportError(parsed.error());
        packed = *parsed;
    }

    Prepared p;
    if (Stop stop = looksLikePlan(*text) ? fromPlan(a, *catalog, *text, packed, p) : fromRunConfig(a, *catalog, p))
        return *stop;
    if (!p.prediction && a.hardwareName && a.gpusText)
        p.prediction = predictRunConfig(a, *catalog, p, packed);
    if (Stop stop = applyTargetOptions(a, p))
        return *stop;
    if (Stop stop = refuseUnrunnable(a, p))
        return *stop;
    auto bundle = generateArtifacts(*a.format, p.config, p.target, p.prediction);
    if (!bundle)
        return reportError(bundle.error());
    return writeFiles(a, *bundle, p.prediction.has_value());
}

}  // namespace wb::app
