// One given layout file — a runtime config (JSON), Megatron-Bridge overrides (YAML or a key=value
// dotlist) or a perf launcher command — read and predicted: what `lint` and `predict` read and what
// the planning view's "Predict a file…" shows. Pure functions; any thread.
#pragma once

#include "core/planner/bridge_import.h"
#include "core/planner/calibration.h"
#include "core/planner/catalog.h"
#include "core/planner/layout_search.h"
#include "core/planner/workload.h"
#include "core/result.h"

#include <optional>
#include <string>

namespace wb::core::planner {

/// What kind of layout file it is: a runtime config, Bridge overrides, or a perf launcher command
/// (a dotlist with flags that also names its model, GPU and world).
struct LayoutFileKind {
    bool yaml = false;
    bool dotlist = false;  ///< a dotlist or a perf launcher command
    bool perfLaunch = false;
    PerfLaunch perf;       ///< what the perf launcher command names
    bool bridge() const { return yaml || dotlist; }
};
LayoutFileKind layoutFileKind(const std::string& path, const std::string& text);

/// A layout file with nothing but blank lines and '#' comments (or nothing at all): the error that
/// says so and what the file should hold; nullopt when it has content.
std::optional<Error> emptyLayoutFile(const std::string& path, const std::string& text);

/// The smallest world a config's layout tiles: lcm(TP·PP·CP, PP·EP·ETP) (megatron-bridge.md §3).
int smallestWorld(const RunConfig& config);

/// What to predict a file for; unset fields come from the file where it names them (a perf
/// command's -mr, -g, -ng), else: the runtime config's own model, the smallest world it tiles.
struct LayoutFileRequest {
    std::string path;  ///< for the kind (by extension) and in errors
    std::string text;
    std::optional<std::string> model, hardware;
    std::optional<int> gpus;
    std::optional<std::string> forRuntime;  ///< "megatron-bridge" | "moe-train"; default: moe-train for a runtime config
    std::optional<PackedShape> packed;      ///< the data's packed shape (moe-train --data-stats)
    const TermCalibration* calibration = nullptr;  ///< per-term factors from one measured run
};

struct LayoutFilePrediction {
    Candidate candidate;  ///< memory, throughput (explained, each term with its basis), lint
    HardwareSpec hardware;
    Workload workload;
    RuntimeRates rates;   ///< moe-train's measured rates used (empty for Bridge)
    bool moeTrain = false;
    RunConfig config;     ///< the file read onto the model's defaults (what the store keeps)
    BridgeData bridgeData;  ///< what a Bridge file says of its data
};

/// Reads and predicts one layout file. Errors name the field, the reason and the fix: an empty or
/// unparsable file, no model or hardware to predict for, a model or GPU the catalog lacks, a
/// layout that does not tile the GPUs. `missingInput` is set to "hardware" or "model" when the file
/// does not say what the request must then give (a usage error at the CLI, a question in the GUI).
Result<LayoutFilePrediction> predictLayoutFile(const Catalog& catalog, const LayoutFileRequest& request,
                                               std::string* missingInput = nullptr);

/// The prediction as text: workload, the most-loaded rank's memory by term, the step by term with
/// each term's basis (measured / calibrated / assumed) and assumption, lint findings, and where
/// the numbers come from (what `predict` prints, what the planning view shows).
std::string describeLayoutFilePrediction(const LayoutFilePrediction& p, const std::string& calibration);

}  // namespace wb::core::planner
