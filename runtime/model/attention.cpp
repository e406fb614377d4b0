// Attention, RoPE and RMSNorm (see attention.h for the shape legend).
#include "runtime/model/attention.h"

#include "runtime/model/cuda/fused_kernels.h"
#include "runtime/model/host_copy.h"
#include "runtime/model/recompute.h"
#include "runtime/model/torch_compat.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace wb::rt {

torch::Tensor ropeInverseFrequencies(int dims, double base)
{
    auto i = torch::arange(0, dims / 2, torch::kFloat64);
    return torch::pow(base, -2.0 * i / dims).to(torch::kFloat32);
}

torch::Tensor ropeAngles1d(const torch::Tensor& pos_BT, int headDim, double base)
{
    auto inv_F = toDeviceAsync(ropeInverseFrequencies(headDim, base), pos_BT.device());
    return pos_BT.to(torch::kFloat32).unsqueeze(-1) * inv_F;
}

torch::Tensor ropeAnglesMrope(const torch::Tensor& pos_3BT, int headDim, double base,
                              const std::vector<int>& sections)
{
    auto inv_F = toDeviceAsync(ropeInverseFrequencies(headDim, base), pos_3BT.device());
    std::vector<torch::Tensor> parts;
    int start = 0;
    for (size_t plane = 0; plane < sections.size(); ++plane) {
        auto freqs = inv_F.slice(0, start, start + sections[plane]);
        parts.push_back(pos_3BT[static_cast<int64_t>(plane)].to(torch::kFloat32).unsqueeze(-1) * freqs);
        start += sections[plane];
    }
    return torch::cat(parts, -1);
}

torch::Tensor ropeAngles2d(const torch::Tensor& row_P, const torch::Tensor& col_P, int headDim, double base)
{
    // Each axis gets half of the F = headDim/2 frequencies, spaced over the same range.
    auto inv_F2 = toDeviceAsync(ropeInverseFrequencies(headDim / 2, base), row_P.device());
    auto rows_PF2 = row_P.to(torch::kFloat32).unsqueeze(-1) * inv_F2;
    auto cols_PF2 = col_P.to(torch::kFloat32).unsqueeze(-1) * inv_F2;
    return torch::cat({rows_PF2, cols_PF2}, -1).unsqueeze(0);
}

namespace {

// out = x rotated by the angle whose cos/sin are given: [x1·c − x2·s, x2·c + x1·s] over the two
// halves of the last dim; `sign` −1 rotates by the opposite angle (the backward). Written into one
// contiguous output with fused multiply-adds, so there is no cat, and no slice in autograd.
torch::Tensor rotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, double sign)
{
    // [N, H, D] on the GPU (the varlen layouts): one fused pass (cuda/fused_kernels.h).
    if (cuda::ropeRotateSupports(x, cos, sin))
        return cuda::ropeRotate(x, cos, sin, sign);
    const int64_t half = x.size(-1) / 2;
    auto out = torch::empty(x.sizes(), x.options().memory_format(at::MemoryFormat::Contiguous));
    auto x1 = x.slice(-1, 0, half), x2 = x.slice(-1, half);
    auto o1 = out.slice(-1, 0, half), o2 = out.slice(-1, half);
    at::mul_out(o1, x1, cos);
    o1.addcmul_(x2, sin, -sign);
    at::mul_out(o2, x2, cos);
    o2.addcmul_(x1, sin, sign);
    return out;
}

// RoPE as one autograd node: the rotation is linear and orthogonal, so its backward is the
// rotation by −angle of the incoming gradient (no saved activations, only cos/sin).
class RotateHalf : public torch::autograd::Function<RotateHalf> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                 const torch::Tensor& cos, const torch::Tensor& sin)
    {
        ctx->save_for_backward({cos, sin});
        return rotate(x, cos, sin, 1.0);
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        return {rotate(grads[0], saved[0], saved[1], -1.0), torch::Tensor(), torch::Tensor()};
    }
};

}  // namespace

