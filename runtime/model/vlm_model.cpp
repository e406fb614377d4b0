// VLM model assembly (see vlm_model.h).
#include "runtime/model/vlm_model.h"

#include "runtime/data/tokenizer.h"
#include "runtime/model/host_copy.h"

#include <optional>

namespace wb::rt {

namespace {

template <typename T>
torch::Tensor fromVector(const std::vector<T>& values, torch::ScalarType type, torch::Device device,
                         std::vector<int64_t> shape)
{
    // from_blob does not own the memory: toDeviceAsync clones it (CPU) or stages it in pinned memory.
    return toDeviceAsync(torch::from_blob(const_cast<T*>(values.data()), shape, torch::TensorOptions().dtype(type)),
                         device);
}

}  // namespace

// Positions in the flattened B·T tokens where `keep` holds, as an int64 tensor on `device`.
template <typename T, typename Pred>
torch::Tensor indexWhere(const std::vector<T>& values, Pred keep, torch::Device device)
{
    std::vector<int64_t> index;
    for (size_t i = 0; i < values.size(); ++i)
        if (keep(values[i]))
            index.push_back(static_cast<int64_t>(i));
    return fromVector(index, torch::kInt64, device, {static_cast<int64_t>(index.size())});
}

// Runs of equal ids inside each row (documents, or a row's padding tail) → segment lengths.
std::vector<int64_t> rowSegments(const std::vector<int32_t>& ids, int64_t rows, int64_t rowLength)
{
    std::vector<int64_t> lengths;
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t t = 0; t < rowLength; ++t) {
            const size_t i = static_cast<size_t>(r * rowLength + t);
            if (t == 0 || ids[i] != ids[i - 1])
                lengths.push_back(0);
            ++lengths.back();
        }
    return lengths;
}

VlmBatch toTensors(const MicroBatch& b, torch::Device device, torch::ScalarType dtype, bool varlenAttention)
{
    VlmBatch out;
    const std::vector<int64_t> shapeBT{b.rows, b.seqLength};
    out.decoder.tokenIds_BT = fromVector(b.tokenIds, torch::kInt64, device, shapeBT);
    out.decoder.labels_BT = fromVector(b.labels, torch::kInt64, device, shapeBT);
    out.decoder.docIds_BT = fromVector(b.docIds, torch::kInt32, device, shapeBT);
    out.decoder.pos1d_BT = fromVector(b.pos1d, torch::kInt64, device, shapeBT);
    out.decoder.pos3_3BT = fromVector(b.pos3, torch::kInt64, device, {3, b.rows, b.seqLength});
    const int64_t P = b.totalPatches();
    if (P > 0) {
        // Bytes of one frame go to the device (8× fewer than fp32 values of every frame); the
        // values come from a 256-entry table made on the host with the host's formula, so they
        // are the reference's bits on any device (CUDA's division by a scalar multiplies by the
        // reciprocal and can differ by an ulp); then the still frame is repeated over time.
        const int64_t plane = static_cast<int64_t>(b.patchPixels.size()) / (P * 3);
        const int64_t T = b.temporalPatchSize;
        auto bytes = fromVector(b.patchPixels, torch::kUInt8, device, {P * 3 * plane});
        auto values = fromVector(patchByteValues(), torch::kFloat32, device, {256})
                          .index_select(0, bytes.to(torch::kInt32))
                          .view({P, 3, 1, plane})
                          .to(dtype);
        out.patches_PC = values.expand({P, 3, T, plane}).reshape({P, 3 * T * plane});
        out.patchImage_P = fromVector(b.patchImage, torch::kInt32, device, {P});
        out.patchRow_P = fromVector(b.patchRow, torch::kInt32, device, {P});
        out.patchCol_P = fromVector(b.patchCol, torch::kInt32, device, {P});
    }
    out.decoder.imageIndex_I = indexWhere(b.tokenIds, [](int64_t id) { return id == kImageId; }, device);
    out.decoder.validIndex_N = indexWhere(b.docIds, [](int32_t doc) { return doc >= 0; }, device);
    out.decoder.targetIndex_N = indexWhere(b.labels, [](int64_t label) { return label != kIgnoreLabel; }, device);
    if (varlenAttention) {
        out.decoder.documents = packedSegments(rowSegments(b.docIds, b.rows, b.seqLength), device);
        if (P > 0)
            out.images = packedSegments(rowSegments(b.patchImage, 1, P), device);
    }
    return out;
}

