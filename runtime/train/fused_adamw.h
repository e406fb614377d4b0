// One AdamW step over a torch::optim::AdamW's parameters through ATen's fused multi-tensor CUDA
// kernel (at::_fused_adamw_, LibTorch >= 2.1): a few launches for all parameters instead of ~10
// per parameter. The state lives in the optimizer's own AdamWParamState objects (exp_avg,
// exp_avg_sq, step), created as AdamW::step creates them (in the configured moment dtypes), so
// checkpoints see no difference. Training thread only.
#pragma once

#include "runtime/model/bf16_weights.h"
#include "runtime/train/optimizer.h"

#include <torch/torch.h>

namespace wb::rt {

/// True when this build has the fused kernel (CUDA build, LibTorch >= 2.1).
bool fusedAdamWAvailable();

/// AdamW::step semantics (decoupled weight decay, bias-corrected moments, no amsgrad) for every
/// parameter with a gradient; all of them must be fp32 CUDA tensors. New moments are created in
/// `dtypes`; bf16 moments are updated in fp32 and rounded on store (our kernel, or the ATen ops for
/// a tensor it cannot take). Throws when unavailable or when the optimizer uses amsgrad. `gradScale` (a 0-d fp32 tensor on the device, may be
/// undefined): every gradient is divided by it inside the kernel — how gradient clipping is
/// folded into the step instead of a separate read-modify-write pass over all gradients.
/// Kernels go to the current stream.
struct FusedAdamWOptions {
    const ParameterSubset* only = nullptr;  ///< just these parameters (null = all)
    /// Kept bf16 copies (bf16_weights.h): a parameter with a current copy gets it written in the
    /// same pass; a stale one stays stale (the next forward casts again). Null = none.
    Bf16Weights* copies = nullptr;
    /// Short blocks for an update that shares the GPU with a higher-priority stream
    /// (cuda::adamwStep's onePassGrid).
    bool onePassGrid = false;
    /// > 0: the update confined to about this many SMs (cuda::adamwStep's residentBlocks).
    int residentBlocks = 0;
};
void fusedAdamWStep(torch::optim::AdamW& optimizer, const MomentDtypes& dtypes, const torch::Tensor& gradScale = {},
                    const FusedAdamWOptions& options = {});

/// The global L2 norm of `grads` (fp32 or bf16, on their device; fp32 result): on CUDA one pass
/// of cuda::sumOfSquares over all of them, read as they are; else multi-tensor kernels where this
/// LibTorch has them (_foreach_norm, one launch per dtype; bf16 read as it is from 2.4), else one
/// norm per tensor.
torch::Tensor globalGradNorm(const std::vector<torch::Tensor>& grads);

}  // namespace wb::rt
