// Checkpoints: DIR/ckpt/latest.pt holds every parameter by name, the optimizer state, the step,
// the loader's stream position and seed (so a resume continues the same data order) and the RNG
// states (CPU, and CUDA on a GPU run). The LR schedule is a function of the step alone. Written to a
// temporary file and renamed. Training thread only.
//
// Sharded layouts (FSDP, EP, TP, PP: no rank holds the whole model) write one file per rank,
// DIR/ckpt/step<S>/rank<k>.pt, with what that rank alone holds: the tensors its optimizer updates
// (its parameters, or its fp32 shards under FSDP), their AdamW state, the model parameters it
// holds that are not re-derivable from those (all of them, or only the frozen ones under FSDP),
// its RNG states, the step and the loader position. When every rank has written its file, rank 0
// writes DIR/ckpt/layout.json (world size, layout string, step, file list) by rename: a
// checkpoint is complete only once layout.json names its step, and the previous step's files are
// removed only after that.
#pragma once

#include "core/result.h"

#include <torch/torch.h>

#include <cstdint>
#include <string>
#include <vector>

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

/// Bytes a checkpoint file of these tensors takes, about: the tensors written plus AdamW's two
/// moments, in their stored dtype, for every parameter the optimizer holds state for (the
/// archive's own overhead is small).
uint64_t checkpointBytes(const std::vector<torch::Tensor>& written, torch::optim::Optimizer& optimizer);
/// Ok when `dir`'s filesystem has room for `files` checkpoint files of `bytesPerFile` each beside
/// what is there now (the previous checkpoint is removed only once the new one is complete);
/// otherwise an IoError naming the need, the free space and the fixes — checked before anything
/// is written, so a full disk never leaves a half-written file behind.
core::Result<void> checkCheckpointSpace(const std::string& dir, uint64_t bytesPerFile, int files);

/// Saves to runDir/ckpt/latest.pt; returns the path.
core::Result<std::string> saveCheckpoint(const std::string& runDir, torch::nn::Module& model,
                                         torch::optim::Optimizer& optimizer, const CheckpointState& state);

/// Loads runDir/ckpt/latest.pt into the model and optimizer. NotFound if there is none.
core::Result<CheckpointState> loadCheckpoint(const std::string& runDir, torch::nn::Module& model,
                                             torch::optim::Optimizer& optimizer);

std::string checkpointPath(const std::string& runDir);

/// DIR/ckpt/layout.json of a sharded checkpoint.
struct CheckpointLayout {
    int worldSize = 0;
    std::string layout;               ///< the meta line's layout string, e.g. "tp2 pp1 cp1 ep1 sp etp2 dp1"
    int64_t step = 0;
    std::vector<std::string> files;   ///< per rank, relative to DIR/ckpt
};

std::string checkpointLayoutPath(const std::string& runDir);
/// "step<S>/rank<k>.pt": a rank's file, relative to DIR/ckpt.
std::string rankCheckpointFile(int64_t step, int rank);

/// What one rank saves or restores: `optimized` are the tensors its optimizer updates (in the
/// optimizer's order); `trainableHeld` false when the model's trainable parameters are re-derived
/// from `optimized` (FSDP), so only its frozen parameters are saved.
struct RankTensors {
    torch::nn::Module* model = nullptr;
    std::vector<torch::Tensor> optimized;
    bool trainableHeld = true;
};

/// Writes DIR/ckpt/step<S>/rank<k>.pt (temp + rename); returns its path relative to DIR/ckpt.
/// `filesOnThisDisk`: how many ranks write their files to the same filesystem at once (the local
/// ranks), for the free-space check.
core::Result<std::string> saveRankCheckpoint(const std::string& runDir, int rank, int worldSize, const RankTensors& tensors,
                                             torch::optim::Optimizer& optimizer, const CheckpointState& state,
                                             int filesOnThisDisk = 1);
/// Rank 0, after every rank saved: writes layout.json (temp + rename), then removes the files of
/// other steps.
core::Result<void> commitCheckpointLayout(const std::string& runDir, const CheckpointLayout& layout);
/// NotFound when there is no layout.json (no complete sharded checkpoint); Corrupt when unreadable.
core::Result<CheckpointLayout> readCheckpointLayout(const std::string& runDir);
/// Loads this rank's file named by `layout` into the tensors and optimizer; shapes are checked.
core::Result<CheckpointState> loadRankCheckpoint(const std::string& runDir, const CheckpointLayout& layout, int rank,
                                                 const RankTensors& tensors, torch::optim::Optimizer& optimizer);

}  // namespace wb::rt
