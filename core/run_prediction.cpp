#include "core/run_prediction.h"

#include "core/json_number.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace wb::core {

namespace {
using OrderedJson = nlohmann::ordered_json;

struct FigureField {
    const char* key;
    double RunPrediction::*member;
};
constexpr FigureField kFigures[] = {
    {"step_ms", &RunPrediction::stepMs},
    {"tokens_per_s_per_gpu", &RunPrediction::tokensPerSPerGpu},
    {"tflops_per_gpu", &RunPrediction::tflopsPerGpu},
    {"mfu", &RunPrediction::mfu},
    {"memory_gib", &RunPrediction::memoryGib},
};
}  // namespace

std::string predictionToJson(const RunPrediction& p)
{
    OrderedJson j;
    j["prediction_version"] = kPredictionSchemaVersion;
    j["source"] = p.source;
    j["hardware"] = p.hardware;
    j["gpus"] = p.gpus;
    j["calibration"] = p.calibration;
    for (const auto& f : kFigures)
        j[f.key] = p.*f.member;
    if (!p.detailJson.empty()) {
        auto detail = OrderedJson::parse(p.detailJson, nullptr, false);
        j["detail"] = detail.is_discarded() ? OrderedJson(p.detailJson) : detail;
    }
    return j.dump(2) + "\n";
}

Result<RunPrediction> parsePrediction(std::string_view text)
{
    const auto j = OrderedJson::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        return makeError(ErrorCode::Corrupt,
                         "not a prediction: expected a JSON object as written by `moe-workbench-cli "
                         "generate --format runtime` (prediction.json)");
    std::string problems;
    auto problem = [&](const std::string& msg) { problems += (problems.empty() ? "" : "\n") + msg; };

    const auto versionIt = j.find("prediction_version");
    const int version = versionIt == j.end() ? 0 : static_cast<int>(jsonWholeNumber(*versionIt, 0, 1 << 20).value_or(0));
    if (version <= 0)
        problem("prediction_version: missing; the file was not written by the planner");
    else if (version > kPredictionSchemaVersion)
        return makeError(ErrorCode::Incompatible,
                         "prediction_version " + std::to_string(version) +
                             " is newer than this workbench understands (" +
                             std::to_string(kPredictionSchemaVersion) + "); update the workbench");

    RunPrediction p;
    auto str = [&](const char* key, std::string& out) {
        if (auto it = j.find(key); it != j.end() && it->is_string())
            out = it->get<std::string>();
        else if (it != j.end())
            problem(std::string(key) + ": must be a string");
    };
    str("source", p.source);
    str("hardware", p.hardware);
    str("calibration", p.calibration);
    if (auto it = j.find("gpus"); it != j.end() && jsonWholeNumber(*it, 1, 1 << 24))
        p.gpus = static_cast<int>(*jsonWholeNumber(*it, 1, 1 << 24));
    else
        problem("gpus: must be a positive integer (the world size the prediction is for)");
    for (const auto& f : kFigures) {
        auto it = j.find(f.key);
        if (it == j.end() || !it->is_number()) {
            problem(std::string(f.key) + ": missing or not a number");
            continue;
        }
        const double v = it->get<double>();
        if (!(v >= 0.0))
            problem(std::string(f.key) + ": must be >= 0 (got " + it->dump() + ")");
        p.*f.member = v;
    }
    if (p.mfu > 1.0)
        problem("mfu: is a fraction of peak and must be <= 1 (got " + std::to_string(p.mfu) + ")");
    if (auto it = j.find("detail"); it != j.end())
        p.detailJson = it->dump();
    if (!problems.empty())
        return makeError(ErrorCode::InvalidArgument, problems);
    return p;
}

Result<RunPrediction> loadPrediction(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return makeError(ErrorCode::NotFound, "cannot open the prediction file", path);
    std::ostringstream buf;
    buf << in.rdbuf();
    auto p = parsePrediction(buf.str());
    if (!p)
        return Error{p.error().code, p.error().message, path};
    return p;
}

}  // namespace wb::core
