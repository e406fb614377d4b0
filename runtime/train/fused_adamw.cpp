// Fused AdamW step (see fused_adamw.h).
#include "runtime/train/fused_adamw.h"

#include "runtime/model/cuda/fused_kernels.h"
#include "runtime/model/torch_compat.h"
#include "runtime/train/optimizer.h"

#include <algorithm>
#include <cstdlib>

namespace wb::rt {

#define WB_HAVE_FUSED_ADAMW (WB_WITH_CUDA && WB_TORCH_AT_LEAST(2, 1))

bool fusedAdamWAvailable()
{
    return WB_HAVE_FUSED_ADAMW;
}

#if WB_HAVE_FUSED_ADAMW
namespace {

// WB_ADAMW_RESIDENT=N (experimental, for a GPU round's A/B row): every fused step that was given
// no SM budget (the serial step, and the overlapped one without WB_OVERLAP_SMS) runs on N resident
// blocks (cuda::adamwStep's residentBlocks), to measure their bandwidth against the default grid.
int residentBlocksFromEnv()
{
    static const int blocks = [] {
        const char* v = std::getenv("WB_ADAMW_RESIDENT");
        return v == nullptr ? 0 : std::max(0, std::atoi(v));
    }();
    return blocks;
}

}  // namespace
#endif

void fusedAdamWStep(torch::optim::AdamW& optimizer, const MomentDtypes& dtypes, const torch::Tensor& gradScale,
                    const FusedAdamWOptions& requested)
{
#if WB_HAVE_FUSED_ADAMW
    FusedAdamWOptions launch = requested;
    if (launch.residentBlocks == 0)
        launch.residentBlocks = residentBlocksFromEnv();
    torch::NoGradGuard noGrad;
    const c10::optional<at::Tensor> scale =
        gradScale.defined() ? c10::optional<at::Tensor>(gradScale.to(torch::kFloat32)) : c10::nullopt;
    for (auto& group : optimizer.param_groups()) {
        auto& options = static_cast<torch::optim::AdamWOptions&>(group.options());
        TORCH_CHECK(!options.amsgrad(), "fusedAdamWStep: amsgrad is not supported");
        std::vector<torch::Tensor> params, grads, expAvgs, expAvgSqs, steps;
        int64_t step = -1;
        const double beta1 = std::get<0>(options.betas()), beta2 = std::get<1>(options.betas());
        for (auto& p : group.params()) {
            if (!p.grad().defined() || !inSubset(launch.only, p))
                continue;
            auto& s = adamWState(optimizer, p, dtypes);
            s.step(s.step() + 1);
            // Our kernel (cuda/fused_kernels.h): one pass of 28 bytes per element (20 with bf16
            // moments, 2 less with a bf16 gradient), where ATen's multi-tensor kernel also writes the unscaled gradient
            // back (measured on one H200: 45.8 ms for the benchmark slice's 4.4 B parameters). A parameter with a kept
            // bf16 copy gets it written in the same pass (2 B more).
            if (cuda::adamwSupports(p, p.grad(), s.exp_avg(), s.exp_avg_sq())) {
                torch::Tensor copy = launch.copies ? launch.copies->copyOf(p) : torch::Tensor();
                if (copy.defined() && !cuda::adamwCopySupports(p, copy)) {
                    launch.copies->forget(p);  // the raw write below would leave it behind unseen
                    copy = torch::Tensor();
                }
                cuda::adamwStep(p, p.grad(), s.exp_avg(), s.exp_avg_sq(), options.lr(), beta1, beta2, options.eps(),
                                options.weight_decay(), s.step(), scale ? *scale : torch::Tensor(), copy,
                                launch.onePassGrid, launch.residentBlocks);
                continue;
            }
            // ATen's paths below take the gradient in the parameter's dtype (a bf16 gradient of
            // train.bf16_gradients widened: exact).
            const torch::Tensor grad =
                p.grad().scalar_type() == p.scalar_type() ? p.grad() : p.grad().to(p.scalar_type());
            // ATen's fused kernel wants all four tensors in one dtype: bf16 moments the kernel
            // cannot take (a non-contiguous shard) go through the ATen ops, gradient scaled first.
            if (s.exp_avg().scalar_type() != p.scalar_type() || s.exp_avg_sq().scalar_type() != p.scalar_type()) {
                const torch::Tensor g = scale ? grad / *scale : grad;
                adamWUpdateAten(p, g, s.exp_avg(), s.exp_avg_sq(), options.lr(), beta1, beta2, options.eps(),
                                options.weight_decay(), s.step());
                continue;
            }
            // Parameters of a group normally share the step count; one that skipped steps (no
            // gradient then) gets its own call below.
            if (step >= 0 && s.step() != step) {
                auto single = torch::full({}, static_cast<double>(s.step()), p.options().dtype(torch::kFloat32));
                at::_fused_adamw_({p}, {grad}, {s.exp_avg()}, {s.exp_avg_sq()}, {}, {single}, options.lr(),
                                  std::get<0>(options.betas()), std::get<1>(options.betas()), options.weight_decay(),
                                  options.eps(), /*amsgrad=*/false, /*maximize=*/false, scale, {});
                continue;
            }
            step = s.step();
            params.push_back(p);
            grads.push_back(grad);
            expAvgs.push_back(s.exp_avg());
            expAvgSqs.push_back(s.exp_avg_sq());
        }
        if (params.empty())
            continue;
        // The kernel reads one step tensor per parameter; they may all be the same tensor.
        auto stepTensor = torch::full({}, static_cast<double>(step), params[0].options().dtype(torch::kFloat32));
        steps.assign(params.size(), stepTensor);
        at::_fused_adamw_(params, grads, expAvgs, expAvgSqs, {}, steps, options.lr(), std::get<0>(options.betas()),
                          std::get<1>(options.betas()), options.weight_decay(), options.eps(), /*amsgrad=*/false,
                          /*maximize=*/false, scale, {});
    }
#else
    (void)optimizer;
    (void)dtypes;
    (void)gradScale;
    (void)requested;
    TORCH_CHECK(false, "the fused AdamW step needs a CUDA build of moe-train on LibTorch >= 2.1");
#endif
}

torch::Tensor globalGradNorm(const std::vector<torch::Tensor>& grads)
{
    torch::NoGradGuard noGrad;
    if (grads.empty())
        return torch::zeros({});
    // CUDA: one pass over every gradient, as it is (fp32 or bf16), 16-byte loads (cuda::sumOfSquares).
    if (cuda::sumOfSquaresSupports(grads))
        return cuda::sumOfSquares(grads).sqrt();
    std::vector<torch::Tensor> norms;
#if WB_TORCH_AT_LEAST(2, 4)
    // One multi-tensor launch per gradient dtype (fp32, and the bf16 of train.bf16_gradients, read
    // as it is and summed in fp32), the norms put back in the gradients' order, so that the total
    // is summed as with every gradient fp32.
    std::vector<torch::Tensor> fp32, bf16;
    std::vector<size_t> fp32At, bf16At;
    for (size_t i = 0; i < grads.size(); ++i) {
        const bool isBf16 = grads[i].scalar_type() == torch::kBFloat16;
        (isBf16 ? bf16 : fp32).push_back(isBf16 ? grads[i] : grads[i].to(torch::kFloat32));  // fp32: no copy
        (isBf16 ? bf16At : fp32At).push_back(i);
    }
    norms.resize(grads.size());
    if (!fp32.empty()) {
        const auto n = at::_foreach_norm(fp32, 2);
        for (size_t j = 0; j < n.size(); ++j)
            norms[fp32At[j]] = n[j];
    }
    if (!bf16.empty()) {
        const auto n = at::_foreach_norm(bf16, 2, torch::kFloat32);
        for (size_t j = 0; j < n.size(); ++j)
            norms[bf16At[j]] = n[j];
    }
#elif WB_TORCH_AT_LEAST(2, 1)
    bool allFp32 = true;
    for (const auto& g : grads)
        allFp32 = allFp32 && g.scalar_type() == torch::kFloat32;
    if (allFp32)
        norms = at::_foreach_norm(grads, 2);
#endif
    if (norms.empty())
        for (const auto& g : grads)
            norms.push_back(g.to(torch::kFloat32).norm());
    return torch::stack(norms).norm();
}

}  // namespace wb::rt
