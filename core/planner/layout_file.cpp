// Reading and predicting one given layout file (layout_file.h). Moved out of the CLI's predict
// command so the planning view predicts a file with the very same code.
#include "core/planner/layout_file.h"

#include "core/planner/lint.h"
#include "core/planner/prediction.h"

#include <cstdio>
#include <filesystem>
#include <numeric>

namespace wb::core::planner {
namespace {

std::string gibText(double bytes, int digits = 2)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.*f", digits, MemoryEstimate::gib(bytes));
    return buf;
}

std::string printfText(const char* format, auto... values)
{
    char buf[1024];
    std::snprintf(buf, sizeof buf, format, values...);
    return buf;
}

Error layoutError(const std::string& path, const std::string& message)
{
    return makeError(ErrorCode::InvalidArgument, message, path);
}

}  // namespace

LayoutFileKind layoutFileKind(const std::string& path, const std::string& text)
{
    LayoutFileKind kind;
    kind.perfLaunch = looksLikePerfLaunch(text);
    if (kind.perfLaunch)
        kind.perf = importBridgeOverrides(text, false, RunConfig{}, 1).perf;
    const std::string ext = std::filesystem::path(path).extension().string();
    kind.yaml = ext == ".yaml" || ext == ".yml";
    kind.dotlist = !kind.yaml && ext != ".json" && (kind.perfLaunch || looksLikeDotlist(text));
    return kind;
}

std::optional<Error> emptyLayoutFile(const std::string& path, const std::string& text)
{
    size_t at = 0;
    while (at < text.size()) {
        const size_t end = std::min(text.find('\n', at), text.size());
        const size_t first = text.find_first_not_of(" \t\r", at);
        if (first < end && text[first] != '#')
            return std::nullopt;
        at = end + 1;
    }
    return makeError(ErrorCode::InvalidArgument,
                     "the file has no settings (only blank lines and comments) — fix: give a runtime config "
                     "(JSON), Megatron-Bridge overrides (YAML or key=value lines) or a perf launcher command",
                     path);
}

int smallestWorld(const RunConfig& c)
{
    const ParallelConfig& p = c.parallel;
    return std::lcm(p.tensorModelParallelSize * p.pipelineModelParallelSize * p.contextParallelSize,
                    p.pipelineModelParallelSize * p.expertModelParallelSize * p.expertTensorParallelSize);
}

