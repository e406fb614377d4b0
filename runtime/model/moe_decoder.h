// The language decoder: token embedding, N pre-norm layers of GQA causal attention + top-k MoE,
// final RMSNorm, output projection, and the causal LM loss on caption tokens only.
// Packed rows: attention is document-causal (block-diagonal per packed sample); padding tokens
// skip the MoE (they are removed before routing so they neither cost FLOPs nor bias the aux loss).
// Shapes: B rows, T tokens per row, D width, V vocab, I image tokens, N targets. One thread.
#pragma once

#include "core/run_config.h"
#include "runtime/model/attention.h"
#include "runtime/model/layer_runner.h"
#include "runtime/model/moe_layer.h"
#include "runtime/model/tensor_parallel_hook.h"

#include <torch/torch.h>

#include <vector>

namespace wb::rt {

struct DecoderInputs {
    torch::Tensor tokenIds_BT;   ///< int64; kImageId where image features go
    torch::Tensor labels_BT;     ///< int64; kIgnoreLabel where no loss
    torch::Tensor docIds_BT;     ///< int32/64; −1 padding
    torch::Tensor pos1d_BT;      ///< int64
    torch::Tensor pos3_3BT;      ///< int64 (M-RoPE planes t, h, w)
    torch::Tensor imageEmbeds_ID;               ///< projected image tokens, undefined if none
    std::vector<torch::Tensor> deepstack_ID;    ///< added after decoder layers 0, 1, …
    // Index lists over the flattened B·T tokens, computed on the host by toTensors so the forward
    // needs no nonzero() (each one is a device→host sync). Undefined = computed here.
    torch::Tensor imageIndex_I;   ///< int64, tokens that carry image features
    torch::Tensor validIndex_N;   ///< int64, non-padding tokens (the MoE runs on these only)
    torch::Tensor targetIndex_N;  ///< int64, tokens with a label
    /// Documents (and each row's padding tail) as varlen segments: defined → flash core, causal
    /// per document; undefined → the dense document-causal mask.
    PackedSegments documents;
    /// Context parallelism (runtime/parallel/context_parallel.h): the rows hold this rank's share
    /// of each row's tokens, with their full-sequence positions. allowed_BTT is then the mask of
    /// these queries against every CP rank's keys in gathered order ([B, T, CP·T]); undefined =
    /// the document-causal mask of docIds_BT. lossTargets: the micro-batch's targets over all
    /// shares, so the shares' losses add up to its mean; 0 = this rank's own (the mean).
    torch::Tensor allowed_BTT;
    int64_t lossTargets = 0;
};

struct DecoderOutput {
    torch::Tensor lmLoss;   ///< mean cross-entropy over the targets (fp32 scalar)
    torch::Tensor auxLoss;  ///< sum over layers of the load-balancing loss
    int64_t targets = 0;
};

class DecoderLayerImpl : public torch::nn::Module {
public:
    /// `initDevice`: where the expert weights are drawn (see MoeLayerImpl).
    explicit DecoderLayerImpl(const core::DecoderConfig& config, torch::Device initDevice = torch::kCPU);
    /// h_CD: the C flattened tokens of the residual stream this rank holds (all B·T of them
    /// without sequence parallelism); validIndex_M: the non-padding ones among them (row numbers
    /// in h_CD). Returns the new hidden state; adds this layer's aux loss to `auxLoss`.
    torch::Tensor forward(const torch::Tensor& h_CD, const torch::Tensor& angle_BTF,
                          const torch::Tensor& allowed_BTT, const torch::Tensor& validIndex_M,
                          torch::Tensor& auxLoss, const PackedSegments& documents = {});
    /// Not owned; null = no tensor parallelism (tensor_parallel_hook.h).
    void setTensorParallel(TensorParallelHook* hook) { m_tp = hook; }

private:
    TensorParallelHook* m_tp = nullptr;
    RmsNorm m_attnNorm{nullptr}, m_mlpNorm{nullptr};
    GqaAttention m_attention{nullptr};
    MoeLayer m_moe{nullptr};
};
TORCH_MODULE(DecoderLayer);

class MoeDecoderImpl : public torch::nn::Module, public UsesBf16Weights {
public:
    explicit MoeDecoderImpl(const core::DecoderConfig& config, torch::Device initDevice = torch::kCPU);

    DecoderOutput forward(const DecoderInputs& inputs);
    /// Final-normed hidden states h_BTD (and the aux loss), without the loss head.
    torch::Tensor hiddenStates(const DecoderInputs& inputs, torch::Tensor& auxLoss);

    // The three parts forward() is made of, so a caller can run a slice of the decoder (e.g. one
    // pipeline stage); forward() == head(runLayers(embed(in), 0, numLayers())) with the aux loss.
    /// Token embedding with the projected image features in place (bf16 under CUDA autocast).
    torch::Tensor embed(const DecoderInputs& inputs);
    /// Layers [begin, end) on h; adds deepstack_ID[i] (when defined) to the image tokens after
    /// layer i. `auxLoss` becomes the sum of these layers' load-balancing losses (fp32 scalar).
    /// When `end` is the last layer the final norm is applied too (under sequence parallelism on
    /// this rank's token share, before the tokens are gathered), so the result is head()'s input.
    /// h is embed()'s h_BTD when begin is 0; otherwise what runLayers(…, begin) returned: the
    /// same h_BTD without sequence parallelism, with it this rank's token share h_nD (n = B·T/TP
    /// rows of the flattened tokens), which is also what it returns when end < numLayers().
    torch::Tensor runLayers(const DecoderInputs& inputs, torch::Tensor h, int begin, int end, torch::Tensor& auxLoss);
    /// Output projection of the target tokens of the final-normed h_BTD and their mean
    /// cross-entropy; auxLoss is left undefined.
    DecoderOutput head(const DecoderInputs& inputs, const torch::Tensor& h_BTD);
    int numLayers() const { return m_config.numLayers; }
    torch::nn::Linear& outputLayer() { return m_output; }
    /// Runs every layer through `runner` (not owned; null = call directly). See layer_runner.h.
    void setLayerRunner(LayerRunner* runner) { m_runner = runner; }
    /// Sequence parallelism's token split of the residual stream (tensor_parallel_hook.h); not
    /// owned, null = none. The layers get their own hook (DecoderLayerImpl::setTensorParallel).
    void setTensorParallel(TensorParallelHook* hook) { m_tp = hook; }
    /// Vocabulary parallelism (not owned; null = none): the embedding and output weights hold
    /// this rank's rows of the vocabulary; the lookup is masked and summed over the ranks
    /// (hook->leave) and the loss is the vocabulary-parallel cross-entropy.
    void setVocabParallel(TensorParallelHook* hook) { m_vocabTp = hook; }

private:
    torch::Tensor runLayerRange(const DecoderInputs& inputs, torch::Tensor h_CD, int begin, int end,
                                std::pair<int64_t, int64_t> share, torch::Tensor& auxLoss);
    torch::Tensor embedTokens(const torch::Tensor& tokenIds_BT);
    torch::Tensor vocabParallelLoss(const torch::Tensor& hidden_ND, const torch::Tensor& labels_N);

    TensorParallelHook* m_tp = nullptr;
    TensorParallelHook* m_vocabTp = nullptr;
    core::DecoderConfig m_config;
    torch::nn::Embedding m_embedding{nullptr};
    torch::nn::ModuleList m_layers;
    RmsNorm m_finalNorm{nullptr};
    torch::nn::Linear m_output{nullptr};
    LayerRunner* m_runner = nullptr;
};
TORCH_MODULE(MoeDecoder);

}  // namespace wb::rt
