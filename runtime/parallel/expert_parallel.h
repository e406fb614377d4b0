// Expert parallelism (EP), applied from outside the model: the experts of every MoE layer are
// split over the EP ranks (each holds E/EP of them: the module's expert tensors become the local
// slice, so the memory saving is real), and each layer's tokens are sent to the rank that holds
// their expert and back by all-to-all with variable counts (counts exchanged first). Backward is
// the reverse all-to-all (a custom autograd function). Training thread only.
//
// Rank layout (Megatron's, TP = PP = CP = 1): EP groups are consecutive ranks
// {k·EP, …, k·EP+EP−1}; the expert-data-parallel (EDP) group of rank r is {r mod EP + j·EP}: the
// ranks that hold the same experts. Expert gradients are summed over EDP, dense ones over all.
//
// Shapes: T tokens of this rank, K active experts, A = T·K assignments, D width, E experts,
// L = E/EP local experts, R assignments received from the EP group.
#pragma once

#include "runtime/model/moe_layer.h"
#include "runtime/parallel/process_group.h"

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace wb::rt {

class ExpertParallel final : public ExpertsRunner {
public:
    /// Creates the EP and EDP groups from `world` (every rank must call it). `epSize` × `etpSize`
    /// divides world.size(). With expert tensor parallelism (etpSize > 1, tensor_parallel.h) the
    /// ETP ranks are the fastest: the EP group of rank r strides over ETP, {b + r mod ETP + i·ETP}
    /// with b = ⌊r/(ETP·EP)⌋·ETP·EP, and EDP over ETP·EP (Megatron's expert rank order).
    /// Throws CommError when a group cannot be formed.
    ExpertParallel(ProcessGroup& world, int epSize, int etpSize = 1);

    /// Slices every MoE layer's experts of `model` to this rank's E/EP and installs this runner.
    /// Call after the parameters were made equal on all ranks (broadcast) and before an optimizer
    /// is built. Throws std::invalid_argument when EP does not divide a layer's experts.
    void install(torch::nn::Module& model);

    /// The sliced expert tensors (gradients: reduce over expertDataGroup()).
    const std::vector<torch::Tensor>& expertParameters() const { return m_expertParameters; }
    bool isExpertParameter(const torch::Tensor& p) const;

    ProcessGroup& expertGroup() { return *m_expertGroup; }
    ProcessGroup& expertDataGroup() { return *m_expertDataGroup; }
    const ProcessGroup& expertDataGroup() const { return *m_expertDataGroup; }
    int size() const { return m_epSize; }

    torch::Tensor run(const torch::Tensor& x_TD, const RouterOutput& route, const torch::Tensor& gateUp_LDF2,
                      const torch::Tensor& down_LFD, int numExperts) override;

private:
    int m_epSize;
    std::unique_ptr<ProcessGroup> m_expertGroup;
    std::unique_ptr<ProcessGroup> m_expertDataGroup;
    std::vector<torch::Tensor> m_expertParameters;
};

/// Differentiable all-to-all over `group`: rows of x split by inputSplits go out, outputSplits
/// rows come in from each rank; backward sends the gradients back the same way reversed.
torch::Tensor allToAllWithGrad(ProcessGroup& group, const torch::Tensor& x, const std::vector<int64_t>& outputSplits,
                               const std::vector<int64_t>& inputSplits);

}  // namespace wb::rt
