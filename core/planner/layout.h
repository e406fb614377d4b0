// A parallel layout: the planner's unit of search, lint and prediction. Every field maps to a
// RunConfig field of the same meaning (parallel / recompute / cuda_graph / train / model.freeze_*),
// except the few Megatron options RunConfig does not carry yet (marked "planner only"), which the
// generators emit directly. Sizes follow megatron-bridge.md §3. Plain data; any thread.
#pragma once

#include "core/run_config.h"

#include <string>
#include <vector>

namespace wb::core::planner {

struct Layout {
    int worldSize = 1;
    int tp = 1, cp = 1, pp = 1, vpp = 1, ep = 1, etp = 1;
    int mbs = 1, gbs = 1;
    bool sequenceParallel = false;
    int firstStageLayers = 0;  ///< 0 = even split
    int lastStageLayers = 0;

    std::string recomputeGranularity = "none";  ///< none | selective | full
    std::string recomputeMethod = "uniform";
    int recomputeNumLayers = 0;
    std::vector<std::string> recomputeModules;

    std::string dispatcherType = "alltoall";   ///< allgather | alltoall | flex
    std::string dispatcherBackend;              ///< "" | deepep | hybridep | ncclep

    std::string cudaGraphImpl = "none";
    std::vector<std::string> cudaGraphScope;

    bool useMegatronFsdp = false;
    std::string fsdpStrategy = "no_shard";     ///< no_shard | optim | optim_grads | optim_grads_params
    bool freezeVision = false;                  ///< vision encoder and projection frozen
    bool overlapGradReduce = true;              ///< ddp.overlap_grad_reduce (parallel.overlap_grad_reduce); not FSDP
    Toggle overlapOptimizer = Toggle::Auto;     ///< moe-train's train.overlap_optimizer (CUDA, not FSDP)
    bool bf16WeightCopies = true;               ///< moe-train's train.bf16_weight_copies (CUDA bf16, not FSDP)
    bool bf16Gradients = true;                  ///< moe-train's train.bf16_gradients (with the copies, one GPU)
    bool gradReduceInFp32 = true;               ///< ddp.grad_reduce_in_fp32 (parallel.grad_reduce_in_fp32)
    bool fsdpReshardAfterForward = true;        ///< ZeRO-3: free a layer after its forward (moe-train's knob)

    // planner only (not in RunConfig yet; Megatron names in comments)
    bool useDistributedOptimizer = true;        ///< ddp.use_distributed_optimizer
    bool overlapMoeExpertParallelComm = false;  ///< comm_overlap.overlap_moe_expert_parallel_comm
    bool moeSharedExpertOverlap = false;        ///< model.moe_shared_expert_overlap
    bool teOpFuser = false;                     ///< model.use_transformer_engine_op_fuser (the perf configs'
                                                ///< cutedsl_fused_grouped_mlp: the expert MLP as fused kernels)
    bool fp8DotProductAttention = false;        ///< mixed_precision.fp8_dot_product_attention

    int dp() const;   ///< world / (TP·PP·CP), 0 if it does not divide
    int edp() const;  ///< world / (PP·EP·ETP), 0 if it does not divide
    int numMicroBatches() const;  ///< GBS / (MBS·DP), 0 if it does not divide
    /// Short human form: "TP1 CP1 PP8(10/../12) EP8 ETP1 DP8 EDP8 MBS2 GBS1024 full(1) flex+hybridep ...".
    std::string describe() const;
    /// The dispatcher as users name it: "alltoall", "flex+hybridep", ...
    std::string dispatcherName() const;
    bool operator==(const Layout&) const = default;
};

/// Minimum GPUs for these sizes: PP · max(TP·CP, EP·ETP) (megatron-bridge.md §3).
int minimumGpus(const Layout& layout);

/// Decoder layers on each pipeline stage (size PP), honouring uneven first/last stages; empty if
/// the layers do not split.
std::vector<int> layersPerStage(const Layout& layout, int numLayers);

/// Copies the layout into a RunConfig's parallel/recompute/cuda_graph/train/freeze fields.
void applyLayout(const Layout& layout, RunConfig& config);
/// Reads the layout fields from a RunConfig (planner-only fields keep their defaults).
Layout layoutFromRunConfig(const RunConfig& config, int worldSize);

}  // namespace wb::core::planner
