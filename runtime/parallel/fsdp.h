// Fully sharded data parallelism with Megatron's strategy names, applied from outside the model:
//   optim              (ZeRO-1) optimizer state sharded; full parameters and gradients on every
//                      rank; gradients reduce-scattered after the last micro-batch, the updated
//                      shards all-gathered into the parameters after the step.
//   optim_grads        (ZeRO-2) + gradients reduce-scattered after every micro-batch's backward,
//                      each rank keeps only its shard (the full gradients are freed).
//   optim_grads_params (ZeRO-3) + parameters sharded: each vision block and decoder layer is a
//                      unit, all-gathered just before its forward (the next unit's gather is
//                      prefetched asynchronously), freed right after, gathered again before its
//                      backward, its gradients reduce-scattered and freed right after it. The
//                      rest (embedding, output, projector, norms) is one root unit that stays
//                      gathered and is reduce-scattered after each micro-batch (as ZeRO-2).
// Sharding is per parameter (as FSDP2): the flattened parameter is padded to N·c elements and rank
// i owns elements [i·c, (i+1)·c). A unit's shards travel as one flat buffer per collective.
// Shards, the optimizer state and the reduced gradients are fp32; compute precision is the
// trainer's (bf16 autocast on CUDA). Frozen parameters are not sharded (they stay whole).
// With expert parallelism, expert slices are sharded over the expert-data-parallel group and
// dense parameters over the data-parallel group. With tensor parallelism the model is sliced
// first and each TP slice is sharded over the DP group of its TP coordinate (the ranks holding
// the same slice); parallel_training.cpp sums the gradients that are partial per TP rank on the
// shards afterwards (docs/parallel.md "FSDP × tensor parallelism"). Training thread only.
//
// Freeing a ZeRO-3 parameter releases its storage's memory and keeps the tensor (shape, autograd
// identity); gathering puts new memory under it. Nothing may read a freed parameter: the trainer
// goes through this class for gradients, norms and the optimizer.
#pragma once

#include "runtime/model/backward_hook.h"
#include "runtime/model/layer_runner.h"
#include "runtime/parallel/process_group.h"

#include <torch/torch.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wb::rt {

enum class ShardingStrategy { Optim, OptimGrads, OptimGradsParams };

/// "optim" | "optim_grads" | "optim_grads_params"; nullopt otherwise (no_shard included).
std::optional<ShardingStrategy> parseShardingStrategy(const std::string& name);
std::string shardingStrategyName(ShardingStrategy strategy);

/// Steady-state bytes held by one rank (weights, gradients between steps' peaks, optimizer).
struct ShardedBytes {
    int64_t parameters = 0;
    int64_t gradients = 0;
    int64_t optimizerState = 0;
};

class Fsdp final : public LayerRunner, public BackwardHookTarget {
public:
    /// `dense`: group that shards non-expert parameters (DP); `expert`: group for parameters
    /// where isExpert() holds (EDP; the same as dense without EP). Both must outlive this.
    /// Gradients are summed over the groups and divided by `gradDivisor` (the DP size), expert
    /// ones by `expertGradDivisor` (0: gradDivisor; with TP and without SP the TP ranks that
    /// share an expert computed it on the same tokens, so they count as well). `world` (may be
    /// null: `dense`) holds every rank whose copy of parameter i must agree on whether it got a
    /// gradient. The parameters of `model` must already be equal on the ranks of each group.
    Fsdp(torch::nn::Module& model, ShardingStrategy strategy, ProcessGroup& dense, ProcessGroup& expert,
         std::function<bool(const torch::Tensor&)> isExpert, int gradDivisor, int expertGradDivisor = 0,
         ProcessGroup* world = nullptr);
    ~Fsdp() override;

