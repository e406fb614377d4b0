// 1F1B and interleaved 1F1B (see pipeline_schedule.h). 1F1B's exchanges pair up as in Megatron's
// schedule: a stage's "send forward, receive backward" with the next stage meets that stage's
// "send backward, receive forward", and Pipeline::exchange posts both directions before waiting,
// so neither Gloo (a send completes once the peer posted its recv) nor NCCL blocks. The
// interleaved schedule posts sends and waits only on receives (Gloo only; the header says why).
#include "runtime/parallel/pipeline_schedule.h"

#include <algorithm>
#include <deque>
#include <stdexcept>
#include <string>

namespace wb::rt {

namespace {

struct InFlight {
    std::vector<torch::Tensor> inputs;  // received leaves: their .grad() goes back
    StageForward forward;
};

std::vector<TensorSpec> specsOf(const std::vector<torch::Tensor>& tensors)
{
    std::vector<TensorSpec> specs;
    for (const auto& t : tensors)
        specs.push_back({t.sizes().vec(), t.scalar_type()});
    return specs;
}

// Forward of model chunk `chunk` on `micro` with received `inputs` (made leaves that require grad).
InFlight forwardOf(const PipelineCallbacks& cb, int chunk, int micro, std::vector<torch::Tensor> inputs)
{
    for (auto& t : inputs)
        t.set_requires_grad(true);
    StageForward out = cb.forward(chunk, micro, inputs);
    return InFlight{std::move(inputs), std::move(out)};
}

// Backward of `f` with the gradients of its outputs; returns the gradients of its inputs (zeros
// where autograd produced none, so the message is whole).
std::vector<torch::Tensor> backwardOf(const PipelineCallbacks& cb, InFlight& f, const std::vector<torch::Tensor>& outputGrads)
{
    std::vector<torch::Tensor> roots, grads;
    for (size_t i = 0; i < f.forward.outputs.size(); ++i)
        if (f.forward.outputs[i].requires_grad()) {  // e.g. frozen deepstack features: none
            roots.push_back(f.forward.outputs[i]);
            grads.push_back(outputGrads.at(i));
        }
    if (f.forward.loss.defined() && f.forward.loss.requires_grad()) {
        roots.push_back(f.forward.loss);
        grads.push_back(torch::ones_like(f.forward.loss));
    }
    if (!roots.empty())
        cb.backward(roots, grads);
    std::vector<torch::Tensor> inputGrads;
    for (const auto& t : f.inputs)
        inputGrads.push_back(t.grad().defined() ? t.grad() : torch::zeros_like(t));
    return inputGrads;
}

class OneForwardOneBackward {
public:
    OneForwardOneBackward(Pipeline& pipeline, const PipelineCallbacks& callbacks, torch::Device device)
        : m_pipe(pipeline), m_cb(callbacks), m_device(device)
    {
    }

    std::vector<torch::Tensor> recvForward(int micro)
    {
        if (m_pipe.isFirst())
            return {};
        return m_pipe.exchange(m_pipe.stage() - 1, {}, m_cb.inputSpecs(0, micro), Pipeline::kForwardTag,
                               Pipeline::kForwardTag, m_device);
    }

    // Forward of `micro` on received `inputs`; returns what goes to the next stage.
    std::vector<torch::Tensor> forward(int micro, std::vector<torch::Tensor> inputs)
    {
        m_inFlight.push_back(forwardOf(m_cb, 0, micro, std::move(inputs)));
        return m_inFlight.back().forward.outputs;
    }

    // Backward of the oldest micro-batch in flight; returns the gradients of its inputs.
    std::vector<torch::Tensor> backward(const std::vector<torch::Tensor>& outputGrads)
    {
        InFlight f = std::move(m_inFlight.front());
        m_inFlight.pop_front();
        return backwardOf(m_cb, f, outputGrads);
    }

    std::vector<TensorSpec> oldestOutputSpecs() const { return specsOf(m_inFlight.front().forward.outputs); }

    void run(int micros)
    {
        const int stage = m_pipe.stage(), stages = m_pipe.stages();
        const int prev = stage - 1, next = stage + 1;
        const int warmup = std::min(stages - stage - 1, micros);
        const int steady = micros - warmup;
        for (int i = 0; i < warmup; ++i) {
            auto outputs = forward(i, recvForward(i));
            m_pipe.exchange(next, outputs, {}, Pipeline::kForwardTag, Pipeline::kForwardTag, m_device);
        }
        std::vector<torch::Tensor> inputs = steady > 0 ? recvForward(warmup) : std::vector<torch::Tensor>{};
        for (int j = 0; j < steady; ++j) {
            const int micro = warmup + j;
            auto outputs = forward(micro, std::move(inputs));
            std::vector<torch::Tensor> outputGrads;
            if (!m_pipe.isLast())
                outputGrads = m_pipe.exchange(next, outputs, oldestOutputSpecs(), Pipeline::kForwardTag,
                                              Pipeline::kBackwardTag, m_device);
            auto inputGrads = backward(outputGrads);
            inputs.clear();
            if (m_pipe.isFirst())
                continue;
            if (j == steady - 1)
                m_pipe.exchange(prev, inputGrads, {}, Pipeline::kBackwardTag, Pipeline::kBackwardTag, m_device);
            else
                inputs = m_pipe.exchange(prev, inputGrads, m_cb.inputSpecs(0, micro + 1), Pipeline::kBackwardTag,
                                         Pipeline::kForwardTag, m_device);
        }
        for (int i = 0; i < warmup; ++i) {  // cool-down
            auto outputGrads = m_pipe.exchange(next, {}, oldestOutputSpecs(), Pipeline::kBackwardTag,
                                               Pipeline::kBackwardTag, m_device);
            auto inputGrads = backward(outputGrads);
            if (!m_pipe.isFirst())
                m_pipe.exchange(prev, inputGrads, {}, Pipeline::kBackwardTag, Pipeline::kBackwardTag, m_device);
        }
    }

private:
    Pipeline& m_pipe;
    const PipelineCallbacks& m_cb;
    torch::Device m_device;
    std::deque<InFlight> m_inFlight;  // oldest first
};

// Interleaved 1F1B (pipeline_schedule.h): interleavedOrder's steps, each receiving what it needs
// when it runs and posting what it produced without waiting.
class Interleaved {
public:
    Interleaved(Pipeline& pipeline, const PipelineCallbacks& callbacks, torch::Device device)
        : m_pipe(pipeline), m_cb(callbacks), m_device(device), m_inFlight(static_cast<size_t>(pipeline.chunks()))
    {
    }

