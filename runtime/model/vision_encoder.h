// ViT patch encoder. All images of a micro-batch are packed into one sequence of P patches; the
// attention is block-diagonal per image (an image never attends to another), positions are 2-D
// RoPE over (patch row, patch column) so any resolution works without interpolating a table.
// Shapes: P patches, C patch values (3·temporal·patch²), Dv width, Hv heads. One training thread.
#pragma once

#include "core/run_config.h"
#include "runtime/model/attention.h"
#include "runtime/model/layer_runner.h"
#include "runtime/model/tensor_parallel_hook.h"

#include <torch/torch.h>

#include <vector>

namespace wb::rt {

struct VisionOutput {
    torch::Tensor hidden_PD;                  ///< output of the last block
    std::vector<torch::Tensor> deepstack_PD;  ///< outputs of the config's deepstack layers, in order
};

/// Pre-norm block: x + attn(LN(x)); x + MLP(LN(x)) with GELU MLP. Under tensor parallelism
/// (installed from outside) qkv and fc1 are column-parallel, proj and fc2 row-parallel.
class VisionBlockImpl : public torch::nn::Module, public UsesBf16Weights {
public:
    VisionBlockImpl(int hiddenSize, int numHeads, int ffnHiddenSize);
    /// With `images` defined (one segment per image) the varlen flash core runs; else with
    /// `imageLengths` (host patch counts of the contiguous images) each image attends alone; else
    /// the dense block-diagonal mask allowed_1PP is used. The three agree (tests).
    torch::Tensor forward(const torch::Tensor& x_PD, const torch::Tensor& angle_1PF,
                          const torch::Tensor& allowed_1PP, const PackedSegments& images = {},
                          const std::vector<int64_t>& imageLengths = {});

    /// Not owned; null = no tensor parallelism (tensor_parallel_hook.h).
    void setTensorParallel(TensorParallelHook* hook) { m_tp = hook; }

private:
    int64_t m_headDim;
    TensorParallelHook* m_tp = nullptr;
    torch::nn::LayerNorm m_norm1{nullptr}, m_norm2{nullptr};
    torch::nn::Linear m_qkv{nullptr}, m_proj{nullptr}, m_fc1{nullptr}, m_fc2{nullptr};
};
TORCH_MODULE(VisionBlock);

class VisionEncoderImpl : public torch::nn::Module, public UsesBf16Weights {
public:
    explicit VisionEncoderImpl(const core::VisionConfig& config);
    /// patches_PC, patchImage_P (image index), patchRow_P / patchCol_P (grid position).
    /// `images` (one segment per image, in patch order) selects the varlen flash core; without it
    /// a dense block-diagonal P×P mask is built (CPU, fp32).
    VisionOutput forward(const torch::Tensor& patches_PC, const torch::Tensor& patchImage_P,
                         const torch::Tensor& patchRow_P, const torch::Tensor& patchCol_P,
                         const PackedSegments& images = {});

    /// Runs every block through `runner` (not owned; null = call directly). See layer_runner.h.
    void setLayerRunner(LayerRunner* runner) { m_runner = runner; }

private:
    core::VisionConfig m_config;
    torch::nn::Linear m_patchEmbed{nullptr};
    torch::nn::ModuleList m_blocks;
    LayerRunner* m_runner = nullptr;
};
TORCH_MODULE(VisionEncoder);

}  // namespace wb::rt