Result<LayoutFilePrediction> predictLayoutFile(const Catalog& catalog, const LayoutFileRequest& r, std::string* missingInput)
{
    auto ask = [&](const char* what, const std::string& message) {
        if (missingInput)
            *missingInput = what;
        return layoutError(r.path, message);
    };
    if (auto empty = emptyLayoutFile(r.path, r.text))
        return *empty;
    const LayoutFileKind kind = layoutFileKind(r.path, r.text);
    std::optional<std::string> modelName = r.model, hardwareName = r.hardware;
    if (kind.perfLaunch && !modelName && !kind.perf.model.empty())
        modelName = kind.perf.model;
    if (kind.perfLaunch && !hardwareName && !kind.perf.hardware.empty())
        hardwareName = kind.perf.hardware;
    if (!hardwareName)
        return ask("hardware", "the hardware is needed: the prediction is for one kind of GPU (h100, h200, b200, gb200, ...)");
    auto hardware = catalog.hardware(*hardwareName);
    if (!hardware)
        return hardware.error();
    std::optional<int> gpusOption = r.gpus;
    if (!gpusOption && kind.perfLaunch && kind.perf.gpus > 0)
        gpusOption = kind.perf.gpus;

    // The layout and the model, from the file.
    ModelSpec spec;
    RunConfig config;
    Layout layout;
    int gpus = 0;
    BridgeData bridgeData;
    if (kind.bridge()) {
        if (!modelName)
            return ask("model", kind.perfLaunch ? "the perf launcher command has no known -mr recipe: give the model"
                                       : "a Megatron-Bridge file does not name its model: give the model");
        auto model = catalog.model(*modelName);
        if (!model)
            return model.error();
        spec = *model;
        RunConfig base;
        base.model = spec.model;
        base.runtime.device = "cuda";
        base.data.source = "mock";  // the data section is the recipe's business, not the layout's
        const BridgeImport first = importBridgeOverrides(r.text, kind.yaml, base, 1);
        gpus = gpusOption.value_or(smallestWorld(first.config));
        const BridgeImport imported = importBridgeOverrides(r.text, kind.yaml, base, gpus);
        for (const BridgeImportProblem& p : imported.problems)
            if (p.error)
                return layoutError(r.path, "line " + std::to_string(p.line) + ": " + p.key + ": " + p.message +
                                               (p.fix.empty() ? "" : " (" + p.fix + ")"));
        config = imported.config;
        layout = imported.layout;
        bridgeData = imported.data;
    } else {
        const RunConfigParse parsed = parseRunConfig(r.text);
        if (!parsed.ok())
            return layoutError(r.path, parsed.problems.front().toString() +
                                           (parsed.problems.size() > 1
                                                ? " (and " + std::to_string(parsed.problems.size() - 1) + " more: lint FILE lists them)"
                                                : ""));
        config = parsed.config;
        if (modelName) {
            auto model = catalog.model(*modelName);
            if (!model)
                return model.error();
            spec.name = model->name;
        } else {
            spec.name = config.name;
        }
        spec.model = config.model;
        gpus = gpusOption.value_or(smallestWorld(config));
        layout = layoutFromRunConfig(config, gpus);
    }
    layout.worldSize = gpus;

    // Whose step: a runtime config runs on moe-train unless told otherwise; Bridge files on Bridge.
    LayoutFilePrediction out;
    out.hardware = *hardware;
    out.moeTrain = r.forRuntime ? *r.forRuntime == "moe-train" : !kind.bridge();
    ThroughputOptions throughput;
    MemoryOptions memory;
    if (out.moeTrain) {
        out.rates = catalog.runtimeRates("moe-train", hardware->name);
        throughput.runtime = TrainingRuntime::MoeTrain;
        throughput.rates = out.rates;
        memory.moeTrain = true;
        layout.useDistributedOptimizer = false;  // moe-train has none
    }
    // A Bridge file that names Bridge's mock dataset (a resolved ConfigContainer YAML) is predicted
    // as that mock (mockWorkload: its images, padded, the router as the file sets it); otherwise
    // the data are real: for a runtime config one image of √max_pixels² per sample, for a Bridge
    // file (which says nothing of image sizes) the planner's default sample, one 448² image, as
    // `plan` assumes; the packed shape replaces either when given.
    RunConfig data = config;
    if (kind.bridge())
        data.data.source = "real";
    out.workload = workloadForRunConfig(data);
    if (kind.bridge()) {
        const Workload planDefault;
        out.workload.imagesPerSample = planDefault.imagesPerSample;
        out.workload.imageWidth = planDefault.imageWidth, out.workload.imageHeight = planDefault.imageHeight;
    }
    if (bridgeData.mock) {
        out.workload = mockWorkload(out.workload, TrainingRuntime::MegatronBridge);
        out.workload.imagesPerSample = bridgeData.images;
        out.workload.imageWidth = bridgeData.imageWidth, out.workload.imageHeight = bridgeData.imageHeight;
    }
    if (kind.bridge())  // Megatron's default is False: dropless, natural routing
        out.workload.forceBalancedRouting = bridgeData.forceLoadBalancing.value_or(false);
    if (r.packed) {
        out.workload.packed = *r.packed;
        out.workload.mockTextOnly = config.data.source == "mock" && config.data.mockImageSize <= 0;
    }
    if (r.calibration)
        applyTermCalibration(*r.calibration, throughput.eff);

    // A layout that does not tile the GPUs (or that the rules reject) is not predicted.
    const std::vector<LintFinding> findings = kind.bridge() ? std::vector<LintFinding>{} : lintRunConfig(config, gpus, &*hardware);
    for (const LintFinding& f : findings)
        if (f.severity == LintSeverity::Error)
            return layoutError(r.path, f.field + ": " + f.message + (f.fix.empty() ? "" : "; fix: " + f.fix));
    out.candidate = evaluateLayout(spec, layout, out.workload, *hardware, throughput, memory);
    out.config = config;
    out.bridgeData = bridgeData;
    for (const LintFinding& f : out.candidate.lint)
        if (f.severity == LintSeverity::Error)
            return layoutError(r.path, f.field + ": " + f.message + (f.fix.empty() ? "" : "; fix: " + f.fix));
    return out;
}

