// startRun: the one launch sequence shared by the CLI and the GUI's worker. Validation comes
// first, so a config that is wrong never creates a run (no store row, no run directory); then the
// run is recorded, launched, and its directory recorded. Blocking: never on the GUI thread.
#pragma once

#include "core/result.h"
#include "core/run_config.h"
#include "core/run_prediction.h"
#include "core/run_store.h"
#include "core/run_target.h"

#include <string>

namespace wb::core {

struct StartedRun {
    std::string id;
    LaunchedRun launched;
};

/// Errors: InvalidArgument (config problems, core's or the target's — every one listed), or the
/// store's/target's error. A launch that fails after the run was recorded leaves the record marked
/// failed (it says what was tried); the error says so. `prediction` (a plan's, may be null) is
/// stored with the run before it starts, so predicted vs measured is there from the first step.
Result<StartedRun> startRun(RunStore& store, RunTarget& target, const RunConfig& config,
                            const std::string& name, const RunPrediction* prediction = nullptr);

}  // namespace wb::core
