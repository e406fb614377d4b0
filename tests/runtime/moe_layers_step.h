// One training step's autograd through two MoE layers (router tests, CPU and GPU): two
// micro-batches' forwards of different token counts (so the second reuses or adds router graphs
// while the first's are still needed), then one backward over both. Returns the loss and the
// gradients of both layers' parameters, in parameter order.
#pragma once

#include "runtime/model/moe_layer.h"

#include <torch/torch.h>

#include <utility>
#include <vector>

namespace wb::test {

inline std::pair<torch::Tensor, std::vector<torch::Tensor>> twoLayersTwoMicroBatches(rt::MoeLayer& l1, rt::MoeLayer& l2,
                                                                                      const torch::Tensor& x1,
                                                                                      const torch::Tensor& x2)
{
    auto [y1, aux1] = l1->forward(x1);
    auto [z1, auxz1] = l2->forward(y1);
    auto [y2, aux2] = l1->forward(x2);
    auto [z2, auxz2] = l2->forward(y2);
    auto loss = z1.pow(2).sum() + z2.pow(2).sum() + aux1 + auxz1 + aux2 + auxz2;
    std::vector<torch::Tensor> params;
    for (auto& p : l1->parameters())
        params.push_back(p);
    for (auto& p : l2->parameters())
        params.push_back(p);
    auto grads = torch::autograd::grad({loss}, params);
    return {loss.detach(), grads};
}

}  // namespace wb::test
