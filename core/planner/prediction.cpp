// Prediction for one layout; see prediction.h.
#include "core/planner/prediction.h"

#include "core/planner/plan_json.h"

#include <nlohmann/json.hpp>

namespace wb::core::planner {

Candidate evaluateLayout(const ModelSpec& model, const Layout& layout, const Workload& workload,
                         const HardwareSpec& hardware, const ThroughputOptions& throughput, const MemoryOptions& memory)
{
    Candidate c;
    c.layout = layout;
    c.memory = estimateMemory(model.model, layout, workload, memory);
    c.throughput = estimateThroughput(model.model, layout, workload, hardware, throughput);
    LintContext context;
    context.model = &model.model;
    context.hardware = &hardware;
    context.seqLength = workload.seqLength;
    context.bf16AdamMoments = workload.bf16AdamMoments;
    c.lint = lintLayout(layout, context);
    return c;
}

RunPrediction predictionForCandidate(const Candidate& c, const HardwareSpec& hardware, const std::string& calibration,
                                     double uncalibratedStepMs)
{
    RunPrediction p;
    p.source = "moe-workbench planner";
    p.hardware = hardware.name;
    p.gpus = c.layout.worldSize;
    p.calibration = calibration;
    p.stepMs = c.throughput.stepMs;
    p.tokensPerSPerGpu = c.throughput.tokensPerSecPerGpu;
    p.tflopsPerGpu = c.throughput.tflopsPerGpu;
    p.mfu = c.throughput.mfu;
    p.memoryGib = MemoryEstimate::gib(c.memory.total());
    auto detail = nlohmann::ordered_json::parse(layoutToJson(c));
    detail["uncalibrated_step_ms"] = uncalibratedStepMs > 0 ? uncalibratedStepMs : c.throughput.stepMs;
    nlohmann::ordered_json terms = nlohmann::ordered_json::array();
    for (const TimeTerm& t : c.throughput.terms)
        terms.push_back({{"name", t.name}, {"ms", t.ms}, {"assumption", t.assumption}});
    detail["step_terms"] = terms;
    p.detailJson = detail.dump();
    return p;
}

}  // namespace wb::core::planner
