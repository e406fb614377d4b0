// Following a Megatron-Bridge job's log while the job runs: on this machine or on a registered host
// (the target reads the file from the stored byte offset, over SFTP for SSH hosts, so a dropped
// connection loses nothing). The run is created from what is known at the start (the request, the
// config file); each poll reads the new complete lines, fills in what the log has said meanwhile
// (world size, sequence length, GBS), and stores the steps with the same offset rule as
// metrics.jsonl. RunFollower::poll hands megatron-bridge runs here, so `watch` and the GUI follow
// them like moe-train's. Blocking; one thread per follower.
#pragma once

#include "core/bridge/bridge_run_import.h"
#include "core/run_follower.h"
#include "core/run_target.h"

#include <string>

namespace wb::core::bridge {

/// Where a followed run lives and who started its job.
struct FollowedRunPlace {
    std::string id;          ///< "" = the store makes one
    std::string targetName;  ///< "local", "ssh:HOST", "slurm:HOST"
    std::string runDir;      ///< "" = the log's folder
    /// The workbench submitted the job (launch --bridge): the run ends when the target says the
    /// job ended (after the rest of the log is read), and `cancel` may stop it. Otherwise the run
    /// ends at train_iters and the workbench never touches the job.
    bool launched = false;
    std::optional<RunPrediction> prediction;  ///< the plan's; replaces the one from the config
    RunState state = RunState::Running;
};

/// Creates a followed Bridge run (status `place.state`) for the log at `request.logPath` on the
/// target; the config file, when given, is read here. Returns the run id; `notes` (may be null)
/// get what is not known yet.
Result<std::string> startBridgeFollow(RunStore& store, const planner::Catalog& catalog,
                                      const BridgeImportRequest& request, const FollowedRunPlace& place,
                                      std::vector<std::string>* notes);
/// The same, on target `targetName`, in the log's folder, not launched by the workbench.
Result<std::string> startBridgeFollow(RunStore& store, const planner::Catalog& catalog,
                                      const BridgeImportRequest& request, const std::string& targetName,
                                      std::vector<std::string>* notes);

/// Whether the workbench submitted this Bridge run's job (FollowedRunPlace::launched).
Result<bool> launchedByWorkbench(RunStore& store, const RunSummary& run);

/// One round for a megatron-bridge run: reads up to `maxBytes` of its log at the stored offset,
/// stores the complete lines, reports the new steps and events. A job the workbench launched: the
/// target's job state is asked first, and once the job has left the queue and every byte of the
/// log is read, the run ends in the job's state (finished, failed, cancelled). Any other: finished
/// once the log reached train_iters and every byte is read; until then the state stays running (a
/// log says nothing of the process: a job that died is seen by its missing lines, `watch --idle-exit-s`).
Result<FollowUpdate> pollBridgeLog(RunStore& store, RunTarget& target, const RunSummary& run, int64_t maxBytes);

}  // namespace wb::core::bridge
