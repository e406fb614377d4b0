// 1F1B (see pipeline_schedule.h). The exchanges pair up as in Megatron's schedule: a stage's
// "send forward, receive backward" with the next stage meets that stage's "send backward,
// receive forward", and Pipeline::exchange posts both directions before waiting, so neither Gloo
// (a send completes once the peer posted its recv) nor NCCL blocks.
#include "runtime/parallel/pipeline_schedule.h"

#include <algorithm>
#include <deque>

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
        return m_pipe.exchange(m_pipe.stage() - 1, {}, m_cb.inputSpecs(micro), Pipeline::kForwardTag,
                               Pipeline::kForwardTag, m_device);
    }

    // Forward of `micro` on received `inputs`; returns what goes to the next stage.
    std::vector<torch::Tensor> forward(int micro, std::vector<torch::Tensor> inputs)
    {
        for (auto& t : inputs)
            t.set_requires_grad(true);
        InFlight f{inputs, m_cb.forward(micro, inputs)};
        m_inFlight.push_back(std::move(f));
        return m_inFlight.back().forward.outputs;
    }

    // Backward of the oldest micro-batch in flight with the gradients of its outputs; returns
    // the gradients of its inputs (zeros where autograd produced none, so the message is whole).
    std::vector<torch::Tensor> backward(const std::vector<torch::Tensor>& outputGrads)
    {
        InFlight f = std::move(m_inFlight.front());
        m_inFlight.pop_front();
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
            m_cb.backward(roots, grads);
        std::vector<torch::Tensor> inputGrads;
        for (const auto& t : f.inputs)
            inputGrads.push_back(t.grad().defined() ? t.grad() : torch::zeros_like(t));
        return inputGrads;
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
                inputs = m_pipe.exchange(prev, inputGrads, m_cb.inputSpecs(micro + 1), Pipeline::kBackwardTag,
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

}  // namespace

void runOneForwardOneBackward(Pipeline& pipeline, int micros, const PipelineCallbacks& callbacks, torch::Device device)
{
    OneForwardOneBackward(pipeline, callbacks, device).run(micros);
}

}  // namespace wb::rt
