// Calibration from the run store (issue 3 item 5): the runs that were launched with a planner
// prediction for one hardware and have a detected steady state give measured / predicted step
// time; the median of those ratios (robust to one odd run) becomes that hardware's step-time
// factor, applied to EfficiencyFactors::stepTimeFactor so every prediction for that hardware
// scales with it. Too few runs → no factor (1.0, the catalog's efficiencies) and the reason.
// fitCalibration is pure; calibrateFromStore reads a RunStore (one thread at a time, as RunStore).
#pragma once

#include "core/planner/throughput_model.h"
#include "core/result.h"

#include <cstddef>
#include <string>
#include <vector>

namespace wb::core {
class RunStore;
}

namespace wb::core::planner {

struct CalibrationOptions {
    int minRuns = 3;              ///< fewer usable runs than this: not calibrated
    size_t minSteadySteps = 10;   ///< a run needs a detected steady state at least this long
    /// Only runs whose prediction was made for this runtime ("megatron-bridge", "moe-train"; a
    /// prediction without one is Megatron-Bridge's): a ratio against another runtime's model says
    /// nothing about this one. Empty: any.
    std::string runtime;
    /// Only runs predicted for this catalog hardware id ("h200"); empty: any. A single-run (per
    /// term) calibration refuses a run of another runtime or hardware instead of skipping it.
    std::string hardware;
};

struct CalibrationRun {
    std::string id;
    std::string name;
    int gpus = 0;
    double predictedStepMs = 0;   ///< the model's own (uncalibrated) prediction
    double measuredStepMs = 0;    ///< median step time over the steady-state window
    size_t steadySteps = 0;
    double ratio() const { return predictedStepMs > 0 ? measuredStepMs / predictedStepMs : 0; }
};

struct Calibration {
    std::string hardware;
    std::vector<CalibrationRun> runs;      ///< the runs used
    std::vector<std::string> skipped;      ///< "ID: why" for runs with a prediction that were not used
    int minRuns = 3;
    double stepTimeFactor = 1.0;           ///< median measured/predicted; 1.0 when not applied
    double ratioMin = 0, ratioMax = 0;     ///< range of the ratios used
    bool applied() const { return int(runs.size()) >= minRuns && !runs.empty(); }
    /// "step time × 1.23 from 4 h200 runs (ratios 1.10–1.31)" or why it is not applied.
    std::string describe() const;
};

/// Median of the runs' ratios when there are at least options.minRuns of them.
Calibration fitCalibration(const std::string& hardware, std::vector<CalibrationRun> runs,
                           std::vector<std::string> skipped, const CalibrationOptions& options = {});

/// Every run in the store whose prediction is for `hardware`: measured steady step time against
/// the prediction. Errors only when the store cannot be read.
Result<Calibration> calibrateFromStore(RunStore& store, const std::string& hardware,
                                       const CalibrationOptions& options = {});

/// Multiplies factors.stepTimeFactor by the calibration's factor when it is applied.
void applyCalibration(const Calibration& calibration, EfficiencyFactors& factors);

/// The metrics' time split of one measured run (DESIGN.md §3.2; medians over its steady window).
struct MeasuredSplit {
    double stepMs = 0;
    double visionMs = 0;     ///< vision encoder forward
    double projectorMs = 0;  ///< mergers forward
    double optimizerMs = 0;  ///< the step, with the gradient-norm pass
};

/// Per-term calibration from ONE measured run (issue 15 item 4): each group of terms
/// (throughput_model.h TermGroup) is scaled so the run's prediction matches its split —
///  - optimizer: the optimizer step + norm pass against optimizer_ms;
///  - vision: the vision encoder against 3 × (vision + projector forward), backward = 2 × forward
///    (assumption; 1 × when the encoder is frozen);
///  - compute: every other per-micro-batch term against what is left of the step after those
///    two and the host gap (which is not calibrated).
/// A group the run has no time for (no images, no optimizer term) keeps factor 1.
struct TermCalibration {
    double compute = 1.0, vision = 1.0, optimizer = 1.0;
    std::string run;  ///< which run ("real of h200-1gpu-2026-12-02.json", a run id)
    bool applied() const { return !run.empty(); }
    /// "compute × 1.19, vision × 1.15, optimizer × 1.01 from RUN"
    std::string describe() const;
};

/// `predicted` is the run's own uncalibrated prediction (its terms); `frozenVision` its layout's.
TermCalibration calibrateTerms(const ThroughputEstimate& predicted, const MeasuredSplit& measured, bool frozenVision,
                               const std::string& run);

/// The same from a stored run: its prediction's own terms (detail.step_terms, uncalibrated) and the
/// medians of its time split over its steady window. Errors name the run and what it lacks (no
/// prediction, no split in its metrics, no steady state of options.minSteadySteps steps), or,
/// when options name them, a prediction for another runtime or hardware.
Result<TermCalibration> calibrateTermsFromStore(RunStore& store, const std::string& runId,
                                                const CalibrationOptions& options = {});

/// Sets the three per-term factors (and their description) of `factors`.
void applyTermCalibration(const TermCalibration& calibration, EfficiencyFactors& factors);

}  // namespace wb::core::planner
