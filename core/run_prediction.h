// RunPrediction: what the planner predicted for a run before it started, kept beside the run so
// the compare view can show predicted vs measured (and the planner can calibrate from the error).
// The planner writes it as a sidecar file `prediction.json` next to a generated runtime config;
// `moe-workbench-cli launch --prediction FILE` (and the GUI's launch from a plan) hand it to
// startRun, which stores it with the run. Pure data + JSON; any thread; std + nlohmann only.
#pragma once

#include "core/result.h"

#include <string>
#include <string_view>

namespace wb::core {

inline constexpr int kPredictionSchemaVersion = 1;

struct RunPrediction {
    std::string source;            ///< who predicted: "moe-workbench planner 0.1.0"
    std::string hardware;          ///< catalog hardware id the prediction is for ("h200")
    int gpus = 0;                  ///< world size the prediction is for
    std::string calibration;       ///< "" = the catalog's efficiency; else what calibrated it
    double stepMs = 0.0;           ///< predicted steady-state step time
    double tokensPerSPerGpu = 0.0; ///< effective tokens / s / GPU
    double tflopsPerGpu = 0.0;     ///< DESIGN.md §3.2 FLOPs (vision counted)
    double mfu = 0.0;              ///< fraction, 0..1
    double memoryGib = 0.0;        ///< most-loaded rank, total incl. allocator slack
    /// The planner's full layout object (memory terms with assumptions, comm terms, lint), as
    /// JSON text; shown verbatim, never needed to compare. May be empty.
    std::string detailJson;
};

/// {"prediction_version":1,"source":...,"hardware":...,"gpus":...,"calibration":...,
///  "step_ms":...,"tokens_per_s_per_gpu":...,"tflops_per_gpu":...,"mfu":...,"memory_gib":...,
///  "detail":{...}}
std::string predictionToJson(const RunPrediction& prediction);
/// Every problem named (missing or negative figure, newer prediction_version, not JSON).
Result<RunPrediction> parsePrediction(std::string_view jsonText);
/// Reads and parses a prediction file; errors name the file.
Result<RunPrediction> loadPrediction(const std::string& path);

}  // namespace wb::core
