// ContextParallelHook: what the decoder's attention sees of context parallelism (CP). The model
// never knows ranks; CP is applied from outside (runtime/parallel/context_parallel.h): the
// installer hands each rank its share of every row's tokens (DecoderInputs with full-sequence
// positions, the mask of its queries against every rank's keys, the loss divisor of the whole
// micro-batch) and installs this hook on each attention module. Without a hook the attention
// runs on the whole rows, as it always did.
//
//   gatherKeysValues(k, v): this rank's keys and values (after RoPE) → those of every CP rank,
//             concatenated along T in CP-rank order (the key order of the mask the installer
//             built). Backward: the gradients of the gathered keys and values summed over the
//             ranks, this rank's part kept (all-gather forward, reduce-scatter backward).
//
// Shapes: B rows, G KV groups, Tl this rank's tokens per row, Tk = CP·Tl keys, d head dim.
// Training thread only.
#pragma once

#include <torch/torch.h>

#include <utility>

namespace wb::rt {

class ContextParallelHook {
public:
    virtual ~ContextParallelHook() = default;
    /// k_BGTld, v_BGTld → k_BGTkd, v_BGTkd.
    virtual std::pair<torch::Tensor, torch::Tensor> gatherKeysValues(const torch::Tensor& k_BGTd, const torch::Tensor& v_BGTd) = 0;
};

}  // namespace wb::rt
