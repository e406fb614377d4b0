// DDP-style gradient averaging (see data_parallel.h).
//
// The synchronous pass after the last micro-batch (parallel.overlap_grad_reduce false). The
// overlapped one (gradient_reducer.cpp) sums the same operands elementwise and scales the same
// way, so both give the same gradients; this one stays as the reference and the fallback.
#include "runtime/parallel/data_parallel.h"

namespace wb::rt {

DataParallel::DataParallel(ProcessGroup& group, std::size_t bucketBytes) : m_group(group), m_bucketBytes(bucketBytes)
{
}

template <class Op>
void DataParallel::forEachBucket(const std::vector<torch::Tensor>& tensors, Op&& op)
{
    size_t begin = 0;
    while (begin < tensors.size()) {
        size_t end = begin;
        size_t bytes = 0;
        while (end < tensors.size() && tensors[end].scalar_type() == tensors[begin].scalar_type() &&
               tensors[end].device() == tensors[begin].device() && (end == begin || bytes < m_bucketBytes)) {
            bytes += static_cast<size_t>(tensors[end].numel() * tensors[end].element_size());
            ++end;
        }
        std::vector<torch::Tensor> flat;
        for (size_t i = begin; i < end; ++i)
            flat.push_back(tensors[i].reshape({-1}));
        std::vector<torch::Tensor> bucket{torch::cat(flat)};
        op(bucket);
        int64_t offset = 0;
        for (size_t i = begin; i < end; ++i) {
            const int64_t n = tensors[i].numel();
            tensors[i].copy_(bucket[0].narrow(0, offset, n).view_as(tensors[i]));
            offset += n;
        }
        begin = end;
    }
}

void DataParallel::broadcastParameters(const std::vector<torch::Tensor>& parameters)
{
    if (m_group.size() == 1)
        return;
    torch::NoGradGuard noGrad;
    forEachBucket(parameters, [&](std::vector<torch::Tensor>& bucket) { m_group.broadcast(bucket, 0); });
}

void DataParallel::averageGradients(const std::vector<torch::Tensor>& parameters, int divisor)
{
    if (divisor <= 0)
        divisor = m_group.size();
    if (m_group.size() == 1) {
        if (divisor != 1) {
            torch::NoGradGuard noGrad;
            for (const auto& p : parameters)
                if (p.grad().defined())
                    p.grad().div_(divisor);
        }
        return;
    }
    torch::NoGradGuard noGrad;
    // Which gradients exist anywhere: one small allreduce before the real ones.
    auto present = torch::zeros({static_cast<int64_t>(parameters.size())}, torch::kFloat32);
    auto presentAcc = present.accessor<float, 1>();
    for (size_t i = 0; i < parameters.size(); ++i)
        presentAcc[static_cast<int64_t>(i)] = parameters[i].grad().defined() ? 1.0f : 0.0f;
    std::vector<torch::Tensor> presence{parameters.empty() ? present : present.to(parameters[0].device())};
    m_group.allreduce(presence, ReduceOp::Sum);
    present = presence[0].cpu();
    presentAcc = present.accessor<float, 1>();

    std::vector<torch::Tensor> grads;
    for (size_t i = 0; i < parameters.size(); ++i) {
        if (presentAcc[static_cast<int64_t>(i)] == 0.0f)
            continue;
        torch::Tensor p = parameters[i];
        if (!p.grad().defined())
            p.mutable_grad() = torch::zeros_like(p);
        grads.push_back(p.grad());
    }
    const double scale = 1.0 / divisor;
    forEachBucket(grads, [&](std::vector<torch::Tensor>& bucket) {
        m_group.allreduce(bucket, ReduceOp::Sum);
        bucket[0].mul_(scale);
    });
}

}  // namespace wb::rt
