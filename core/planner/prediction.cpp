// Prediction for one layout; see prediction.h.
#include "core/planner/prediction.h"

#include "core/json_number.h"
#include "core/planner/plan_json.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

namespace wb::core::planner {

Workload workloadForRunConfig(const RunConfig& config)
{
    Workload workload;
    workload.seqLength = config.train.seqLength;
    workload.imagesPerSample = config.data.imagesPerSample;
    const int side = config.data.source == "mock" ? config.data.mockImageSize
                                                  : static_cast<int>(std::sqrt(static_cast<double>(config.data.maxPixels)));
    workload.imageWidth = workload.imageHeight = std::max(0, side);
    workload.mockTextOnly = side <= 0 || config.data.imagesPerSample <= 0;
    workload.mock = config.data.source == "mock";
    workload.bf16AdamMoments = config.train.expAvgDtype == "bf16" || config.train.expAvgSqDtype == "bf16";
    return workload;
}

Result<PackedShape> parsePackedShape(const std::string& text, const std::string& context)
{
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object() || j.value("format", "") != "moe-train-workload")
        return makeError(ErrorCode::InvalidArgument,
                         "is not a workload file (format \"moe-train-workload\"); make one with "
                         "moe-train --config RUN.json --data-stats > workload.json",
                         context);
    if (jsonIntOr(j, "version", 0) != 1)
        return makeError(ErrorCode::InvalidArgument,
                         "workload file version " + j.value("version", nlohmann::json()).dump() +
                             " is not 1; make it again with this moe-train",
                         context);
    const auto per = j.find("per_sequence");
    if (per == j.end() || !per->is_object())
        return makeError(ErrorCode::InvalidArgument, "has no \"per_sequence\" object", context);
    PackedShape s;
    struct Field {
        const char* key;
        double* value;
    };
    const Field fields[] = {{"images", &s.images},           {"patches", &s.patches},
                            {"patches_squared", &s.patchesSquared}, {"image_tokens", &s.imageTokens},
                            {"text_tokens", &s.textTokens},   {"pad_tokens", &s.padTokens},
                            {"samples", &s.samples},         {"sample_tokens_squared", &s.sampleTokensSquared}};
    for (const Field& f : fields) {
        const auto it = per->find(f.key);
        if (it == per->end() || !it->is_number() || it->get<double>() < 0)
            return makeError(ErrorCode::InvalidArgument,
                             std::string("per_sequence.") + f.key + " must be a number >= 0", context);
        *f.value = it->get<double>();
    }
    if (s.samples <= 0)
        return makeError(ErrorCode::InvalidArgument, "per_sequence.samples is 0: the loader packed nothing", context);
    s.source = "moe-train --data-stats (" + j.value("source", std::string("?")) + " data, " +
               std::to_string(static_cast<int64_t>(j.value("sequences", 0.0))) + " sequences of " +
               std::to_string(jsonIntOr(j, "seq_length", 0)) + " tokens)";
    return s;
}

Candidate evaluateLayout(const ModelSpec& model, const Layout& layout, const Workload& workload,
                         const HardwareSpec& hardware, const ThroughputOptions& throughput, const MemoryOptions& memory)
{
    Candidate c;
    c.layout = layout;
    c.memory = estimateMemory(model.model, layout, workload, memory);
    ThroughputOptions withPeak = throughput;  // for train.overlap_optimizer "auto"
    withPeak.predictedPeakBytes = c.memory.total();
    c.throughput = estimateThroughput(model.model, layout, workload, hardware, withPeak);
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
    detail["runtime"] = c.throughput.runtime;
    nlohmann::ordered_json terms = nlohmann::ordered_json::array();
    for (const TimeTerm& t : c.throughput.terms)
        terms.push_back({{"name", t.name}, {"ms", t.ms}, {"basis", termBasisName(t.basis)}, {"assumption", t.assumption}});
    detail["step_terms"] = terms;
    detail["step_basis"] = describeTermBases(c.throughput.terms);
    p.detailJson = detail.dump();
    return p;
}

}  // namespace wb::core::planner
