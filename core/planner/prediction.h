// One layout → the prediction that travels with a run. `evaluateLayout` computes for a single
// layout what the search computes for each candidate (memory, throughput, lint);
// `predictionForCandidate` turns that into a core::RunPrediction (core/run_prediction.h) whose
// detail is the candidate's plan-JSON layout object, its step terms, and the uncalibrated step
// time, so a later calibration compares against the model itself. Used by `generate --format
// runtime` (prediction.json beside run.json) and the planning view's Launch button. Pure; any thread.
#pragma once

#include "core/planner/layout_search.h"
#include "core/run_prediction.h"

#include <string>

namespace wb::core::planner {

/// The workload a runtime config trains on, as the planner sees it without a measured shape: its
/// sequence length, data.images_per_sample images of √max_pixels (real) or mock_image_size (mock)
/// pixels a side, text-only when there are none, and its Adam moment dtypes.
Workload workloadForRunConfig(const RunConfig& config);

/// Reads `moe-train --data-stats` output (format "moe-train-workload", version 1) into a
/// PackedShape; `context` names the file in errors (a missing field, another format).
Result<PackedShape> parsePackedShape(const std::string& text, const std::string& context);

Candidate evaluateLayout(const ModelSpec& model, const Layout& layout, const Workload& workload,
                         const HardwareSpec& hardware, const ThroughputOptions& throughput = {},
                         const MemoryOptions& memory = {});

/// `calibration`: "" when the efficiency factors are the catalog's, else what calibrated them
/// (Calibration::describe()). `uncalibratedStepMs` <= 0 means the same as the candidate's.
RunPrediction predictionForCandidate(const Candidate& candidate, const HardwareSpec& hardware,
                                     const std::string& calibration = {}, double uncalibratedStepMs = 0);

}  // namespace wb::core::planner
