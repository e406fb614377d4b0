// One step's statistics reduced over the ranks (DESIGN.md §3.2): times and memory are the max over
// ranks; tokens, images, FLOPs and the loss sums are summed, each counted once where tensor or
// context parallel ranks repeat them. The same reduction carries the stop flag, so every rank
// learns at the same step that one of them was asked to stop. Training thread only.
#pragma once

#include "core/metrics_schema.h"
#include "runtime/parallel/parallel_training.h"
#include "runtime/parallel/process_group.h"

#include <torch/torch.h>

namespace wb::rt {

class StepReducer {
public:
    /// `world`: every rank of the run; `parallel`: its layout (which ranks count what). Both
    /// outlive the reducer.
    StepReducer(ProcessGroup& world, const ParallelTraining& parallel, torch::Device device)
        : m_world(world), m_parallel(parallel), m_device(device)
    {
    }

    /// Replaces this rank's values in `r`, `flops` and the loss sums (device scalars; CPU scalars
    /// afterwards when there are several ranks) with the run's. `stopRequested`: this rank's stop
    /// flag now. Two allreduces of a few doubles; nothing to do on one rank.
    void reduce(core::StepRecord& r, double& flops, torch::Tensor& lmSum, torch::Tensor& auxSum, bool stopRequested);
    /// Some rank was asked to stop before the last reduce.
    bool stopAgreed() const { return m_stopAgreed; }

private:
    ProcessGroup& m_world;
    const ParallelTraining& m_parallel;
    torch::Device m_device;
    bool m_stopAgreed = false;
};

}  // namespace wb::rt
