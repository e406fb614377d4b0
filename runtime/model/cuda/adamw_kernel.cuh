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

// Four elements: the update of adamwElement on each, gradients divided by the clip divisor.
__device__ __forceinline__ void adamwElement4(float4& p, const float4& g, float4& m, float4& v, float inv,
                                              const AdamWParams& a)
{
    adamwElement(p.x, g.x * inv, m.x, v.x, a);
    adamwElement(p.y, g.y * inv, m.y, v.y, a);
    adamwElement(p.z, g.z * inv, m.z, v.z, a);
    adamwElement(p.w, g.w * inv, m.w, v.w, a);
}

// One group of four at index i: load, update, store (and the bf16 copy).
template <typename M, typename V, typename G>
__device__ __forceinline__ void adamwVec4At(int64_t i, float4* __restrict__ p,
                                            const typename MomentStorage<G>::Vec4* __restrict__ g,
                                            typename MomentStorage<M>::Vec4* __restrict__ m,
                                            typename MomentStorage<V>::Vec4* __restrict__ v, float inv,
                                            const AdamWParams& a, Bf16x4* __restrict__ copy)
{
    float4 pp = p[i], mm = MomentStorage<M>::load4(m[i]), vv = MomentStorage<V>::load4(v[i]);
    adamwElement4(pp, MomentStorage<G>::load4(g[i]), mm, vv, inv, a);
    p[i] = pp;
    m[i] = MomentStorage<M>::store4(mm);
    v[i] = MomentStorage<V>::store4(vv);
    if (copy)
        copy[i] = MomentStorage<__nv_bfloat16>::store4(pp);
}

// Vector part: n4 groups of four; the scalar tail is done by adamwKernel.
template <typename M, typename V, typename G>
__global__ void adamwKernel4(float4* __restrict__ p, const typename MomentStorage<G>::Vec4* __restrict__ g,
                             typename MomentStorage<M>::Vec4* __restrict__ m,
                             typename MomentStorage<V>::Vec4* __restrict__ v, int64_t n4, AdamWParams a,
                             const float* __restrict__ scale, Bf16x4* __restrict__ copy)
{
    const float inv = scale ? 1.0f / *scale : 1.0f;
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n4; i += int64_t{blockDim.x} * gridDim.x)
        adamwVec4At<M, V, G>(i, p, g, m, v, inv, a, copy);
}

// The vector part for an update confined to a few SMs (launchAdamW with `resident` blocks): a
// fixed grid of large blocks, each thread with kResidentUnroll groups of four in flight before it
// computes any (the loads of a 256-thread block of one group each, 14 KiB, are far too few to pull
// an SM's share of the HBM bandwidth; 512 threads × 4 groups × 56 B are 112 KiB). The same
// per-element arithmetic as adamwKernel4, so the results are bit-identical.
constexpr int kResidentThreads = 512;
constexpr int kResidentUnroll = 4;

template <typename M, typename V, typename G>
__global__ void __launch_bounds__(kResidentThreads, 1)
    adamwKernel4Resident(float4* __restrict__ p, const typename MomentStorage<G>::Vec4* __restrict__ g,
                         typename MomentStorage<M>::Vec4* __restrict__ m,
                         typename MomentStorage<V>::Vec4* __restrict__ v, int64_t n4, AdamWParams a,
                         const float* __restrict__ scale, Bf16x4* __restrict__ copy)
{
    using MS = MomentStorage<M>;
    using VS = MomentStorage<V>;
    using GS = MomentStorage<G>;
    constexpr int U = kResidentUnroll;
    const float inv = scale ? 1.0f / *scale : 1.0f;
    const int64_t stride = int64_t{blockDim.x} * gridDim.x;
    int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
    for (; i + (U - 1) * stride < n4; i += U * stride) {
        float4 pp[U], gg[U], mm[U], vv[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t j = i + u * stride;
            pp[u] = p[j];
            gg[u] = GS::load4(g[j]);
            mm[u] = MS::load4(m[j]);
            vv[u] = VS::load4(v[j]);
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t j = i + u * stride;
            adamwElement4(pp[u], gg[u], mm[u], vv[u], inv, a);
            p[j] = pp[u];
            m[j] = MS::store4(mm[u]);
            v[j] = VS::store4(vv[u]);
            if (copy)
                copy[j] = MomentStorage<__nv_bfloat16>::store4(pp[u]);
        }
    }
    for (; i < n4; i += stride)
        adamwVec4At<M, V, G>(i, p, g, m, v, inv, a, copy);
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
// size to a grid size (the caller knows the device). `resident` > 0: exactly that many blocks of
// adamwKernel4Resident instead (the vector part; the scalar rest on one block), so the update
// occupies at most that many SMs. `copy` (may be null): the weight's bf16 copy to write. `g`:
// fp32 or bf16. Returns cudaGetLastError() of the launches.
template <typename M, typename V, typename G, typename BlocksFor>
cudaError_t launchAdamW(float* p, const G* g, M* m, V* v, int64_t n, const AdamWParams& a, const float* scale,
                        __nv_bfloat16* copy, int threads, BlocksFor blocksFor, cudaStream_t stream, int resident = 0)
{
    int64_t done = 0;
    if (adamwAligned(p, 16) && adamwAligned(g, sizeof(typename MomentStorage<G>::Vec4)) &&
        adamwAligned(m, sizeof(typename MomentStorage<M>::Vec4)) &&
        adamwAligned(v, sizeof(typename MomentStorage<V>::Vec4)) && (!copy || adamwAligned(copy, sizeof(Bf16x4)))) {
        const int64_t n4 = n / 4;
        auto* p4 = reinterpret_cast<float4*>(p);
        auto* g4 = reinterpret_cast<const typename MomentStorage<G>::Vec4*>(g);
        auto* m4 = reinterpret_cast<typename MomentStorage<M>::Vec4*>(m);
        auto* v4 = reinterpret_cast<typename MomentStorage<V>::Vec4*>(v);
        auto* copy4 = reinterpret_cast<Bf16x4*>(copy);
        if (n4 > 0 && resident > 0) {
            const int64_t needed = (n4 + kResidentThreads - 1) / kResidentThreads;
            const auto blocks = static_cast<unsigned>(needed < resident ? needed : resident);
            adamwKernel4Resident<M, V, G><<<blocks, kResidentThreads, 0, stream>>>(p4, g4, m4, v4, n4, a, scale, copy4);
        } else if (n4 > 0) {
            adamwKernel4<M, V, G><<<blocksFor(n4), threads, 0, stream>>>(p4, g4, m4, v4, n4, a, scale, copy4);
        }
        done = n4 * 4;
    }
    if (done < n)
        adamwKernel<M, V, G><<<resident > 0 ? 1 : blocksFor(n - done), threads, 0, stream>>>(
            p + done, g + done, m + done, v + done, n - done, a, scale, copy ? copy + done : nullptr);
    return cudaGetLastError();
}

}  // namespace wb::rt::cuda::kernels
