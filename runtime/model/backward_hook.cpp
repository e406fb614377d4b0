// A point in the backward pass (see backward_hook.h).
#include "runtime/model/backward_hook.h"

#include <stdexcept>
#include <string>

namespace wb::rt {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Identity on up to three tensors (a layer's inputs or outputs: {h, aux} at most). Fixed tensor
// arguments, not a variable_list: LibTorch's custom functions only see tensors passed as
// arguments of their own, so a list would leave the hook out of the graph.
struct HookNode : torch::autograd::Function<HookNode> {
    static variable_list forward(AutogradContext* ctx, const torch::Tensor& a, const torch::Tensor& b,
                                 const torch::Tensor& c, int64_t target, int64_t tag)
    {
        ctx->saved_data["target"] = target;
        ctx->saved_data["tag"] = tag;
        return {a, b, c};
    }
    static variable_list backward(AutogradContext* ctx, variable_list grads)
    {
        auto* target = reinterpret_cast<BackwardHookTarget*>(ctx->saved_data["target"].toInt());
        target->onBackward(ctx->saved_data["tag"].toInt());
        grads.resize(5);  // target, tag: no gradient
        return grads;
    }
};

}  // namespace

std::vector<torch::Tensor> withBackwardHook(const std::vector<torch::Tensor>& xs, BackwardHookTarget* target,
                                            int64_t tag)
{
    if (xs.size() > 3)
        throw std::invalid_argument("a backward hook on " + std::to_string(xs.size()) +
                                    " tensors (a layer's inputs or outputs are 3 at most)");
    // Unused slots get an empty tensor, not an undefined one (autograd wants a device for each output).
    const torch::Tensor none =
        torch::empty({0}, xs.empty() ? torch::TensorOptions() : xs[0].options().requires_grad(false));
    auto out = HookNode::apply(xs.size() > 0 ? xs[0] : none, xs.size() > 1 ? xs[1] : none, xs.size() > 2 ? xs[2] : none,
                               reinterpret_cast<int64_t>(target), tag);
    out.resize(xs.size());
    return out;
}

bool anyRequiresGrad(const std::vector<torch::Tensor>& xs)
{
    for (const auto& x : xs)
        if (x.defined() && x.requires_grad())
            return true;
    return false;
}

}  // namespace wb::rt
