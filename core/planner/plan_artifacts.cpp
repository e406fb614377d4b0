#include "core/planner/plan_artifacts.h"

#include "core/planner/calibration.h"
#include "core/planner/prediction.h"

#include <algorithm>
#include <cstdio>

namespace wb::core::planner {

bool formatCarriesPrediction(const std::string& format)
{
    return format == "runtime" || format == "megatron-bridge";
}

Result<PlannedLayout> planLayout(const Catalog& catalog, const PlanFile& plan, const std::string& format,
                                 const PlanArtifactOptions& options)
{
    const int count = static_cast<int>(plan.layouts.size());
    if (options.layout < 0 || options.layout >= count)
        return makeError(ErrorCode::InvalidArgument,
                         "the plan has " + std::to_string(count) + " layout(s); choose --layout 0.." +
                             std::to_string(count - 1) +
                             (count == 0 ? " (none: plan for a GPU count that works)" : ""));
    auto model = catalog.model(plan.model);
    if (!model)
        return model.error();
    auto hw = catalog.hardware(plan.hardware);
    if (!hw)
        return hw.error();
    const Layout& layout = plan.layouts[static_cast<size_t>(options.layout)];

    PlannedLayout out;
    out.config = runConfigForLayout(*model, layout, plan.workload, options.manifest);
    out.gpus = plan.gpus;
    out.target.hardware = *hw;
    out.target.modelName = plan.model;
    out.target.overlapMoeExpertParallelComm = layout.overlapMoeExpertParallelComm;
    out.target.nodes = plan.nodes > 0 ? plan.nodes : std::max(1, plan.gpus / std::max(1, hw->gpusPerNode));
    out.target.gpusPerNode = plan.gpus / std::max(1, out.target.nodes);

    // The prediction that travels with the run: the chosen layout, with the plan's calibration,
    // for the runtime the format starts (every format but megatron-bridge runs moe-train).
    ThroughputOptions throughput;
    throughput.eff.stepTimeFactor = plan.stepTimeFactor;
    MemoryOptions memory;
    memory.moeTrain = format != "megatron-bridge";
    if (memory.moeTrain) {
        throughput.runtime = TrainingRuntime::MoeTrain;
        throughput.rates = catalog.runtimeRates("moe-train", hw->name);
    }
    Workload workload = plan.workload;
    if (options.packed)
        workload.packed = *options.packed;
    // A plan calibrated per term (plan --calibrate-run): the same factors, and the model's own
    // step beside it (an uncalibrated evaluation).
    double uncalibratedStepMs = 0;
    std::string calibration = plan.calibration;
    if (plan.termCalibration.applied()) {
        uncalibratedStepMs = evaluateLayout(*model, layout, workload, *hw, throughput, memory).throughput.stepMs;
        applyTermCalibration(plan.termCalibration, throughput.eff);
        calibration = plan.termCalibration.describe();
    }
    const Candidate candidate = evaluateLayout(*model, layout, workload, *hw, throughput, memory);
    if (!plan.termCalibration.applied())
        uncalibratedStepMs = candidate.throughput.stepMs / plan.stepTimeFactor;
    out.prediction = predictionForCandidate(candidate, *hw, calibration, uncalibratedStepMs);
    if (plan.runtime != trainingRuntimeName(throughput.runtime)) {
        const size_t index = static_cast<size_t>(options.layout);
        char note[400];
        std::snprintf(
            note, sizeof note,
            "the plan predicted %s (layout %d: %.1f ms per step); prediction.json is for %s, which this "
            "format runs: %.1f ms (plan --for %s ranks for it)",
            plan.runtime.c_str(), options.layout, index < plan.layoutStepMs.size() ? plan.layoutStepMs[index] : 0.0,
            candidate.throughput.runtime.c_str(), candidate.throughput.stepMs, candidate.throughput.runtime.c_str());
        out.replannedNote = note;
    }
    return out;
}

Result<GeneratedBundle> generateArtifacts(const std::string& format, const RunConfig& config,
                                          const GeneratorTarget& target, const std::optional<RunPrediction>& prediction)
{
    auto bundle = generateFormat(format, config, target);
    if (!bundle)
        return bundle.error();
    if (prediction && formatCarriesPrediction(format))
        bundle->files.push_back(GeneratedFile{"prediction.json", predictionToJson(*prediction), false});
    return bundle;
}

}  // namespace wb::core::planner
