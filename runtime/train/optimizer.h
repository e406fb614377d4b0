// The AdamW optimizer of a run: weight decay on matrices only (norms and biases excluded, as in
// Megatron), and only the parameters that train (frozen ones — requires_grad off, model.freeze_* —
// get no optimizer state at all). The moments are stored in train.exp_avg_dtype /
// exp_avg_sq_dtype (fp32 default; bf16 = Megatron's precision-aware optimizer: math in fp32, the
// stored moments rounded to nearest even). Training thread only.
#pragma once

#include "core/run_config.h"

#include <torch/torch.h>

#include <memory>
#include <string>
#include <unordered_set>

namespace wb::rt {

std::unique_ptr<torch::optim::AdamW> makeOptimizer(torch::nn::Module& model, const core::TrainConfig& train);
/// The same from the two parameter lists a parallel layout hands out (FSDP: its shards).
std::unique_ptr<torch::optim::AdamW> makeOptimizer(const std::vector<torch::Tensor>& decay,
                                                   const std::vector<torch::Tensor>& noDecay,
                                                   const core::TrainConfig& train);

/// A set of parameters (by their TensorImpl) a step is limited to: how the overlapped optimizer
/// (optimizer_overlap.h) steps one layer's parameters at a time. Null = every parameter.
using ParameterSubset = std::unordered_set<const c10::TensorImpl*>;

inline bool inSubset(const ParameterSubset* only, const torch::Tensor& p)
{
    return !only || only->count(p.unsafeGetTensorImpl()) > 0;
}

/// The storage dtypes of AdamW's two moments.
struct MomentDtypes {
    torch::ScalarType expAvg = torch::kFloat32;
    torch::ScalarType expAvgSq = torch::kFloat32;
    bool allFp32() const { return expAvg == torch::kFloat32 && expAvgSq == torch::kFloat32; }
    /// Bytes both moments take per parameter value (8 for fp32, 4 for bf16).
    int64_t bytesPerValue() const;
};
/// train.exp_avg_dtype / exp_avg_sq_dtype ("fp32" | "bf16", validated by the config).
MomentDtypes momentDtypes(const core::TrainConfig& train);

/// The state of `p` in `optimizer`, created as AdamW::step creates it (step 0, zero moments) but
/// with the moments in `dtypes` when it does not exist yet.
torch::optim::AdamWParamState& adamWState(torch::optim::AdamW& optimizer, const torch::Tensor& p,
                                          const MomentDtypes& dtypes);

/// One AdamW step (AdamW::step's formulas: decoupled weight decay, bias correction, no amsgrad)
/// for every parameter with a gradient, on any device through ATen ops: the moments are read in
/// their stored dtype, updated in fp32 and rounded back on store. With fp32 moments it equals
/// AdamW::step. The CPU path of bf16 moments, and the reference the CUDA kernel is tested against.
/// With `only`, just those parameters (each parameter's update depends on nothing else).
void adamWStepAten(torch::optim::AdamW& optimizer, const MomentDtypes& dtypes, const ParameterSubset* only = nullptr);

/// One parameter's update in fp32: p, g fp32; m, v in their stored dtype (updated in place).
/// `step` is the count after this update (1 for the first).
void adamWUpdateAten(const torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& m, const torch::Tensor& v,
                     double lr, double beta1, double beta2, double eps, double weightDecay, int64_t step);

/// After loading a checkpoint: every moment not in `dtypes` is converted to it (bf16 → fp32
/// exactly, fp32 → bf16 rounded to nearest even). Returns "" when nothing changed, else a
/// sentence for the warning event (how many tensors, from which dtype to which).
std::string convertMoments(torch::optim::AdamW& optimizer, const MomentDtypes& dtypes);

/// "fp32" | "bf16" | c10's name for other types.
std::string dtypeName(torch::ScalarType type);

}  // namespace wb::rt
