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

/// Creates a followed Bridge run (status running) for the log at `request.logPath` on the target
/// named `targetName` ("local", "ssh:HOST"); the config file, when given, is read here. Returns the
/// run id; `notes` (may be null) get what is not known yet.
Result<std::string> startBridgeFollow(RunStore& store, const planner::Catalog& catalog,
                                      const BridgeImportRequest& request, const std::string& targetName,
                                      std::vector<std::string>* notes);

/// One round for a megatron-bridge run: reads up to `maxBytes` of its log at the stored offset,
/// stores the complete lines, reports the new steps and events. Finished (status finished) once
/// the log reached train_iters and every byte is read; until then the state stays running (a log
/// says nothing of the process: a job that died is seen by its missing lines, `watch --idle-exit-s`).
Result<FollowUpdate> pollBridgeLog(RunStore& store, RunTarget& target, const RunSummary& run, int64_t maxBytes);

}  // namespace wb::core::bridge
