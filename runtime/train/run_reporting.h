// How the parts of a training run report back to the trainer (Trainer::run): a RunFailure carries
// an exit code (DESIGN.md §3.1) out of the loop, an EventSink takes an event for metrics.jsonl.
// Used by the trainer and the parts it calls into (Checkpointer, RouterGraphsRunner,
// KernelProfiler); internal to runtime/train.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace wb::rt {

struct RunFailure {
    int exitCode;
    std::string message;
};

/// The trainer's event(): metrics.jsonl on rank 0, a warning or error on another rank's stderr;
/// `step` −1 = outside any step (written without "step").
using EventSink = std::function<void(const std::string& level, const std::string& message, int64_t step)>;

}  // namespace wb::rt
