// Tensor parallelism (TP, Megatron layout), optional sequence parallelism (SP) and expert tensor
// parallelism (ETP), applied from outside the model (torchtitan style). Training thread only.
//
// Ranks (Megatron's order, TP fastest; CP = 1 here), numbered inside `world`: the TP group of
// rank r is the TP consecutive ranks {⌊r/TP⌋·TP …}; its data-parallel (DP) group {r mod TP + j·TP}
// holds the same slices. Experts: ETP ∈ {1, TP}; with EP the EP group strides over ETP
// (expert_parallel.h). Under pipeline parallelism `world` is one stage's ranks (pipeline.h), so
// the global rank is stage·TP·DP + dp·TP + tp, and the parameters of other stages (freed, empty)
// are neither sliced nor reduced.
//
// What is sliced (set_data: the full tensors are freed, the optimizer sees only the slice):
//  - decoder attention: q rows by head (H/TP heads), k/v rows by KV group (G/TP groups: TP must
//    divide G, as Megatron-Core's TransformerConfig requires), out columns (row-parallel: partial
//    sums, summed by leave()).
//  - vision blocks: qkv rows (each of q, k, v by head) and bias, proj columns, fc1 rows and bias,
//    fc2 columns; the proj/fc2 biases stay whole and are added once after the sum.
//  - experts with ETP = TP: gate_up's gate and up columns F/TP each, down's rows F/TP; the
//    partial outputs are summed over the TP group (ExpertsRunner below).
//  - embedding and output layer by vocabulary rows (V/TP): masked lookup + all-reduce, and a
//    vocabulary-parallel cross-entropy (max and Σ exp all-reduced), as Megatron's
//    VocabParallelEmbedding / vocab_parallel_cross_entropy.
//  - not sliced: norms, router, patch embedding, projector.
//
// Sequence parallelism (decoder only; the vision encoder runs TP without it): the residual
// stream holds N/TP of the N flattened tokens per rank; norms, residual adds, router and (with
// ETP = 1) the experts run on them. Gradients of the replicated parameters that only saw the
// rank's tokens (decoder norms, routers, final norm) are summed over TP before the DP average,
// as Megatron's allreduce of sequence-parallel gradients does.
#pragma once

