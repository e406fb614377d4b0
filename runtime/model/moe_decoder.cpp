// MoE decoder (see moe_decoder.h).
#include "runtime/model/moe_decoder.h"

#include "runtime/data/tokenizer.h"
#include "runtime/model/cuda/fused_kernels.h"
#include "runtime/model/recompute.h"
#include "runtime/model/row_ops.h"
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

torch::Tensor DecoderLayerImpl::forward(const torch::Tensor& h_CD, const torch::Tensor& angle_BTF,
                                        const torch::Tensor& allowed_BTT, const torch::Tensor& validIndex_M,
                                        torch::Tensor& auxLoss, const PackedSegments& documents)
{
    // h_CD: this rank's C tokens of the flattened B·T (all of them without sequence parallelism).
    // The attention needs every token: enter() gathers them under sequence parallelism, and
    // leave() sums the row-parallel output's partial sums (reduce-scatter under SP).
    const int64_t B = angle_BTF.size(0), T = angle_BTF.size(1), D = h_CD.size(-1);
    auto in_BTD = enterRegion(m_tp, m_attnNorm(h_CD)).view({B, T, D});
    auto attn_BTD = m_attention(in_BTD, angle_BTF, allowed_BTT, documents);
    auto x_CD = h_CD + leaveRegion(m_tp, attn_BTD.reshape({B * T, D}));
    auto tokens_MD = m_mlpNorm(selectDistinctRows(x_CD, validIndex_M));
    // Selective recompute "moe": router, permutation and experts keep only their input.
    const LayerFn moe = [m = m_moe.ptr()](const std::vector<torch::Tensor>& in) {
        auto [y_MD, aux] = m->forward(in[0]);
        return std::vector<torch::Tensor>{y_MD, aux};
    };
    auto moeOut = maybeRecompute(RecomputeModule::Moe, moe, {tokens_MD});
    auxLoss = auxLoss + moeOut[1];
    return addDistinctRows(x_CD, validIndex_M, moeOut[0]);
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

// Cross-entropy over the LM head's bf16 logits without the fp32 copy (cuda/fused_kernels.h): on
// the benchmark slice the logits are ~6k targets × 151,936, and the cast, log-softmax and their
// backwards took ~11 ms of a 290 ms step and 7 GiB of saved fp32 activations. Per-target losses
// out; the caller takes the mean.
class FusedCrossEntropy : public torch::autograd::Function<FusedCrossEntropy> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& logits_NV,
                                 const torch::Tensor& labels_N)
    {
        auto [loss_N, lse_N] = cuda::crossEntropyForward(logits_NV, labels_N);
        ctx->save_for_backward({logits_NV, labels_N, lse_N});
        return loss_N;
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        return {cuda::crossEntropyBackward(saved[0], saved[1], saved[2], grads[0]), torch::Tensor()};
    }
};

}  // namespace

