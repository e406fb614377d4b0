// AdamW construction (see optimizer.h).
#include "runtime/train/optimizer.h"

namespace wb::rt {

std::unique_ptr<torch::optim::AdamW> makeOptimizer(torch::nn::Module& model, const core::TrainConfig& t)
{
    std::vector<torch::Tensor> decay, noDecay;
    for (auto& p : model.parameters())
        if (p.requires_grad())
            (p.dim() >= 2 ? decay : noDecay).push_back(p);
    return makeOptimizer(decay, noDecay, t);
}

std::unique_ptr<torch::optim::AdamW> makeOptimizer(const std::vector<torch::Tensor>& decay,
                                                   const std::vector<torch::Tensor>& noDecay,
                                                   const core::TrainConfig& t)
{
    auto options = [&](double wd) {
        return std::make_unique<torch::optim::AdamWOptions>(
            torch::optim::AdamWOptions(t.lr).betas({t.adamBeta1, t.adamBeta2}).eps(t.adamEps).weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, options(t.weightDecay));
    groups.emplace_back(noDecay, options(0.0));
    return std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(t.lr));
}

}  // namespace wb::rt
