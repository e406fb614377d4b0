// runAndCapture: run a short-lived program to completion and collect its output (stdout and
// stderr interleaved), with a time limit. For quick checks such as `moe-train --validate`; not for
// training runs (those are detached by LocalTarget::launch). Any thread; blocks until done.
#pragma once

#include "core/result.h"

#include <chrono>
#include <string>
#include <vector>

namespace wb::remote {

struct ProcessOutput {
    int exitCode = -1;   ///< -1 if killed by a signal
    std::string output;  ///< stdout + stderr, capped at 1 MiB
};

/// IoError if it cannot start; Failed if it outlives `timeout` (it is killed).
core::Result<ProcessOutput> runAndCapture(const std::vector<std::string>& argv,
                                          std::chrono::milliseconds timeout);

}  // namespace wb::remote
