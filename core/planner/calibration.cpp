// Calibration from stored runs; see calibration.h.
#include "core/planner/calibration.h"

#include "core/compare/run_figures.h"
#include "core/compare/steady_state.h"
#include "core/run_store.h"
#include "core/text_format.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

namespace wb::core::planner {

namespace {

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

std::string TermCalibration::describe() const
{
    if (!applied())
        return "not calibrated per term";
    return "compute × " + fmt(compute) + ", vision × " + fmt(vision) + ", optimizer × " + fmt(optimizer) + " from " + run;
}

TermCalibration calibrateTerms(const ThroughputEstimate& predicted, const MeasuredSplit& m, bool frozenVision,
                               const std::string& run)
{
    double compute = 0, vision = 0, optimizer = 0, fixed = 0;
    for (const TimeTerm& t : predicted.terms)
        (t.group == TermGroup::Vision ? vision : t.group == TermGroup::Optimizer ? optimizer
                                              : t.group == TermGroup::Fixed    ? fixed
                                                                               : compute) += t.ms;
    TermCalibration c;
    c.run = run;
    const double measuredVision = (m.visionMs + m.projectorMs) * (frozenVision ? 1.0 : 3.0);
    if (vision > 0 && measuredVision > 0)
        c.vision = measuredVision / vision;
    if (optimizer > 0 && m.optimizerMs > 0)
        c.optimizer = m.optimizerMs / optimizer;
    // What is left of the step is the compute groups' (and the uncalibrated gap's) share.
    const double left = m.stepMs - vision * c.vision - optimizer * c.optimizer - fixed;
    if (compute > 0 && left > 0)
        c.compute = left / compute;
    return c;
}

Result<TermCalibration> calibrateTermsFromStore(RunStore& store, const std::string& runId, const CalibrationOptions& options)
{
    auto prediction = store.prediction(runId);
    if (!prediction)
        return prediction.error();
    if (!*prediction)
        return makeError(ErrorCode::InvalidArgument,
                         "has no planner prediction to calibrate against; launch it from a config generated with "
                         "--hardware and --gpus (prediction.json)",
                         runId);
    const RunPrediction& p = **prediction;
    if (!options.runtime.empty() && predictedRuntime(p) != options.runtime)
        return makeError(ErrorCode::InvalidArgument,
                         "was predicted for " + predictedRuntime(p) + ", and this prediction is for " + options.runtime +
                             ": its terms are another runtime's; predict for " + predictedRuntime(p) + " (--for " +
                             predictedRuntime(p) + ") or calibrate from a run of " + options.runtime,
                         runId);
    if (!options.hardware.empty() && p.hardware != options.hardware)
        return makeError(ErrorCode::InvalidArgument,
                         "was predicted for " + (p.hardware.empty() ? std::string("no hardware") : p.hardware) +
                             ", and this prediction is for " + options.hardware +
                             ": calibrate from a run on " + options.hardware,
                         runId);
    const auto detail = nlohmann::json::parse(p.detailJson.empty() ? std::string("{}") : p.detailJson, nullptr, false);
    if (!p.calibration.empty() || !detail.is_object() || !detail.contains("step_terms") || !detail["step_terms"].is_array())
        return makeError(ErrorCode::InvalidArgument,
                         "its prediction has no uncalibrated step terms (a calibrated or older prediction); "
                         "launch it again with an uncalibrated prediction",
                         runId);
    ThroughputEstimate predicted;
    for (const auto& t : detail["step_terms"]) {
        TimeTerm term;
        term.name = t.value("name", std::string());
        term.ms = t.value("ms", 0.0);
        term.group = termGroup(term.name);
        predicted.stepMs += term.ms;
        predicted.terms.push_back(term);
    }
    auto steps = store.steps(runId);
    if (!steps)
        return steps.error();
    SteadyStateOptions steadyOptions;
    steadyOptions.minSteadySteps = std::max<size_t>(1, options.minSteadySteps);
    auto window = resolveWindow(*steps, std::nullopt, steadyOptions);
    if (!window || !window->detected || window->size() < options.minSteadySteps)
        return makeError(ErrorCode::InvalidArgument,
                         "no steady state of " + std::to_string(options.minSteadySteps) + " steps yet (" +
                             std::to_string(steps->size()) + " steps stored)",
                         runId);
    const RunFigures figures = computeRunFigures(*steps, *window, std::max(1, p.gpus), 0.0);
    MeasuredSplit m;
    m.stepMs = figures.stepMs.valid() ? figures.stepMs.median : 0.0;
    const auto phases = stepPhases();
    for (size_t i = 0; i < phases.size(); ++i) {
        const double v = figures.phaseMs[i].valid() ? figures.phaseMs[i].median : 0.0;
        const std::string key = phases[i].key;
        if (key == "vision_ms")
            m.visionMs = v;
        else if (key == "projector_ms")
            m.projectorMs = v;
        else if (key == "optimizer_ms")
            m.optimizerMs = v;
    }
    if (m.stepMs <= 0 || m.optimizerMs <= 0)
        return makeError(ErrorCode::InvalidArgument,
                         "its metrics have no time split (vision_ms, optimizer_ms): a per-term calibration needs a "
                         "moe-train run; a run without one (a Megatron-Bridge run) calibrates the step time with "
                         "plan --calibrate, from >= 3 runs of this hardware",
                         runId);
    const bool frozen = detail.value("freeze_vision", false);
    return calibrateTerms(predicted, m, frozen, "run " + runId);
}

void applyTermCalibration(const TermCalibration& calibration, EfficiencyFactors& factors)
{
    if (!calibration.applied())
        return;
    factors.computeTimeFactor = calibration.compute;
    factors.visionTimeFactor = calibration.vision;
    factors.optimizerTimeFactor = calibration.optimizer;
    factors.termCalibration = calibration.describe();
}

}  // namespace wb::core::planner