std::string describeLayoutFilePrediction(const LayoutFilePrediction& p, const std::string& calibration)
{
    const Candidate& c = p.candidate;
    const ThroughputEstimate& t = c.throughput;
    const Workload& w = p.workload;
    std::string out = c.layout.describe() + "\n  on " + std::to_string(c.layout.worldSize) + " × " + p.hardware.displayName +
                      ", predicted for " + t.runtime + "\n";
    if (w.packed.measured())
        out += printfText("  workload: %s: %.2f images, %.0f image + %.0f text + %.0f pad tokens per %d-token sequence\n",
                          w.packed.source.c_str(), w.packed.images, w.packed.imageTokens, w.packed.textTokens,
                          w.packed.padTokens, w.seqLength);
    else if (w.mockTextOnly)
        out += printfText("  workload: text only (no images), one sample per %d-token sequence\n", w.seqLength);
    else if (w.mock)
        out += printfText("  workload: MOCK DATA (Megatron-Bridge's mock VLM dataset): %d noise image(s) of %dx%d per sample, "
                          "padded to %d tokens; router %s. No throughput conclusion for real data from it.\n",
                          w.imagesPerSample, w.imageWidth, w.imageHeight, w.seqLength,
                          w.forceBalancedRouting ? "force-balanced (moe_router_force_load_balancing)" : "routing naturally");
    else
        out += printfText("  workload: %d image(s) of %dx%d per %d-token sequence (assumed: give the packed shape "
                          "moe-train --data-stats writes for the shape of your data)\n",
                          w.imagesPerSample, w.imageWidth, w.imageHeight, w.seqLength);
    out += printfText("\nmemory, most-loaded rank (stage %d): %s GiB of %.1f GiB (every term modelled, none calibrated)\n",
                      c.memory.stage, gibText(c.memory.total(), 1).c_str(), p.hardware.hbmGib);
    for (const char* category : {"weights", "grads", "optimizer", "activations", "other"}) {
        if (c.memory.category(category) <= 0)
            continue;
        out += printfText("  %-46s %8s GiB\n", category, gibText(c.memory.category(category)).c_str());
        for (const MemoryTerm& m : c.memory.terms)
            if (m.category == category && m.bytes > 0)
                out += printfText("    %-44s %8s GiB  ", m.name.c_str(), gibText(m.bytes).c_str()) + m.assumption + "\n";
    }
    out += printfText("\nstep %.1f ms: %.0f tokens/s/GPU, %.1f TFLOP/s/GPU, MFU %.1f %% (", t.stepMs, t.tokensPerSecPerGpu,
                      t.tflopsPerGpu, t.mfu * 100) +
           describeTermBases(t.terms) + ")\n";
    for (const TimeTerm& term : t.terms)
        out += printfText("  %-46s %8.1f ms  %-15s ", term.name.c_str(), term.ms, termBasisName(term.basis)) +
               term.assumption + "\n";
    out += std::string("\nlint: ") + (c.lint.empty() ? "no findings" : "") + "\n";
    for (const LintFinding& f : c.lint)
        out += "  " + f.toString() + "\n";
    out += "\nwhere the numbers come from:\n  GEMM, attention and vision efficiencies: the catalog's factors (assumed; " +
           (t.terms.empty() || calibration.empty() ? std::string("--calibrate-run RUN scales each group of terms by one measured run")
                                                   : "calibrated per term: " + calibration) +
           ")\n";
    if (p.moeTrain)
        out += "  moe-train's casts, norm pass, AdamW and host gap: " +
               (p.rates.source.empty() ? std::string("assumed (no runtime profile for this hardware: H200's fractions of HBM bandwidth)")
                                       : "measured, " + p.rates.source) +
               "\n";
    return out;
}

}  // namespace wb::core::planner
