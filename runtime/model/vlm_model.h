// The whole vision-language model: vision encoder → projector (+ deepstack projectors) → MoE
// decoder. It knows nothing about parallelism or timing; the trainer calls the three phases one
// by one to time them. Also converts a loader MicroBatch into tensors. One training thread.
#pragma once

#include "core/run_config.h"
#include "runtime/data/micro_batch.h"
#include "runtime/model/bf16_weights.h"
#include "runtime/model/moe_decoder.h"
#include "runtime/model/parameter_fence.h"
#include "runtime/model/projector.h"
#include "runtime/model/vision_encoder.h"

#include <torch/torch.h>

namespace wb::rt {

struct VlmBatch {
    DecoderInputs decoder;        ///< imageEmbeds/deepstack filled by project()
    torch::Tensor patches_PC;     ///< undefined when the micro-batch has no images
    torch::Tensor patchImage_P;
    torch::Tensor patchRow_P;
    torch::Tensor patchCol_P;
    PackedSegments images;        ///< one segment per image: defined → varlen flash vision attention
    bool hasImages() const { return patches_PC.defined(); }
};

/// Copies the loader's arrays into tensors on `device` (float patches in `dtype`), with the index
/// lists the decoder needs computed on the host. With `varlenAttention` (CUDA, bf16, and
/// flashVarlenAvailable()) it also fills the document and image segments that select the flash
/// attention core; otherwise the model builds dense masks.
VlmBatch toTensors(const MicroBatch& batch, torch::Device device, torch::ScalarType dtype,
                   bool varlenAttention = false);

class VlmModelImpl : public torch::nn::Module {
public:
    /// `initDevice`: where the expert weights are drawn (the rest is built on the CPU; call to()).
    explicit VlmModelImpl(const core::ModelConfig& config, torch::Device initDevice = torch::kCPU);

    /// With model.freeze_vision_model the encoder runs under NoGradGuard (no autograd graph).
    VisionOutput encodeImages(const VlmBatch& batch);
    /// Fills batch.decoder.imageEmbeds_ID and deepstack_ID from the vision output (without
    /// autograd when the encoder and the projectors are all frozen).
    void project(const VisionOutput& vision, VlmBatch& batch);
    DecoderOutput decode(const VlmBatch& batch);
    /// All three phases.
    DecoderOutput forward(VlmBatch& batch);

    // Parts of decode() for running a slice of the model (a pipeline stage, applied from outside):
    // decode() == decoderHead(decoderLayers(embed(), 0, numDecoderLayers())) plus the aux loss.
    /// Token embedding with batch.decoder.imageEmbeds_ID in place of the image tokens.
    torch::Tensor embed(const VlmBatch& batch);
    /// Decoder layers [begin, end) on h_BTD (deepstack features from batch.decoder.deepstack_ID
    /// where defined); auxLoss = these layers' load-balancing loss. Under sequence parallelism the
    /// hidden states between two calls are this rank's token share (MoeDecoderImpl::runLayers).
    torch::Tensor decoderLayers(const VlmBatch& batch, const torch::Tensor& h_BTD, int begin, int end,
                                torch::Tensor& auxLoss);
    /// Final norm, output layer and LM loss on h_BTD (auxLoss undefined).
    DecoderOutput decoderHead(const VlmBatch& batch, const torch::Tensor& h_BTD);
    int numDecoderLayers() const;
    int numDeepstackFeatures() const { return static_cast<int>(m_config.vision.deepstackLayers.size()); }

    /// Applies model.freeze_* (requires_grad off). Call once after construction.
    void applyFreezing();

    /// Runs every vision and decoder layer through `runner` (not owned; null = directly). How
    /// recompute and FSDP are applied from outside (layer_runner.h).
    void setLayerRunner(LayerRunner* runner);
    /// Called before the forward reads the parameters outside the layers (not owned; null = none):
    /// how an optimizer that is still updating them makes the forward wait (parameter_fence.h).
    void setParameterFence(ParameterFence* fence) { m_fence = fence; }
    /// Makes every module that multiplies by weights take their kept bf16 copies from `weights`
    /// (not owned; null = autocast casts them): train.bf16_weight_copies, bf16_weights.h.
    void setBf16Weights(Bf16Weights* weights);

private:
    void fence(ParameterUse use)
    {
        if (m_fence)
            m_fence->beforeUse(use);
    }


    core::ModelConfig m_config;
    VisionEncoder m_vision{nullptr};
    Projector m_projector{nullptr};
    torch::nn::ModuleList m_deepstackProjectors;
    MoeDecoder m_decoder{nullptr};
    ParameterFence* m_fence = nullptr;
};
TORCH_MODULE(VlmModel);

}  // namespace wb::rt
