// The AdamW optimizer of a run: fp32 state, weight decay on matrices only (norms and biases
// excluded, as in Megatron), and only the parameters that train (frozen ones — requires_grad off,
// model.freeze_* — get no optimizer state at all). Training thread only.
#pragma once

#include "core/run_config.h"

#include <torch/torch.h>

#include <memory>

namespace wb::rt {

std::unique_ptr<torch::optim::AdamW> makeOptimizer(torch::nn::Module& model, const core::TrainConfig& train);
/// The same from the two parameter lists a parallel layout hands out (FSDP: its shards).
std::unique_ptr<torch::optim::AdamW> makeOptimizer(const std::vector<torch::Tensor>& decay,
                                                   const std::vector<torch::Tensor>& noDecay,
                                                   const core::TrainConfig& train);

}  // namespace wb::rt