    /// Runner that runs inside this one (activation recompute); not owned, may be null.
    void setInner(LayerRunner* inner) { m_inner = inner; }
    /// ZeRO-3 (optim_grads_params): false keeps a layer's gathered parameters from its forward
    /// until its backward is done (parallel.fsdp_reshard_after_forward), so the backward gathers
    /// nothing: one all-gather per layer and micro-batch instead of two, for the memory of the
    /// unsharded layers between forward and backward. Default true (freed after forward).
    void setReshardAfterForward(bool reshard) { m_reshardAfterForward = reshard; }
    /// The dtype gradients are reduce-scattered in (parallel.grad_reduce_in_fp32): kFloat32
    /// (default) or kBFloat16 (half the bytes; the shards' gradients stay fp32). Gloo has no bf16
    /// reduction, so on the CPU the same rounding is applied around an fp32 reduce-scatter.
    void setReduceDtype(torch::ScalarType dtype) { m_reduceDtype = dtype; }
    std::vector<torch::Tensor> run(const LayerKey& key, const LayerFn& fn, const std::vector<torch::Tensor>& inputs) override;

    /// What the optimizer updates: fp32 shards, split into weight-decay (matrices) and no-decay.
    std::vector<torch::Tensor> shards(bool decay) const;

    /// Before a micro-batch's forward: `hasImages` may differ between ranks (ZeRO-3 then gathers
    /// the vision units for everyone up front, so the collectives still match).
    void beginMicroBatch(bool hasImages);
    /// After a micro-batch's backward: ZeRO-2/3 reduce-scatter what is not reduced yet.
    void afterBackward();
    /// After the last micro-batch: ZeRO-1 reduce-scatters; all: gradients defined on no rank are
    /// dropped (AdamW skips them as on one rank), the rest divided by gradDivisor.
    void finishGradients();
    /// Squared L2 norm of all shard gradients over all ranks of `world` (one allreduce). Without
    /// `copiesOf` every element lives on exactly one rank of `world`; with it, a parameter whose
    /// reduced gradient `copiesOf(param)` ranks hold (e.g. replicated over TP) is sharded over
    /// its group and the other copies are divided out: copiesOf / group size per shard.
    torch::Tensor gradNormSquared(ProcessGroup& world, const std::function<int(const torch::Tensor&)>& copiesOf = {});
    /// The fp32 shard of `param` (a trainable parameter of the model), or an undefined tensor.
    torch::Tensor shardOf(const torch::Tensor& param) const;
    /// After optimizer.step(): the updated shards into the parameters (ZeRO-3: root unit only).
    void afterOptimizerStep();

    ShardingStrategy strategy() const { return m_strategy; }
    /// e.g. "FSDP optim_grads_params: 24 all-gathers of 12 layers in 2 micro-batches (reshard
    /// after forward: no), gradients reduce-scattered in bf16" — for the rank's log.
    std::string summary() const;
    /// This rank's bytes; the optimizer state at `momentBytesPerValue` per shard value (both AdamW
    /// moments: 8 fp32, 4 bf16: the moments are built from the shards, in their configured dtype).
    ShardedBytes bytes(int64_t momentBytesPerValue = 8) const;

private:
    struct Param;
    struct Unit;
    struct Gather;

    std::vector<ProcessGroup*> groups() const;
    ProcessGroup* groupOf(const Param& p) const;
    void gatherUnit(size_t unit, bool wait);
    void completeGather(size_t unit);
    void releaseUnit(size_t unit);
    void reduceUnit(size_t unit);

public:  // the autograd hooks (backward_hook.h): a unit's backward begins, or is done
    void onBackward(int64_t tag) override;
    void beforeUnitBackward(size_t unit);
    void afterUnitBackward(size_t unit);

private:
    torch::nn::Module& m_model;
    ShardingStrategy m_strategy;
    ProcessGroup& m_dense;
    ProcessGroup& m_expert;
    int m_gradDivisor;
    int m_expertGradDivisor;
    ProcessGroup& m_world;  // presence of gradients agreed over it
    LayerRunner* m_inner = nullptr;
    std::vector<Param> m_params;
    std::vector<Unit> m_units;                     // 0 = root, then layers in model order
    std::map<const torch::nn::Module*, size_t> m_unitOf;
    bool m_visionUpFront = false;                  // this micro-batch: vision units gathered for all
    bool m_reshardAfterForward = true;
    torch::ScalarType m_reduceDtype = torch::kFloat32;
    int64_t m_layerGathers = 0;  // all-gathers of layer units (ZeRO-3), since construction
    int64_t m_microBatches = 0;  // afterBackward() calls
};

}  // namespace wb::rt
