// moe-overlap-bench: the physics of the overlapped optimizer's SM budget on this GPU, measured in
// isolation (benchmarks/gpu_round.sh runs it and prints its table beside the rows).
//
//   1. The fused AdamW pass (cuda::adamwStep, fp32 p/m/v, bf16 gradient and bf16 copy: 28 B per
//      value) over 512 M values: GB/s with the default grid and on k resident blocks.
//   2. A bf16 GEMM of the decoder's shapes (16384 × 2048 · 2048 × 5120): TFLOP/s with every SM and
//      with the matmuls told to leave k SMs free (the same carve-out OptimizerOverlap sets).
//   3. Both at once: the AdamW pass on k resident blocks on a low-priority stream while the GEMMs
//      run carved on a high-priority one — what each gets of its alone rate.
//
// Usage: moe-overlap-bench [k ...] (default 16 24 32 48). CUDA builds only; prints a Markdown table.
#include "runtime/model/cuda/fused_kernels.h"
#include "runtime/model/torch_compat.h"
#include "runtime/train/optimizer_overlap.h"

#include <torch/torch.h>

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

using wb::rt::cuda::adamwStep;

struct AdamWBuffers {
    torch::Tensor p, g, m, v, copy;
    explicit AdamWBuffers(int64_t n)
    {
        const auto f32 = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kFloat32);
        p = torch::randn({n}, f32);
        g = torch::randn({n}, f32).to(torch::kBFloat16);
        m = torch::zeros({n}, f32);
        v = torch::zeros({n}, f32);
        copy = torch::empty({n}, f32.dtype(torch::kBFloat16));
    }
    double bytes() const { return static_cast<double>(p.numel()) * 28.0; }
    void step(int resident) const
    {
        adamwStep(p, g, m, v, 1e-4, 0.9, 0.95, 1e-8, 0.01, 3, torch::Tensor(), copy, /*onePassGrid=*/resident == 0,
                  resident);
    }
};

// Milliseconds of `reps` calls of `work` on the current stream, after one warm-up call.
template <typename Work>
double timeMs(int reps, Work work)
{
    work();
    at::cuda::CUDAEvent start(cudaEventDefault), stop(cudaEventDefault);
    const auto stream = at::cuda::getCurrentCUDAStream();
    start.record(stream);
    for (int i = 0; i < reps; ++i)
        work();
    stop.record(stream);
    stop.synchronize();
    return static_cast<double>(start.elapsed_time(stop)) / reps;
}

}  // namespace

int main(int argc, char** argv)
{
    if (!torch::cuda::is_available()) {
        std::fprintf(stderr, "moe-overlap-bench: no CUDA device\n");
        return 2;
    }
    std::vector<int> budgets;
    for (int i = 1; i < argc; ++i)
        budgets.push_back(std::atoi(argv[i]));
    if (budgets.empty())
        budgets = {16, 24, 32, 48};
    torch::NoGradGuard noGrad;
    const c10::cuda::CUDAGuard guard(0);
    const int sms = at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
    const auto training = c10::cuda::getStreamFromPool(/*isHighPriority=*/true, 0);
    const auto updates = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, 0);
    const c10::cuda::CUDAStreamGuard onTraining(training);

    const AdamWBuffers adam(int64_t{512} << 20);
    const auto bf16 = torch::TensorOptions().device(torch::kCUDA).dtype(torch::kBFloat16);
    const torch::Tensor a = torch::randn({16384, 2048}, bf16), b = torch::randn({2048, 5120}, bf16);
    const double gemmFlop = 2.0 * 16384 * 2048 * 5120;
    const auto gemm = [&] { (void)torch::mm(a, b); };

    const double adamDefault = timeMs(5, [&] { adam.step(0); });
    const double gemmAll = timeMs(20, gemm);
    std::printf("%s, %d SMs; AdamW %.0f M values (28 B each), GEMM 16384x2048 . 2048x5120 bf16\n\n",
                at::cuda::getCurrentDeviceProperties()->name, sms, adam.p.numel() / 1e6);
    std::printf(
        "| budget k | AdamW alone GB/s | per SM GB/s | GEMM alone TFLOP/s | together: AdamW GB/s | together: GEMM "
        "TFLOP/s | together vs serial |\n|---|---|---|---|---|---|---|\n");
    std::printf("| default grid (all SMs) | %.0f | %.1f | %.0f | | | |\n", adam.bytes() / adamDefault / 1e6,
                adam.bytes() / adamDefault / 1e6 / sms, gemmFlop / gemmAll / 1e9);
    for (const int k : budgets) {
        if (k <= 0 || k >= sms)
            continue;
        const double adamK = timeMs(5, [&] { adam.step(k); });
        wb::rt::carveMatmuls(k);
        const double gemmK = timeMs(20, gemm);
        // Together: the AdamW passes on the low-priority stream, as many GEMMs as fit their time on
        // the training stream, both started together; each stream timed by its own events.
        const int adamReps = 3;
        const int gemmReps = std::max(1, static_cast<int>(adamReps * adamK / gemmK));
        at::cuda::CUDAEvent begin(cudaEventDefault), adamEnd(cudaEventDefault), gemmEnd(cudaEventDefault);
        begin.record(training);
        begin.block(updates);
        {
            const c10::cuda::CUDAStreamGuard onUpdates(updates);
            for (int i = 0; i < adamReps; ++i)
                adam.step(k);
            adamEnd.record(updates);
        }
        for (int i = 0; i < gemmReps; ++i)
            gemm();
        gemmEnd.record(training);
        adamEnd.synchronize();
        gemmEnd.synchronize();
        wb::rt::carveMatmuls(0);
        const double adamTogether = begin.elapsed_time(adamEnd) / adamReps;
        const double gemmTogether = begin.elapsed_time(gemmEnd) / gemmReps;
        const double serial = adamReps * adamDefault + gemmReps * gemmAll;
        const double together = std::max(begin.elapsed_time(adamEnd), begin.elapsed_time(gemmEnd));
        std::printf("| %d | %.0f | %.1f | %.0f | %.0f | %.0f | %.2f |\n", k, adam.bytes() / adamK / 1e6,
                    adam.bytes() / adamK / 1e6 / k, gemmFlop / gemmK / 1e9, adam.bytes() / adamTogether / 1e6,
                    gemmFlop / gemmTogether / 1e9, together / serial);
    }
    return 0;
}
