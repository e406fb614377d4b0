// The fused AdamW kernels, device code only (no torch headers), so that nvcc can compile them on
// their own (benchmarks/nvcc_kernel_check.sh) on a machine without a CUDA LibTorch; the torch
// wrapper that checks the tensors and picks the launch is in fused_kernels.cu.
//
// One pass per element: read p (fp32), g (fp32 or bf16), m, v (fp32 or bf16), update in fp32 with
// LibTorch's AdamW::step formulas, write p, m, v. Bytes per element: 28 with fp32 moments, 20 with
// bf16 moments (Megatron's precision-aware optimizer: exp_avg_dtype / exp_avg_sq_dtype bf16), 2
// less with a bf16 gradient (train.bf16_gradients: the backward's bf16 weight gradient, read as it
// is instead of widened to fp32 in a pass of its own). A bf16 moment or gradient is widened exactly
// on load; a moment is rounded to nearest even on store, once per step.
// With a bf16 copy of the weight (train.bf16_weight_copies, runtime/model/bf16_weights.h) the
// pass also writes the updated weight rounded to nearest even, the cast the next forward would
// make (2 B more per element).
// Any thread; the launch goes on the stream given.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace wb::rt::cuda::kernels {

struct AdamWParams {
    float lr, beta1, beta2, eps, decay;       // decay = 1 − lr·weight_decay
    float stepSize, biasCorrection2Sqrt;      // lr / (1 − β1^t), sqrt(1 − β2^t)
};

__device__ __forceinline__ void adamwElement(float& p, float g, float& m, float& v, const AdamWParams& a)
{
    p *= a.decay;
    m = a.beta1 * m + (1.0f - a.beta1) * g;
    v = a.beta2 * v + (1.0f - a.beta2) * g * g;
    const float denom = sqrtf(v) / a.biasCorrection2Sqrt + a.eps;
    p -= a.stepSize * m / denom;
}

// How a moment type is stored: Vec4 is four values in one aligned access (16 bytes for fp32,
// 8 for bf16); load widens to fp32, store rounds (the identity for fp32, so that path computes
// exactly what the fp32-only kernel computed before the template).
template <typename M>
struct MomentStorage;

template <>
struct MomentStorage<float> {
    using Vec4 = float4;
    static __device__ __forceinline__ float4 load4(const Vec4& x) { return x; }
    static __device__ __forceinline__ Vec4 store4(const float4& x) { return x; }
    static __device__ __forceinline__ float load(float x) { return x; }
    static __device__ __forceinline__ float store(float x) { return x; }
};

struct alignas(8) Bf16x4 {
    __nv_bfloat162 lo, hi;
};

template <>
struct MomentStorage<__nv_bfloat16> {
    using Vec4 = Bf16x4;
    static __device__ __forceinline__ float4 load4(const Vec4& x)
    {
        const float2 lo = __bfloat1622float2(x.lo), hi = __bfloat1622float2(x.hi);
        return make_float4(lo.x, lo.y, hi.x, hi.y);
    }
    static __device__ __forceinline__ Vec4 store4(const float4& x)
    {
        // _rn: round to nearest even, the rounding of ATen's float → bfloat16 conversion.
        return {__floats2bfloat162_rn(x.x, x.y), __floats2bfloat162_rn(x.z, x.w)};
    }
    static __device__ __forceinline__ float load(__nv_bfloat16 x) { return __bfloat162float(x); }
    static __device__ __forceinline__ __nv_bfloat16 store(float x) { return __float2bfloat16_rn(x); }
};

