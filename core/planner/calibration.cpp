// Calibration from stored runs; see calibration.h.
#include "core/planner/calibration.h"

#include "core/compare/run_figures.h"
#include "core/compare/steady_state.h"
#include "core/run_store.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace wb::core::planner {

namespace {

std::string fmt(double v, int digits = 2)
{
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

// The model's own step time for a stored prediction: a calibrated prediction carries the
// uncalibrated figure in its detail (prediction.cpp); without it the ratio would compound.
double uncalibratedStepMs(const RunPrediction& p)
{
    const auto detail = nlohmann::json::parse(p.detailJson.empty() ? std::string("{}") : p.detailJson, nullptr, false);
    if (detail.is_object() && detail.contains("uncalibrated_step_ms") && detail["uncalibrated_step_ms"].is_number())
        return detail["uncalibrated_step_ms"].get<double>();
    return p.calibration.empty() ? p.stepMs : 0.0;
}

// The runtime a stored prediction was made for (prediction.cpp writes detail.runtime).
std::string predictedRuntime(const RunPrediction& p)
{
    const auto detail = nlohmann::json::parse(p.detailJson.empty() ? std::string("{}") : p.detailJson, nullptr, false);
    if (detail.is_object() && detail.contains("runtime") && detail["runtime"].is_string())
        return detail["runtime"].get<std::string>();
    return "megatron-bridge";
}

}  // namespace

std::string Calibration::describe() const
{
    if (applied())
        return "step time × " + fmt(stepTimeFactor) + " from " + std::to_string(runs.size()) + " " + hardware +
               " run(s) (measured/predicted " + fmt(ratioMin) + "–" + fmt(ratioMax) + ", median)";
    return "not calibrated: " + std::to_string(runs.size()) + " usable " + hardware + " run(s), " +
           std::to_string(minRuns) + " needed; using the catalog's efficiency factors";
}

Calibration fitCalibration(const std::string& hardware, std::vector<CalibrationRun> runs, std::vector<std::string> skipped,
                           const CalibrationOptions& options)
{
    Calibration c;
    c.hardware = hardware;
    c.minRuns = std::max(1, options.minRuns);
    c.runs = std::move(runs);
    c.skipped = std::move(skipped);
    if (c.runs.empty())
        return c;
    std::vector<double> ratios;
    for (const CalibrationRun& r : c.runs)
        ratios.push_back(r.ratio());
    std::sort(ratios.begin(), ratios.end());
    c.ratioMin = ratios.front();
    c.ratioMax = ratios.back();
    if (c.applied()) {
        const size_t n = ratios.size();
        c.stepTimeFactor = n % 2 ? ratios[n / 2] : 0.5 * (ratios[n / 2 - 1] + ratios[n / 2]);
    }
    return c;
}

Result<Calibration> calibrateFromStore(RunStore& store, const std::string& hardware, const CalibrationOptions& options)
{
    auto list = store.listRuns();
    if (!list)
        return list.error();
    std::vector<CalibrationRun> used;
    std::vector<std::string> skipped;
    for (const RunSummary& s : *list) {
        auto prediction = store.prediction(s.id);
        if (!prediction)
            return prediction.error();
        if (!*prediction || (*prediction)->hardware != hardware)
            continue;
        const RunPrediction& p = **prediction;
        if (!options.runtime.empty() && predictedRuntime(p) != options.runtime) {
            skipped.push_back(s.id + ": predicted for " + predictedRuntime(p) + ", this plan is for " + options.runtime);
            continue;
        }
        const double predicted = uncalibratedStepMs(p);
        if (predicted <= 0) {
            skipped.push_back(s.id + ": its prediction was calibrated and does not carry the model's own step time");
            continue;
        }
        auto steps = store.steps(s.id);
        if (!steps)
            return steps.error();
        SteadyStateOptions steadyOptions;
        steadyOptions.minSteadySteps = std::max<size_t>(1, options.minSteadySteps);
        auto window = resolveWindow(*steps, std::nullopt, steadyOptions);
        if (!window || !window->detected || window->size() < options.minSteadySteps) {
            skipped.push_back(s.id + ": no steady state of " + std::to_string(options.minSteadySteps) + " steps yet (" +
                              std::to_string(steps->size()) + " steps stored)");
            continue;
        }
        const RunFigures figures = computeRunFigures(*steps, *window, std::max(1, p.gpus), 0.0);
        if (!figures.stepMs.valid() || figures.stepMs.median <= 0) {
            skipped.push_back(s.id + ": no valid step times in its steady window");
            continue;
        }
        CalibrationRun r;
        r.id = s.id;
        r.name = s.name;
        r.gpus = p.gpus;
        r.predictedStepMs = predicted;
        r.measuredStepMs = figures.stepMs.median;
        r.steadySteps = window->size();
        used.push_back(r);
    }
    return fitCalibration(hardware, std::move(used), std::move(skipped), options);
}

void applyCalibration(const Calibration& calibration, EfficiencyFactors& factors)
{
    if (calibration.applied())
        factors.stepTimeFactor *= calibration.stepTimeFactor;
}

}  // namespace wb::core::planner
