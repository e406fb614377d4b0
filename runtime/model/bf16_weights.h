// Bf16 copies of the fp32 master weights, kept from one step to the next
// (train.bf16_weight_copies; CUDA, bf16, not FSDP). Under autocast every forward casts each fp32
// weight it multiplies to bf16 (read 4 B, write 2 B per value, again in a re-forward), and the
// experts' grouped GEMM did the same through its own cast: 9.3 + 8.2 ms of a 256 ms step of the
// benchmark slice on one H200 (docs/benchmarks.md, profile of 2026-11-30). With copies the fused
// AdamW pass writes each updated weight's bf16 copy beside it (2 B more per value in a pass that
// moves 28; cuda::adamwStep's bf16Copy) and the forward reads the copy. The copy is the cast the
// forward would have made (round to nearest even), so the numerics do not change.
//
// When a copy is current: while its master's version counter and storage are the ones it was made
// from. ATen ops that change the master in place (a checkpoint load, the unfused AdamW path, a
// broadcast from rank 0) bump the version, and the next forward casts again; the fused kernel
// writes master and copy through raw pointers and keeps the copy current.
// Bf16 gradients (train.bf16_gradients, one rank): the backward of a copy hands its bf16 gradient
// to the master's .grad as it is, not widened to fp32 in a pass of its own (2 + 4 B per value,
// 9.6 ms of a 235 ms step of the benchmark slice on one H200); the fused AdamW pass and the
// gradient norm read bf16 (2 B less per value each). The widening is exact, so the update is the
// same. A second contribution before the optimizer step (gradient accumulation, a weight used
// twice) makes the gradient fp32: the first widened, the second added in fp32 — what autograd's
// accumulation of widened gradients computes. The gradient bypasses the master's AccumulateGrad
// node, so the master's post-accumulate hooks (a data-parallel reducer's) do not run: the trainer
// turns it on only where nothing reduces gradients (one rank).
// Shapes and devices follow the master. Training thread only (the backward's gradients are
// written on autograd's device thread while the training thread waits in backward()).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <unordered_map>

namespace wb::rt {

class Bf16Weights {
public:
    /// The bf16 operand for `master`: its current copy (made now when there is none). A master that
    /// is not fp32 is returned as it is. With requires_grad (and grad mode on) the gradient flows
    /// back to `master` as fp32, widened in one pass on CUDA, or with bf16 gradients on as it is.
    torch::Tensor operand(const torch::Tensor& master);
    /// The current copy of `master`, for the optimizer to write in the same pass as the update; an
    /// undefined tensor when there is none or it is stale (then the next forward casts again).
    torch::Tensor copyOf(const torch::Tensor& master) const;
    /// Drops the copy of `master` (one that a raw write of the master would leave behind).
    void forget(const torch::Tensor& master) { m_copies.erase(master.unsafeGetTensorImpl()); }
    /// Number of copies and their bytes.
    size_t size() const { return m_copies.size(); }
    int64_t bytes() const;
    /// Bf16 gradients (see above): the backward of an operand made from now on leaves its bf16
    /// gradient in the master's .grad instead of an fp32 one.
    void setBf16Gradients(bool on) { m_bf16Gradients = on; }
    bool bf16Gradients() const { return m_bf16Gradients; }

private:
    struct Copy {
        torch::Tensor master;  // held so that its TensorImpl (the key) cannot be reused
        torch::Tensor bf16;
        int64_t version = 0;
        const void* data = nullptr;
    };
    bool current(const Copy& c) const;
    std::unordered_map<const c10::TensorImpl*, Copy> m_copies;
    bool m_bf16Gradients = false;
};

/// Adds `grad` (the gradient of master's bf16 operand) to master's .grad outside autograd: kept as
/// it is when it is the first (bf16 stays bf16), else accumulated in fp32 (the .grad widened first
/// where it is bf16). Exactly autograd's accumulation of the widened gradients.
void accumulateBf16Gradient(const torch::Tensor& master, const torch::Tensor& grad);

/// A module whose forward multiplies by weights: it takes their bf16 copies from a Bf16Weights
/// set from outside on the whole model (VlmModelImpl::setBf16Weights), or, without one, leaves the
/// casts to autocast.
class UsesBf16Weights {
public:
    virtual ~UsesBf16Weights() = default;
    void setBf16Weights(Bf16Weights* weights) { m_bf16Weights = weights; }

protected:
    /// `w` as a GEMM operand: its bf16 copy when copies are on, else `w` itself.
    torch::Tensor weightOperand(const torch::Tensor& w) const { return m_bf16Weights ? m_bf16Weights->operand(w) : w; }
    /// l(x), with the copy of l's weight (the bias as it is: autocast casts it).
    torch::Tensor applyLinear(const torch::nn::Linear& l, const torch::Tensor& x) const;

private:
    Bf16Weights* m_bf16Weights = nullptr;
};

/// An fp32 master as a bf16 GEMM operand without a kept copy: the cast autocast would make, with a
/// backward that widens the bf16 gradient in one vectorized pass on CUDA (cuda::widenToFloat).
torch::Tensor bf16Operand(const torch::Tensor& w);

}  // namespace wb::rt
