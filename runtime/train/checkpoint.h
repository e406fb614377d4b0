// Checkpoints: DIR/ckpt/latest.pt holds every parameter by name, the optimizer state, the step
// and the loader's stream position (so a resume continues the same data order). Written to a
// temporary file and renamed. Training thread only.
#pragma once

#include "core/result.h"

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace wb::rt {

struct CheckpointState {
    int64_t step = 0;            ///< last completed optimizer step
    int64_t nextSampleSeq = 0;   ///< loader stream position to continue from
};

/// Saves to runDir/ckpt/latest.pt; returns the path.
core::Result<std::string> saveCheckpoint(const std::string& runDir, torch::nn::Module& model,
                                         torch::optim::Optimizer& optimizer, const CheckpointState& state);

/// Loads runDir/ckpt/latest.pt into the model and optimizer. NotFound if there is none.
core::Result<CheckpointState> loadCheckpoint(const std::string& runDir, torch::nn::Module& model,
                                             torch::optim::Optimizer& optimizer);

std::string checkpointPath(const std::string& runDir);

}  // namespace wb::rt