torch::Tensor rotateHalf(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin)
{
    return RotateHalf::apply(x, cos.detach(), sin.detach());
}

torch::Tensor applyRope(const torch::Tensor& x_BHTd, const torch::Tensor& angle_BTF)
{
    auto cos_B1TF = angle_BTF.cos().unsqueeze(1).to(x_BHTd.scalar_type());
    auto sin_B1TF = angle_BTF.sin().unsqueeze(1).to(x_BHTd.scalar_type());
    return rotateHalf(x_BHTd, cos_B1TF, sin_B1TF);
}

torch::Tensor maskedAttention(const torch::Tensor& q_BHTd, const torch::Tensor& k_BHTd,
                              const torch::Tensor& v_BHTd, const torch::Tensor& allowed_BTT)
{
    const double scale = 1.0 / std::sqrt(static_cast<double>(q_BHTd.size(-1)));
    auto scores_BHTT = torch::matmul(q_BHTd, k_BHTd.transpose(-2, -1)) * scale;
    scores_BHTT = scores_BHTT.masked_fill(allowed_BTT.unsqueeze(1).logical_not(),
                                          -std::numeric_limits<float>::infinity());
    auto probs_BHTT = torch::softmax(scores_BHTT.to(torch::kFloat32), -1).to(q_BHTd.scalar_type());
    return torch::matmul(probs_BHTT, v_BHTd);
}

torch::Tensor documentCausalMask(const torch::Tensor& docIds_BT)
{
    const int64_t T = docIds_BT.size(1);
    auto sameDoc_BTT = docIds_BT.unsqueeze(2) == docIds_BT.unsqueeze(1);
    auto causal_TT = torch::ones({T, T}, torch::TensorOptions().dtype(torch::kBool).device(docIds_BT.device())).tril();
    return sameDoc_BTT.logical_and(causal_TT.unsqueeze(0));
}

PackedSegments packedSegments(const std::vector<int64_t>& lengths, torch::Device device)
{
    std::vector<int32_t> cumulative{0};
    int64_t longest = 0;
    for (int64_t len : lengths) {
        if (len <= 0)
            continue;
        cumulative.push_back(cumulative.back() + static_cast<int32_t>(len));
        longest = std::max(longest, len);
    }
    PackedSegments out;
    out.cuSeqlens_S1 = toDeviceAsync(
        torch::from_blob(cumulative.data(), {static_cast<int64_t>(cumulative.size())}, torch::kInt32), device);
    out.maxSeqlen = longest;
    return out;
}

bool flashVarlenAvailable()
{
    return WB_HAVE_FLASH_VARLEN;
}

torch::Tensor varlenAttention(const torch::Tensor& q_NHd, const torch::Tensor& k_NGd, const torch::Tensor& v_NGd,
                              const PackedSegments& segments, bool causal)
{
#if WB_HAVE_FLASH_VARLEN
    // The flash kernel takes bf16/fp16 with a contiguous last dim; cu_seqlens int32 on the device.
    auto half = [](const torch::Tensor& t) { return t.to(torch::kBFloat16).contiguous(); };
    auto result = at::_flash_attention_forward(half(q_NHd), half(k_NGd), half(v_NGd), segments.cuSeqlens_S1,
                                               segments.cuSeqlens_S1, segments.maxSeqlen, segments.maxSeqlen,
                                               /*dropout_p=*/0.0, causal, /*return_debug_mask=*/false);
    // Back to the caller's dtype: a no-op under autocast (q is bf16 there), fp32 for fp32 callers.
    return std::get<0>(result).to(q_NHd.scalar_type());
#else
    (void)q_NHd; (void)k_NGd; (void)v_NGd; (void)segments; (void)causal;
    TORCH_CHECK(false, "varlen flash attention needs a CUDA build of moe-train on LibTorch >= 2.1");
#endif
}

