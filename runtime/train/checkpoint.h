// Checkpoints: DIR/ckpt/latest.pt holds every parameter by name, the optimizer state, the step,
// the loader's stream position and seed (so a resume continues the same data order) and the RNG
// states (CPU, and CUDA on a GPU run). The LR schedule is a function of the step alone. Written to a
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
    /// The loader's order is a pure function of (data seed, epoch) and the stream position, so
    /// these two are its whole shuffling/sampling state; the seed is checked on resume.
    int64_t dataSeed = -1;       ///< train.seed of the run that saved it; −1 = not recorded
    torch::Tensor rngCpu;        ///< default CPU generator state (uint8); undefined in old checkpoints
    torch::Tensor rngCuda;       ///< default CUDA generator state of the training device; undefined on CPU
};

/// The default generators' states now (CUDA only when `device` is CUDA), for saveCheckpoint.
void captureRngState(CheckpointState& state, torch::Device device);
/// Puts saved generator states back (the ones present in `state`).
void restoreRngState(const CheckpointState& state, torch::Device device);

/// Saves to runDir/ckpt/latest.pt; returns the path.
core::Result<std::string> saveCheckpoint(const std::string& runDir, torch::nn::Module& model,
                                         torch::optim::Optimizer& optimizer, const CheckpointState& state);

/// Loads runDir/ckpt/latest.pt into the model and optimizer. NotFound if there is none.
core::Result<CheckpointState> loadCheckpoint(const std::string& runDir, torch::nn::Module& model,
                                             torch::optim::Optimizer& optimizer);

std::string checkpointPath(const std::string& runDir);

}  // namespace wb::rt
