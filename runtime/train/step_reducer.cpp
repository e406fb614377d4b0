// The step's statistics over ranks (see step_reducer.h).
#include "runtime/train/step_reducer.h"

namespace wb::rt {

void StepReducer::reduce(core::StepRecord& r, double& flops, torch::Tensor& lmSum, torch::Tensor& auxSum, bool stopRequested)
{
    m_stopAgreed = stopRequested;
    if (m_world.size() == 1)
        return;
    const auto f64 = torch::TensorOptions().dtype(torch::kFloat64);
    std::vector<torch::Tensor> sums{torch::tensor(
        {lmSum.item<double>(), auxSum.item<double>(), double(r.images), double(r.imageTokens), double(r.textTokens),
         double(r.padTokens), double(r.skippedImages), flops}, f64)};
    std::vector<torch::Tensor> maxima{torch::tensor(
        {r.stepMs, r.dataMs, r.visionMs, r.projectorMs, r.decoderMs, r.backwardMs, r.optimizerMs, r.memAllocGib,
         r.memReservedGib, r.memPeakGib, m_stopAgreed ? 1.0 : 0.0}, f64)};
    if (m_device.is_cuda()) {  // NCCL reduces device tensors
        sums[0] = sums[0].to(m_device);
        maxima[0] = maxima[0].to(m_device);
    }
    // Tensor parallel: the TP ranks of a DP rank repeat its loss, tokens and FLOPs; only the first
    // counts them (the aux loss under sequence parallelism is each rank's share: all count it).
    // Context parallel: each CP rank's losses are its share of the micro-batch's (all count
    // them), its tokens and FLOPs the micro-batch's (only the first counts them).
    if (!m_parallel.countsStepTotals()) {
        const double lm = m_parallel.countsLoss() ? sums[0][0].item<double>() : 0.0;
        const double aux = m_parallel.countsLoss() || m_parallel.auxLossIsShared() ? sums[0][1].item<double>() : 0.0;
        sums[0].zero_();
        sums[0][0] = lm;
        sums[0][1] = aux;
    }
    m_world.allreduce(sums, ReduceOp::Sum);
    m_world.allreduce(maxima, ReduceOp::Max);
    const auto s = sums[0].cpu();
    const auto m = maxima[0].cpu();
    const auto sa = s.accessor<double, 1>();
    const auto ma = m.accessor<double, 1>();
    lmSum = s[0];
    auxSum = s[1];
    r.images = static_cast<int64_t>(sa[2]);
    r.imageTokens = static_cast<int64_t>(sa[3]);
    r.textTokens = static_cast<int64_t>(sa[4]);
    r.padTokens = static_cast<int64_t>(sa[5]);
    r.skippedImages = static_cast<int64_t>(sa[6]);
    flops = sa[7];
    r.stepMs = ma[0];
    r.dataMs = ma[1];
    r.visionMs = ma[2];
    r.projectorMs = ma[3];
    r.decoderMs = ma[4];
    r.backwardMs = ma[5];
    r.optimizerMs = ma[6];
    r.memAllocGib = ma[7];
    r.memReservedGib = ma[8];
    r.memPeakGib = ma[9];
    m_stopAgreed = ma[10] > 0.0;
}

}  // namespace wb::rt
