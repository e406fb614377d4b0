// Compile check of the device code of the fused AdamW step (runtime/model/cuda/adamw_kernel.cuh)
// without LibTorch: instantiates every moment-type variant the wrapper in fused_kernels.cu
// launches. Built by benchmarks/nvcc_kernel_check.sh; nothing runs.
#include "runtime/model/cuda/adamw_kernel.cuh"

namespace {

int blocksFor(int64_t work)
{
    return static_cast<int>(work < 1024 ? (work + 255) / 256 : 4);
}

}  // namespace

using wb::rt::cuda::kernels::AdamWParams;
using wb::rt::cuda::kernels::launchAdamW;

cudaError_t checkFp32Moments(float* p, const float* g, float* m, float* v, int64_t n, AdamWParams a, cudaStream_t s)
{
    return launchAdamW(p, g, m, v, n, a, nullptr, nullptr, 256, blocksFor, s);
}

cudaError_t checkBf16Moments(float* p, const float* g, __nv_bfloat16* m, __nv_bfloat16* v, int64_t n, AdamWParams a,
                             cudaStream_t s)
{
    return launchAdamW(p, g, m, v, n, a, nullptr, nullptr, 256, blocksFor, s);
}

cudaError_t checkMixedMoments(float* p, const float* g, __nv_bfloat16* m, float* v, float* m32, __nv_bfloat16* v16,
                              int64_t n, AdamWParams a, cudaStream_t s)
{
    const cudaError_t first = launchAdamW(p, g, m, v, n, a, nullptr, nullptr, 256, blocksFor, s);
    return first != cudaSuccess ? first : launchAdamW(p, g, m32, v16, n, a, nullptr, nullptr, 256, blocksFor, s);
}

cudaError_t checkWeightCopy(float* p, const float* g, float* m, float* v, __nv_bfloat16* copy, int64_t n, AdamWParams a,
                            cudaStream_t s)
{
    return launchAdamW(p, g, m, v, n, a, nullptr, copy, 256, blocksFor, s);
}

cudaError_t checkBf16Gradient(float* p, const __nv_bfloat16* g, float* m, float* v, __nv_bfloat16* m16,
                              __nv_bfloat16* v16, __nv_bfloat16* copy, int64_t n, AdamWParams a, cudaStream_t s)
{
    const cudaError_t first = launchAdamW(p, g, m, v, n, a, nullptr, copy, 256, blocksFor, s);
    return first != cudaSuccess ? first : launchAdamW(p, g, m16, v16, n, a, nullptr, copy, 256, blocksFor, s);
}
