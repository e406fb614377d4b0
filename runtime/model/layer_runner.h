// LayerRunner: how a stack (vision encoder, decoder) runs each of its layers. The model calls
// run() once per layer with the layer's work as a function of the tensors that carry gradients;
// what happens around that call is decided from outside the model (torchtitan style):
// activation recompute (runtime/train), FSDP's all-gather before and free after a layer
// (runtime/parallel), per-layer timing. Runners compose: an outer runner calls the inner one.
//
// Contract for `fn`: a pure function of `inputs` and of tensors it captured that need no gradient
// (angles, masks, index lists); it may be called again in backward (recompute), so it must not
// change state it reads. It returns the layer's outputs (decoder: {h, aux_loss}; vision: {x}).
// Training thread only.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <vector>

namespace wb::rt {

struct LayerKey {
    const char* stack = "";                 ///< "vision" or "decoder"
    int index = 0;                          ///< layer index within the stack
    int count = 0;                          ///< layers in the stack
    torch::nn::Module* module = nullptr;    ///< the layer (its parameters)
};

using LayerFn = std::function<std::vector<torch::Tensor>(const std::vector<torch::Tensor>& inputs)>;

class LayerRunner {
public:
    virtual ~LayerRunner() = default;
    /// Default: call the layer.
    virtual std::vector<torch::Tensor> run(const LayerKey& key, const LayerFn& fn,
                                           const std::vector<torch::Tensor>& inputs)
    {
        return fn(inputs);
    }
};

/// Runs `key`'s layer through `runner`, or directly when there is none.
inline std::vector<torch::Tensor> runLayer(LayerRunner* runner, const LayerKey& key, const LayerFn& fn,
                                           const std::vector<torch::Tensor>& inputs)
{
    return runner ? runner->run(key, fn, inputs) : fn(inputs);
}

}  // namespace wb::rt