    void run(int micros)
    {
        const int stages = m_pipe.stages(), stage = m_pipe.stage();
        // Chunk c's inputs come from stage − 1 (from the last stage's chunk c − 1 on stage 0);
        // its outputs go to stage + 1 (to stage 0's chunk c + 1 from the last stage).
        const int prev = (stage + stages - 1) % stages, next = (stage + 1) % stages;
        for (const PipelineStep& s : interleavedOrder(stages, stage, m_pipe.chunks(), micros)) {
            auto& chunkInFlight = m_inFlight[static_cast<size_t>(s.chunk)];
            if (s.forward) {
                std::vector<torch::Tensor> inputs;
                if (!m_pipe.isFirstChunk(s.chunk))
                    inputs = m_pipe.receive(prev, m_cb.inputSpecs(s.chunk, s.micro), Pipeline::kForwardTag, m_device);
                chunkInFlight.push_back(forwardOf(m_cb, s.chunk, s.micro, std::move(inputs)));
                if (!m_pipe.isLastChunk(s.chunk))
                    m_pipe.postSends(next, chunkInFlight.back().forward.outputs, Pipeline::kForwardTag);
                continue;
            }
            // Each chunk's backwards come in its forwards' order (both go through the
            // micro-batches in increasing order), so the oldest in flight is this one.
            InFlight f = std::move(chunkInFlight.front());
            chunkInFlight.pop_front();
            std::vector<torch::Tensor> outputGrads;
            if (!m_pipe.isLastChunk(s.chunk))
                outputGrads = m_pipe.receive(next, specsOf(f.forward.outputs), Pipeline::kBackwardTag, m_device);
            auto inputGrads = backwardOf(m_cb, f, outputGrads);
            if (!m_pipe.isFirstChunk(s.chunk))
                m_pipe.postSends(prev, inputGrads, Pipeline::kBackwardTag);
        }
        m_pipe.waitSends();
    }

private:
    Pipeline& m_pipe;
    const PipelineCallbacks& m_cb;
    torch::Device m_device;
    std::vector<std::deque<InFlight>> m_inFlight;  // per model chunk, oldest first
};

}  // namespace

void runOneForwardOneBackward(Pipeline& pipeline, int micros, const PipelineCallbacks& callbacks, torch::Device device)
{
    OneForwardOneBackward(pipeline, callbacks, device).run(micros);
}

std::vector<PipelineStep> interleavedOrder(int stages, int stage, int chunks, int micros)
{
    if (stages < 1 || chunks < 1 || micros < stages || micros % stages != 0)
        throw std::invalid_argument("the interleaved pipeline schedule needs the micro-batches per step and data-parallel "
                                    "rank (" + std::to_string(micros) + " = train.global_batch_size / (micro_batch_size × DP)) "
                                    "to be a positive multiple of parallel.pipeline_model_parallel_size " +
                                    std::to_string(stages));
    const int total = micros * chunks, group = stages * chunks;
    auto step = [&](int k, bool forward) {
        const int chunk = (k % group) / stages;
        return PipelineStep{forward, forward ? chunk : chunks - 1 - chunk, (k / group) * stages + k % stages};
    };
    // Megatron: every forward first when there are only P micro-batches (nothing to interleave).
    const int warmup = micros == stages ? total : std::min(total, (stages - stage - 1) * 2 + (chunks - 1) * stages);
    std::vector<PipelineStep> order;
    for (int k = 0; k < warmup; ++k)
        order.push_back(step(k, true));
    for (int k = 0; k < total - warmup; ++k) {
        order.push_back(step(warmup + k, true));
        order.push_back(step(k, false));
    }
    for (int k = std::max(0, total - warmup); k < total; ++k)
        order.push_back(step(k, false));
    return order;
}

void runInterleavedOneForwardOneBackward(Pipeline& pipeline, int micros, const PipelineCallbacks& callbacks,
                                         torch::Device device)
{
    Interleaved(pipeline, callbacks, device).run(micros);
}

}  // namespace wb::rt
