// Activation recompute applied to the model from outside (a LayerRunner, layer_runner.h), with
// Megatron's config and semantics (recompute.granularity / method / recompute_num_layers /
// modules; reference: shared/reference/megatron-bridge.md):
//  - full, uniform: every layer of both stacks (vision blocks, decoder layers) is a recompute
//    unit: only its input is kept, the whole layer runs again in backward. Megatron groups N
//    layers into one unit and keeps one input per group; here the unit is one layer whatever N,
//    because the model runs code between layers that needs gradients (deepstack features added to
//    the decoder's image tokens after layers 0, 1, …; vision layers' outputs taken for deepstack),
//    which a per-layer runner cannot fold into an N-layer unit. Compute is the same (each layer
//    recomputed once); memory keeps L layer inputs instead of L/N — one B·T·D tensor per layer,
//    small beside what a layer saves.
//  - full, block: the first N layers of each stack are units, the rest run normally (N is
//    capped at the stack's size: the vision stack may have fewer layers).
//  - selective: every layer runs normally, with the named modules' hooks switched on inside it
//    (recompute.h: core_attn, moe_act, layernorm, mlp = the ViT's dense MLP, moe = the MoE block).
// An inner runner (FSDP, timing) runs inside the unit, so it runs again in the recomputation.
#pragma once

#include "core/run_config.h"
#include "runtime/model/layer_runner.h"
#include "runtime/model/recompute.h"

#include <memory>

namespace wb::rt {

class RecomputeRunner : public LayerRunner {
public:
    /// `inner`: the runner to call inside (not owned; null = the layer itself).
    explicit RecomputeRunner(const core::RecomputeConfig& config, LayerRunner* inner = nullptr);

    std::vector<torch::Tensor> run(const LayerKey& key, const LayerFn& fn,
                                   const std::vector<torch::Tensor>& inputs) override;

    /// True when layer `key` is a full-recompute unit under this config.
    bool isFullUnit(const LayerKey& key) const;

private:
    core::RecomputeConfig m_config;
    SelectiveRecompute m_selective;
    LayerRunner* m_inner;
};

/// The runner for `config`, or null when recompute.granularity is "none".
std::unique_ptr<RecomputeRunner> makeRecomputeRunner(const core::RecomputeConfig& config, LayerRunner* inner = nullptr);

/// Module names this model has a hook for (core's list also has mla_up_proj and shared_experts,
/// which this architecture does not contain: runtime_checks rejects them).
bool recomputeModuleSupported(const std::string& name);

}  // namespace wb::rt
