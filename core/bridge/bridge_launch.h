// Launching a Megatron-Bridge job from a folder `generate --format megatron-bridge` wrote
// (`launch --target slurm:HOST --bridge DIR`): the folder is read and checked here, the target
// checks the cluster (its batch system, and that its python imports megatron.bridge), the run is
// recorded as a followed megatron-bridge run with the plan's prediction, then the job is submitted
// and its output file is followed by the Bridge log follower (bridge_follow.h). Blocking (file
// reads, SQLite, the target's network); any thread but the GUI's.
//
// The folder (docs/bridge-import.md, "Launch a Bridge job"):
//   bridge_job.json  {"version": 1, "script": "bridge.sbatch", "config": "overrides.yaml",
//                     "model": "qwen3-vl-30b-a3b", "hardware": "h200", "gpus": 16}
//                    what makes it a Bridge folder; only "script" is required
//   bridge.sbatch    the sbatch script (any name "script" gives), submitted in the run directory
//   prediction.json  the plan's prediction (optional)
//   every other regular file of the folder travels with the script (overrides, env.slurm.sh).
#pragma once

#include "core/planner/catalog.h"
#include "core/result.h"
#include "core/run_launch.h"
#include "core/run_prediction.h"
#include "core/run_store.h"
#include "core/run_target.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wb::core::bridge {

/// The manifest's name: a folder holding it is a Bridge launch folder.
inline constexpr const char* kBridgeJobManifest = "bridge_job.json";

struct BridgeLaunchFolder {
    std::string dir;
    std::string script;                      ///< the file submitted ("bridge.sbatch")
    std::optional<std::string> configPath;   ///< local path of the Bridge overrides/config, when named
    std::optional<std::string> model, hardware;
    std::optional<int> gpus;
    std::optional<RunPrediction> prediction;  ///< DIR/prediction.json
    std::vector<std::pair<std::string, std::string>> files;  ///< what goes to the run directory
};

/// Reads and checks DIR. InvalidArgument (or NotFound for a folder that is not there), naming the
/// file, what is wrong and the fix: no manifest (not a Bridge folder; a `generate --format slurm`
/// folder is named as one for `launch --config`), a manifest that does not parse, the script it
/// names missing, a prediction.json that does not parse, a folder too large to send.
Result<BridgeLaunchFolder> readBridgeLaunchFolder(const std::string& dir);

/// Checks the target, records the run (kind megatron-bridge, the plan's prediction, the job's
/// output file as its log), submits the job. A submission that fails after the run was recorded
/// leaves it marked failed, and the error says so. `notes` (may be null): what is not known yet.
Result<StartedRun> startBridgeLaunch(RunStore& store, const planner::Catalog& catalog, RunTarget& target,
                                     const BridgeLaunchFolder& folder, const std::string& name,
                                     std::vector<std::string>* notes);

}  // namespace wb::core::bridge
