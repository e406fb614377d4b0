// `predict FILE --hardware H [--gpus N] [--model M] [--for megatron-bridge|moe-train]
// [--workload W] [--json]`: the planner's prediction for one given layout — a runtime config, a
// Megatron-Bridge YAML or dotlist, or a perf launcher command (what `lint` reads) — not only for
// the searched ones: the most-loaded rank's memory by term, the step's time terms, step ms,
// tokens/s/GPU, TFLOP/s/GPU, MFU, the lint findings and where each rate comes from. A layout that
// does not tile the GPUs, an unknown model or a file that cannot be read: exit 2 naming the problem.
#include "app/cli/cli.h"
#include "app/cli/planner_cli.h"

#include "core/planner/calibration.h"
#include "core/planner/layout_file.h"
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
        steps.push_back({{"name", t.name}, {"ms", t.ms}, {"basis", termBasisName(t.basis)}, {"assumption", t.assumption}});
    j["step_terms"] = steps;
    j["step_basis"] = describeTermBases(c.throughput.terms);
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
    auto catalog = loadCliCatalog(catalogDir.value_or(""));
    if (!catalog)
        return reportError(catalog.error());
    LayoutFileRequest request;
    request.path = path;
    request.text = *text;
    request.model = modelName;
    request.hardware = hardwareName;
    request.forRuntime = forRuntime;
    if (gpusText) {
        request.gpus = parsePositive(*gpusText);
        if (!request.gpus)
            return reportUsage("--gpus needs a whole number from 1 to " + std::to_string(kMaxCliCount), kSynopsis);
    }
    if (workloadPath) {
        auto packed = readWorkloadFile(*workloadPath);
        if (!packed)
            return reportError(packed.error());
        request.packed = *packed;
    }

    // --calibrate-run: each group of terms scaled by what one stored run of this runtime measured.
    TermCalibration termCalibration;
    if (calibrateRun) {
        auto fitted = termCalibrationFromRun(context, *calibrateRun, {});
        if (!fitted)
            return reportError(fitted.error());
        termCalibration = *fitted;
        request.calibration = &termCalibration;
    }

    std::string missingInput;
    auto predicted = predictLayoutFile(*catalog, request, &missingInput);
    if (!predicted) {
        // A missing --model / --hardware is a usage error (with the synopsis), anything else names the file.
        if (missingInput == "hardware")
            return reportUsage("--hardware is needed: the prediction is for one kind of GPU (h100, h200, b200, gb200, ...)",
                               kSynopsis);
        if (missingInput == "model")
            return reportUsage(layoutFileKind(path, *text).perfLaunch
                                   ? "the perf launcher command has no known -mr recipe: give --model M"
                                   : "a Megatron-Bridge file does not name its model: give --model M",
                               kSynopsis);
        return reportError(predicted.error());
    }
    const std::string calibration = termCalibration.applied() ? termCalibration.describe() : std::string();
    if (json)
        std::printf("%s\n", toJson(path, predicted->candidate, predicted->hardware, predicted->workload, predicted->rates,
                                    predicted->moeTrain, calibration).c_str());
    else
        std::printf("%s: %s", path.c_str(), describeLayoutFilePrediction(*predicted, calibration).c_str());
    return kExitOk;
}

}  // namespace wb::app
