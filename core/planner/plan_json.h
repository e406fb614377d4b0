// The plan as JSON (the `moe-workbench-cli plan --json` shape, a public interface documented in
// docs/cli.md), reading a plan back for `generate --from PLAN`, turning a planned layout into a
// runnable RunConfig, and mapping a config problem's JSON path to its line in the file. Pure;
// any thread.
#pragma once

#include "core/planner/calibration.h"
#include "core/planner/catalog.h"
#include "core/planner/decision_guide.h"
#include "core/planner/layout_search.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wb::core::planner {

inline constexpr int kPlanSchemaVersion = 1;

/// {"schema", "request", "recommendation", "layouts", "search", "calibration"} — see docs/cli.md
/// "plan". "calibration" is null unless one is given (`plan --calibrate`).
/// With `answers`, request.answers records them (the `--answers` shape), so the plan can be opened
/// again with the guide as it was answered.
std::string planToJson(const SearchRequest& request, const GuideRecommendation& recommendation, const SearchResult& result,
                       const Calibration* calibration = nullptr, const TermCalibration* termCalibration = nullptr,
                       const GuideAnswers* answers = nullptr);

/// One layout object of that document (compact JSON), as `plan --json` writes it.
std::string layoutToJson(const Candidate& candidate);

/// What `generate` needs from a plan file: the request and the ranked layouts.
struct PlanFile {
    std::string model;
    std::string hardware;
    int gpus = 0;
    int nodes = 0;
    Workload workload;
    int gbs = 0;
    std::vector<Layout> layouts;  ///< best first
    std::vector<double> layoutStepMs;  ///< each layout's predicted step time as the plan wrote it
    double stepTimeFactor = 1.0;  ///< the plan's applied calibration (1.0: none)
    std::string calibration;      ///< its description; "" when not calibrated
    TermCalibration termCalibration;  ///< `plan --calibrate-run`: per-term factors from one run
    std::string runtime = "megatron-bridge";  ///< what its predictions are for (request.for)
    std::string goal = "throughput";          ///< request.goal
    bool freezeVision = false;                ///< request.freeze_vision (absent: false)
    std::optional<GuideAnswers> answers;      ///< request.answers, when the plan recorded them
};

/// True when the text looks like a plan (an object with "layouts"), not a runtime config.
bool looksLikePlan(std::string_view jsonText);

/// Errors: InvalidArgument naming the first field that is missing or of the wrong type.
Result<PlanFile> parsePlanJson(std::string_view jsonText);

/// A runnable config for a planned layout: the catalog model, the layout, the workload's sequence
/// length and image size (real data from `manifest`), bf16 on CUDA.
RunConfig runConfigForLayout(const ModelSpec& model, const Layout& layout, const Workload& workload,
                             const std::string& manifest);

/// 1-based line of the key a dotted path names ("train.micro_batch_size") in a JSON text; for a
/// path whose key is absent, the line of its nearest present parent; 0 when nothing matches
/// (an empty path, or text that is not an object).
int jsonPathLine(std::string_view jsonText, const std::string& dottedPath);

}  // namespace wb::core::planner
