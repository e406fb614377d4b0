// The optimizer step hidden behind the next forward (train.overlap_optimizer, CUDA). Layer i's
// AdamW update only has to finish before layer i's next forward reads its weights. So, once the
// gradients and their global norm are complete on the training stream, the updates go to a side
// stream one part of the model at a time, in the order the forward reads them (vision input,
// vision blocks, projectors, token embedding, decoder layers — the last with the final norm and
// the output layer), each followed by an event; the next forward waits, on the device, only for
// the part it is about to run (a LayerRunner around each layer, a ParameterFence at the entries
// outside the layers) while the updates of the later parts still run. No device-wide
// synchronize: the step ends on an event of the training stream (StepTimer::finish).
//
// The update is the serial one: the same fused AdamW kernel per parameter with the same inputs
// (gradients, clip divisor, learning rate), so the weights are bit-identical to the serial step's;
// only when they are written changes. Not under FSDP (its step is followed by the all-gather of the
// updated shards, which the forward needs whole). Training thread only.
#pragma once

#include "runtime/model/bf16_weights.h"
#include "runtime/model/layer_runner.h"
#include "runtime/model/parameter_fence.h"
#include "runtime/train/optimizer.h"

#include <torch/torch.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace wb::rt {

/// The parameters the forward first reads at one point, in forward order.
struct UpdateGroup {
    std::string name;  ///< "vision.input", "vision.blocks.3", "projectors", "decoder.input", "decoder.layers.5"
    std::vector<torch::Tensor> params;
    ParameterSubset subset;  ///< the same parameters, for the optimizer's subset step
};

/// The parameters of `model` (a VlmModel: parameter names "vision.blocks.N.…", "decoder.layers.N.…",
/// …) that `optimized` holds, grouped in forward order. The final norm and the output layer join
/// the last decoder layer's group; a parameter whose name places it nowhere goes into the first
/// group (waited for before the forward reads anything). Every optimized parameter is in exactly
/// one group; empty groups are left out.
std::vector<UpdateGroup> forwardOrderGroups(torch::nn::Module& model, const std::vector<torch::Tensor>& optimized);

/// CUDA: makes a high-priority stream the calling thread's current stream (after the device's work
/// so far is done). The update stream has the default, lowest priority, so whenever SMs free up
/// while both streams have work queued, the training stream's blocks go first and the updates fill
/// the gaps — without it the forward's kernels queue behind the updates' (measured on one H200: the
/// first forward waited ≈ 29 of the updates' 32 ms). No-op on the CPU.
void preferTrainingStream(torch::Device device);

/// CUDA: the calling thread's matmuls leave `sms` SMs free (0: every SM again). ATen's SM carve-out
/// reaches cuBLASLt (SM_COUNT_TARGET: addmm, linear with bias) and the persistent grid of the grouped
/// GEMM (LibTorch >= 2.7); the plain cuBLAS handle that ATen's mm runs on gets the same target here.
/// Without it a persistent GEMM sized for every SM waits for the SMs other work holds and runs in
/// two waves. No-op on the CPU.
void carveMatmuls(int sms);

class OptimizerOverlap final : public LayerRunner, public ParameterFence {
public:
    /// `inner`: the runner each layer goes on to (recompute; not owned, may be null).
    OptimizerOverlap(std::vector<UpdateGroup> groups, LayerRunner* inner);
    ~OptimizerOverlap() override;
    OptimizerOverlap(const OptimizerOverlap&) = delete;
    OptimizerOverlap& operator=(const OptimizerOverlap&) = delete;

    /// Waits for the layer's group, then runs it through the inner runner.
    std::vector<torch::Tensor> run(const LayerKey& key, const LayerFn& fn,
                                   const std::vector<torch::Tensor>& inputs) override;
    void beforeUse(ParameterUse use) override;

    /// Enqueues one AdamW step (fusedAdamWStep's semantics; `gradScale` divides every gradient,
    /// may be undefined) group by group on the update stream once the training stream has got
    /// this far, releases the gradients (the next backward makes new ones), and runs
    /// `afterUpdates` on the update stream after the last update (the layout's re-zeroing of
    /// bucketed gradients) before the last group's event. Returns without waiting. On the CPU the
    /// same group-by-group step runs at once (adamWStepAten).
    void step(torch::optim::AdamW& optimizer, const MomentDtypes& dtypes, const torch::Tensor& gradScale,
              const std::function<void()>& afterUpdates = {});

    /// The current stream waits for every update enqueued so far (before a checkpoint reads the
    /// weights).
    void waitAll();

    /// For tests: work enqueued on the update stream before each step's first update (a delay
    /// that makes a missing wait visible as stale weights in the next forward).
    void setBeforeUpdates(std::function<void()> work) { m_beforeUpdates = std::move(work); }
    /// The SM budget of the updates (0, the default: the updates fill the gaps the higher-priority
    /// training stream leaves, in short blocks). `sms` > 0: each update kernel runs on exactly
    /// `sms` resident blocks, and from step() until the forward reaches the last group the
    /// calling thread's matmuls (cuBLAS, cuBLASLt, the grouped GEMM) are told to leave `sms` SMs
    /// free, so the memory-bound updates run beside the compute-bound forward instead of between
    /// its kernels. The same updates, bit for bit; only the SMs they run on change.
    void setSmBudget(int sms) { m_smBudget = sms > 0 ? sms : 0; }
    int smBudget() const { return m_smBudget; }
    /// The kept bf16 copies the updates write beside the weights (not owned; null = none).
    void setBf16Weights(Bf16Weights* weights) { m_bf16Weights = weights; }

    const std::vector<UpdateGroup>& groups() const { return m_groups; }
    /// Device waits enqueued since construction (a test's evidence that the fences are reached).
    int64_t waits() const { return m_waits; }

private:
    void waitFor(int group);
    int groupOf(const std::string& name) const;

    struct Device;  // the update stream and one event per group (CUDA builds)
    std::vector<UpdateGroup> m_groups;
    std::vector<int> m_visionLayer, m_decoderLayer;  // layer index → group (−1: none)
    int m_visionInput = -1, m_projectors = -1, m_decoderInput = -1;
    LayerRunner* m_inner;
    int m_waitedUpTo = -1;  // groups [0, m_waitedUpTo] already waited for since the last step()
    bool m_pending = false;  // a step() was enqueued on the update stream
    int m_smBudget = 0;
    bool m_carved = false;  // the matmuls leave m_smBudget SMs free (carveMatmuls)
    int64_t m_waits = 0;
    std::function<void()> m_beforeUpdates;
    Bf16Weights* m_bf16Weights = nullptr;
    std::unique_ptr<Device> m_device;
};

}  // namespace wb::rt
