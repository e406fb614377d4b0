// Peak-rate probe (see peak_probe.h).
#include "runtime/train/peak_probe.h"

#include "runtime/train/gpu_info.h"
#include "runtime/train/runtime_checks.h"

#include <chrono>

namespace wb::rt {

double catalogHbmGbPerS(const std::string& name)
{
    auto has = [&](const char* s) { return name.find(s) != std::string::npos; };
    if (has("GB200") || has("GB300") || has("B200") || has("B300"))
        return 8000.0;
    if (has("H200"))
        return 4800.0;
    if (has("H100"))
        return 3350.0;
    return 0.0;
}

PeakProbe probePeakRates()
{
    PeakProbe p;
#if WB_WITH_CUDA
    if (!cudaUsable()) {
        p.why = "no visible GPU";
        return p;
    }
    const torch::Device device(torch::kCUDA, 0);
    p.device = deviceName(device);
    p.catalogTflops = peakDenseBf16Tflops(p.device);
    p.catalogGbPerS = catalogHbmGbPerS(p.device);
    auto seconds = [](auto&& work, int reps) {
        work();  // warm-up (cuBLAS handle and heuristics, allocator)
        work();
        torch::cuda::synchronize();
        const auto start = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; ++i)
            work();
        torch::cuda::synchronize();
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    {
        torch::NoGradGuard noGrad;
        p.matmulSize = 8192;
        const auto bf16 = torch::TensorOptions().dtype(torch::kBFloat16).device(device);
        auto a = torch::randn({p.matmulSize, p.matmulSize}, bf16);
        auto b = torch::randn({p.matmulSize, p.matmulSize}, bf16);
        auto c = torch::empty({p.matmulSize, p.matmulSize}, bf16);
        const int reps = 50;
        const double s = seconds([&] { torch::matmul_out(c, a, b); }, reps);
        p.matmulTflops = 2.0 * static_cast<double>(p.matmulSize) * p.matmulSize * p.matmulSize * reps / s / 1e12;
    }
    {
        torch::NoGradGuard noGrad;
        p.copyBytes = int64_t{2} << 30;  // 2 GiB each way: far beyond any cache
        const auto bytes = torch::TensorOptions().dtype(torch::kUInt8).device(device);
        auto src = torch::empty({p.copyBytes}, bytes).fill_(1);
        auto dst = torch::empty({p.copyBytes}, bytes);
        const int reps = 20;
        const double s = seconds([&] { dst.copy_(src); }, reps);
        p.copyGbPerS = 2.0 * static_cast<double>(p.copyBytes) * reps / s / 1e9;
    }
    p.ran = true;
#else
    p.why = "this moe-train was built without CUDA";
#endif
    return p;
}

}  // namespace wb::rt
