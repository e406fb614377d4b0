// Projector (see projector.h).
#include "runtime/model/projector.h"

#include "runtime/model/attention.h"

namespace wb::rt {

torch::Tensor mergePatchGroups(const torch::Tensor& hidden_PD, int mergeSize)
{
    const int64_t group = static_cast<int64_t>(mergeSize) * mergeSize;
    TORCH_CHECK(hidden_PD.size(0) % group == 0, "patch count ", hidden_PD.size(0),
                " is not a multiple of spatial_merge_size²");
    return hidden_PD.reshape({hidden_PD.size(0) / group, group * hidden_PD.size(1)});
}

ProjectorImpl::ProjectorImpl(int visionHidden, int mergeSize, int outHidden) : m_mergeSize(mergeSize)
{
    const int merged = visionHidden * mergeSize * mergeSize;
    m_norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({merged})));
    m_fc1 = register_module("fc1", torch::nn::Linear(merged, merged));
    m_fc2 = register_module("fc2", torch::nn::Linear(merged, outHidden));
}

torch::Tensor ProjectorImpl::forward(const torch::Tensor& hidden_PD)
{
    return applyLinear(
        m_fc2, torch::gelu(applyLinear(m_fc1, applyLayerNorm(m_norm, mergePatchGroups(hidden_PD, m_mergeSize)))));
}

}  // namespace wb::rt
