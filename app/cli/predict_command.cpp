// `predict FILE --hardware H [--gpus N] [--model M] [--for megatron-bridge|moe-train]
// [--workload W] [--json]`: the planner's prediction for one given layout — a runtime config, a
// Megatron-Bridge YAML or dotlist, or a perf launcher command (what `lint` reads) — not only for
// the searched ones: the most-loaded rank's memory by term, the step's time terms, step ms,
// tokens/s/GPU, TFLOP/s/GPU, MFU, the lint findings and where each rate comes from. A layout that
// does not tile the GPUs, an unknown model or a file that cannot be read: exit 2 naming the problem.
#include "app/cli/cli.h"
#include "app/cli/planner_cli.h"

#include "core/planner/calibration.h"
#include "core/planner/lint.h"
#include "core/planner/plan_json.h"
#include "core/planner/prediction.h"
#include "core/run_store.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace wb::app {

using namespace core::planner;

namespace {

constexpr const char* kSynopsis =
    "predict FILE --hardware H [--gpus N] [--model M] [--for megatron-bridge|moe-train] [--workload W]\n"
    "        [--calibrate-run RUN] [--catalog DIR] [--json]   (--calibrate-run reads the store: the default one or --db)";

std::string gib(double bytes, int digits = 2)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, MemoryEstimate::gib(bytes));
    return buf;
}

void printText(const std::string& path, const Candidate& c, const HardwareSpec& hw, const Workload& w,
               const RuntimeRates& rates, bool moeTrain, const std::string& calibration)
{
    const ThroughputEstimate& t = c.throughput;
    std::printf("%s: %s\n  on %d × %s, predicted for %s\n", path.c_str(), c.layout.describe().c_str(), c.layout.worldSize,
                hw.displayName.c_str(), t.runtime.c_str());
    if (w.packed.measured())
        std::printf("  workload: %s: %.2f images, %.0f image + %.0f text + %.0f pad tokens per %d-token sequence\n",
                    w.packed.source.c_str(), w.packed.images, w.packed.imageTokens, w.packed.textTokens,
                    w.packed.padTokens, w.seqLength);
    else if (w.mockTextOnly)
        std::printf("  workload: text only (no images), one sample per %d-token sequence\n", w.seqLength);
    else
        std::printf("  workload: %d image(s) of %dx%d per %d-token sequence (assumed: give --workload FILE from "
                    "moe-train --data-stats for the packed shape of your data)\n",
                    w.imagesPerSample, w.imageWidth, w.imageHeight, w.seqLength);
    std::printf("\nmemory, most-loaded rank (stage %d): %s GiB of %.1f GiB\n", c.memory.stage,
                gib(c.memory.total(), 1).c_str(), hw.hbmGib);
    for (const char* category : {"weights", "grads", "optimizer", "activations", "other"}) {
        if (c.memory.category(category) <= 0)
            continue;
        std::printf("  %-46s %8s GiB\n", category, gib(c.memory.category(category)).c_str());
        for (const MemoryTerm& m : c.memory.terms)
            if (m.category == category && m.bytes > 0)
                std::printf("    %-44s %8s GiB  %s\n", m.name.c_str(), gib(m.bytes).c_str(), m.assumption.c_str());
    }
    std::printf("\nstep %.1f ms: %.0f tokens/s/GPU, %.1f TFLOP/s/GPU, MFU %.1f %%\n", t.stepMs, t.tokensPerSecPerGpu,
                t.tflopsPerGpu, t.mfu * 100);
    for (const TimeTerm& term : t.terms)
        std::printf("  %-46s %8.1f ms  %s\n", term.name.c_str(), term.ms, term.assumption.c_str());
    std::printf("\nlint: %s\n", c.lint.empty() ? "no findings" : "");
    for (const LintFinding& f : c.lint)
        std::printf("  %s\n", f.toString().c_str());
    std::printf("\nwhere the numbers come from:\n"
                "  GEMM, attention and vision efficiencies: the catalog's factors (assumed; %s)\n",
                t.terms.empty() || calibration.empty() ? "--calibrate-run RUN scales each group of terms by one measured run"
                                                       : ("calibrated per term: " + calibration).c_str());
    if (moeTrain)
        std::printf("  moe-train's casts, norm pass, AdamW and host gap: %s\n",
                    rates.source.empty() ? "assumed (no runtime profile for this hardware: H200's fractions of HBM bandwidth)"
                                         : ("measured, " + rates.source).c_str());
}

