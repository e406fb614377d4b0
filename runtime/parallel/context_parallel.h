// Context parallelism (CP) for the decoder's self-attention, applied from outside the model
// (torchtitan style). Training thread only.
//
// Ranks (Megatron's order tp-cp-ep-dp-pp, TP fastest): inside `world` (one pipeline stage's ranks
// would be its world; CP with PP is refused), rank = tp + TP·(cp + CP·dp). The CP group of a rank
// is the CP ranks with its TP and DP coordinates, {dp·TP·CP + tp + i·TP}. The dense gradients are
// reduced over DP × CP (the group TensorParallel calls its data group, or the world without TP),
// divided by DP only: the CP ranks' losses are shares of one micro-batch's loss. Experts keep
// Megatron's expert grid (etp-ep-edp over the same ranks), which CP does not enter.
//
// The split (Megatron's load balancing for causal attention): each row of T tokens is cut into
// 2·CP chunks of c = T/(2·CP); CP rank r holds chunks r and 2·CP−1−r, Tl = T/CP tokens, so every
// rank has the same causal work (chunk r sees r·c earlier keys, chunk 2·CP−1−r sees
// (2·CP−1−r)·c). Packed rows are split as a whole (not each packed sample, as Megatron's THD
// format does): the mask is each local query's row of the whole row's document-causal mask, so
// the result is exact whatever the sample boundaries; only the balance is approximate when a
// row holds several samples.
//
// Keys and values are all-gathered (Megatron's cp_comm_type "allgather"): each rank's k and v
// after RoPE (so each is rotated at its full-sequence position) are gathered over the CP group,
// and the local queries attend to all of them under that mask. Backward: reduce-scatter of their
// gradients. Exact and simple; it holds CP·Tl keys per layer for a moment (the ring "p2p" form
// would hold two chunks at a time and overlap the exchange with the compute: a GPU concern).
//
// The vision encoder is not split: every CP rank runs it on the micro-batch's whole images (its
// attention is per image), and shard() keeps the rows of the image features whose tokens the rank
// holds; the vision gradients are then partial per rank and summed by the DP × CP reduction.
#pragma once

#include "runtime/model/context_parallel_hook.h"
#include "runtime/parallel/process_group.h"

#include <torch/torch.h>

#include <memory>
#include <vector>

namespace wb::rt {

struct DecoderInputs;
class VlmModelImpl;

/// The Tl = T/CP positions (ascending) of a row of T tokens that CP rank `rank` of `cp` holds:
/// chunks rank and 2·cp−1−rank of 2·cp equal chunks. T must be a multiple of 2·cp.
std::vector<int64_t> contextParallelPositions(int64_t T, int cp, int rank);

class ContextParallel final : public ContextParallelHook {
public:
    /// Creates the CP group from `world` (every rank calls it, after the TP groups, before EP's).
    /// Throws std::invalid_argument when TP × CP does not divide the ranks.
    ContextParallel(ProcessGroup& world, int cpSize, int tpSize);
    ~ContextParallel() override;

    /// Installs the hook on every decoder attention and sums the routers' aux statistics over the
    /// CP shares too (after tensor parallelism installed its own share sum, if any).
    void install(VlmModelImpl& model);
    /// In place: `in` (the whole micro-batch, image features projected) becomes this rank's share
    /// (DecoderInputs: rows of Tl tokens at their full-sequence positions, the mask against every
    /// rank's keys, the image features of its image tokens, the micro-batch's target count).
    void shard(DecoderInputs& in) const;

    std::pair<torch::Tensor, torch::Tensor> gatherKeysValues(const torch::Tensor& k_BGTd, const torch::Tensor& v_BGTd) override;

    ProcessGroup& group() { return *m_group; }
    int size() const { return m_group->size(); }
    int rank() const { return m_group->rank(); }

private:
    std::unique_ptr<ProcessGroup> m_group;
};

}  // namespace wb::rt
