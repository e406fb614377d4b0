// The 1F1B pipeline schedule (PipeDream-Flush, Megatron's non-interleaved schedule) over one
// optimizer step's M micro-batches on one stage of P: warm-up of min(P − stage − 1, M) forwards,
// then one forward and one backward in turn, then the remaining backwards. At most P − stage
// micro-batches are in flight on a stage (their activations kept for backward), instead of M.
//
// Messages: stage s sends stage s + 1, per micro-batch, the tensors its forward returned
// (hidden states, deepstack features for later layers); stage s + 1 returns their gradients.
// Shapes are not exchanged: every stage loads the same micro-batches, so each can compute the
// shapes of what it will receive (inputSpecs).
//
// Interleaved 1F1B (Megatron's forward_backward_pipelining_with_interleaving, virtual stages
// v > 1, pipeline.h): each stage runs v model chunks. The M micro-batches go in groups of P: the
// k-th forward of a stage runs chunk (k mod P·v) / P on micro-batch (k / P·v)·P + k mod P, the
// k-th backward chunk v − 1 − that on the same micro-batch; warm-up forwards
// (P − stage − 1)·2 + (v − 1)·P (all M·v when M = P, as Megatron), then one forward and one
// backward in turn, then the remaining backwards. Needs M a multiple of P. The bubble shrinks
// from (P − 1) to (P − 1) / v forward-backward times of a micro-batch.
// Its messages are not paired up as 1F1B's are: sends are posted without waiting and a receive
// is posted when the compute needs it. Gloo pairs a receive with the peer's send of the same tag
// in order, and every (sender, receiver, tag) carries one kind of message in the same order on
// both sides (the forward order of chunk c on stage s and on s + 1 is the same; stage P − 1's
// chunk c feeds stage 0's chunk c + 1, P forwards later in the same order), so a rank only ever
// waits for a tensor its peer computes next or earlier: no cycle (interleavedOrder's dependency
// simulation in test_model.cpp checks this for many P, v, M). NCCL pairs by order regardless of
// tag, so this is CPU (Gloo) only; runtime_checks.cpp refuses v > 1 on CUDA. Training thread only.
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
    /// Shapes/dtypes of what the previous stage sends for model chunk `chunk`, micro-batch i
    /// (unused for stage 0's chunk 0). `chunk` is 0 without virtual stages.
    std::function<std::vector<TensorSpec>(int chunk, int micro)> inputSpecs;
    /// Runs this stage's forward of model chunk `chunk` on micro-batch i on `inputs` (received
    /// leaves that require grad; empty for stage 0's chunk 0).
    std::function<StageForward(int chunk, int micro, const std::vector<torch::Tensor>& inputs)> forward;
    /// Runs backward from `roots` with `grads` (the caller times it and may reduce gradients).
    std::function<void(const std::vector<torch::Tensor>& roots, const std::vector<torch::Tensor>& grads)> backward;
};

/// Runs 1F1B for `micros` micro-batches on this rank's stage. Throws CommError.
void runOneForwardOneBackward(Pipeline& pipeline, int micros, const PipelineCallbacks& callbacks, torch::Device device);

/// One compute step of a schedule: the forward or backward of model chunk `chunk` on `micro`.
struct PipelineStep {
    bool forward = true;
    int chunk = 0;
    int micro = 0;
    bool operator==(const PipelineStep&) const = default;
};

/// Megatron's interleaved order of one step's 2·M·v compute steps on `stage` of `stages`, with
/// `chunks` model chunks per stage and `micros` micro-batches. Throws std::invalid_argument when
/// `micros` is not a positive multiple of `stages`.
std::vector<PipelineStep> interleavedOrder(int stages, int stage, int chunks, int micros);

/// Runs interleaved 1F1B (pipeline.chunks() model chunks) for `micros` micro-batches on this
/// rank's stage; Gloo only (see above). Throws CommError, std::invalid_argument as interleavedOrder.
void runInterleavedOneForwardOneBackward(Pipeline& pipeline, int micros, const PipelineCallbacks& callbacks,
                                         torch::Device device);

}  // namespace wb::rt