std::string toJson(const std::string& path, const Candidate& c, const HardwareSpec& hw, const Workload& w,
                   const RuntimeRates& rates, bool moeTrain, const std::string& calibration)
{
    nlohmann::ordered_json j;
    j["file"] = path;
    j["for"] = c.throughput.runtime;
    j["hardware"] = hw.name;
    j["gpus"] = c.layout.worldSize;
    j["layout"] = nlohmann::ordered_json::parse(layoutToJson(c));
    nlohmann::ordered_json memory = {{"stage", c.memory.stage}, {"total_gib", MemoryEstimate::gib(c.memory.total())}};
    nlohmann::ordered_json terms = nlohmann::ordered_json::array();
    for (const MemoryTerm& m : c.memory.terms)
        terms.push_back({{"name", m.name}, {"category", m.category}, {"gib", MemoryEstimate::gib(m.bytes)},
                         {"assumption", m.assumption}});
    memory["terms"] = terms;
    j["memory"] = memory;
    j["step_ms"] = c.throughput.stepMs;
    j["tokens_per_s_per_gpu"] = c.throughput.tokensPerSecPerGpu;
    j["tflops_per_gpu"] = c.throughput.tflopsPerGpu;
    j["mfu"] = c.throughput.mfu;
    nlohmann::ordered_json steps = nlohmann::ordered_json::array();
    for (const TimeTerm& t : c.throughput.terms)
        steps.push_back({{"name", t.name}, {"ms", t.ms}, {"assumption", t.assumption}});
    j["step_terms"] = steps;
    j["workload"] = {{"seq_length", w.seqLength},
                     {"packed", w.packed.measured() ? nlohmann::ordered_json(w.packed.source) : nlohmann::ordered_json()},
                     {"text_only", w.mockTextOnly}};
    j["measured_rates"] = moeTrain && !rates.source.empty() ? nlohmann::ordered_json(rates.source) : nlohmann::ordered_json();
    j["term_calibration"] = calibration.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(calibration);
    return j.dump(2);
}

}  // namespace

