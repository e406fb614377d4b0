// Attention pieces shared by the vision encoder and the decoder: rotary embeddings (1-D, M-RoPE,
// 2-D for patches), masked softmax attention for packed sequences, and the decoder's GQA module.
// Shapes: B batch rows, T tokens, H query heads, G KV groups, Dh head dim, F = Dh/2 rotary
// frequencies, D model width. Modules are used by one training thread.
//
// Packed sequences: several samples share a row; `allowed_BTT` is block-diagonal (same document)
// and, for the decoder, causal. LibTorch 1.13 has no public scaled_dot_product_attention, so the
// core is an explicit softmax(QKᵀ/√Dh)V; a GPU build can swap in a varlen flash kernel here.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace wb::rt {

/// Inverse frequencies base^(−2i/dims) for i in [0, dims/2).
torch::Tensor ropeInverseFrequencies(int dims, double base);

/// Angles for 1-D positions: angle_BTF = pos_BT · invFreq_F.
torch::Tensor ropeAngles1d(const torch::Tensor& pos_BT, int headDim, double base);

/// M-RoPE: frequency i uses the t, h or w position plane, by consecutive sections [t, h, w]
/// (Qwen2-VL layout; Qwen3-VL interleaves, which only permutes frequencies). pos_3BT.
torch::Tensor ropeAnglesMrope(const torch::Tensor& pos_3BT, int headDim, double base,
                              const std::vector<int>& sections);

/// 2-D RoPE for patches: first half of the frequencies rotate by the patch row, second by the
/// column. Returns angle_1PF for P patches.
torch::Tensor ropeAngles2d(const torch::Tensor& row_P, const torch::Tensor& col_P, int headDim, double base);

/// Rotate-half RoPE: x_BHTd rotated by angle_BTF (broadcast over heads).
torch::Tensor applyRope(const torch::Tensor& x_BHTd, const torch::Tensor& angle_BTF);

/// softmax(QKᵀ/√Dh + mask)V. q_BHTd, k/v_BHTd with the same H (repeat KV groups first),
/// allowed_BTT true where query t may see key s. Every query must allow at least itself.
torch::Tensor maskedAttention(const torch::Tensor& q_BHTd, const torch::Tensor& k_BHTd,
                              const torch::Tensor& v_BHTd, const torch::Tensor& allowed_BTT);

/// Document-causal mask: same document id and key position <= query position. Padding (id −1)
/// tokens see only earlier padding, so no row of the softmax is empty. docIds_BT → allowed_BTT.
torch::Tensor documentCausalMask(const torch::Tensor& docIds_BT);

/// Decoder self-attention: GQA with RoPE on q and k.
class GqaAttentionImpl : public torch::nn::Module {
public:
    GqaAttentionImpl(int hiddenSize, int numHeads, int numGroups, int headDim);
    /// x_BTD, angle_BTF, allowed_BTT → y_BTD.
    torch::Tensor forward(const torch::Tensor& x_BTD, const torch::Tensor& angle_BTF,
                          const torch::Tensor& allowed_BTT);

private:
    int m_numHeads;
    int m_numGroups;
    int m_headDim;
    torch::nn::Linear m_q{nullptr}, m_k{nullptr}, m_v{nullptr}, m_out{nullptr};
};
TORCH_MODULE(GqaAttention);

/// RMSNorm with a learned scale, computed in fp32.
class RmsNormImpl : public torch::nn::Module {
public:
    RmsNormImpl(int dim, double eps);
    torch::Tensor forward(const torch::Tensor& x);

private:
    double m_eps;
    torch::Tensor m_weight;
};
TORCH_MODULE(RmsNorm);

}  // namespace wb::rt
