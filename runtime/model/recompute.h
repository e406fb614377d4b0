// Activation recompute (a.k.a. activation checkpointing) primitives, used from outside the model:
// runtime/train/recompute_runner.* applies them per layer (full recompute) and switches on the
// selective hooks below around each layer call. Megatron's semantics and names (recompute_modules).
//
// checkpointed(fn, inputs): a torch::autograd::Function whose forward runs `fn` with autograd off
// and keeps only `inputs` (nothing inside fn is saved); its backward runs `fn` again with autograd
// on, back-propagates the incoming gradients through the recomputed graph (parameter gradients
// accumulate as usual) and returns the inputs' gradients.
//
// RNG: recompute is exact only if `fn` draws no random numbers (it would draw different ones the
// second time). This model has no dropout and no random op in a layer, so no RNG state is saved
// and restored; instead the forward asserts that the default CPU (and CUDA) generator's state is
// unchanged by `fn`, so adding dropout later fails loudly instead of silently changing gradients.
// Autocast (CUDA bf16): the autocast state of the forward is captured and re-applied around the
// recomputation in backward (which runs after the trainer's autocast scope has closed).
//
// Selective hooks: the layer code calls maybeRecompute(module, …) around the pieces Megatron can
// recompute (core_attn, moe_act, layernorm, mlp, moe). Which ones are on is a thread-local setting
// (like autograd's grad mode) that SelectiveRecomputeScope sets around one layer's call; outside
// such a scope every hook is a plain call. Training thread only.
#pragma once

#include "runtime/model/layer_runner.h"

#include <torch/torch.h>

#include <cstdint>
#include <functional>
#include <vector>

namespace wb::rt {

enum class RecomputeModule { CoreAttn, MoeAct, LayerNorm, Mlp, Moe };

/// The selective modules switched on (Megatron's recompute_modules).
struct SelectiveRecompute {
    bool coreAttn = false;  ///< attention core: scores, softmax, ·V (or the flash kernel)
    bool moeAct = false;    ///< the experts' SwiGLU activation silu(gate) ⊙ up
    bool layernorm = false; ///< the layers' norms (RMSNorm in the decoder, LayerNorm in the ViT)
    bool mlp = false;       ///< dense MLPs: the ViT blocks' GELU MLP (the decoder has only MoE: no-op there)
    bool moe = false;       ///< the whole MoE block: router, permutation, experts
    bool has(RecomputeModule m) const;
    bool any() const { return coreAttn || moeAct || layernorm || mlp || moe; }
};

/// Sets the selective modules for the current thread until destroyed (restores the previous).
class SelectiveRecomputeScope {
public:
    explicit SelectiveRecomputeScope(const SelectiveRecompute& modules);
    ~SelectiveRecomputeScope();
    SelectiveRecomputeScope(const SelectiveRecomputeScope&) = delete;
    SelectiveRecomputeScope& operator=(const SelectiveRecomputeScope&) = delete;
    static const SelectiveRecompute& current();

private:
    SelectiveRecompute m_previous;
};

/// Runs fn(inputs) as one recompute unit (see the file comment). `fn` must follow LayerFn's
/// contract: a pure function of `inputs` and of captured tensors that need no gradient, capturing
/// them by value (it runs again during backward, after the caller's locals are gone).
/// When autograd is off or no input requires a gradient it simply calls fn.
std::vector<torch::Tensor> checkpointed(const LayerFn& fn, const std::vector<torch::Tensor>& inputs);

/// checkpointed() when `module` is on in the current SelectiveRecomputeScope, else fn(inputs).
std::vector<torch::Tensor> maybeRecompute(RecomputeModule module, const LayerFn& fn,
                                          const std::vector<torch::Tensor>& inputs);
torch::Tensor maybeRecompute(RecomputeModule module, const std::function<torch::Tensor(const torch::Tensor&)>& fn,
                             const torch::Tensor& input);

/// Test hook: recompute units created by checkpointed() and recomputations run in backward since
/// the process started (training thread and autograd threads; atomics).
struct RecomputeCounters {
    int64_t units = 0;
    int64_t recomputed = 0;
};
RecomputeCounters recomputeCounters();

}  // namespace wb::rt