int predictCommand(const CliContext& context, Args args)
{
    bool missing = false;
    const auto calibrateRun = args.takeOption("--calibrate-run", missing);
    auto modelName = args.takeOption("--model", missing);
    auto hardwareName = args.takeOption("--hardware", missing);
    const auto gpusText = args.takeOption("--gpus", missing);
    const auto forRuntime = args.takeOption("--for", missing);
    const auto workloadPath = args.takeOption("--workload", missing);
    const auto catalogDir = args.takeOption("--catalog", missing);
    const bool json = args.takeFlag("--json");
    if (auto usage = rejectLeftovers(args, missing, kSynopsis, /*allowPositional=*/true))
        return *usage;
    if (args.rest().size() != 1)
        return reportUsage("give exactly one FILE (a runtime config, Megatron-Bridge YAML or dotlist, or a perf "
                           "launcher command)",
                           kSynopsis);
    if (forRuntime && *forRuntime != "megatron-bridge" && *forRuntime != "moe-train")
        return reportUsage("--for needs megatron-bridge or moe-train, got '" + *forRuntime + "'", kSynopsis);
    const std::string path = args.rest().front();
    auto text = core::readTextFile(path, "file");
    if (!text)
        return reportError(text.error());
    if (auto empty = emptyLayoutFile(path, *text))
        return reportError(*empty);
    const LayoutFileKind kind = layoutFileKind(path, *text);
    if (kind.perfLaunch && !modelName && !kind.perf.model.empty())
        modelName = kind.perf.model;
    if (kind.perfLaunch && !hardwareName && !kind.perf.hardware.empty())
        hardwareName = kind.perf.hardware;
    if (!hardwareName)
        return reportUsage("--hardware is needed: the prediction is for one kind of GPU (h100, h200, b200, gb200, ...)",
                           kSynopsis);
    auto catalog = loadCliCatalog(catalogDir.value_or(""));
    if (!catalog)
        return reportError(catalog.error());
    auto hardware = catalog->hardware(*hardwareName);
    if (!hardware)
        return reportError(hardware.error());
    std::optional<int> gpusOption;
    if (gpusText) {
        gpusOption = parsePositive(*gpusText);
        if (!gpusOption)
            return reportUsage("--gpus needs a whole number >= 1", kSynopsis);
    } else if (kind.perfLaunch && kind.perf.gpus > 0) {
        gpusOption = kind.perf.gpus;
    }

    // The layout and the model, from the file.
    ModelSpec spec;
    core::RunConfig config;
    Layout layout;
    int gpus = 0;
    if (kind.bridge()) {
        if (!modelName)
            return reportUsage(kind.perfLaunch ? "the perf launcher command has no known -mr recipe: give --model M"
                                               : "a Megatron-Bridge file does not name its model: give --model M",
                               kSynopsis);
        auto model = catalog->model(*modelName);
        if (!model)
            return reportError(model.error());
        spec = *model;
        core::RunConfig base;
        base.model = spec.model;
        base.runtime.device = "cuda";
        base.data.source = "mock";  // the data section is the recipe's business, not the layout's
        const BridgeImport first = importBridgeOverrides(*text, kind.yaml, base, 1);
        gpus = gpusOption.value_or(smallestWorld(first.config));
        const BridgeImport imported = importBridgeOverrides(*text, kind.yaml, base, gpus);
        for (const BridgeImportProblem& p : imported.problems)
            if (p.error)
                return reportError(core::makeError(core::ErrorCode::InvalidArgument,
                                                   "line " + std::to_string(p.line) + ": " + p.key + ": " + p.message +
                                                       (p.fix.empty() ? "" : " (" + p.fix + ")"),
                                                   path));
        config = imported.config;
        layout = imported.layout;
    } else {
        const core::RunConfigParse parsed = core::parseRunConfig(*text);
        if (!parsed.ok())
            return reportError(core::makeError(core::ErrorCode::InvalidArgument,
                                               parsed.problems.front().toString() +
                                                   (parsed.problems.size() > 1 ? " (and " + std::to_string(parsed.problems.size() - 1) +
                                                                                      " more: lint FILE lists them)"
                                                                                : ""),
                                               path));
        config = parsed.config;
        if (modelName) {
            auto model = catalog->model(*modelName);
            if (!model)
                return reportError(model.error());
            spec.name = model->name;
        } else {
            spec.name = config.name;
        }
        spec.model = config.model;
        gpus = gpusOption.value_or(smallestWorld(config));
        layout = layoutFromRunConfig(config, gpus);
    }
    layout.worldSize = gpus;

    // Whose step: a runtime config runs on moe-train unless --for says otherwise; Bridge files on Bridge.
    const bool moeTrain = forRuntime ? *forRuntime == "moe-train" : !kind.bridge();
    ThroughputOptions throughput;
    MemoryOptions memory;
    RuntimeRates rates;
    if (moeTrain) {
        rates = catalog->runtimeRates("moe-train", hardware->name);
        throughput.runtime = TrainingRuntime::MoeTrain;
        throughput.rates = rates;
        memory.moeTrain = true;
        layout.useDistributedOptimizer = false;  // moe-train has none
    }
    // A Bridge file does not say what the data is: one image of √max_pixels² per sample, unless
    // --workload gives the packed shape.
    core::RunConfig data = config;
    if (kind.bridge())
        data.data.source = "real";
    Workload workload = workloadForRunConfig(data);
    if (workloadPath) {
        auto packed = readWorkloadFile(*workloadPath);
        if (!packed)
            return reportError(packed.error());
        workload.packed = *packed;
        workload.mockTextOnly = config.data.source == "mock" && config.data.mockImageSize <= 0;
    }

    // --calibrate-run: each group of terms scaled by what one stored run of this runtime measured.
    TermCalibration termCalibration;
    if (calibrateRun) {
        auto store = context.openStore();
        if (!store)
            return reportError(store.error());
        auto id = (*store)->resolveRunId(*calibrateRun);
        if (!id)
            return reportError(id.error());
        auto fitted = calibrateTermsFromStore(**store, *id);
        if (!fitted)
            return reportError(fitted.error());
        termCalibration = *fitted;
        applyTermCalibration(termCalibration, throughput.eff);
    }

    // A layout that does not tile the GPUs (or that the rules reject) is not predicted.
    const std::vector<LintFinding> findings =
        kind.bridge() ? std::vector<LintFinding>{} : lintRunConfig(config, gpus, &*hardware);
    for (const LintFinding& f : findings)
        if (f.severity == LintSeverity::Error)
            return reportError(core::makeError(core::ErrorCode::InvalidArgument,
                                               f.field + ": " + f.message + (f.fix.empty() ? "" : "; fix: " + f.fix), path));
    const Candidate c = evaluateLayout(spec, layout, workload, *hardware, throughput, memory);
    for (const LintFinding& f : c.lint)
        if (f.severity == LintSeverity::Error)
            return reportError(core::makeError(core::ErrorCode::InvalidArgument,
                                               f.field + ": " + f.message + (f.fix.empty() ? "" : "; fix: " + f.fix), path));
    if (json)
        std::printf("%s\n", toJson(path, c, *hardware, workload, rates, moeTrain,
                                    termCalibration.applied() ? termCalibration.describe() : std::string()).c_str());
    else
        printText(path, c, *hardware, workload, rates, moeTrain,
                  termCalibration.applied() ? termCalibration.describe() : std::string());
    return kExitOk;
}

}  // namespace wb::app
