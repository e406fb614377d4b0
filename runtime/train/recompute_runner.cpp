// Recompute runner (see recompute_runner.h).
#include "runtime/train/recompute_runner.h"

#include <algorithm>

namespace wb::rt {

namespace {

SelectiveRecompute selectiveFrom(const core::RecomputeConfig& c)
{
    SelectiveRecompute s;
    if (c.granularity != "selective")
        return s;
    for (const std::string& m : c.modules) {
        s.coreAttn = s.coreAttn || m == "core_attn";
        s.moeAct = s.moeAct || m == "moe_act";
        s.layernorm = s.layernorm || m == "layernorm";
        s.mlp = s.mlp || m == "mlp";
        s.moe = s.moe || m == "moe";
    }
    return s;
}

}  // namespace

bool recomputeModuleSupported(const std::string& name)
{
    return name == "core_attn" || name == "moe_act" || name == "layernorm" || name == "mlp" || name == "moe";
}

RecomputeRunner::RecomputeRunner(const core::RecomputeConfig& config, LayerRunner* inner)
    : m_config(config), m_selective(selectiveFrom(config)), m_inner(inner)
{
}

bool RecomputeRunner::isFullUnit(const LayerKey& key) const
{
    if (m_config.granularity != "full")
        return false;
    if (m_config.method == "block")
        return key.index < std::min(m_config.recomputeNumLayers, key.count);
    return true;  // uniform: every layer belongs to a unit (see the header on N)
}

std::vector<torch::Tensor> RecomputeRunner::run(const LayerKey& key, const LayerFn& fn,
                                                const std::vector<torch::Tensor>& inputs)
{
    // Everything the inner runner does happens inside the unit, so it is recomputed too.
    LayerRunner* inner = m_inner;
    const LayerFn layer = [inner, key, fn](const std::vector<torch::Tensor>& x) { return runLayer(inner, key, fn, x); };
    if (isFullUnit(key))
        return checkpointed(layer, inputs);
    if (m_selective.any()) {
        SelectiveRecomputeScope scope(m_selective);
        return layer(inputs);
    }
    return layer(inputs);
}

std::unique_ptr<RecomputeRunner> makeRecomputeRunner(const core::RecomputeConfig& config, LayerRunner* inner)
{
    if (config.granularity == "none")
        return nullptr;
    return std::make_unique<RecomputeRunner>(config, inner);
}

}  // namespace wb::rt