GqaAttentionImpl::GqaAttentionImpl(int hiddenSize, int numHeads, int numGroups, int headDim)
    : m_headDim(headDim)
{
    auto linear = [](int in, int out) { return torch::nn::LinearOptions(in, out).bias(false); };
    m_q = register_module("q", torch::nn::Linear(linear(hiddenSize, numHeads * headDim)));
    m_k = register_module("k", torch::nn::Linear(linear(hiddenSize, numGroups * headDim)));
    m_v = register_module("v", torch::nn::Linear(linear(hiddenSize, numGroups * headDim)));
    m_out = register_module("out", torch::nn::Linear(linear(numHeads * headDim, hiddenSize)));
}

torch::Tensor GqaAttentionImpl::forward(const torch::Tensor& x_BTD, const torch::Tensor& angle_BTF,
                                        const torch::Tensor& allowed_BTT, const PackedSegments& segments)
{
    const int64_t B = x_BTD.size(0), T = x_BTD.size(1);
    // Head counts from the weights: under tensor parallelism the q/k/v rows are this rank's heads
    // (runtime/parallel/tensor_parallel.h), so H and G here are the local counts.
    const int64_t numHeads = m_q->weight.size(0) / m_headDim, numGroups = m_k->weight.size(0) / m_headDim;
    if (segments.defined()) {
        TORCH_CHECK(m_cp == nullptr, "context parallelism runs on the dense attention core only, not the varlen flash core");
        // Flattened rows: N = B·T tokens in [N, heads, Dh], the layout the kernel reads, so RoPE
        // writes q and k contiguous in it (no transposes, no copies before the kernel).
        const int64_t N = B * T;
        auto angle_N1F = angle_BTF.reshape({N, 1, angle_BTF.size(-1)});
        auto qLinear_NHd = applyLinear(m_q, x_BTD).view({N, numHeads, m_headDim});
        auto kLinear_NGd = applyLinear(m_k, x_BTD).view({N, numGroups, m_headDim});
        const auto dtype = qLinear_NHd.scalar_type();  // bf16 under autocast
        auto cos_N1F = angle_N1F.cos().to(dtype), sin_N1F = angle_N1F.sin().to(dtype);
        auto q_NHd = rotateHalf(qLinear_NHd, cos_N1F, sin_N1F);
        auto k_NGd = rotateHalf(kLinear_NGd, cos_N1F, sin_N1F);
        auto v_NGd = applyLinear(m_v, x_BTD).view({N, numGroups, m_headDim});
        // The attention core (selective recompute "core_attn": only q, k, v are kept).
        const LayerFn core = [segments](const std::vector<torch::Tensor>& x) {
            return std::vector<torch::Tensor>{varlenAttention(x[0], x[1], x[2], segments, /*causal=*/true)};
        };
        auto y_NHd = maybeRecompute(RecomputeModule::CoreAttn, core, {q_NHd, k_NGd, v_NGd})[0];
        return applyLinear(m_out, y_NHd.reshape({B, T, numHeads * m_headDim}));
    }
    auto q_BHTd = applyLinear(m_q, x_BTD).view({B, T, numHeads, m_headDim}).transpose(1, 2);
    auto k_BGTd = applyLinear(m_k, x_BTD).view({B, T, numGroups, m_headDim}).transpose(1, 2);
    auto v_BGTd = applyLinear(m_v, x_BTD).view({B, T, numGroups, m_headDim}).transpose(1, 2);
    q_BHTd = applyRope(q_BHTd, angle_BTF);
    k_BGTd = applyRope(k_BGTd, angle_BTF);
    // Context parallelism: every rank's keys and values (each rotated at its full-sequence
    // positions); the queries stay this rank's. The mask's columns follow the gathered order.
    if (m_cp)
        std::tie(k_BGTd, v_BGTd) = m_cp->gatherKeysValues(k_BGTd, v_BGTd);
    // The attention core (selective recompute "core_attn": only q, k, v are kept, not the
    // B·H·T² scores and probabilities). GQA: each KV group serves H/G consecutive query heads.
    const int64_t repeat = numHeads / numGroups;
    const LayerFn core = [repeat, allowed_BTT](const std::vector<torch::Tensor>& x) {
        auto k_BHTd = x[1].repeat_interleave(repeat, 1);
        auto v_BHTd = x[2].repeat_interleave(repeat, 1);
        return std::vector<torch::Tensor>{maskedAttention(x[0], k_BHTd, v_BHTd, allowed_BTT)};
    };
    auto y_BHTd = maybeRecompute(RecomputeModule::CoreAttn, core, {q_BHTd, k_BGTd, v_BGTd})[0];
    return applyLinear(m_out, y_BHTd.transpose(1, 2).reshape({B, T, numHeads * m_headDim}));
}

