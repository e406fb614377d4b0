// Attention pieces shared by the vision encoder and the decoder: rotary embeddings (1-D, M-RoPE,
// 2-D for patches), masked softmax attention for packed sequences, and the decoder's GQA module.
// Shapes: B batch rows, T tokens, H query heads, G KV groups, Dh head dim, F = Dh/2 rotary
// frequencies, D model width. Modules are used by one training thread.
//
// Packed sequences: several samples share a row; `allowed_BTT` is block-diagonal (same document)
// and, for the decoder, causal. Two cores:
//  - varlen flash (CUDA build, LibTorch >= 2.1, bf16): the tokens of all rows are flattened to one
//    sequence of N tokens cut into segments (documents, images) by cumulative lengths; each segment
//    attends only within itself, so no compute and no memory is spent on the masked-out blocks or
//    on padding between documents. One kernel call per layer, whatever the image shapes (no
//    per-shape cuDNN plans). GQA is native (K/V keep their G heads).
//  - dense masked softmax(QKᵀ/√Dh)V everywhere else (CPU, fp32 on CUDA): LibTorch 1.13 has no
//    public SDPA, and the mask is exact, so it is the reference the GPU test compares against.
#pragma once

#include "runtime/model/bf16_weights.h"
#include "runtime/model/context_parallel_hook.h"

#include <torch/torch.h>

#include <vector>

namespace wb::rt {

/// Segments of a flattened packed sequence for the varlen kernel: cuSeqlens_S1 is int32 on the
/// device, [0, len_0, len_0+len_1, …, N]; maxSeqlen the longest segment (a host number, so the
/// kernel launch needs no device→host copy). Undefined = use the dense mask.
struct PackedSegments {
    torch::Tensor cuSeqlens_S1;
    int64_t maxSeqlen = 0;
    bool defined() const { return cuSeqlens_S1.defined(); }
};

/// Builds PackedSegments from host segment lengths (zero lengths are dropped).
PackedSegments packedSegments(const std::vector<int64_t>& lengths, torch::Device device);

/// True when this build can run varlenAttention (CUDA build on LibTorch >= 2.1).
bool flashVarlenAvailable();

/// Flash attention over segments: q_NHd, k/v_NGd (G divides H), computed in bf16, o_NHd returned
/// in q's dtype; causal within each segment when `causal`. Throws on a build without it (check
/// flashVarlenAvailable).
torch::Tensor varlenAttention(const torch::Tensor& q_NHd, const torch::Tensor& k_NGd, const torch::Tensor& v_NGd,
                              const PackedSegments& segments, bool causal);

/// norm(x) for a LayerNorm over the last dim: one CUDA pass each way in x's dtype (fp32 math, the
/// value autocast's fp32 LayerNorm rounds to when the next GEMM casts it) where the fused kernel
/// takes the operands, else the module's own forward (CPU, other layouts: the reference).
torch::Tensor applyLayerNorm(torch::nn::LayerNorm norm, const torch::Tensor& x);

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

/// Rotate-half RoPE with cos/sin already broadcastable to x (last dim Dh/2, x's dtype): a
/// contiguous output in x's shape, one autograd node whose backward rotates by −angle.
torch::Tensor rotateHalf(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

/// Rotate-half RoPE: x_BHTd rotated by angle_BTF (broadcast over heads).
torch::Tensor applyRope(const torch::Tensor& x_BHTd, const torch::Tensor& angle_BTF);

/// softmax(QKᵀ/√Dh + mask)V. q_BHTd, k/v_BHTd with the same H (repeat KV groups first),
/// allowed_BTT true where query t may see key s. Every query must allow at least itself.
torch::Tensor maskedAttention(const torch::Tensor& q_BHTd, const torch::Tensor& k_BHTd,
                              const torch::Tensor& v_BHTd, const torch::Tensor& allowed_BTT);

/// Document-causal mask: same document id and key position <= query position. Padding (id −1)
/// tokens see only earlier padding, so no row of the softmax is empty. docIds_BT → allowed_BTT.
torch::Tensor documentCausalMask(const torch::Tensor& docIds_BT);

/// Decoder self-attention: GQA with RoPE on q and k. Parameters q, k, v (column-parallel under
/// TP: rows = this rank's heads) and out (row-parallel: its output is then a partial sum).
class GqaAttentionImpl : public torch::nn::Module, public UsesBf16Weights {
public:
    GqaAttentionImpl(int hiddenSize, int numHeads, int numGroups, int headDim);
    /// x_BTD, angle_BTF, allowed_BTT → y_BTD. With `segments` defined, the varlen flash core
    /// runs over the B·T flattened tokens (causal per segment) and allowed_BTT is not read.
    /// Under context parallelism x_BTD holds this rank's tokens of each row and allowed_BTT is
    /// [B, T, CP·T]: its queries against the keys of every CP rank (context_parallel_hook.h).
    torch::Tensor forward(const torch::Tensor& x_BTD, const torch::Tensor& angle_BTF,
                          const torch::Tensor& allowed_BTT, const PackedSegments& segments = {});
    /// Not owned; null = no context parallelism. The dense core only (the varlen flash core has
    /// no CP path: moe-train refuses CP on CUDA).
    void setContextParallel(ContextParallelHook* hook) { m_cp = hook; }

private:
    ContextParallelHook* m_cp = nullptr;
    int m_headDim;  // head counts come from the q/k weight rows (local heads under TP)
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
