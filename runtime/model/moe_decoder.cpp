// MoE decoder (see moe_decoder.h).
#include "runtime/model/moe_decoder.h"

#include "runtime/data/tokenizer.h"
#include "runtime/model/recompute.h"
#include "runtime/model/torch_compat.h"

namespace wb::rt {

DecoderLayerImpl::DecoderLayerImpl(const core::DecoderConfig& c, torch::Device initDevice)
{
    m_attnNorm = register_module("attn_norm", RmsNorm(c.hiddenSize, c.normEpsilon));
    m_mlpNorm = register_module("mlp_norm", RmsNorm(c.hiddenSize, c.normEpsilon));
    m_attention = register_module("attention", GqaAttention(c.hiddenSize, c.numAttentionHeads,
                                                             c.numQueryGroups, c.kvChannels));
    const auto routerDtype = c.moeRouterDtype == "fp64" ? torch::kFloat64 : torch::kFloat32;
    m_moe = register_module("moe", MoeLayer(c.hiddenSize, c.numMoeExperts, c.moeRouterTopk,
                                            c.moeFfnHiddenSize, c.moeAuxLossCoeff, routerDtype, initDevice));
}

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& h_BTD, const torch::Tensor& angle_BTF,
                                        const torch::Tensor& allowed_BTT, const torch::Tensor& validIndex_N,
                                        torch::Tensor& auxLoss, const PackedSegments& documents)
{
    auto x_BTD = h_BTD + m_attention(m_attnNorm(h_BTD), angle_BTF, allowed_BTT, documents);
    const int64_t D = x_BTD.size(-1);
    auto flat_TD = x_BTD.reshape({-1, D});
    auto tokens_ND = m_mlpNorm(flat_TD.index_select(0, validIndex_N));
    // Selective recompute "moe": router, permutation and experts keep only their input.
    const LayerFn moe = [m = m_moe.ptr()](const std::vector<torch::Tensor>& in) {
        auto [y_ND, aux] = m->forward(in[0]);
        return std::vector<torch::Tensor>{y_ND, aux};
    };
    auto moeOut = maybeRecompute(RecomputeModule::Moe, moe, {tokens_ND});
    auxLoss = auxLoss + moeOut[1];
    return flat_TD.index_add(0, validIndex_N, moeOut[0]).view_as(x_BTD);
}

MoeDecoderImpl::MoeDecoderImpl(const core::DecoderConfig& c, torch::Device initDevice) : m_config(c)
{
    m_embedding = register_module("embedding", torch::nn::Embedding(c.vocabSize, c.hiddenSize));
    torch::nn::init::normal_(m_embedding->weight, 0.0, 0.02);
    m_layers = register_module("layers", torch::nn::ModuleList());
    for (int i = 0; i < c.numLayers; ++i)
        m_layers->push_back(DecoderLayer(c, initDevice));
    m_finalNorm = register_module("final_norm", RmsNorm(c.hiddenSize, c.normEpsilon));
    m_output = register_module("output", torch::nn::Linear(torch::nn::LinearOptions(c.hiddenSize, c.vocabSize).bias(false)));
}

namespace {

torch::Tensor imageIndexOf(const DecoderInputs& in)
{
    return in.imageIndex_I.defined() ? in.imageIndex_I : (in.tokenIds_BT == kImageId).flatten().nonzero().squeeze(1);
}

}  // namespace

torch::Tensor MoeDecoderImpl::embed(const DecoderInputs& in)
{
    const int64_t D = m_config.hiddenSize;
    auto h_BTD = m_embedding(in.tokenIds_BT);
    // Under bf16 autocast the residual stream is bf16, as in Megatron (fp32_residual_connection
    // off): the embedding is not an autocast op, so without this cast every add, norm input and
    // index op of the decoder would run on fp32 activations (twice the memory traffic).
    if (cudaAutocastBf16On())
        h_BTD = h_BTD.to(torch::kBFloat16);
    const auto shape = h_BTD.sizes().vec();
    auto imageIndex_I = imageIndexOf(in);
    if (in.imageEmbeds_ID.defined() && imageIndex_I.numel() > 0) {
        TORCH_CHECK(imageIndex_I.numel() == in.imageEmbeds_ID.size(0), "image tokens (", imageIndex_I.numel(),
                    ") and projected image features (", in.imageEmbeds_ID.size(0), ") differ");
        h_BTD = h_BTD.reshape({-1, D}).index_copy(0, imageIndex_I, in.imageEmbeds_ID.to(h_BTD.scalar_type())).view(shape);
    }
    return h_BTD;
}

