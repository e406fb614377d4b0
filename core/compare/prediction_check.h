// Prediction vs measurement: what the planner predicted for a run (RunPrediction, stored with runs
// launched from a plan) against what the run measured over its steady window (RunFigures), per
// figure with the signed error, and across runs the mean absolute error — the planner's accuracy,
// and what it can be calibrated from.
// Error % = (predicted − measured) / measured × 100: positive when the planner predicted more than
// the run measured (a step time predicted too slow, memory predicted too high).
// Pure functions; any thread.
#pragma once

#include "core/compare/run_figures.h"
#include "core/run_prediction.h"

#include <optional>
#include <string>
#include <vector>

namespace wb::core {

/// One predicted figure of one run. `predicted` / `measured` are NaN when unknown (the planner
/// gave 0, or the run recorded nothing); then there is no error.
struct PredictionRow {
    const char* key;    ///< JSON key: "step_ms", "peak_mem_gib", "tokens_per_s_per_gpu", "mfu"
    const char* label;  ///< table text
    const char* unit;   ///< MFU is in % here (both sides × 100)
    int decimals;
    double predicted;
    double measured;
    std::optional<double> errorPct;  ///< (predicted − measured) / measured × 100
};

struct PredictionCheck {
    RunPrediction prediction;
    std::vector<PredictionRow> rows;  ///< step time, peak memory, tokens/s/GPU, MFU — always 4
    /// Why the numbers may not be comparable (the prediction is for another world size), or "".
    std::string note;
};

/// The four figures of the table, predicted against measured. `worldSize` is the run's (from its
/// meta line; <= 0 = unknown): a prediction made for another number of GPUs gets a note.
PredictionCheck checkPrediction(const RunPrediction& prediction, const RunFigures& measured, int worldSize);

/// Mean absolute error % of one figure over the runs that have it.
struct PredictionAccuracy {
    const char* key;
    const char* label;
    double meanAbsErrorPct = 0.0;  ///< NaN when no run has this figure
    size_t runs = 0;
};
/// One entry per figure, in the rows' order; runs without an error for a figure are left out.
std::vector<PredictionAccuracy> predictionAccuracy(const std::vector<PredictionCheck>& checks);

}  // namespace wb::core
