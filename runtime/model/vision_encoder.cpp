// Vision encoder (see vision_encoder.h).
#include "runtime/model/vision_encoder.h"

#include "runtime/model/attention.h"

#include <algorithm>

namespace wb::rt {

namespace {
constexpr double kVisionRopeBase = 10000.0;
}

VisionBlockImpl::VisionBlockImpl(int hiddenSize, int numHeads, int ffnHiddenSize) : m_numHeads(numHeads)
{
    m_norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hiddenSize})));
    m_norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hiddenSize})));
    m_qkv = register_module("qkv", torch::nn::Linear(hiddenSize, 3 * hiddenSize));
    m_proj = register_module("proj", torch::nn::Linear(hiddenSize, hiddenSize));
    m_fc1 = register_module("fc1", torch::nn::Linear(hiddenSize, ffnHiddenSize));
    m_fc2 = register_module("fc2", torch::nn::Linear(ffnHiddenSize, hiddenSize));
}

torch::Tensor VisionBlockImpl::forward(const torch::Tensor& x_PD, const torch::Tensor& angle_1PF,
                                       const torch::Tensor& allowed_1PP, const PackedSegments& images)
{
    const int64_t P = x_PD.size(0), D = x_PD.size(1), Dh = D / m_numHeads;
    auto qkv_13HPd = m_qkv(m_norm1(x_PD)).view({1, P, 3, m_numHeads, Dh}).permute({2, 0, 3, 1, 4});
    auto q_1HPd = applyRope(qkv_13HPd[0], angle_1PF);
    auto k_1HPd = applyRope(qkv_13HPd[1], angle_1PF);
    torch::Tensor y_PD;
    if (images.defined()) {
        // All images of the micro-batch in one varlen call: block-diagonal without a P×P mask.
        auto y_PHd = varlenAttention(q_1HPd.squeeze(0).transpose(0, 1), k_1HPd.squeeze(0).transpose(0, 1),
                                     qkv_13HPd[2].squeeze(0).transpose(0, 1), images, /*causal=*/false);
        y_PD = y_PHd.reshape({P, D});
    } else {
        y_PD = maskedAttention(q_1HPd, k_1HPd, qkv_13HPd[2], allowed_1PP).squeeze(0).transpose(0, 1).reshape({P, D});
    }
    auto h_PD = x_PD + m_proj(y_PD);
    return h_PD + m_fc2(torch::gelu(m_fc1(m_norm2(h_PD))));
}

VisionEncoderImpl::VisionEncoderImpl(const core::VisionConfig& config) : m_config(config)
{
    const int patchValues = config.inChannels * config.temporalPatchSize * config.patchSize * config.patchSize;
    m_patchEmbed = register_module("patch_embed", torch::nn::Linear(patchValues, config.hiddenSize));
    m_blocks = register_module("blocks", torch::nn::ModuleList());
    for (int i = 0; i < config.numLayers; ++i)
        m_blocks->push_back(VisionBlock(config.hiddenSize, config.numAttentionHeads, config.ffnHiddenSize));
}

VisionOutput VisionEncoderImpl::forward(const torch::Tensor& patches_PC, const torch::Tensor& patchImage_P,
                                        const torch::Tensor& patchRow_P, const torch::Tensor& patchCol_P,
                                        const PackedSegments& images)
{
    VisionOutput out;
    const int headDim = m_config.hiddenSize / m_config.numAttentionHeads;
    auto angle_1PF = ropeAngles2d(patchRow_P, patchCol_P, headDim, kVisionRopeBase);
    // Block-diagonal: a patch attends to the patches of its own image only. A dense P×P mask is
    // fine at the sizes a CPU trains (and is the reference); on the GPU the images are segments
    // of one varlen flash call, since P reaches ~60k at MBS 4 and a P×P mask would not fit.
    torch::Tensor allowed_1PP;
    if (!images.defined())
        allowed_1PP = (patchImage_P.unsqueeze(1) == patchImage_P.unsqueeze(0)).unsqueeze(0);
    auto x_PD = m_patchEmbed(patches_PC);
    for (size_t layer = 0; layer < m_blocks->size(); ++layer) {
        x_PD = m_blocks->ptr<VisionBlockImpl>(layer)->forward(x_PD, angle_1PF, allowed_1PP, images);
        const auto& ds = m_config.deepstackLayers;
        if (std::find(ds.begin(), ds.end(), static_cast<int>(layer)) != ds.end())
            out.deepstack_PD.push_back(x_PD);
    }
    out.hidden_PD = x_PD;
    return out;
}

}  // namespace wb::rt
