// The trainer's one entry point to multi-rank training: builds the layout a RunConfig asks for
// (data parallel, tensor parallel, context parallel and expert parallel groups, FSDP strategy) over the world group and
// applies it to the model from outside (torchtitan style). The trainer asks it for the tensors
// the optimizer updates, the global gradient norm, and calls it around backward and the step.
// Training thread only.
#pragma once

#include "core/run_config.h"
#include "runtime/model/layer_runner.h"
#include "runtime/parallel/context_parallel.h"
#include "runtime/parallel/data_parallel.h"
#include "runtime/parallel/expert_parallel.h"
#include "runtime/parallel/fsdp.h"
#include "runtime/parallel/gradient_reducer.h"
#include "runtime/parallel/process_group.h"
#include "runtime/parallel/tensor_parallel.h"

#include <torch/torch.h>

#include <memory>
#include <string>
#include <vector>

namespace wb::rt {

class VlmModelImpl;
struct VlmBatch;

class ParallelTraining {
public:
    /// `world` must outlive this. Creates the EP/EDP groups (a collective over all ranks) when
    /// expert_model_parallel_size > 1. Throws CommError, or std::invalid_argument for a layout
    /// this build cannot run.
    ParallelTraining(const core::RunConfig& config, ProcessGroup& world);
    ~ParallelTraining();

    /// After the model is built, frozen and on its device: makes the parameters equal on all
    /// ranks (broadcast from rank 0), slices the experts (EP), shards (FSDP) and installs the
    /// layer runner: FSDP's, with `inner` (e.g. activation recompute; may be null) inside it.
    void attach(VlmModelImpl& model, LayerRunner* inner);

    /// The tensors the optimizer updates, matrices (weight decay) or the rest: the trainable
    /// parameters, or their fp32 shards under FSDP.
    std::vector<torch::Tensor> optimizedParameters(bool decay) const;

    void beginMicroBatch(bool hasImages);
    /// After project(), before the decoder: context parallelism keeps this rank's share of the
    /// micro-batch's tokens (ContextParallel::shard); nothing otherwise.
    void shardSequence(VlmBatch& batch) const;
    /// Before the step's last backward on this rank: with parallel.overlap_grad_reduce (not
    /// FSDP) its gradient buckets are reduced while it runs. Earlier backwards only accumulate.
    void beforeLastBackward();
    void afterBackward();
    /// After the last micro-batch: gradients averaged over the data-parallel ranks (experts over
    /// their expert-data-parallel group), or reduce-scattered into the shards.
    void finishGradients();
    /// Global L2 norm of the gradients of optimizedParameters() over all ranks (device scalar).
    torch::Tensor gradNorm() const;
    /// After the optimizer's step and zero_grad. Overlapped reduction: the bucketed gradients are
    /// views of the reducer's buffers again, zeroed (GradientReducer::zeroGradients).
    void afterOptimizerStep();

    /// True when no rank holds the whole model (EP > 1, TP > 1 or FSDP): each rank checkpoints its part.
    bool sharded() const { return m_fsdp != nullptr || m_expertParallel != nullptr || m_tensorParallel != nullptr; }
    /// FSDP: the optimizer updates shards; the trainable parameters are gathered from them.
    bool fullySharded() const { return m_fsdp != nullptr; }

    // Tensor and context parallelism (tensor_parallel.h, context_parallel.h): the TP and CP ranks
    // of a DP rank train on the same micro-batches, so the trainer splits the step over DP, not
    // over the world.
    /// world / (TP · CP).
    int dataParallelSize() const;
    int dataParallelRank() const;
    /// False on TP ranks other than the first and on CP ranks other than the first: their tokens
    /// and FLOPs repeat the first's and are left out of the step's sums over ranks.
    bool countsStepTotals() const { return countsLoss() && (!m_contextParallel || m_contextParallel->rank() == 0); }
    /// False on TP ranks other than the first: their LM loss repeats the first's. (Each CP rank's
    /// loss is its share of the micro-batch's: all of them count.)
    bool countsLoss() const { return !m_tensorParallel || m_tensorParallel->rank() == 0; }
    /// True when each TP rank's aux loss is its share of the micro-batch's (sequence parallel):
    /// the aux loss is then summed over all ranks, TP included.
    bool auxLossIsShared() const { return m_tensorParallel && m_tensorParallel->sequenceParallel(); }
    /// e.g. "fsdp optim_grads_params, ep2 × edp2: per rank parameters 1.2 MiB, gradients …"
    /// One line for the log: per-rank parameter, gradient and optimizer-state bytes, the optimizer
    /// state at `momentBytesPerValue` per trainable value (both AdamW moments: 8 fp32, 4 bf16).
    std::string memorySummary(int64_t momentBytesPerValue = 8) const;
    /// The gradient reduction's counters for the log: FSDP's (Fsdp::summary), else the overlapped
    /// reducer's (GradientReducer::summary), or "" with neither.
    std::string gradientReductionSummary() const;

private:
    std::unique_ptr<Fsdp> makeFsdp(VlmModelImpl& model, ShardingStrategy strategy);
    void makeGradientReducer();
    void finishTensorParallelGradients();
    void sumPartialShardGradients();
    torch::Tensor tensorParallelGradNorm() const;
    int modelParallelBlock() const;  ///< TP · CP: the ranks that share a data-parallel rank's micro-batches

    const core::RunConfig& m_config;
    ProcessGroup& m_world;
    VlmModelImpl* m_model = nullptr;
    std::unique_ptr<TensorParallel> m_tensorParallel;  // TP > 1 (before CP and EP: group creation order)
    std::unique_ptr<ContextParallel> m_contextParallel;  // CP > 1
    std::unique_ptr<ExpertParallel> m_expertParallel;
    std::unique_ptr<Fsdp> m_fsdp;
    std::unique_ptr<DataParallel> m_dense;    // all ranks (with TP: the DP group)
    std::unique_ptr<DataParallel> m_experts;  // expert-data-parallel group (EP, or TP)
    std::unique_ptr<GradientReducer> m_reducer;  // overlap_grad_reduce without FSDP, world > 1
};

}  // namespace wb::rt