// Vector part: n4 groups of four; the scalar tail is done by adamwKernel.
template <typename M, typename V, typename G>
__global__ void adamwKernel4(float4* __restrict__ p, const typename MomentStorage<G>::Vec4* __restrict__ g,
                             typename MomentStorage<M>::Vec4* __restrict__ m,
                             typename MomentStorage<V>::Vec4* __restrict__ v, int64_t n4, AdamWParams a,
                             const float* __restrict__ scale, Bf16x4* __restrict__ copy)
{
    using MS = MomentStorage<M>;
    using VS = MomentStorage<V>;
    using GS = MomentStorage<G>;
    const float inv = scale ? 1.0f / *scale : 1.0f;
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n4; i += int64_t{blockDim.x} * gridDim.x) {
        float4 pp = p[i], gg = GS::load4(g[i]), mm = MS::load4(m[i]), vv = VS::load4(v[i]);
        adamwElement(pp.x, gg.x * inv, mm.x, vv.x, a);
        adamwElement(pp.y, gg.y * inv, mm.y, vv.y, a);
        adamwElement(pp.z, gg.z * inv, mm.z, vv.z, a);
        adamwElement(pp.w, gg.w * inv, mm.w, vv.w, a);
        p[i] = pp;
        m[i] = MS::store4(mm);
        v[i] = VS::store4(vv);
        if (copy)
            copy[i] = MomentStorage<__nv_bfloat16>::store4(pp);
    }
}

template <typename M, typename V, typename G>
__global__ void adamwKernel(float* __restrict__ p, const G* __restrict__ g, M* __restrict__ m, V* __restrict__ v,
                            int64_t n, AdamWParams a, const float* __restrict__ scale, __nv_bfloat16* __restrict__ copy)
{
    using MS = MomentStorage<M>;
    using VS = MomentStorage<V>;
    using GS = MomentStorage<G>;
    const float inv = scale ? 1.0f / *scale : 1.0f;
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{blockDim.x} * gridDim.x) {
        float pp = p[i], mm = MS::load(m[i]), vv = VS::load(v[i]);
        adamwElement(pp, GS::load(g[i]) * inv, mm, vv, a);
        p[i] = pp;
        m[i] = MS::store(mm);
        v[i] = VS::store(vv);
        if (copy)
            copy[i] = __float2bfloat16_rn(pp);
    }
}

inline bool adamwAligned(const void* ptr, int64_t bytes)
{
    return reinterpret_cast<uintptr_t>(ptr) % static_cast<uintptr_t>(bytes) == 0;
}

// Launches the step over n elements: the vector kernel over the largest multiple of four when
// every operand allows its vector access, the scalar kernel over the rest. `blocksFor` maps a work
// size to a grid size (the caller knows the device). `copy` (may be null): the weight's bf16 copy
// to write. `g`: fp32 or bf16. Returns cudaGetLastError() of the launches.
template <typename M, typename V, typename G, typename BlocksFor>
cudaError_t launchAdamW(float* p, const G* g, M* m, V* v, int64_t n, const AdamWParams& a, const float* scale,
                        __nv_bfloat16* copy, int threads, BlocksFor blocksFor, cudaStream_t stream)
{
    int64_t done = 0;
    if (adamwAligned(p, 16) && adamwAligned(g, sizeof(typename MomentStorage<G>::Vec4)) &&
        adamwAligned(m, sizeof(typename MomentStorage<M>::Vec4)) &&
        adamwAligned(v, sizeof(typename MomentStorage<V>::Vec4)) && (!copy || adamwAligned(copy, sizeof(Bf16x4)))) {
        const int64_t n4 = n / 4;
        if (n4 > 0)
            adamwKernel4<M, V, G><<<blocksFor(n4), threads, 0, stream>>>(
                reinterpret_cast<float4*>(p), reinterpret_cast<const typename MomentStorage<G>::Vec4*>(g),
                reinterpret_cast<typename MomentStorage<M>::Vec4*>(m),
                reinterpret_cast<typename MomentStorage<V>::Vec4*>(v), n4, a, scale, reinterpret_cast<Bf16x4*>(copy));
        done = n4 * 4;
    }
    if (done < n)
        adamwKernel<M, V, G><<<blocksFor(n - done), threads, 0, stream>>>(p + done, g + done, m + done, v + done, n - done,
                                                                      a, scale, copy ? copy + done : nullptr);
    return cudaGetLastError();
}

}  // namespace wb::rt::cuda::kernels