torch::Tensor MoeDecoderImpl::embed(const DecoderInputs& in)
{
    const int64_t D = m_config.hiddenSize;
    auto h_BTD = embedTokens(in.tokenIds_BT);
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

torch::Tensor MoeDecoderImpl::runLayers(const DecoderInputs& in, torch::Tensor h, int begin, int end,
                                        torch::Tensor& auxLoss)
{
    const int64_t D = m_config.hiddenSize;
    const int numLayers = static_cast<int>(m_layers->size());
    TORCH_CHECK(0 <= begin && begin <= end && end <= numLayers, "decoder layers [", begin, ", ", end, ") of ", numLayers);
    // The residual stream is the flattened tokens this rank holds: all of them, or under sequence
    // parallelism its contiguous share [first, last) (tensor_parallel_hook.h). It enters whole from
    // embed() (begin 0) and leaves whole for head() (end = numLayers); between two calls (pipeline
    // stages) it stays the share, so a stage sends N/TP rows, as Megatron does. The MoE runs on the
    // non-padding ones among them (validIndex_M, local row numbers).
    const std::vector<int64_t> shape{in.tokenIds_BT.size(0), in.tokenIds_BT.size(1), D};
    const int64_t numTokens = shape[0] * shape[1];
    const auto [first, last] = m_tp ? m_tp->localTokens(numTokens) : std::pair<int64_t, int64_t>{0, numTokens};
    auto h_CD = h.reshape({-1, D});
    if (m_tp && begin == 0)
        h_CD = m_tp->scatterTokens(h_CD);
    TORCH_CHECK(h_CD.size(0) == last - first, "decoder layers [", begin, ", ", end, "): the hidden states hold ",
                h_CD.size(0), " tokens, this rank's share is ", last - first);
    auxLoss = torch::zeros({}, h_CD.options().dtype(torch::kFloat32));
    if (begin < end)
        h_CD = runLayerRange(in, h_CD, begin, end, {first, numTokens}, auxLoss);
    // The stage with the last layer applies the final norm (on its token share under sequence
    // parallelism), then every token is back (identity without sequence parallelism).
    if (end < numLayers)
        return m_tp ? h_CD : h_CD.view(shape);
    h_CD = m_finalNorm(h_CD);
    return (m_tp ? m_tp->gatherTokens(h_CD) : h_CD).view(shape);
}

// Layers [begin, end) on this rank's tokens h_CD: rows [share.first, …) of share.second.
torch::Tensor MoeDecoderImpl::runLayerRange(const DecoderInputs& in, torch::Tensor h_CD, int begin, int end,
                                            std::pair<int64_t, int64_t> share, torch::Tensor& auxLoss)
{
    const int64_t D = m_config.hiddenSize;
    const int numLayers = static_cast<int>(m_layers->size());
    const auto [first, numTokens] = share;
    auto imageIndex_I = imageIndexOf(in);
    auto angle_BTF = m_config.mropeSection.empty()
        ? ropeAngles1d(in.pos1d_BT, m_config.kvChannels, m_config.rotaryBase)
        : ropeAnglesMrope(in.pos3_3BT, m_config.kvChannels, m_config.rotaryBase, m_config.mropeSection);
    torch::Tensor allowed_BTT = in.allowed_BTT;  // B·T² bools: only built when the flash core is not used
    if (!allowed_BTT.defined() && !in.documents.defined())
        allowed_BTT = documentCausalMask(in.docIds_BT);
    auto validIndex_N = in.validIndex_N.defined() ? in.validIndex_N : (in.docIds_BT >= 0).flatten().nonzero().squeeze(1);
    torch::Tensor validIndex_M = validIndex_N;
    if (m_tp) {
        auto inShare_N = validIndex_N.ge(first).logical_and(validIndex_N.lt(first + h_CD.size(0)));
        validIndex_M = validIndex_N.masked_select(inShare_N) - first;
    }
    for (int layer = begin; layer < end; ++layer) {
        auto* block = m_layers->ptr<DecoderLayerImpl>(layer).get();
        // The layer as a function of the hidden state only (everything else needs no gradient),
        // returning {h, this layer's aux loss}, so a runner can recompute or wrap it.
        // Captures by value: a runner may call it again in backward, after this function returned.
        const LayerFn fn = [block, angle_BTF, allowed_BTT, validIndex_M, documents = in.documents](
                               const std::vector<torch::Tensor>& x) {
            auto layerAux = torch::zeros({}, x[0].options().dtype(torch::kFloat32));
            auto h = block->forward(x[0], angle_BTF, allowed_BTT, validIndex_M, layerAux, documents);
            return std::vector<torch::Tensor>{h, layerAux};
        };
        auto out = runLayer(m_runner, {"decoder", layer, numLayers, block}, fn, {h_CD});
        h_CD = out[0];
        auxLoss = auxLoss + out[1];
        // Deepstack: vision features of earlier ViT layers join the image tokens after layer i.
        // Under sequence parallelism they are placed in the full token range, then the rank's
        // share is taken (its backward gathers, so every rank's vision gradient is whole).
        // (A pipeline stage that does not hold the vision encoder gets them from the first stage.)
        if (static_cast<size_t>(layer) < in.deepstack_ID.size() && in.deepstack_ID[layer].defined() &&
            imageIndex_I.numel() > 0) {
            auto features_ID = in.deepstack_ID[layer].to(h_CD.scalar_type());
            if (m_tp)
                h_CD = h_CD + m_tp->scatterTokens(torch::zeros({numTokens, D}, h_CD.options()).index_add(0, imageIndex_I, features_ID));
            else
                h_CD = addDistinctRows(h_CD, imageIndex_I, features_ID);
        }
    }
    return h_CD;
}

torch::Tensor MoeDecoderImpl::hiddenStates(const DecoderInputs& in, torch::Tensor& auxLoss)
{
    return runLayers(in, embed(in), 0, static_cast<int>(m_layers->size()), auxLoss);
}

DecoderOutput MoeDecoderImpl::head(const DecoderInputs& in, const torch::Tensor& h_BTD)
{
    DecoderOutput out;
    // Project only the target positions: the loss ignores the rest, so their logits are waste.
    auto targetIndex_N = in.targetIndex_N.defined() ? in.targetIndex_N
                                                    : (in.labels_BT != kIgnoreLabel).flatten().nonzero().squeeze(1);
    out.targets = targetIndex_N.numel();
    auto hidden_ND = selectDistinctRows(h_BTD.reshape({-1, m_config.hiddenSize}), targetIndex_N);
    auto labels_N = in.labels_BT.flatten().index_select(0, targetIndex_N);
    if (m_vocabTp) {
        out.lmLoss = out.targets > 0 ? vocabParallelLoss(hidden_ND, labels_N)
                                     : torch::zeros({}, hidden_ND.options().dtype(torch::kFloat32));
    } else {
        auto logits_NV = applyLinear(m_output, hidden_ND);
        if (out.targets == 0)
            out.lmLoss = torch::zeros({}, logits_NV.options().dtype(torch::kFloat32));
        else if (cuda::crossEntropySupports(logits_NV, labels_N))
            out.lmLoss = FusedCrossEntropy::apply(logits_NV, labels_N).mean();
        else
            out.lmLoss = torch::nn::functional::cross_entropy(logits_NV.to(torch::kFloat32), labels_N);
    }
    if (in.lossTargets > 0) {
        // A share of the micro-batch's targets (context parallelism): the shares add up to the
        // mean over all of them. A share without targets still hangs off every layer (× 0), so
        // its backward runs the collectives the other shares' backwards wait for.
        out.lmLoss = out.targets > 0
            ? out.lmLoss * (static_cast<double>(out.targets) / static_cast<double>(in.lossTargets))
            : h_BTD.sum().to(torch::kFloat32) * 0.0;
    }
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

// Vocabulary-parallel lookup (Megatron's VocabParallelEmbedding): ids outside this rank's rows
// look up row 0 and are zeroed, and the sum over the ranks (leave: all-reduce forward, identity
// backward) puts every token's row in place on every rank.
torch::Tensor MoeDecoderImpl::embedTokens(const torch::Tensor& tokenIds_BT)
{
    if (!m_vocabTp)
        return m_embedding(tokenIds_BT);
    const torch::Tensor& weight_VlD = m_embedding->weight;
    const int64_t rows = weight_VlD.size(0);
    auto local_BT = tokenIds_BT - m_vocabTp->shardStart(rows);
    auto inside_BT = local_BT.ge(0).logical_and(local_BT.lt(rows));
    auto partial_BTD = torch::nn::functional::embedding(local_BT.masked_fill(inside_BT.logical_not(), 0), weight_VlD) *
                       inside_BT.unsqueeze(-1).to(weight_VlD.scalar_type());
    return m_vocabTp->leave(partial_BTD);
}

// Vocabulary-parallel cross-entropy (Megatron's vocab_parallel_cross_entropy): this rank's logits
// columns [start, start + Vl); the max and the Σ exp are reduced over the ranks, the target
// logit comes from the rank that holds it. The hidden states enter through f (their gradient,
// partial per vocabulary slice, is summed in backward). Returns the mean over the N targets.
torch::Tensor MoeDecoderImpl::vocabParallelLoss(const torch::Tensor& hidden_ND, const torch::Tensor& labels_N)
{
    auto logits_NVl = applyLinear(m_output, m_vocabTp->enter(hidden_ND)).to(torch::kFloat32);
    const int64_t rows = logits_NVl.size(1);
    auto max_N1 = m_vocabTp->maxOverShards(std::get<0>(logits_NVl.detach().max(1, /*keepdim=*/true)));
    auto shifted_NVl = logits_NVl - max_N1;
    auto local_N = labels_N - m_vocabTp->shardStart(rows);
    auto inside_N = local_N.ge(0).logical_and(local_N.lt(rows));
    auto picked_N = shifted_NVl.gather(1, local_N.clamp(0, rows - 1).unsqueeze(1)).squeeze(1) * inside_N.to(torch::kFloat32);
    // One all-reduce for both sums: [Σ exp, target logit] per target.
    auto sums_2N = m_vocabTp->leave(torch::stack({shifted_NVl.exp().sum(1), picked_N}));
    return (sums_2N[0].log() - sums_2N[1]).mean();
}

}  // namespace wb::rt