torch::Tensor MoeDecoderImpl::runLayers(const DecoderInputs& in, torch::Tensor h_BTD, int begin, int end,
                                        torch::Tensor& auxLoss)
{
    const int64_t D = m_config.hiddenSize;
    const int numLayers = static_cast<int>(m_layers->size());
    TORCH_CHECK(0 <= begin && begin <= end && end <= numLayers, "decoder layers [", begin, ", ", end, ") of ", numLayers);
    auxLoss = torch::zeros({}, h_BTD.options().dtype(torch::kFloat32));
    if (begin == end)
        return h_BTD;
    const auto shape = h_BTD.sizes().vec();
    auto imageIndex_I = imageIndexOf(in);
    auto angle_BTF = m_config.mropeSection.empty()
        ? ropeAngles1d(in.pos1d_BT, m_config.kvChannels, m_config.rotaryBase)
        : ropeAnglesMrope(in.pos3_3BT, m_config.kvChannels, m_config.rotaryBase, m_config.mropeSection);
    torch::Tensor allowed_BTT;  // B·T² bools: only built when the flash core is not used
    if (!in.documents.defined())
        allowed_BTT = documentCausalMask(in.docIds_BT);
    auto validIndex_N = in.validIndex_N.defined() ? in.validIndex_N : (in.docIds_BT >= 0).flatten().nonzero().squeeze(1);
    for (int layer = begin; layer < end; ++layer) {
        auto* block = m_layers->ptr<DecoderLayerImpl>(layer).get();
        // The layer as a function of the hidden state only (everything else needs no gradient),
        // returning {h, this layer's aux loss}, so a runner can recompute or wrap it.
        // Captures by value: a runner may call it again in backward, after this function returned.
        const LayerFn fn = [block, angle_BTF, allowed_BTT, validIndex_N, documents = in.documents](
                               const std::vector<torch::Tensor>& x) {
            auto layerAux = torch::zeros({}, x[0].options().dtype(torch::kFloat32));
            auto h = block->forward(x[0], angle_BTF, allowed_BTT, validIndex_N, layerAux, documents);
            return std::vector<torch::Tensor>{h, layerAux};
        };
        auto out = runLayer(m_runner, {"decoder", layer, numLayers, block}, fn, {h_BTD});
        h_BTD = out[0];
        auxLoss = auxLoss + out[1];
        // Deepstack: vision features of earlier ViT layers join the image tokens after layer i.
        // (A pipeline stage that does not hold the vision encoder gets them from the first stage.)
        const size_t i = static_cast<size_t>(layer);
        if (i < in.deepstack_ID.size() && in.deepstack_ID[i].defined() && imageIndex_I.numel() > 0)
            h_BTD = h_BTD.reshape({-1, D}).index_add(0, imageIndex_I, in.deepstack_ID[i].to(h_BTD.scalar_type())).view(shape);
    }
    return h_BTD;
}

torch::Tensor MoeDecoderImpl::hiddenStates(const DecoderInputs& in, torch::Tensor& auxLoss)
{
    return m_finalNorm(runLayers(in, embed(in), 0, static_cast<int>(m_layers->size()), auxLoss));
}

DecoderOutput MoeDecoderImpl::head(const DecoderInputs& in, const torch::Tensor& h_BTD)
{
    DecoderOutput out;
    auto normed_BTD = m_finalNorm(h_BTD);
    // Project only the target positions: the loss ignores the rest, so their logits are waste.
    auto targetIndex_N = in.targetIndex_N.defined() ? in.targetIndex_N
                                                    : (in.labels_BT != kIgnoreLabel).flatten().nonzero().squeeze(1);
    out.targets = targetIndex_N.numel();
    auto hidden_ND = normed_BTD.reshape({-1, m_config.hiddenSize}).index_select(0, targetIndex_N);
    auto logits_NV = m_output(hidden_ND).to(torch::kFloat32);
    auto labels_N = in.labels_BT.flatten().index_select(0, targetIndex_N);
    out.lmLoss = out.targets > 0 ? torch::nn::functional::cross_entropy(logits_NV, labels_N)
                                 : torch::zeros({}, logits_NV.options());
    return out;
}

DecoderOutput MoeDecoderImpl::forward(const DecoderInputs& in)
{
    torch::Tensor auxLoss;
    auto h_BTD = runLayers(in, embed(in), 0, static_cast<int>(m_layers->size()), auxLoss);
    DecoderOutput out = head(in, h_BTD);
    out.auxLoss = auxLoss;
    return out;
}

}  // namespace wb::rt
