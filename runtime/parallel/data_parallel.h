// Plain data parallelism (DDP-style) applied from outside the model: parameters broadcast from
// rank 0 once, gradients averaged over the group with bucketed allreduce after the last
// micro-batch's backward. This synchronous average is the path of parallel.overlap_grad_reduce
// false and the reference the overlapped one (gradient_reducer.h) is tested against.
// Main (training) thread only.
#pragma once

#include "runtime/parallel/process_group.h"

#include <torch/torch.h>

#include <cstddef>
#include <vector>

namespace wb::rt {

class DataParallel {
public:
    /// `group` must outlive this object. Buckets hold up to `bucketBytes` of gradients each.
    explicit DataParallel(ProcessGroup& group, std::size_t bucketBytes = std::size_t{25} << 20);

    /// Makes every rank's parameters rank 0's (one broadcast per bucket).
    void broadcastParameters(const std::vector<torch::Tensor>& parameters);

    /// Replaces each gradient with the mean over ranks. A gradient that is undefined on some ranks
    /// (e.g. an expert no token of this rank's micro-batches reached) counts as zero there; one
    /// undefined on every rank stays undefined, so AdamW skips it exactly as on a single rank
    /// that saw all micro-batches. Parameters must be listed in the same order on every rank.
    /// The sum is divided by `divisor` (0 = this group's size; expert gradients reduced over the
    /// expert-data-parallel group are divided by the whole data-parallel size).
    void averageGradients(const std::vector<torch::Tensor>& parameters, int divisor = 0);

    ProcessGroup& group() const { return m_group; }
    std::size_t bucketBytes() const { return m_bucketBytes; }

private:
    // Runs `op` on flat copies of `tensors` packed into buckets of one dtype, then copies back.
    template <class Op>
    void forEachBucket(const std::vector<torch::Tensor>& tensors, Op&& op);

    ProcessGroup& m_group;
    std::size_t m_bucketBytes;
};

}  // namespace wb::rt