VlmModelImpl::VlmModelImpl(const core::ModelConfig& config, torch::Device initDevice) : m_config(config)
{
    const auto& v = config.vision;
    const int outHidden = config.decoder.hiddenSize;
    m_vision = register_module("vision", VisionEncoder(v));
    m_projector = register_module("projector", Projector(v.hiddenSize, v.spatialMergeSize, outHidden));
    m_deepstackProjectors = register_module("deepstack_projectors", torch::nn::ModuleList());
    for (size_t i = 0; i < v.deepstackLayers.size(); ++i)
        m_deepstackProjectors->push_back(Projector(v.hiddenSize, v.spatialMergeSize, outHidden));
    m_decoder = register_module("decoder", MoeDecoder(config.decoder, initDevice));
}

VisionOutput VlmModelImpl::encodeImages(const VlmBatch& batch)
{
    if (!batch.hasImages())
        return {};
    // A frozen encoder runs without autograd: no graph, nothing saved for backward.
    std::optional<torch::NoGradGuard> noGrad;
    if (m_config.freezeVisionModel)
        noGrad.emplace();
    fence(ParameterUse::VisionInput);
    return m_vision(batch.patches_PC, batch.patchImage_P, batch.patchRow_P, batch.patchCol_P, batch.images);
}

void VlmModelImpl::project(const VisionOutput& vision, VlmBatch& batch)
{
    if (!vision.hidden_PD.defined())
        return;
    // Frozen encoder and projectors: nothing before the decoder needs a gradient.
    std::optional<torch::NoGradGuard> noGrad;
    if (m_config.freezeVisionModel && m_config.freezeVisionProjection)
        noGrad.emplace();
    fence(ParameterUse::Projectors);
    batch.decoder.imageEmbeds_ID = m_projector(vision.hidden_PD);
    batch.decoder.deepstack_ID.clear();
    for (size_t i = 0; i < vision.deepstack_PD.size(); ++i)
        batch.decoder.deepstack_ID.push_back(
            m_deepstackProjectors->ptr<ProjectorImpl>(i)->forward(vision.deepstack_PD[i]));
}

DecoderOutput VlmModelImpl::decode(const VlmBatch& batch)
{
    fence(ParameterUse::DecoderInput);
    return m_decoder(batch.decoder);
}

DecoderOutput VlmModelImpl::forward(VlmBatch& batch)
{
    project(encodeImages(batch), batch);
    return decode(batch);
}

torch::Tensor VlmModelImpl::embed(const VlmBatch& batch)
{
    fence(ParameterUse::DecoderInput);
    return m_decoder->embed(batch.decoder);
}

torch::Tensor VlmModelImpl::decoderLayers(const VlmBatch& batch, const torch::Tensor& h_BTD, int begin, int end,
                                          torch::Tensor& auxLoss)
{
    return m_decoder->runLayers(batch.decoder, h_BTD, begin, end, auxLoss);
}

DecoderOutput VlmModelImpl::decoderHead(const VlmBatch& batch, const torch::Tensor& h_BTD)
{
    return m_decoder->head(batch.decoder, h_BTD);
}

int VlmModelImpl::numDecoderLayers() const
{
    return m_decoder->numLayers();
}

void VlmModelImpl::setBf16Weights(Bf16Weights* weights)
{
    for (const auto& module : modules(/*include_self=*/false))
        if (auto* user = dynamic_cast<UsesBf16Weights*>(module.get()))
            user->setBf16Weights(weights);
}

void VlmModelImpl::setLayerRunner(LayerRunner* runner)
{
    m_vision->setLayerRunner(runner);
    m_decoder->setLayerRunner(runner);
}

void VlmModelImpl::applyFreezing()
{
    auto freeze = [](torch::nn::Module& module) {
        for (auto& p : module.parameters())
            p.set_requires_grad(false);
    };
    if (m_config.freezeVisionModel)
        freeze(*m_vision);
    if (m_config.freezeVisionProjection) {
        freeze(*m_projector);
        freeze(*m_deepstackProjectors);
    }
    if (m_config.freezeLanguageModel)
        freeze(*m_decoder);
}

}  // namespace wb::rt