#include "core/run_config.h"
#include "runtime/model/moe_layer.h"
#include "runtime/model/tensor_parallel_hook.h"
#include "runtime/parallel/process_group.h"

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace wb::rt {

class VlmModelImpl;

/// Megatron's conjugate operations over `group`, as custom autograd functions (usable alone; the
/// tests check them against one rank). Rows are dim 0.
torch::Tensor copyToTensorRegion(ProcessGroup& group, const torch::Tensor& x);          ///< f: id / allreduce
torch::Tensor reduceFromTensorRegion(ProcessGroup& group, const torch::Tensor& x);      ///< g: allreduce / id
torch::Tensor gatherSequence(ProcessGroup& group, const torch::Tensor& x);              ///< all-gather / reduce-scatter
torch::Tensor reduceScatterSequence(ProcessGroup& group, const torch::Tensor& x);       ///< reduce-scatter / all-gather
torch::Tensor splitSequence(ProcessGroup& group, const torch::Tensor& x);               ///< own rows / all-gather
torch::Tensor gatherSequenceSplitGrad(ProcessGroup& group, const torch::Tensor& x);     ///< all-gather / own rows
/// Row counts differ per rank (the MoE's non-padding tokens): all-gather in rank order, backward
/// sums each rank's rows back to it; and the reverse (sum of every rank's partial rows, own rows).
torch::Tensor gatherRowsVariable(ProcessGroup& group, const torch::Tensor& x, const std::vector<int64_t>& rows);
torch::Tensor reduceScatterRowsVariable(ProcessGroup& group, const torch::Tensor& x, const std::vector<int64_t>& rows);

/// The hook the model calls (tensor_parallel_hook.h) over one TP group.
class TensorParallelRegion final : public TensorParallelHook {
public:
    TensorParallelRegion(ProcessGroup& group, bool sequenceParallel) : m_group(group), m_sequenceParallel(sequenceParallel) {}
    torch::Tensor enter(const torch::Tensor& x) override;
    torch::Tensor leave(const torch::Tensor& y) override;
    torch::Tensor scatterTokens(const torch::Tensor& x) override;
    torch::Tensor gatherTokens(const torch::Tensor& x) override;
    std::pair<int64_t, int64_t> localTokens(int64_t numTokens) const override;
    int64_t shardStart(int64_t localRows) const override { return m_group.rank() * localRows; }
    torch::Tensor maxOverShards(const torch::Tensor& x) override;

private:
    ProcessGroup& m_group;
    bool m_sequenceParallel;
};

class TensorParallel {
public:
    /// Creates the TP and DP groups from `world` (every rank calls it, before the EP groups).
    /// Throws std::invalid_argument for a layout it cannot run (named field, what to do).
    TensorParallel(ProcessGroup& world, const core::ParallelConfig& parallel);
    ~TensorParallel();

    /// Slices `model` (after the broadcast, after EP sliced its experts) and installs the hooks
    /// and, for ETP = TP, the experts runner around `expertsInner` (EP's runner, or null).
    /// Throws std::invalid_argument when TP does not divide heads, KV groups or widths.
    void install(VlmModelImpl& model, const core::ModelConfig& config, ExpertsRunner* expertsInner);

    ProcessGroup& tensorGroup() { return *m_tensorGroup; }
    ProcessGroup& dataGroup() { return *m_dataGroup; }
    int size() const { return m_size; }
    int rank() const { return m_tensorGroup->rank(); }
    bool sequenceParallel() const { return m_sequenceParallel; }
    int expertTensorSize() const { return m_expertTensorSize; }

    /// Before the data-parallel average: sums over TP the gradients that are partial per TP rank
    /// (sequence-parallel norms, routers and final norm: each saw only the rank's tokens).
    void reducePartialGradients();
    /// The parameters whose gradient is partial per TP rank (empty without SP). Under FSDP their
    /// gradients live on the shards: parallel_training.cpp sums those with sumOverTensorGroup().
    const std::vector<torch::Tensor>& partialParameters() const { return m_partial; }
    /// Sums `tensors` (the same shapes on every TP rank) over the TP group in place, as one flat
    /// buffer in one allreduce.
    void sumOverTensorGroup(const std::vector<torch::Tensor>& tensors);
    /// How many ranks of `worldSize` hold the same values of `p` once gradients are reduced (for
    /// the global grad norm): DP for a TP slice, the world for a replicated parameter,
    /// world / (EP · ETP) for an expert slice.
    int copiesOf(const torch::Tensor& p, int worldSize) const;
    /// A MoE layer's gate_up / down (sliced by EP and/or ETP, or whole).
    bool isExpert(const torch::Tensor& p) const;

private:
    void sliceAttention(torch::nn::Module& attention, int64_t headDim);
    void sliceVisionBlock(torch::nn::Module& block, int64_t headDim);
    void sliceExperts(torch::nn::Module& moe);
    void sliceVocabulary(torch::nn::Module& decoder);
    void markSliced(const torch::Tensor& p) { m_sliced.push_back(p); }

    int m_size;
    bool m_sequenceParallel;
    int m_expertTensorSize;
    int m_expertParallelSize;
    std::unique_ptr<ProcessGroup> m_tensorGroup;
    std::unique_ptr<ProcessGroup> m_dataGroup;
    std::unique_ptr<TensorParallelRegion> m_decoderRegion, m_visionRegion, m_vocabRegion;
    std::unique_ptr<ExpertsRunner> m_expertsRunner;
    std::vector<torch::Tensor> m_sliced;
    std::vector<torch::Tensor> m_experts;
    std::vector<torch::Tensor> m_partial;  // summed over TP before the DP average
};

}  // namespace wb::rt