namespace {

// RMSNorm in one CUDA pass each way (cuda::rmsNormForward/Backward) where ~7 ATen kernels and an
// fp32 copy of the row ran (to, pow, mean, rsqrt, two muls, to; about twice that backward): 13
// norms per micro-batch of the benchmark slice, each over [16k tokens, 2048].
class FusedRmsNorm : public torch::autograd::Function<FusedRmsNorm> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                 const torch::Tensor& weight, double eps)
    {
        auto [y, rstd] = cuda::rmsNormForward(x, weight, eps);
        ctx->save_for_backward({x, weight, rstd});
        return y;
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::tensor_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        auto [dx, dw] = cuda::rmsNormBackward(saved[0], saved[1], saved[2], grads[0]);
        return {dx, dw, torch::Tensor()};
    }
};

// The vision encoder's and the projector's LayerNorm in one CUDA pass each way (layerNormForward).
class FusedLayerNorm : public torch::autograd::Function<FusedLayerNorm> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                                 const torch::Tensor& weight, const torch::Tensor& bias, double eps)
    {
        auto [y, mean, rstd] = cuda::layerNormForward(x, weight, bias, eps);
        ctx->save_for_backward({x, weight, mean, rstd});
        return y;
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        auto [dx, dw, db] = cuda::layerNormBackward(saved[0], saved[1], saved[2], saved[3], grads[0]);
        return {dx, dw, db, torch::Tensor()};
    }
};

}  // namespace

torch::Tensor applyLayerNorm(torch::nn::LayerNorm norm, const torch::Tensor& x)
{
    // Autocast runs LayerNorm in fp32: a bf16 row is widened, normalized into an fp32 row, and cast
    // back to bf16 by the next GEMM (2 + 4, 4 + 4, 4 + 2 B per value each way). The kernel reads
    // and writes x's dtype with the same fp32 math and one rounding.
    const auto& o = norm->options;
    if (o.elementwise_affine() && o.normalized_shape().size() == 1 &&
        cuda::layerNormSupports(x, norm->weight, norm->bias))
        return FusedLayerNorm::apply(x, norm->weight, norm->bias, o.eps());
    return norm->forward(x);
}

RmsNormImpl::RmsNormImpl(int dim, double eps) : m_eps(eps)
{
    m_weight = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RmsNormImpl::forward(const torch::Tensor& x)
{
    // Selective recompute "layernorm": only the input is kept, not the fp32 intermediates.
    const LayerFn norm = [eps = m_eps](const std::vector<torch::Tensor>& in) {
        if (cuda::rmsNormSupports(in[0], in[1]))
            return std::vector<torch::Tensor>{FusedRmsNorm::apply(in[0], in[1], eps)};
        auto x32 = in[0].to(torch::kFloat32);
        auto normed = x32 * torch::rsqrt(x32.pow(2).mean(-1, true) + eps);
        return std::vector<torch::Tensor>{(normed * in[1].to(torch::kFloat32)).to(in[0].scalar_type())};
    };
    return maybeRecompute(RecomputeModule::LayerNorm, norm, {x, m_weight})[0];
}

}  // namespace wb::rt
