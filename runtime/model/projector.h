// Projector (patch merger): concatenates each spatialMerge² group of neighbouring patches
// (contiguous in the loader's patch order, see data/image_io.h), LayerNorm over the concatenation,
// then MLP Linear → GELU → Linear to the decoder width. Shapes: P patches, Dv vision width,
// m merge size, N = P/m² merged tokens, Do output (decoder) width. One training thread.
#pragma once

#include "runtime/model/bf16_weights.h"

#include <torch/torch.h>

namespace wb::rt {

/// hidden_PD → groups_N(m²Dv): row n is the concatenation of patches n·m² … n·m² + m² − 1.
torch::Tensor mergePatchGroups(const torch::Tensor& hidden_PD, int mergeSize);

class ProjectorImpl : public torch::nn::Module, public UsesBf16Weights {
public:
    ProjectorImpl(int visionHidden, int mergeSize, int outHidden);
    torch::Tensor forward(const torch::Tensor& hidden_PD);  ///< → tokens_NDo

private:
    int m_mergeSize;
    torch::nn::LayerNorm m_norm{nullptr};
    torch::nn::Linear m_fc1{nullptr}, m_fc2{nullptr};
};
TORCH_MODULE(Projector);

}  // namespace wb::rt
