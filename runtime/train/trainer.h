// The training loop of moe-train: builds the model, loader, optimizer and writers for one run
// directory, trains for train.train_iters steps, and reports through DIR/metrics.jsonl,
// DIR/status.json and stdout. Runs on the calling (main) thread; the loader owns its own threads.
#pragma once

#include "core/run_config.h"

#include <atomic>
#include <string>

namespace wb::rt {

struct TrainOptions {
    std::string runDir;
    bool resume = false;
};

/// Trains and returns the process exit code (DESIGN.md §3.1: 0 finished, 1 failed, 2 bad
/// config/input, 3 out of memory, 4 communication, 5 stopped by signal after a checkpoint).
/// Never throws: every failure is reported in status.json, an end record and stderr.
int runTraining(const core::RunConfig& config, const TrainOptions& options);

/// The flag SIGTERM/SIGINT set; the loop checks it between micro-batches. A plain lock-free
/// atomic, so a signal handler may store to it (the one piece of process-wide state, because a
/// signal handler can reach nothing else).
std::atomic<bool>& stopRequestedFlag();

}  // namespace wb::rt
