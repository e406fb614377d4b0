// Vision encoder (see vision_encoder.h).
#include "runtime/model/vision_encoder.h"

#include "runtime/model/attention.h"
#include "runtime/model/recompute.h"

#include <algorithm>
#include <cmath>

namespace wb::rt {

namespace {
constexpr double kVisionRopeBase = 10000.0;
}

VisionBlockImpl::VisionBlockImpl(int hiddenSize, int numHeads, int ffnHiddenSize) : m_headDim(hiddenSize / numHeads)
{
    m_norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hiddenSize})));
    m_norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hiddenSize})));
    m_qkv = register_module("qkv", torch::nn::Linear(hiddenSize, 3 * hiddenSize));
    m_proj = register_module("proj", torch::nn::Linear(hiddenSize, hiddenSize));
    m_fc1 = register_module("fc1", torch::nn::Linear(hiddenSize, ffnHiddenSize));
    m_fc2 = register_module("fc2", torch::nn::Linear(ffnHiddenSize, hiddenSize));
}

torch::Tensor VisionBlockImpl::forward(const torch::Tensor& x_PD, const torch::Tensor& angle_1PF,
                                       const torch::Tensor& allowed_1PP, const PackedSegments& images,
                                       const std::vector<int64_t>& imageLengths)
{
    // Local heads from the qkv rows ([3, H, Dh]; under TP this rank's H/TP heads of each part),
    // and Dl = H·Dh the local attention width (D without TP).
    const int64_t P = x_PD.size(0), Dh = m_headDim, H = m_qkv->weight.size(0) / (3 * Dh), D = H * Dh;
    // Selective recompute hooks (recompute.h): "layernorm" the two LayerNorms, "core_attn" the
    // attention core, "mlp" the GELU MLP. Each piece captures only tensors without gradients.
    auto layerNorm = [](torch::nn::LayerNorm& norm, const torch::Tensor& x) {
        const LayerFn fn = [norm = norm.ptr()](const std::vector<torch::Tensor>& in) {
            return std::vector<torch::Tensor>{applyLayerNorm(torch::nn::LayerNorm(norm), in[0])};
        };
        return maybeRecompute(RecomputeModule::LayerNorm, fn, {x})[0];
    };
    // RoPE writes q and k contiguous as [P, heads, Dh] (the varlen kernel's layout); the core
    // sees them as [1, heads, P, Dh] views of that memory, so the kernel call copies nothing.
    auto qkv_P3Hd = applyLinear(m_qkv, enterRegion(m_tp, layerNorm(m_norm1, x_PD))).view({P, 3, H, Dh});
    const auto dtype = qkv_P3Hd.scalar_type();  // bf16 under autocast
    auto angle_P1F = angle_1PF.squeeze(0).unsqueeze(1);
    auto cos_P1F = angle_P1F.cos().to(dtype), sin_P1F = angle_P1F.sin().to(dtype);
    // unbind, not three selects: its backward stacks the three gradients in one pass, where each
    // select's backward zero-fills a whole [P, 3, H, Dh] buffer and the three are then summed.
    const auto parts = qkv_P3Hd.unbind(1);
    auto q_1HPd = rotateHalf(parts[0], cos_P1F, sin_P1F).transpose(0, 1).unsqueeze(0);
    auto k_1HPd = rotateHalf(parts[1], cos_P1F, sin_P1F).transpose(0, 1).unsqueeze(0);
    auto v_1HPd = parts[2].transpose(0, 1).unsqueeze(0);
    const LayerFn core = [P, D, Dh, images, imageLengths, allowed_1PP](const std::vector<torch::Tensor>& in) {
        const auto& q_1HPd = in[0];
        const auto& k_1HPd = in[1];
        const auto& v_1HPd = in[2];
        torch::Tensor y_PD;
        if (images.defined()) {
            // All images of the micro-batch in one varlen call: block-diagonal without a P×P mask.
            auto y_PHd = varlenAttention(q_1HPd.squeeze(0).transpose(0, 1), k_1HPd.squeeze(0).transpose(0, 1),
                                         v_1HPd.squeeze(0).transpose(0, 1), images, /*causal=*/false);
            y_PD = y_PHd.reshape({P, D});
        } else if (!imageLengths.empty()) {
            // One small exact attention per image (patches of an image are contiguous): memory and
            // time grow with Σ n_i² instead of P², which on the CPU is the difference between a
            // 100 ms and a 2 s step when a micro-batch packs many images.
            const double scale = 1.0 / std::sqrt(static_cast<double>(Dh));
            std::vector<torch::Tensor> parts;
            parts.reserve(imageLengths.size());
            int64_t start = 0;
            for (int64_t n : imageLengths) {
                auto q_1Hnd = q_1HPd.narrow(2, start, n);
                auto k_1Hnd = k_1HPd.narrow(2, start, n);
                auto v_1Hnd = v_1HPd.narrow(2, start, n);
                auto probs_1Hnn = torch::softmax(torch::matmul(q_1Hnd, k_1Hnd.transpose(-2, -1)) * scale, -1);
                parts.push_back(torch::matmul(probs_1Hnn, v_1Hnd));
                start += n;
            }
            y_PD = torch::cat(parts, 2).squeeze(0).transpose(0, 1).reshape({P, D});
        } else {
            y_PD = maskedAttention(q_1HPd, k_1HPd, v_1HPd, allowed_1PP).squeeze(0).transpose(0, 1).reshape({P, D});
        }
        return std::vector<torch::Tensor>{y_PD};
    };
    auto y_PD = maybeRecompute(RecomputeModule::CoreAttn, core, {q_1HPd, k_1HPd, v_1HPd})[0];
    if (!m_tp) {
        auto h_PD = x_PD + applyLinear(m_proj, y_PD);
        const LayerFn mlp = [this](const std::vector<torch::Tensor>& in) {
            return std::vector<torch::Tensor>{applyLinear(m_fc2, torch::gelu(applyLinear(m_fc1, in[0])))};
        };
        return h_PD + maybeRecompute(RecomputeModule::Mlp, mlp, {layerNorm(m_norm2, h_PD)})[0];
    }
    // Tensor parallel: proj and fc2 are row-parallel, so their products are partial sums; the
    // bias is added once, after the sum (leave). The recompute region holds no collective.
    namespace F = torch::nn::functional;
    // (The bias in the product's dtype: under bf16 autocast a bf16 + fp32 add would promote the
    // residual stream to fp32, which the unsplit linear does not.)
    auto attn_PD = leaveRegion(m_tp, F::linear(y_PD, weightOperand(m_proj->weight)));
    auto h_PD = x_PD + attn_PD + m_proj->bias.to(attn_PD.scalar_type());
    const LayerFn mlp = [this](const std::vector<torch::Tensor>& in) {
        return std::vector<torch::Tensor>{F::linear(torch::gelu(applyLinear(m_fc1, in[0])), weightOperand(m_fc2->weight))};
    };
    auto partial_PD = maybeRecompute(RecomputeModule::Mlp, mlp, {enterRegion(m_tp, layerNorm(m_norm2, h_PD))})[0];
    auto mlp_PD = leaveRegion(m_tp, partial_PD);
    return h_PD + mlp_PD + m_fc2->bias.to(mlp_PD.scalar_type());
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
    // Block-diagonal: a patch attends to the patches of its own image only. On the GPU the images
    // are segments of one varlen flash call (P reaches ~60k at MBS 4; a P×P mask would not fit);
    // on the CPU each image gets its own small attention; a dense P×P mask remains only for fp32
    // CUDA without flash.
    // On the CPU the image run lengths are read from the host tensor for the per-image path.
    torch::Tensor allowed_1PP;
    std::vector<int64_t> imageLengths;
    if (!images.defined() && patchImage_P.device().is_cpu()) {
        const auto ids_P = patchImage_P.to(torch::kInt64).contiguous();
        const int64_t* id = ids_P.data_ptr<int64_t>();
        for (int64_t i = 0; i < ids_P.numel(); ++i) {
            if (i == 0 || id[i] != id[i - 1])
                imageLengths.push_back(0);
            ++imageLengths.back();
        }
    } else if (!images.defined()) {
        allowed_1PP = (patchImage_P.unsqueeze(1) == patchImage_P.unsqueeze(0)).unsqueeze(0);
    }
    auto x_PD = applyLinear(m_patchEmbed, patches_PC);
    const int numLayers = static_cast<int>(m_blocks->size());
    for (int layer = 0; layer < numLayers; ++layer) {
        auto* block = m_blocks->ptr<VisionBlockImpl>(layer).get();
        // Captures by value: a runner may call it again in backward (layer_runner.h).
        const LayerFn fn = [block, angle_1PF, allowed_1PP, images, imageLengths](const std::vector<torch::Tensor>& x) {
            return std::vector<torch::Tensor>{block->forward(x[0], angle_1PF, allowed_1PP, images, imageLengths)};
        };
        x_PD = runLayer(m_runner, {"vision", layer, numLayers, block}, fn, {x_PD})[0];
        const auto& ds = m_config.deepstackLayers;
        if (std::find(ds.begin(), ds.end(), layer) != ds.end())
            out.deepstack_PD.push_back(x_PD);
    }
    out.hidden_PD = x_PD;
    return out;
}

}  // namespace wb::rt
