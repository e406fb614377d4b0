// TensorParallelHook: the two conjugate operations of Megatron's tensor parallelism, as the model
// sees them. The model never knows ranks; tensor parallelism is applied from outside
// (runtime/parallel/tensor_parallel.h): the installer slices the weights of column- and
// row-parallel linears (the model derives its local head counts from the weight shapes) and
// installs a hook on the blocks. Without a hook every call below is the identity, and the model
// runs as it always did.
//
//   enter(x): entering a column-parallel region (Q/K/V, fc1, experts). Megatron's `f`: identity
//             forward, all-reduce of the gradient in backward; with sequence parallelism the
//             rank's tokens are all-gathered along dim 0 (reduce-scatter in backward).
//   leave(y): leaving a row-parallel region (attention output, fc2, experts) with partial sums.
//             Megatron's `g`: all-reduce forward, identity backward; with sequence parallelism a
//             reduce-scatter along dim 0 to the rank's tokens (all-gather in backward).
//   scatterTokens / gatherTokens: from the replicated stream to the rank's tokens and back
//             (sequence parallelism only; identity otherwise): split forward / all-gather
//             backward, and all-gather forward / split backward (the gradient downstream of the
//             gather is the same on every rank, so it is split, not summed).
//
//   shardStart / maxOverShards: for the vocabulary-parallel embedding and cross-entropy (rows
//             [shardStart(Vl), +Vl) of the vocabulary on this rank; a max over the ranks).
//
// Tokens are the flattened B·T rows of a micro-batch; under sequence parallelism rank r of TP
// holds rows [r·N/TP, (r+1)·N/TP). Training thread only.
#pragma once

#include <torch/torch.h>

#include <utility>

namespace wb::rt {

class TensorParallelHook {
public:
    virtual ~TensorParallelHook() = default;
    virtual torch::Tensor enter(const torch::Tensor& x) = 0;
    virtual torch::Tensor leave(const torch::Tensor& y) = 0;
    virtual torch::Tensor scatterTokens(const torch::Tensor& x) = 0;
    virtual torch::Tensor gatherTokens(const torch::Tensor& x) = 0;
    /// Rows [first, second) of `numTokens` flattened tokens this rank holds between regions.
    virtual std::pair<int64_t, int64_t> localTokens(int64_t numTokens) const = 0;
    /// First global row of this rank's `localRows` rows of a table split by rows (vocabulary).
    virtual int64_t shardStart(int64_t localRows) const = 0;
    /// Element-wise max over the ranks (no gradient).
    virtual torch::Tensor maxOverShards(const torch::Tensor& x) = 0;
};

inline torch::Tensor enterRegion(TensorParallelHook* hook, const torch::Tensor& x)
{
    return hook ? hook->enter(x) : x;
}

inline torch::Tensor leaveRegion(TensorParallelHook* hook, const torch::Tensor& y)
{
    return hook ? hook->leave(y) : y;
}

}  // namespace wb::rt
