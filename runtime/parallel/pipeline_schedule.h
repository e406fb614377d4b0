// The 1F1B pipeline schedule (PipeDream-Flush, Megatron's non-interleaved schedule) over one
// optimizer step's M micro-batches on one stage of P: warm-up of min(P − stage − 1, M) forwards,
// then one forward and one backward in turn, then the remaining backwards. At most P − stage
// micro-batches are in flight on a stage (their activations kept for backward), instead of M.
//
// Messages: stage s sends stage s + 1, per micro-batch, the tensors its forward returned
// (hidden states, deepstack features for later layers); stage s + 1 returns their gradients.
// Shapes are not exchanged: every stage loads the same micro-batches, so each can compute the
// shapes of what it will receive (inputSpecs). Training thread only.
#pragma once

#include "runtime/parallel/pipeline.h"

#include <torch/torch.h>

#include <functional>
#include <vector>

namespace wb::rt {

/// What a stage's forward of one micro-batch produced.
struct StageForward {
    /// Sent to the next stage (empty on the last stage). Gradients come back for each.
    std::vector<torch::Tensor> outputs;
    /// Scalar backpropagated on this stage together with the outputs (aux losses of this stage's
    /// layers, plus the LM loss on the last stage, already scaled by 1/M). May be undefined.
    torch::Tensor loss;
};

struct PipelineCallbacks {
    /// Shapes/dtypes of what the previous stage sends for micro-batch i (unused on stage 0).
    std::function<std::vector<TensorSpec>(int micro)> inputSpecs;
    /// Runs this stage's forward of micro-batch i on `inputs` (received leaves that require grad;
    /// empty on stage 0).
    std::function<StageForward(int micro, const std::vector<torch::Tensor>& inputs)> forward;
    /// Runs backward from `roots` with `grads` (the caller times it and may reduce gradients).
    std::function<void(const std::vector<torch::Tensor>& roots, const std::vector<torch::Tensor>& grads)> backward;
};

/// Runs 1F1B for `micros` micro-batches on this rank's stage. Throws CommError.
void runOneForwardOneBackward(Pipeline& pipeline, int micros, const PipelineCallbacks& callbacks, torch::Device device);

}  // namespace wb::rt
