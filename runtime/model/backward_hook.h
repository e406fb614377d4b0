// A point in the backward pass that the code running a layer can hear about: an identity on a
// layer's inputs (or outputs) whose backward calls its owner when the gradient of those tensors
// arrives. On a layer's inputs that is once the layer's backward is done: autograd runs its
// AccumulateGrad nodes (and the bf16 weights' gradient nodes, which come later in the graph than
// the layer's entry) before the node on the inputs. FSDP reduce-scatters a unit there and gathers
// it again at the one on its outputs; the early gradient norm counts a layer's finished gradients.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

namespace wb::rt {

class BackwardHookTarget {
public:
    virtual ~BackwardHookTarget() = default;
    /// On autograd's thread, when the gradient of the hooked tensors arrives; `tag` as given.
    virtual void onBackward(int64_t tag) = 0;
};

/// `xs` (at most 3 defined tensors) through one identity autograd node whose backward calls
/// `target->onBackward(tag)`. `target` must outlive the graph.
std::vector<torch::Tensor> withBackwardHook(const std::vector<torch::Tensor>& xs, BackwardHookTarget* target,
                                            int64_t tag);

/// True when one of `xs` is defined and requires a gradient (a hook on them would be reached).
bool anyRequiresGrad(const std::vector<torch::Tensor>& xs);

}  // namespace wb::rt
