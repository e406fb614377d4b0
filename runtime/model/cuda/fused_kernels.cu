// CUDA kernels of fused_kernels.h. One thread per output pair, grid-stride loops, fp32 math.
#include "runtime/model/cuda/fused_kernels.h"

#include "runtime/model/cuda/adamw_kernel.cuh"
#include "runtime/model/cuda/norm_kernels.cuh"

#include <ATen/Dispatch.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

namespace wb::rt::cuda {

namespace {

constexpr int kThreads = 256;

// Session 22's kernels (the vectorized RoPE and SwiGLU paths, the LayerNorm kernel): checked
// against fp64 by test_runtime_gpu on an H100, not yet timed in a round. WB_NEW_KERNELS=0 runs the
// earlier paths instead (the A/B row of gpu_round.sh; docs/runtime.md).
bool newKernelsOn()
{
    static const bool on = [] {
        const char* v = std::getenv("WB_NEW_KERNELS");
        return v == nullptr || std::string(v) != "0";
    }();
    return on;
}

// Session 23's memory-bound passes (the vectorized MoE combine with its one-pass backward, the
// dispatch's gather-sum, the distinct-row scatter, the gradients' sum of squares): checked by
// test_runtime_gpu; WB_PASS_KERNELS=0 runs the earlier paths (the A/B row `real-aten-passes` of
// gpu_round.sh).
bool passKernelsOn()
{
    static const bool on = [] {
        const char* v = std::getenv("WB_PASS_KERNELS");
        return v == nullptr || std::string(v) != "0";
    }();
    return on;
}

// Session 27's row kernels — the vectorized norm rows (norm_kernels.cuh) and the cross-entropy's
// vector loads — written and compiled without a GPU: off until a GPU round has checked them
// against fp64 (test_runtime_gpu turns them on) and timed them (gpu_round.sh's real-row-kernels
// row). WB_ROW_KERNELS=1 turns them on; otherwise the norms and the cross-entropy run the kernels
// measured before.
bool rowKernelsOn()
{
    static const bool on = [] {
        const char* v = std::getenv("WB_ROW_KERNELS");
        return v != nullptr && std::string(v) == "1";
    }();
    return on;
}

int blocksFor(int64_t work)
{
    const int64_t blocks = (work + kThreads - 1) / kThreads;
    // Enough blocks to fill the GPU several times; the grid-stride loop covers the rest.
    const int64_t cap = int64_t{at::cuda::getCurrentDeviceProperties()->multiProcessorCount} * 32;
    return static_cast<int>(std::max<int64_t>(1, std::min(blocks, cap)));
}

template <typename T>
__global__ void ropeKernel(const T* __restrict__ x, int64_t strideN, int64_t strideH, const T* __restrict__ cos,
                           const T* __restrict__ sin, T* __restrict__ out, int64_t N, int64_t H, int64_t F, float sign)
{
    const int64_t total = N * H * F;
    for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
         idx += int64_t{blockDim.x} * gridDim.x) {
        const int64_t i = idx % F;
        const int64_t row = idx / F;  // n·H + h
        const int64_t h = row % H;
        const int64_t n = row / H;
        const T* xr = x + n * strideN + h * strideH;
        const float x1 = static_cast<float>(xr[i]);
        const float x2 = static_cast<float>(xr[i + F]);
        const float c = static_cast<float>(cos[n * F + i]);
        const float s = sign * static_cast<float>(sin[n * F + i]);
        T* o = out + row * 2 * F;
        o[i] = static_cast<T>(x1 * c - x2 * s);
        o[i + F] = static_cast<T>(x2 * c + x1 * s);
    }
}

// V consecutive frequencies of one (token, head) row per thread: aligned V-element loads of both
// halves, cos and sin, and stores of both output halves, with 32-bit index math. The scalar kernel
// above moves 2 B per access and spends three 64-bit divisions per element (4.2 ms a step of the
// benchmark slice for ~9 GB of traffic, measured 2026-12-05). Same arithmetic per element.
template <typename T, int V>
struct alignas(sizeof(T) * V) VecOf {
    T v[V];
};

template <typename T, int V>
__global__ void ropeKernelVec(const T* __restrict__ x, uint32_t strideN, uint32_t strideH, const T* __restrict__ cos,
                              const T* __restrict__ sin, T* __restrict__ out, uint32_t H, uint32_t Fv, uint32_t total,
                              float sign)
{
    using Vec = VecOf<T, V>;
    const uint32_t F = Fv * V;
    for (uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += blockDim.x * gridDim.x) {
        const uint32_t iv = idx % Fv, row = idx / Fv;
        const uint32_t h = row % H, n = row / H, i = iv * V;
        const T* xr = x + size_t{n} * strideN + size_t{h} * strideH;
        const Vec a = *reinterpret_cast<const Vec*>(xr + i);
        const Vec b = *reinterpret_cast<const Vec*>(xr + i + F);
        const Vec c = *reinterpret_cast<const Vec*>(cos + size_t{n} * F + i);
        const Vec s = *reinterpret_cast<const Vec*>(sin + size_t{n} * F + i);
        Vec lo, hi;
#pragma unroll
        for (int j = 0; j < V; ++j) {
            const float x1 = static_cast<float>(a.v[j]), x2 = static_cast<float>(b.v[j]);
            const float cj = static_cast<float>(c.v[j]), sj = sign * static_cast<float>(s.v[j]);
            lo.v[j] = static_cast<T>(x1 * cj - x2 * sj);
            hi.v[j] = static_cast<T>(x2 * cj + x1 * sj);
        }
        T* o = out + size_t{row} * 2 * F;
        *reinterpret_cast<Vec*>(o + i) = lo;
        *reinterpret_cast<Vec*>(o + i + F) = hi;
    }
}

__device__ __forceinline__ float sigmoidf(float v)
{
    return 1.0f / (1.0f + __expf(-v));
}

template <typename T>
__global__ void swigluForwardKernel(const T* __restrict__ gateUp, T* __restrict__ out, int64_t N, int64_t F)
{
    const int64_t total = N * F;
    for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
         idx += int64_t{blockDim.x} * gridDim.x) {
        const int64_t n = idx / F, i = idx % F;
        const float g = static_cast<float>(gateUp[n * 2 * F + i]);
        const float u = static_cast<float>(gateUp[n * 2 * F + F + i]);
        out[idx] = static_cast<T>(g * sigmoidf(g) * u);
    }
}

template <typename T>
__global__ void swigluBackwardKernel(const T* __restrict__ gateUp, const T* __restrict__ dy, T* __restrict__ dGateUp,
                                     int64_t N, int64_t F)
{
    const int64_t total = N * F;
    for (int64_t idx = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; idx < total;
         idx += int64_t{blockDim.x} * gridDim.x) {
        const int64_t n = idx / F, i = idx % F;
        const float g = static_cast<float>(gateUp[n * 2 * F + i]);
        const float u = static_cast<float>(gateUp[n * 2 * F + F + i]);
        const float d = static_cast<float>(dy[idx]);
        const float sig = sigmoidf(g);
        const float silu = g * sig;
        dGateUp[n * 2 * F + i] = static_cast<T>(d * u * sig * (1.0f + g * (1.0f - sig)));
        dGateUp[n * 2 * F + F + i] = static_cast<T>(d * silu);
    }
}

// The same two SwiGLU passes with V consecutive columns per thread (aligned V-vectors, 32-bit
// indices): the expert rows are N = T·K wide tensors of F = 768 (6 GB a step of the benchmark slice).
template <typename T, int V>
__global__ void swigluForwardKernelVec(const T* __restrict__ gateUp, T* __restrict__ out, uint32_t Fv, uint32_t total)
{
    using Vec = VecOf<T, V>;
    const uint32_t F = Fv * V;
    for (uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += blockDim.x * gridDim.x) {
        const uint32_t n = idx / Fv, i = (idx % Fv) * V;
        const Vec g = *reinterpret_cast<const Vec*>(gateUp + size_t{n} * 2 * F + i);
        const Vec u = *reinterpret_cast<const Vec*>(gateUp + size_t{n} * 2 * F + F + i);
        Vec y;
#pragma unroll
        for (int j = 0; j < V; ++j) {
            const float gj = static_cast<float>(g.v[j]);
            y.v[j] = static_cast<T>(gj * sigmoidf(gj) * static_cast<float>(u.v[j]));
        }
        *reinterpret_cast<Vec*>(out + size_t{n} * F + i) = y;
    }
}

template <typename T, int V>
__global__ void swigluBackwardKernelVec(const T* __restrict__ gateUp, const T* __restrict__ dy,
                                        T* __restrict__ dGateUp, uint32_t Fv, uint32_t total)
{
    using Vec = VecOf<T, V>;
    const uint32_t F = Fv * V;
    for (uint32_t idx = blockIdx.x * blockDim.x + threadIdx.x; idx < total; idx += blockDim.x * gridDim.x) {
        const uint32_t n = idx / Fv, i = (idx % Fv) * V;
        const Vec g = *reinterpret_cast<const Vec*>(gateUp + size_t{n} * 2 * F + i);
        const Vec u = *reinterpret_cast<const Vec*>(gateUp + size_t{n} * 2 * F + F + i);
        const Vec d = *reinterpret_cast<const Vec*>(dy + size_t{n} * F + i);
        Vec dg, du;
#pragma unroll
        for (int j = 0; j < V; ++j) {
            const float gj = static_cast<float>(g.v[j]), uj = static_cast<float>(u.v[j]);
            const float dj = static_cast<float>(d.v[j]);
            const float sig = sigmoidf(gj);
            dg.v[j] = static_cast<T>(dj * uj * sig * (1.0f + gj * (1.0f - sig)));
            du.v[j] = static_cast<T>(dj * (gj * sig));
        }
        *reinterpret_cast<Vec*>(dGateUp + size_t{n} * 2 * F + i) = dg;
        *reinterpret_cast<Vec*>(dGateUp + size_t{n} * 2 * F + F + i) = du;
    }
}

// The vector kernels' width for element type T: the widest (16 B: 8 for 2-byte types, 4 for fp32),
// else 4, for which `fits(v)` holds (F, strides and pointers aligned, indices within 32 bits); 0
// for the scalar kernel, and while the kernels of that session (`on`) are off.
template <typename T, typename Fits>
int vectorWidth(Fits fits, bool on = newKernelsOn())
{
    constexpr int wide = static_cast<int>(16 / sizeof(T));
    if (!on)
        return 0;
    if (fits(wide))
        return wide;
    return wide > 4 && fits(4) ? 4 : 0;
}

// Calls vector(std::integral_constant<int, V>{}) for a width vectorWidth chose, scalar() for 0.
template <typename T, typename Vector, typename Scalar>
void launchByWidth(int width, Vector vector, Scalar scalar)
{
    constexpr int wide = static_cast<int>(16 / sizeof(T));
    if (width == wide)
        vector(std::integral_constant<int, wide>{});
    else if (width == 4)
        vector(std::integral_constant<int, 4>{});
    else
        scalar();
}

// True when rows of F values at these pointers take V-wide vectors with 32-bit indices over N rows.
template <typename T>
bool rowsFit(int v, int64_t N, int64_t F, std::initializer_list<const void*> pointers)
{
    bool ok = F % v == 0 && N * (F / v) < (int64_t{1} << 30);
    for (const void* p : pointers)
        ok = ok && reinterpret_cast<uintptr_t>(p) % (v * sizeof(T)) == 0;
    return ok;
}

// Threads of a row kernel: one V-vector each across a row of Dv vectors, whole warps, at most 256.
int rowThreads(int64_t Dv)
{
    return static_cast<int>(std::clamp<int64_t>((Dv + 31) / 32 * 32, 32, kThreads));
}

// Grid of a row kernel: one block per row, capped (the kernels loop over the rest).
int rowBlocks(int64_t rows)
{
    return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(rows, 65535 * 8)));
}

template <typename T, int V>
__device__ __forceinline__ VecOf<T, V> loadVec(const T* p)
{
    return *reinterpret_cast<const VecOf<T, V>*>(p);
}

template <typename T, int V>
__device__ __forceinline__ void storeVec(T* p, const VecOf<T, V>& v)
{
    *reinterpret_cast<VecOf<T, V>*>(p) = v;
}

// One block per token: each thread sums its V columns of the token's K rows in fp32, k in order:
// out[t] = Σ_k w[t, k] · rows[slot[t·K + k]] (w null: weights 1, the dispatch's backward).
// V = 1 is the scalar kernel of the first combine (2 B accesses: 2.2 ms a step of the benchmark
// slice for 3.1 GB); V = 16 B / sizeof(T) moves the same rows in 16-byte accesses.
template <typename T, int V>
__global__ void combineForwardKernel(const T* __restrict__ rows, const float* __restrict__ w,
                                     const int64_t* __restrict__ slot, T* __restrict__ out, int64_t T_, int64_t K,
                                     int64_t Dv)
{
    const int64_t D = Dv * V;
    for (int64_t t = blockIdx.x; t < T_; t += gridDim.x) {
        for (int64_t i = threadIdx.x; i < Dv; i += blockDim.x) {
            float acc[V];
#pragma unroll
            for (int j = 0; j < V; ++j)
                acc[j] = 0.0f;
            for (int64_t k = 0; k < K; ++k) {
                const float wk = w != nullptr ? w[t * K + k] : 1.0f;
                const auto r = loadVec<T, V>(rows + slot[t * K + k] * D + i * V);
#pragma unroll
                for (int j = 0; j < V; ++j)
                    acc[j] += wk * static_cast<float>(r.v[j]);
            }
            VecOf<T, V> o;
#pragma unroll
            for (int j = 0; j < V; ++j)
                o.v[j] = static_cast<T>(acc[j]);
            storeVec<T, V>(out + t * D + i * V, o);
        }
    }
}

// The first combine backward, two scalar kernels (the A/B path while WB_PASS_KERNELS=0).
// One block per assignment j = t·K + k: dRows[slot[j]] = w[j] · dOut[t].
template <typename T>
__global__ void combineRowsGradKernel(const float* __restrict__ w, const int64_t* __restrict__ slot,
                                      const T* __restrict__ dOut, T* __restrict__ dRows, int64_t A, int64_t K,
                                      int64_t D)
{
    for (int64_t j = blockIdx.x; j < A; j += gridDim.x) {
        const float wj = w[j];
        const T* g = dOut + (j / K) * D;
        T* r = dRows + slot[j] * D;
        for (int64_t d = threadIdx.x; d < D; d += blockDim.x)
            r[d] = static_cast<T>(wj * static_cast<float>(g[d]));
    }
}

// One warp per assignment j: dW[j] = ⟨rows[slot[j]], dOut[j / K]⟩ in fp32.
template <typename T>
__global__ void combineWeightGradKernel(const T* __restrict__ rows, const int64_t* __restrict__ slot,
                                        const T* __restrict__ dOut, float* __restrict__ dW, int64_t A, int64_t K,
                                        int64_t D)
{
    const int lane = threadIdx.x % 32;
    const int64_t warpsPerBlock = blockDim.x / 32;
    for (int64_t j = blockIdx.x * warpsPerBlock + threadIdx.x / 32; j < A; j += int64_t{gridDim.x} * warpsPerBlock) {
        const T* r = rows + slot[j] * D;
        const T* g = dOut + (j / K) * D;
        float acc = 0.0f;
        for (int64_t d = lane; d < D; d += 32)
            acc += static_cast<float>(r[d]) * static_cast<float>(g[d]);
        for (int offset = 16; offset > 0; offset /= 2)
            acc += __shfl_down_sync(0xffffffffu, acc, offset);
        if (lane == 0)
            dW[j] = acc;
    }
}

// Both combine gradients in one pass, one block per token t: each thread keeps its V columns of
// dOut[t] and, for each k, writes dRows[slot[t·K + k]] = w · dOut[t] and adds its share of
// ⟨rows[slot[t·K + k]], dOut[t]⟩; the K dot products are summed over the warp by shuffles and over
// the warps through shared memory ([warps][K] floats, dynamic). dOut is read once instead of 2K
// times, and every access is a V-vector (the two kernels above: 4.3 ms a step, 2.4 TB/s).
template <typename T, int V>
__global__ void combineBackwardKernel(const T* __restrict__ rows, const float* __restrict__ w,
                                      const int64_t* __restrict__ slot, const T* __restrict__ dOut,
                                      T* __restrict__ dRows, float* __restrict__ dW, int64_t T_, int64_t K, int64_t Dv)
{
    extern __shared__ float warpDots[];  // [blockDim.x / 32][K]
    const int64_t D = Dv * V;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    for (int64_t t = blockIdx.x; t < T_; t += gridDim.x) {
        for (int64_t k = 0; k < K; ++k) {
            const float wk = w[t * K + k];
            const int64_t r = slot[t * K + k];
            float dot = 0.0f;
            for (int64_t i = threadIdx.x; i < Dv; i += blockDim.x) {
                const auto g = loadVec<T, V>(dOut + t * D + i * V);
                const auto x = loadVec<T, V>(rows + r * D + i * V);
                VecOf<T, V> d;
#pragma unroll
                for (int j = 0; j < V; ++j) {
                    const float gj = static_cast<float>(g.v[j]);
                    dot += static_cast<float>(x.v[j]) * gj;
                    d.v[j] = static_cast<T>(wk * gj);
                }
                storeVec<T, V>(dRows + r * D + i * V, d);
            }
            for (int offset = 16; offset > 0; offset /= 2)
                dot += __shfl_down_sync(0xffffffffu, dot, offset);
            if (lane == 0)
                warpDots[warp * K + k] = dot;
        }
        __syncthreads();
        for (int64_t k = threadIdx.x; k < K; k += blockDim.x) {
            float sum = 0.0f;
            for (int v = 0; v < warps; ++v)
                sum += warpDots[v * K + k];
            dW[t * K + k] = sum;
        }
        __syncthreads();
    }
}

// Rows of src written (Accumulate: added) into dst at rows index[m], which are distinct: no
// atomics. One block per source row, V-vectors across it. An added value is rounded once, as
// ATen's index_add rounds dst + src.
template <typename T, int V, bool Accumulate>
__global__ void scatterRowsKernel(T* __restrict__ dst, const int64_t* __restrict__ index, const T* __restrict__ src,
                                  int64_t M, int64_t Dv)
{
    const int64_t D = Dv * V;
    for (int64_t m = blockIdx.x; m < M; m += gridDim.x) {
        T* d = dst + index[m] * D;
        const T* s = src + m * D;
        for (int64_t i = threadIdx.x; i < Dv; i += blockDim.x) {
            auto v = loadVec<T, V>(s + i * V);
            if constexpr (Accumulate) {
                const auto old = loadVec<T, V>(d + i * V);
#pragma unroll
                for (int j = 0; j < V; ++j)
                    v.v[j] = static_cast<T>(static_cast<float>(old.v[j]) + static_cast<float>(v.v[j]));
            }
            storeVec<T, V>(d + i * V, v);
        }
    }
}

// The gradients' sum of squares: up to kSquaresTensors tensors per launch, one block per chunk of
// kSquaresChunk values of one tensor (found from the chunk table in the kernel's parameters), 16-byte
// loads where the tensor is aligned, fp32 accumulation; each block writes its partial sum.
// ATen's _foreach_norm went through 109 multi-tensor launches a step of the benchmark slice (3.8 ms
// for 9.3 GB, 2.5 TB/s: each launch is capped at 320 chunks, so the GPU drains between them).
constexpr int kSquaresTensors = 48;
constexpr int64_t kSquaresChunk = 16384;  // a multiple of 8: every vector chunk starts aligned

struct SquaresBatch {
    const void* data[kSquaresTensors];
    int64_t numel[kSquaresTensors];
    int64_t firstChunk[kSquaresTensors + 1];
    uint8_t bf16[kSquaresTensors];
    uint8_t aligned[kSquaresTensors];
    int count;
};

template <typename T, int V>
__device__ __forceinline__ float squaresOf(const T* x, int64_t begin, int64_t end)
{
    float acc = 0.0f;
    const int64_t vEnd = begin + (end - begin) / V * V;
#pragma unroll 4
    for (int64_t i = begin + int64_t{threadIdx.x} * V; i < vEnd; i += int64_t{blockDim.x} * V) {
        const auto v = loadVec<T, V>(x + i);
#pragma unroll
        for (int j = 0; j < V; ++j) {
            const float f = static_cast<float>(v.v[j]);
            acc += f * f;
        }
    }
    for (int64_t i = vEnd + threadIdx.x; i < end; i += blockDim.x) {
        const float f = static_cast<float>(x[i]);
        acc += f * f;
    }
    return acc;
}

__global__ void sumSquaresKernel(SquaresBatch b, float* __restrict__ partial)
{
    const int64_t chunk = blockIdx.x;
    int t = 0;
    while (t + 1 < b.count && b.firstChunk[t + 1] <= chunk)
        ++t;
    const int64_t begin = (chunk - b.firstChunk[t]) * kSquaresChunk;
    const int64_t end = begin + kSquaresChunk < b.numel[t] ? begin + kSquaresChunk : b.numel[t];
    float acc;
    if (b.bf16[t])
        acc = b.aligned[t] ? squaresOf<c10::BFloat16, 8>(static_cast<const c10::BFloat16*>(b.data[t]), begin, end)
                           : squaresOf<c10::BFloat16, 1>(static_cast<const c10::BFloat16*>(b.data[t]), begin, end);
    else
        acc = b.aligned[t] ? squaresOf<float, 4>(static_cast<const float*>(b.data[t]), begin, end)
                           : squaresOf<float, 1>(static_cast<const float*>(b.data[t]), begin, end);
    for (int offset = 16; offset > 0; offset /= 2)
        acc += __shfl_down_sync(0xffffffffu, acc, offset);
    __shared__ float warpSums[kThreads / 32];
    if (threadIdx.x % 32 == 0)
        warpSums[threadIdx.x / 32] = acc;
    __syncthreads();
    if (threadIdx.x == 0) {
        float sum = 0.0f;
        for (int w = 0; w < static_cast<int>(blockDim.x / 32); ++w)
            sum += warpSums[w];
        partial[chunk] = sum;
    }
}

// bf16/fp16 → fp32: eight inputs (one 16-byte load) and two float4 stores per iteration.
template <typename T>
__global__ void widenKernel8(const uint4* __restrict__ in, float4* __restrict__ out, int64_t n8)
{
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n8; i += int64_t{gridDim.x} * blockDim.x) {
        const uint4 raw = in[i];
        const T* h = reinterpret_cast<const T*>(&raw);
        out[2 * i] = make_float4(static_cast<float>(h[0]), static_cast<float>(h[1]), static_cast<float>(h[2]),
                                 static_cast<float>(h[3]));
        out[2 * i + 1] = make_float4(static_cast<float>(h[4]), static_cast<float>(h[5]), static_cast<float>(h[6]),
                                     static_cast<float>(h[7]));
    }
}

template <typename T>
__global__ void widenKernel(const T* __restrict__ in, float* __restrict__ out, int64_t n)
{
    for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; i += int64_t{gridDim.x} * blockDim.x)
        out[i] = static_cast<float>(in[i]);
}

template <typename T>
void launchWiden(const T* in, float* out, int64_t n, bool aligned)
{
    const auto stream = at::cuda::getCurrentCUDAStream();
    int64_t done = 0;
    if (aligned) {
        const int64_t n8 = n / 8;
        if (n8 > 0)
            widenKernel8<T><<<blocksFor(n8), kThreads, 0, stream>>>(reinterpret_cast<const uint4*>(in),
                                                                    reinterpret_cast<float4*>(out), n8);
        done = n8 * 8;
    }
    if (done < n)
        widenKernel<T><<<blocksFor(n - done), kThreads, 0, stream>>>(in + done, out + done, n - done);
}

// Cross-entropy: one block per row. A running (max, Σ exp(x − max)) pair per thread, merged
// over the warp by shuffles and over the warps through shared memory.
constexpr int kRowThreads = 512;

__device__ __forceinline__ void mergeMaxSum(float& m, float& s, float m2, float s2)
{
    const float mx = fmaxf(m, m2);
    if (mx == -INFINITY)
        return;  // both empty
    s = s * expf(m - mx) + s2 * expf(m2 - mx);
    m = mx;
}

// The end of a forward row: the threads' (max, Σ exp) pairs merged over the warp by shuffles and
// over the warps through shared memory; thread 0 writes the row's logsumexp and its target's loss.
template <typename T>
__device__ __forceinline__ void crossEntropyFinishRow(float m, float s, const T* __restrict__ row,
                                                      const int64_t* __restrict__ labels, int64_t n, int64_t vocab,
                                                      float* __restrict__ loss, float* __restrict__ lse)
{
    for (int offset = 16; offset > 0; offset /= 2) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, offset);
        const float s2 = __shfl_xor_sync(0xffffffffu, s, offset);
        mergeMaxSum(m, s, m2, s2);
    }
    __shared__ float warpM[kRowThreads / 32], warpS[kRowThreads / 32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        warpM[warp] = m;
        warpS[warp] = s;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        float bm = warpM[0], bs = warpS[0];
        for (int w = 1; w < static_cast<int>(blockDim.x / 32); ++w)
            mergeMaxSum(bm, bs, warpM[w], warpS[w]);
        const float l = bm + logf(bs);
        const int64_t label = labels[n];
        lse[n] = l;
        loss[n] = (label >= 0 && label < vocab) ? l - static_cast<float>(row[label]) : 0.0f;
    }
}

// The kernels measured before session 27 (scalar 2-byte loads: the same loop and arithmetic), kept
// for the default path while the vector kernels below wait for a GPU round (rowKernelsOn); to be
// removed then.
template <typename T>
__global__ void crossEntropyForwardScalar(const T* __restrict__ logits, const int64_t* __restrict__ labels,
                                          float* __restrict__ loss, float* __restrict__ lse, int64_t V)
{
    const int64_t n = blockIdx.x;
    const T* row = logits + n * V;
    float m = -INFINITY, s = 0.0f;
    for (int64_t v = threadIdx.x; v < V; v += blockDim.x) {
        const float x = static_cast<float>(row[v]);
        if (x > m) {
            s = s * expf(m - x) + 1.0f;
            m = x;
        } else {
            s += expf(x - m);
        }
    }
    crossEntropyFinishRow(m, s, row, labels, n, V, loss, lse);
}

template <typename T>
__global__ void crossEntropyBackwardScalar(const T* __restrict__ logits, const int64_t* __restrict__ labels,
                                           const float* __restrict__ lse, const float* __restrict__ dLoss,
                                           T* __restrict__ dLogits, int64_t V)
{
    const int64_t n = blockIdx.x;
    const int64_t label = labels[n];
    const bool valid = label >= 0 && label < V;
    const float l = lse[n], g = valid ? dLoss[n] : 0.0f;
    const T* row = logits + n * V;
    T* out = dLogits + n * V;
    for (int64_t v = threadIdx.x; v < V; v += blockDim.x) {
        const float p = expf(static_cast<float>(row[v]) - l);
        out[v] = static_cast<T>(g * (p - (v == label ? 1.0f : 0.0f)));
    }
}

// V logits per access (16-byte loads where the vocabulary and the pointer allow, else 1): the
// thread takes the vector's max first and rescales its running sum once per vector, then adds the
// V exponentials; two vectors loaded before either is used (a 151,936-wide bf16 row is 37 vectors
// per thread: one load in flight at a time left the kernel at a third of the HBM bandwidth, as the
// 2-byte scalar loads before it). For V = 1 the arithmetic is the scalar kernel's.
template <typename T, int V>
__device__ __forceinline__ void crossEntropyAccumulate(const VecOf<T, V>& x, float& m, float& s)
{
    float mx = static_cast<float>(x.v[0]);
#pragma unroll
    for (int k = 1; k < V; ++k)
        mx = fmaxf(mx, static_cast<float>(x.v[k]));
    if (mx > m) {
        s *= expf(m - mx);
        m = mx;
    }
#pragma unroll
    for (int k = 0; k < V; ++k)
        s += expf(static_cast<float>(x.v[k]) - m);
}

template <typename T, int V>
__global__ void crossEntropyForwardKernel(const T* __restrict__ logits, const int64_t* __restrict__ labels,
                                          float* __restrict__ loss, float* __restrict__ lse, int64_t vocab)
{
    const int64_t n = blockIdx.x;
    const T* row = logits + n * vocab;
    const int64_t vectors = vocab / V;
    float m = -INFINITY, s = 0.0f;
    int64_t i = threadIdx.x;
    for (; i + blockDim.x < vectors; i += 2 * int64_t{blockDim.x}) {
        const auto a = loadVec<T, V>(row + i * V), b = loadVec<T, V>(row + (i + blockDim.x) * V);
        crossEntropyAccumulate<T, V>(a, m, s);
        crossEntropyAccumulate<T, V>(b, m, s);
    }
    if (i < vectors)
        crossEntropyAccumulate<T, V>(loadVec<T, V>(row + i * V), m, s);
    crossEntropyFinishRow(m, s, row, labels, n, vocab, loss, lse);
}

template <typename T, int V>
__global__ void crossEntropyBackwardKernel(const T* __restrict__ logits, const int64_t* __restrict__ labels,
                                           const float* __restrict__ lse, const float* __restrict__ dLoss,
                                           T* __restrict__ dLogits, int64_t vocab)
{
    const int64_t n = blockIdx.x;
    const int64_t label = labels[n];
    const bool valid = label >= 0 && label < vocab;
    const float l = lse[n], g = valid ? dLoss[n] : 0.0f;
    const T* row = logits + n * vocab;
    T* out = dLogits + n * vocab;
    for (int64_t i = threadIdx.x; i < vocab / V; i += blockDim.x) {
        const auto x = loadVec<T, V>(row + i * V);
        VecOf<T, V> d;
#pragma unroll
        for (int k = 0; k < V; ++k) {
            const float p = expf(static_cast<float>(x.v[k]) - l);
            d.v[k] = static_cast<T>(g * (p - (i * V + k == label ? 1.0f : 0.0f)));
        }
        storeVec<T, V>(out + i * V, d);
    }
}

// The cross-entropy kernels' width: 16-byte vectors (else 4 values) where the vocabulary is a
// multiple of it and every row starts aligned, else 1 (the same loop one logit at a time).
template <typename T>
int crossEntropyWidth(int64_t vocab, std::initializer_list<const void*> pointers)
{
    const int width = vectorWidth<T>(
        [&](int v) {
            bool ok = vocab % v == 0;
            for (const void* p : pointers)
                ok = ok && reinterpret_cast<uintptr_t>(p) % (v * sizeof(T)) == 0;
            return ok;
        },
        true);
    return width == 0 ? 1 : width;
}

// Calls launch(std::integral_constant<int, V>{}) for crossEntropyWidth's choice.
template <typename T, typename Launch>
void launchCrossEntropy(int width, Launch launch)
{
    constexpr int wide = static_cast<int>(16 / sizeof(T));
    if (width == wide)
        launch(std::integral_constant<int, wide>{});
    else if (width == 4)
        launch(std::integral_constant<int, 4>{});
    else
        launch(std::integral_constant<int, 1>{});
}

bool aligned16(const torch::Tensor& t)
{
    return reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
}

}  // namespace

bool combineSupports(const torch::Tensor& rows, const torch::Tensor& weights, const torch::Tensor& slot)
{
    const auto type = rows.scalar_type();
    return rows.is_cuda() && rows.dim() == 2 && rows.is_contiguous() &&
           (type == torch::kFloat32 || type == torch::kBFloat16 || type == torch::kFloat16) && weights.is_cuda() &&
           weights.dim() == 2 && weights.is_contiguous() && weights.scalar_type() == torch::kFloat32 &&
           slot.is_cuda() && slot.is_contiguous() && slot.scalar_type() == torch::kInt64 &&
           slot.numel() == weights.numel() && rows.size(0) == weights.numel();
}

namespace {

// The combine's V: 16-byte vectors when D and the pointers allow (and the row kernels are on).
template <typename T>
int rowWidth(int64_t D, std::initializer_list<const void*> pointers)
{
    return vectorWidth<T>([&](int v) { return rowsFit<T>(v, 1, D, pointers); }, passKernelsOn());
}

// Calls launch(std::integral_constant<int, V>{}) for rowWidth's choice (V = 1 for its 0).
template <typename T, typename Launch>
void launchRows(int width, Launch launch)
{
    launchByWidth<T>(width, launch, [&] { launch(std::integral_constant<int, 1>{}); });
}

// out[t] = Σ_k w[t, k] · rows[slot[t·K + k]] (w null: 1).
torch::Tensor gatherSum(const torch::Tensor& rows, const float* w, const torch::Tensor& slot, int64_t T, int64_t K)
{
    const c10::cuda::CUDAGuard guard(rows.device());
    const int64_t D = rows.size(1);
    auto out = torch::empty({T, D}, rows.options());
    if (out.numel() == 0)
        return out;
    const auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, rows.scalar_type(), "combineForward", [&] {
        launchRows<scalar_t>(rowWidth<scalar_t>(D, {rows.data_ptr(), out.data_ptr()}), [&](auto lanes) {
            constexpr int V = decltype(lanes)::value;
            combineForwardKernel<scalar_t, V><<<rowBlocks(T), V == 1 ? kThreads : rowThreads(D / V), 0, stream>>>(
                rows.data_ptr<scalar_t>(), w, slot.data_ptr<int64_t>(), out.data_ptr<scalar_t>(), T, K, D / V);
        });
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

bool rowKernelType(const torch::Tensor& t)
{
    const auto type = t.scalar_type();
    return type == torch::kFloat32 || type == torch::kBFloat16 || type == torch::kFloat16;
}

}  // namespace

torch::Tensor combineForward(const torch::Tensor& rows, const torch::Tensor& weights, const torch::Tensor& slot)
{
    TORCH_CHECK(combineSupports(rows, weights, slot), "combineForward: unsupported operands");
    return gatherSum(rows, weights.data_ptr<float>(), slot, weights.size(0), weights.size(1));
}

bool gatherSumSupports(const torch::Tensor& rows, const torch::Tensor& slot, int64_t K)
{
    return passKernelsOn() && rows.is_cuda() && rows.dim() == 2 && rows.is_contiguous() && rowKernelType(rows) &&
           slot.is_cuda() && slot.dim() == 1 && slot.is_contiguous() && slot.scalar_type() == torch::kInt64 &&
           slot.numel() == rows.size(0) && K > 0 && rows.size(0) % K == 0;
}

torch::Tensor gatherSumRows(const torch::Tensor& rows, const torch::Tensor& slot, int64_t K)
{
    TORCH_CHECK(gatherSumSupports(rows, slot, K), "gatherSumRows: rows must be a contiguous CUDA [T·K, D] tensor and "
                "slot a contiguous CUDA int64 [T·K]");
    return gatherSum(rows, nullptr, slot, rows.size(0) / K, K);
}

std::pair<torch::Tensor, torch::Tensor> combineBackward(const torch::Tensor& rows, const torch::Tensor& weights,
                                                        const torch::Tensor& slot, const torch::Tensor& dOut)
{
    TORCH_CHECK(combineSupports(rows, weights, slot), "combineBackward: unsupported operands");
    const c10::cuda::CUDAGuard guard(rows.device());
    const int64_t T = weights.size(0), K = weights.size(1), D = rows.size(1), A = T * K;
    auto g = dOut.to(rows.scalar_type()).contiguous();
    TORCH_CHECK(g.dim() == 2 && g.size(0) == T && g.size(1) == D, "combineBackward: dOut must be [T, D]");
    auto dRows = torch::empty_like(rows);
    auto dW = torch::empty_like(weights);
    if (A == 0 || D == 0)
        return {dRows.zero_(), dW.zero_()};
    const auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, rows.scalar_type(), "combineBackward", [&] {
        if (passKernelsOn()) {
            launchRows<scalar_t>(rowWidth<scalar_t>(D, {rows.data_ptr(), g.data_ptr(), dRows.data_ptr()}),
                                 [&](auto lanes) {
                                     constexpr int V = decltype(lanes)::value;
                                     const int threads = rowThreads(D / V);
                                     const size_t shared = sizeof(float) * (threads / 32) * K;
                                     combineBackwardKernel<scalar_t, V><<<rowBlocks(T), threads, shared, stream>>>(
                                         rows.data_ptr<scalar_t>(), weights.data_ptr<float>(), slot.data_ptr<int64_t>(),
                                         g.data_ptr<scalar_t>(), dRows.data_ptr<scalar_t>(), dW.data_ptr<float>(), T, K,
                                         D / V);
                                 });
            return;
        }
        const int rowGrid = static_cast<int>(std::min<int64_t>(A, 65535 * 8));
        const int warpGrid = static_cast<int>(std::min<int64_t>((A + kThreads / 32 - 1) / (kThreads / 32), 65535 * 8));
        combineRowsGradKernel<scalar_t><<<rowGrid, kThreads, 0, stream>>>(
            weights.data_ptr<float>(), slot.data_ptr<int64_t>(), g.data_ptr<scalar_t>(), dRows.data_ptr<scalar_t>(), A,
            K, D);
        combineWeightGradKernel<scalar_t><<<warpGrid, kThreads, 0, stream>>>(
            rows.data_ptr<scalar_t>(), slot.data_ptr<int64_t>(), g.data_ptr<scalar_t>(), dW.data_ptr<float>(), A, K, D);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return {dRows, dW};
}

bool scatterRowsSupports(const torch::Tensor& dst, const torch::Tensor& index, const torch::Tensor& src)
{
    return passKernelsOn() && dst.is_cuda() && dst.dim() == 2 && dst.is_contiguous() && rowKernelType(dst) &&
           src.is_cuda() && src.dim() == 2 && src.is_contiguous() && src.scalar_type() == dst.scalar_type() &&
           src.size(1) == dst.size(1) && index.is_cuda() && index.dim() == 1 && index.is_contiguous() &&
           index.scalar_type() == torch::kInt64 && index.numel() == src.size(0) && dst.device() == src.device();
}

void scatterRows(const torch::Tensor& dst, const torch::Tensor& index, const torch::Tensor& src, bool accumulate)
{
    TORCH_CHECK(scatterRowsSupports(dst, index, src), "scatterRows: dst [R, D] and src [M, D] must be contiguous CUDA "
                "tensors of one dtype and index a contiguous CUDA int64 [M]");
    const c10::cuda::CUDAGuard guard(dst.device());
    const int64_t M = src.size(0), D = src.size(1);
    if (M == 0 || D == 0)
        return;
    const auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, dst.scalar_type(), "scatterRows", [&] {
        launchRows<scalar_t>(rowWidth<scalar_t>(D, {dst.data_ptr(), src.data_ptr()}), [&](auto lanes) {
            constexpr int V = decltype(lanes)::value;
            const auto launch = [&](auto kernel) {
                kernel<<<rowBlocks(M), rowThreads(D / V), 0, stream>>>(
                    dst.data_ptr<scalar_t>(), index.data_ptr<int64_t>(), src.data_ptr<scalar_t>(), M, D / V);
            };
            if (accumulate)
                launch(scatterRowsKernel<scalar_t, V, true>);
            else
                launch(scatterRowsKernel<scalar_t, V, false>);
        });
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}

bool adamwSupports(const torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& m, const torch::Tensor& v)
{
    for (const auto* t : {&p, &g, &m, &v}) {
        // p is fp32; the moments and the gradient may be bf16.
        const bool typeOk = t->defined() && (t->scalar_type() == torch::kFloat32 ||
                                             (t != &p && t->scalar_type() == torch::kBFloat16));
        if (!t->defined() || !t->is_cuda() || !typeOk || !t->is_contiguous() || t->numel() != p.numel() ||
            t->device() != p.device())
            return false;
    }
    return true;
}

namespace {

// The moment or gradient pointer in the kernel's type (at::BFloat16 and __nv_bfloat16 share the bits).
template <typename M>
M* momentPtr(const torch::Tensor& t)
{
    if constexpr (std::is_same_v<M, float>)
        return t.data_ptr<float>();
    else
        return reinterpret_cast<M*>(t.data_ptr<at::BFloat16>());
}

// A grid of one pass: every block does its 256 threads' elements once and retires.
int onePassBlocks(int64_t work)
{
    return static_cast<int>(std::clamp<int64_t>((work + kThreads - 1) / kThreads, 1, int64_t{0x7fffffff}));
}

template <typename M, typename V, typename G>
void launchAdamWFor(const torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& m, const torch::Tensor& v,
                    const kernels::AdamWParams& a, const float* scale, const torch::Tensor& copy, bool onePassGrid,
                    int residentBlocks)
{
    auto* copyPtr = copy.defined() ? reinterpret_cast<__nv_bfloat16*>(copy.data_ptr<at::BFloat16>()) : nullptr;
    const auto stream = at::cuda::getCurrentCUDAStream().stream();
    const G* gPtr = momentPtr<G>(g);
    C10_CUDA_CHECK(onePassGrid ? kernels::launchAdamW(p.data_ptr<float>(), gPtr, momentPtr<M>(m), momentPtr<V>(v),
                                                      p.numel(), a, scale, copyPtr, kThreads, onePassBlocks, stream,
                                                      residentBlocks)
                               : kernels::launchAdamW(p.data_ptr<float>(), gPtr, momentPtr<M>(m), momentPtr<V>(v),
                                                      p.numel(), a, scale, copyPtr, kThreads, blocksFor, stream,
                                                      residentBlocks));
}

// The moment types' four combinations for a gradient type G.
template <typename G>
void launchAdamWForGradient(const torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& m,
                            const torch::Tensor& v, const kernels::AdamWParams& a, const float* scale,
                            const torch::Tensor& copy, bool onePassGrid, int residentBlocks)
{
    const bool mBf16 = m.scalar_type() == torch::kBFloat16, vBf16 = v.scalar_type() == torch::kBFloat16;
    if (!mBf16 && !vBf16)
        launchAdamWFor<float, float, G>(p, g, m, v, a, scale, copy, onePassGrid, residentBlocks);
    else if (mBf16 && vBf16)
        launchAdamWFor<__nv_bfloat16, __nv_bfloat16, G>(p, g, m, v, a, scale, copy, onePassGrid, residentBlocks);
    else if (mBf16)
        launchAdamWFor<__nv_bfloat16, float, G>(p, g, m, v, a, scale, copy, onePassGrid, residentBlocks);
    else
        launchAdamWFor<float, __nv_bfloat16, G>(p, g, m, v, a, scale, copy, onePassGrid, residentBlocks);
}

}  // namespace

bool adamwCopySupports(const torch::Tensor& p, const torch::Tensor& copy)
{
    return copy.defined() && copy.is_cuda() && copy.scalar_type() == torch::kBFloat16 && copy.is_contiguous() &&
           copy.numel() == p.numel() && copy.device() == p.device();
}

void adamwStep(const torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& m, const torch::Tensor& v,
               double lr, double beta1, double beta2, double eps, double weightDecay, int64_t step,
               const torch::Tensor& gradScale, const torch::Tensor& bf16Copy, bool onePassGrid, int residentBlocks)
{
    TORCH_CHECK(adamwSupports(p, g, m, v),
                "adamwStep: p must be a contiguous fp32 CUDA tensor, g, m, v contiguous fp32 or bf16, all of one size");
    TORCH_CHECK(!bf16Copy.defined() || adamwCopySupports(p, bf16Copy),
                "adamwStep: bf16Copy must be a contiguous bf16 CUDA tensor of p's size");
    TORCH_CHECK(step >= 1, "adamwStep: step counts from 1");
    TORCH_CHECK(!gradScale.defined() || (gradScale.is_cuda() && gradScale.scalar_type() == torch::kFloat32 &&
                                         gradScale.numel() == 1),
                "adamwStep: gradScale must be a one-element fp32 CUDA tensor");
    const c10::cuda::CUDAGuard guard(p.device());
    if (p.numel() == 0)
        return;
    kernels::AdamWParams a;
    a.lr = static_cast<float>(lr);
    a.beta1 = static_cast<float>(beta1);
    a.beta2 = static_cast<float>(beta2);
    a.eps = static_cast<float>(eps);
    a.decay = static_cast<float>(1.0 - lr * weightDecay);
    a.stepSize = static_cast<float>(lr / (1.0 - std::pow(beta1, static_cast<double>(step))));
    a.biasCorrection2Sqrt = static_cast<float>(std::sqrt(1.0 - std::pow(beta2, static_cast<double>(step))));
    const float* scale = gradScale.defined() ? gradScale.data_ptr<float>() : nullptr;
    if (g.scalar_type() == torch::kBFloat16)
        launchAdamWForGradient<__nv_bfloat16>(p, g, m, v, a, scale, bf16Copy, onePassGrid, residentBlocks);
    else
        launchAdamWForGradient<float>(p, g, m, v, a, scale, bf16Copy, onePassGrid, residentBlocks);
}

bool fusedKernelsAvailable()
{
    return true;
}

bool crossEntropySupports(const torch::Tensor& logits, const torch::Tensor& labels)
{
    const auto type = logits.scalar_type();
    return logits.is_cuda() && logits.dim() == 2 && logits.is_contiguous() && logits.size(0) <= INT32_MAX &&
           (type == torch::kFloat32 || type == torch::kBFloat16 || type == torch::kHalf) && labels.is_cuda() &&
           labels.dim() == 1 && labels.scalar_type() == torch::kInt64 && labels.size(0) == logits.size(0) &&
           labels.device() == logits.device();
}

std::pair<torch::Tensor, torch::Tensor> crossEntropyForward(const torch::Tensor& logits, const torch::Tensor& labels)
{
    TORCH_CHECK(crossEntropySupports(logits, labels), "crossEntropyForward: unsupported operands");
    const c10::cuda::CUDAGuard guard(logits.device());
    const int64_t N = logits.size(0), V = logits.size(1);
    auto f32 = logits.options().dtype(torch::kFloat32);
    if (N == 0 || V == 0)
        return {torch::zeros({N}, f32), torch::zeros({N}, f32)};
    auto loss = torch::empty({N}, f32), lse = torch::empty({N}, f32);  // the kernel writes every row
    auto y = labels.contiguous();
    const auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, logits.scalar_type(), "crossEntropyForward", [&] {
        if (!rowKernelsOn()) {
            crossEntropyForwardScalar<scalar_t><<<static_cast<unsigned>(N), kRowThreads, 0, stream>>>(
                logits.data_ptr<scalar_t>(), y.data_ptr<int64_t>(), loss.data_ptr<float>(), lse.data_ptr<float>(), V);
            return;
        }
        const int width = crossEntropyWidth<scalar_t>(V, {logits.data_ptr()});
        launchCrossEntropy<scalar_t>(width, [&](auto w) {
            crossEntropyForwardKernel<scalar_t, decltype(w)::value><<<static_cast<unsigned>(N), kRowThreads, 0, stream>>>(
                logits.data_ptr<scalar_t>(), y.data_ptr<int64_t>(), loss.data_ptr<float>(), lse.data_ptr<float>(), V);
        });
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return {loss, lse};
}

torch::Tensor crossEntropyBackward(const torch::Tensor& logits, const torch::Tensor& labels,
                                   const torch::Tensor& logsumexp, const torch::Tensor& dLoss)
{
    TORCH_CHECK(crossEntropySupports(logits, labels), "crossEntropyBackward: unsupported operands");
    const c10::cuda::CUDAGuard guard(logits.device());
    const int64_t N = logits.size(0), V = logits.size(1);
    auto dLogits = torch::empty_like(logits);
    if (N == 0 || V == 0)
        return dLogits;
    auto y = labels.contiguous();
    auto l = logsumexp.to(torch::kFloat32).contiguous();
    auto g = dLoss.to(torch::kFloat32).contiguous();  // the mean's backward hands an expanded tensor
    TORCH_CHECK(l.numel() == N && g.numel() == N, "crossEntropyBackward: logsumexp and dLoss must have N values");
    const auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, logits.scalar_type(), "crossEntropyBackward", [&] {
        if (!rowKernelsOn()) {
            crossEntropyBackwardScalar<scalar_t><<<static_cast<unsigned>(N), kRowThreads, 0, stream>>>(
                logits.data_ptr<scalar_t>(), y.data_ptr<int64_t>(), l.data_ptr<float>(), g.data_ptr<float>(),
                dLogits.data_ptr<scalar_t>(), V);
            return;
        }
        const int width = crossEntropyWidth<scalar_t>(V, {logits.data_ptr(), dLogits.data_ptr()});
        launchCrossEntropy<scalar_t>(width, [&](auto w) {
            crossEntropyBackwardKernel<scalar_t, decltype(w)::value>
                <<<static_cast<unsigned>(N), kRowThreads, 0, stream>>>(logits.data_ptr<scalar_t>(), y.data_ptr<int64_t>(),
                                                                        l.data_ptr<float>(), g.data_ptr<float>(),
                                                                        dLogits.data_ptr<scalar_t>(), V);
        });
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return dLogits;
}

bool widenSupports(const torch::Tensor& x)
{
    return x.is_cuda() && x.is_contiguous() && (x.scalar_type() == torch::kBFloat16 || x.scalar_type() == torch::kHalf);
}

torch::Tensor widenToFloat(const torch::Tensor& x)
{
    TORCH_CHECK(widenSupports(x), "widenToFloat: x must be a contiguous bf16 or fp16 CUDA tensor");
    const c10::cuda::CUDAGuard guard(x.device());
    auto out = torch::empty(x.sizes(), x.options().dtype(torch::kFloat32));
    const int64_t n = x.numel();
    if (n == 0)
        return out;
    if (x.scalar_type() == torch::kBFloat16)
        launchWiden(x.data_ptr<c10::BFloat16>(), out.data_ptr<float>(), n, aligned16(x) && aligned16(out));
    else
        launchWiden(x.data_ptr<c10::Half>(), out.data_ptr<float>(), n, aligned16(x) && aligned16(out));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

bool ropeRotateSupports(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin)
{
    if (!x.is_cuda() || x.dim() != 3 || x.stride(2) != 1 || x.size(2) % 2 != 0)
        return false;
    const int64_t N = x.size(0), F = x.size(2) / 2;
    for (const auto* t : {&cos, &sin}) {
        if (!t->is_cuda() || !t->is_contiguous() || t->scalar_type() != x.scalar_type() || t->numel() != N * F ||
            t->size(0) != N || t->size(-1) != F)
            return false;
    }
    const auto type = x.scalar_type();
    return type == torch::kFloat32 || type == torch::kBFloat16 || type == torch::kFloat16;
}

torch::Tensor ropeRotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, double sign)
{
    TORCH_CHECK(ropeRotateSupports(x, cos, sin), "ropeRotate: x must be a CUDA [N, H, D] tensor with unit stride in D "
                "and cos/sin contiguous [N, 1, D/2] of its dtype");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t N = x.size(0), H = x.size(1), F = x.size(2) / 2;
    auto out = torch::empty({N, H, 2 * F}, x.options());
    if (out.numel() == 0)
        return out;
    const auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, x.scalar_type(), "ropeRotate", [&] {
        // The widest vector (≤ 16 B) that F, both strides and every pointer allow, 32-bit indices.
        const int width = vectorWidth<scalar_t>([&](int v) {
            return x.stride(0) % v == 0 && x.stride(1) % v == 0 && x.stride(0) < (int64_t{1} << 31) &&
                   rowsFit<scalar_t>(v, N * H, F, {x.data_ptr(), cos.data_ptr(), sin.data_ptr(), out.data_ptr()});
        });
        const auto launchVector = [&](auto lanes) {
            constexpr int V = decltype(lanes)::value;
            const int64_t total = N * H * (F / V);
            ropeKernelVec<scalar_t, V><<<blocksFor(total), kThreads, 0, stream>>>(
                x.data_ptr<scalar_t>(), static_cast<uint32_t>(x.stride(0)), static_cast<uint32_t>(x.stride(1)),
                cos.data_ptr<scalar_t>(), sin.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), static_cast<uint32_t>(H),
                static_cast<uint32_t>(F / V), static_cast<uint32_t>(total), static_cast<float>(sign));
        };
        launchByWidth<scalar_t>(width, launchVector, [&] {
            ropeKernel<scalar_t><<<blocksFor(N * H * F), kThreads, 0, stream>>>(
                x.data_ptr<scalar_t>(), x.stride(0), x.stride(1), cos.data_ptr<scalar_t>(), sin.data_ptr<scalar_t>(),
                out.data_ptr<scalar_t>(), N, H, F, static_cast<float>(sign));
        });
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

bool swigluSupports(const torch::Tensor& gateUp)
{
    const auto type = gateUp.scalar_type();
    return gateUp.is_cuda() && gateUp.dim() == 2 && gateUp.is_contiguous() && gateUp.size(1) % 2 == 0 &&
           (type == torch::kFloat32 || type == torch::kBFloat16 || type == torch::kFloat16);
}

torch::Tensor swigluForward(const torch::Tensor& gateUp)
{
    TORCH_CHECK(swigluSupports(gateUp), "swigluForward: gateUp must be a contiguous CUDA [N, 2F] tensor");
    const c10::cuda::CUDAGuard guard(gateUp.device());
    const int64_t N = gateUp.size(0), F = gateUp.size(1) / 2;
    auto out = torch::empty({N, F}, gateUp.options());
    if (out.numel() == 0)
        return out;
    const auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, gateUp.scalar_type(), "swigluForward", [&] {
        const int width = vectorWidth<scalar_t>(
            [&](int v) { return rowsFit<scalar_t>(v, N, F, {gateUp.data_ptr(), out.data_ptr()}); });
        const auto launchVector = [&](auto lanes) {
            constexpr int V = decltype(lanes)::value;
            const int64_t total = N * (F / V);
            swigluForwardKernelVec<scalar_t, V><<<blocksFor(total), kThreads, 0, stream>>>(
                gateUp.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), static_cast<uint32_t>(F / V),
                static_cast<uint32_t>(total));
        };
        launchByWidth<scalar_t>(width, launchVector, [&] {
            swigluForwardKernel<scalar_t><<<blocksFor(N * F), kThreads, 0, stream>>>(
                gateUp.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), N, F);
        });
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return out;
}

torch::Tensor swigluBackward(const torch::Tensor& gateUp, const torch::Tensor& dy)
{
    TORCH_CHECK(swigluSupports(gateUp), "swigluBackward: gateUp must be a contiguous CUDA [N, 2F] tensor");
    const int64_t N = gateUp.size(0), F = gateUp.size(1) / 2;
    auto dyC = dy.to(gateUp.scalar_type()).contiguous();
    TORCH_CHECK(dyC.dim() == 2 && dyC.size(0) == N && dyC.size(1) == F, "swigluBackward: dy must be [N, F]");
    const c10::cuda::CUDAGuard guard(gateUp.device());
    auto dGateUp = torch::empty_like(gateUp);
    if (dGateUp.numel() == 0)
        return dGateUp;
    const auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, gateUp.scalar_type(), "swigluBackward", [&] {
        const int width = vectorWidth<scalar_t>([&](int v) {
            return rowsFit<scalar_t>(v, N, F, {gateUp.data_ptr(), dyC.data_ptr(), dGateUp.data_ptr()});
        });
        const auto launchVector = [&](auto lanes) {
            constexpr int V = decltype(lanes)::value;
            const int64_t total = N * (F / V);
            swigluBackwardKernelVec<scalar_t, V><<<blocksFor(total), kThreads, 0, stream>>>(
                gateUp.data_ptr<scalar_t>(), dyC.data_ptr<scalar_t>(), dGateUp.data_ptr<scalar_t>(),
                static_cast<uint32_t>(F / V), static_cast<uint32_t>(total));
        };
        launchByWidth<scalar_t>(width, launchVector, [&] {
            swigluBackwardKernel<scalar_t><<<blocksFor(N * F), kThreads, 0, stream>>>(
                gateUp.data_ptr<scalar_t>(), dyC.data_ptr<scalar_t>(), dGateUp.data_ptr<scalar_t>(), N, F);
        });
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return dGateUp;
}

// The scalar norm kernels, kept for the rows the vector kernels of norm_kernels.cuh do not take (a
// width not a multiple of 16 bytes, a misaligned pointer, WB_ROW_KERNELS not 1).
// RMSNorm: one block per row (grid-stride over rows), fp32 math, the formula of RmsNormImpl's
// ATen path: y = (x · rstd) · w with rstd = 1/sqrt(mean(x²) + eps). Backward with x̂ = x · rstd,
// g = dy · w: dx = rstd · (g − x̂ · mean(g · x̂)), dw = Σ_rows dy · x̂ — each block sums its rows'
// dw in shared memory (a thread owns its columns: no atomics) and writes one partial row; the
// partials are summed by ATen (deterministic for a given device).
namespace {

constexpr int kNormThreads = 256;
constexpr int64_t kNormMaxWidth = 8192;  // the backward's shared dw row: 32 KiB

template <typename T>
__device__ __forceinline__ float normLoad(T v)
{
    return static_cast<float>(v);
}

__device__ float blockSum(float v, float* shared)
{
    for (int offset = 16; offset > 0; offset >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0)
        shared[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < static_cast<int>(blockDim.x >> 5) ? shared[lane] : 0.0f;
        for (int offset = 16; offset > 0; offset >>= 1)
            v += __shfl_xor_sync(0xffffffffu, v, offset);
        if (lane == 0)
            shared[32] = v;
    }
    __syncthreads();
    v = shared[32];
    __syncthreads();  // shared[] is reused by the next call
    return v;
}

template <typename T>
__global__ void rmsNormForwardKernel(const T* __restrict__ x, const float* __restrict__ w, T* __restrict__ y,
                                     float* __restrict__ rstd, int64_t N, int64_t D, float eps)
{
    __shared__ float shared[33];
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        const T* xr = x + r * D;
        T* yr = y + r * D;
        float squares = 0.0f;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            const float v = normLoad(xr[j]);
            squares += v * v;
        }
        const float rs = rsqrtf(blockSum(squares, shared) / static_cast<float>(D) + eps);
        if (threadIdx.x == 0)
            rstd[r] = rs;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x)
            yr[j] = static_cast<T>(normLoad(xr[j]) * rs * w[j]);
    }
}

template <typename T>
__global__ void rmsNormBackwardKernel(const T* __restrict__ x, const float* __restrict__ w,
                                      const float* __restrict__ rstd, const T* __restrict__ dy, T* __restrict__ dx,
                                      float* __restrict__ dwPartial, int64_t N, int64_t D)
{
    extern __shared__ float dwRow[];  // D values; column j belongs to thread j % blockDim.x
    __shared__ float shared[33];
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x)
        dwRow[j] = 0.0f;
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        const T* xr = x + r * D;
        const T* dyr = dy + r * D;
        T* dxr = dx + r * D;
        const float rs = rstd[r];
        float dot = 0.0f;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            const float xh = normLoad(xr[j]) * rs, d = normLoad(dyr[j]);
            dot += d * w[j] * xh;
            dwRow[j] += d * xh;
        }
        const float meanDot = blockSum(dot, shared) / static_cast<float>(D);
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            const float xh = normLoad(xr[j]) * rs;
            dxr[j] = static_cast<T>(rs * (normLoad(dyr[j]) * w[j] - xh * meanDot));
        }
    }
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x)
        dwPartial[blockIdx.x * D + j] = dwRow[j];
}

// LayerNorm, the same shape of kernel: y = (x − mean) · rstd · w + b, rstd = 1/sqrt(var + eps),
// var the biased variance of the row (two passes over the row: mean, then Σ (x − mean)²), fp32
// math, one rounding per output. Backward with x̂ = (x − mean) · rstd, g = dy · w:
// dx = rstd · (g − mean(g) − x̂ · mean(g · x̂)), dw = Σ_rows dy · x̂, db = Σ_rows dy (per-block
// partial rows in shared memory, summed by ATen).
template <typename T>
__global__ void layerNormForwardKernel(const T* __restrict__ x, const float* __restrict__ w,
                                       const float* __restrict__ b, T* __restrict__ y, float* __restrict__ mean,
                                       float* __restrict__ rstd, int64_t N, int64_t D, float eps)
{
    __shared__ float shared[33];
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        const T* xr = x + r * D;
        T* yr = y + r * D;
        float sum = 0.0f;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x)
            sum += normLoad(xr[j]);
        const float mu = blockSum(sum, shared) / static_cast<float>(D);
        float squares = 0.0f;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            const float c = normLoad(xr[j]) - mu;
            squares += c * c;
        }
        const float rs = rsqrtf(blockSum(squares, shared) / static_cast<float>(D) + eps);
        if (threadIdx.x == 0) {
            mean[r] = mu;
            rstd[r] = rs;
        }
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x)
            yr[j] = static_cast<T>((normLoad(xr[j]) - mu) * rs * w[j] + b[j]);
    }
}

template <typename T>
__global__ void layerNormBackwardKernel(const T* __restrict__ x, const float* __restrict__ w,
                                        const float* __restrict__ mean, const float* __restrict__ rstd,
                                        const T* __restrict__ dy, T* __restrict__ dx, float* __restrict__ dwPartial,
                                        float* __restrict__ dbPartial, int64_t N, int64_t D)
{
    extern __shared__ float rows[];  // dw then db, D values each; column j belongs to thread j % blockDim.x
    float* dwRow = rows;
    float* dbRow = rows + D;
    __shared__ float shared[33];
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x)
        dwRow[j] = dbRow[j] = 0.0f;
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        const T* xr = x + r * D;
        const T* dyr = dy + r * D;
        T* dxr = dx + r * D;
        const float mu = mean[r], rs = rstd[r];
        float sumG = 0.0f, dot = 0.0f;
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            const float xh = (normLoad(xr[j]) - mu) * rs, d = normLoad(dyr[j]), g = d * w[j];
            sumG += g;
            dot += g * xh;
            dwRow[j] += d * xh;
            dbRow[j] += d;
        }
        const float meanG = blockSum(sumG, shared) / static_cast<float>(D);
        const float meanDot = blockSum(dot, shared) / static_cast<float>(D);
        for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
            const float xh = (normLoad(xr[j]) - mu) * rs;
            dxr[j] = static_cast<T>(rs * (normLoad(dyr[j]) * w[j] - meanG - xh * meanDot));
        }
    }
    for (int64_t j = threadIdx.x; j < D; j += blockDim.x) {
        dwPartial[blockIdx.x * D + j] = dwRow[j];
        dbPartial[blockIdx.x * D + j] = dbRow[j];
    }
}

constexpr int64_t kLayerNormMaxWidth = 5120;  // the backward's shared dw + db rows: 40 KiB

int normBlocks(int64_t rows, int perSm)
{
    const int64_t cap = int64_t{at::cuda::getCurrentDeviceProperties()->multiProcessorCount} * perSm;
    return static_cast<int>(std::max<int64_t>(1, std::min(rows, cap)));
}

template <typename T>
bool normRowsFast(int64_t D, int maxPerLane, std::initializer_list<const void*> pointers)
{
    return rowKernelsOn() && kernels::normRowsTake<T>(D, maxPerLane, pointers);
}

int smCount()
{
    return at::cuda::getCurrentDeviceProperties()->multiProcessorCount;
}

}  // namespace

bool rmsNormSupports(const torch::Tensor& x, const torch::Tensor& weight)
{
    const auto type = x.scalar_type();
    return x.is_cuda() && x.dim() >= 1 && x.is_contiguous() && (type == torch::kFloat32 || type == torch::kBFloat16) &&
           weight.is_cuda() && weight.dim() == 1 && weight.is_contiguous() && weight.scalar_type() == torch::kFloat32 &&
           weight.size(0) == x.size(-1) && x.size(-1) > 0 && x.size(-1) <= kNormMaxWidth && weight.device() == x.device();
}

std::pair<torch::Tensor, torch::Tensor> rmsNormForward(const torch::Tensor& x, const torch::Tensor& weight, double eps)
{
    TORCH_CHECK(rmsNormSupports(x, weight), "rmsNormForward: unsupported operands");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t D = x.size(-1), N = x.numel() / D;
    auto y = torch::empty_like(x);
    auto rstd = torch::empty({N}, x.options().dtype(torch::kFloat32));
    if (N == 0)
        return {y, rstd};
    const auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, x.scalar_type(), "rmsNormForward", [&] {
        if constexpr (kernels::kNormRowType<scalar_t>) {
            if (normRowsFast<scalar_t>(D, kernels::kNormForwardPerLane<scalar_t>,
                                       {x.data_ptr(), weight.data_ptr(), y.data_ptr()})) {
                const kernels::NormForwardArgs<scalar_t> args{x.data_ptr<scalar_t>(),
                                                              weight.data_ptr<float>(),
                                                              nullptr,
                                                              y.data_ptr<scalar_t>(),
                                                              nullptr,
                                                              rstd.data_ptr<float>(),
                                                              N,
                                                              static_cast<int>(D),
                                                              static_cast<float>(eps)};
                C10_CUDA_CHECK((kernels::launchNormForward<scalar_t, false>(args, smCount(), stream)));
                return;
            }
        }
        rmsNormForwardKernel<scalar_t><<<normBlocks(N, 8), kNormThreads, 0, stream>>>(
            x.data_ptr<scalar_t>(), weight.data_ptr<float>(), y.data_ptr<scalar_t>(), rstd.data_ptr<float>(), N, D,
            static_cast<float>(eps));
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return {y, rstd};
}

std::pair<torch::Tensor, torch::Tensor> rmsNormBackward(const torch::Tensor& x, const torch::Tensor& weight,
                                                        const torch::Tensor& rstd, const torch::Tensor& dy)
{
    TORCH_CHECK(rmsNormSupports(x, weight), "rmsNormBackward: unsupported operands");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t D = x.size(-1), N = x.numel() / D;
    auto g = dy.to(x.scalar_type()).contiguous();
    TORCH_CHECK(g.sizes() == x.sizes() && rstd.is_contiguous() && rstd.scalar_type() == torch::kFloat32 &&
                    rstd.numel() == N,
                "rmsNormBackward: dy must have x's shape and rstd one fp32 value per row");
    auto dx = torch::empty_like(x);
    if (N == 0)
        return {dx, torch::zeros_like(weight)};
    // 8 blocks per SM as the forward: at 2 the 13 backward norms took 4.0 ms of the benchmark step
    // (0.31 ms for 200 MB each: too few warps in flight to hide the loads); the partial rows stay
    // small (SMs × 8 × D × 4 B).
    const auto stream = at::cuda::getCurrentCUDAStream();
    const size_t sharedBytes = static_cast<size_t>(D) * sizeof(float);
    torch::Tensor partial;
    AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, x.scalar_type(), "rmsNormBackward", [&] {
        if constexpr (kernels::kNormRowType<scalar_t>) {
            if (normRowsFast<scalar_t>(D, kernels::kNormBackwardPerLane<scalar_t, false>,
                                       {x.data_ptr(), weight.data_ptr(), g.data_ptr(), dx.data_ptr()})) {
                const int blocks = kernels::normBackwardGrid<scalar_t, false>(N, static_cast<int>(D), smCount());
                partial = torch::empty({blocks, D}, weight.options());
                const kernels::NormBackwardArgs<scalar_t> args{x.data_ptr<scalar_t>(),
                                                               weight.data_ptr<float>(),
                                                               nullptr,
                                                               rstd.data_ptr<float>(),
                                                               g.data_ptr<scalar_t>(),
                                                               dx.data_ptr<scalar_t>(),
                                                               partial.data_ptr<float>(),
                                                               nullptr,
                                                               N,
                                                               static_cast<int>(D)};
                C10_CUDA_CHECK((kernels::launchNormBackward<scalar_t, false>(args, blocks, stream)));
                return;
            }
        }
        const int blocks = normBlocks(N, 8);
        partial = torch::empty({blocks, D}, weight.options());
        rmsNormBackwardKernel<scalar_t><<<blocks, kNormThreads, sharedBytes, stream>>>(
            x.data_ptr<scalar_t>(), weight.data_ptr<float>(), rstd.data_ptr<float>(), g.data_ptr<scalar_t>(),
            dx.data_ptr<scalar_t>(), partial.data_ptr<float>(), N, D);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return {dx, partial.sum(0)};
}

bool layerNormSupports(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias)
{
    const auto type = x.scalar_type();
    const auto param = [&](const torch::Tensor& t) {
        return t.defined() && t.is_cuda() && t.dim() == 1 && t.is_contiguous() && t.scalar_type() == torch::kFloat32 &&
               t.size(0) == x.size(-1) && t.device() == x.device();
    };
    return newKernelsOn() && x.is_cuda() && x.dim() >= 1 && x.is_contiguous() &&
           (type == torch::kFloat32 || type == torch::kBFloat16) && x.size(-1) > 0 && x.size(-1) <= kLayerNormMaxWidth &&
           param(weight) && param(bias);
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> layerNormForward(const torch::Tensor& x,
                                                                          const torch::Tensor& weight,
                                                                          const torch::Tensor& bias, double eps)
{
    TORCH_CHECK(layerNormSupports(x, weight, bias), "layerNormForward: unsupported operands");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t D = x.size(-1), N = x.numel() / D;
    auto y = torch::empty_like(x);
    auto mean = torch::empty({N}, x.options().dtype(torch::kFloat32));
    auto rstd = torch::empty({N}, x.options().dtype(torch::kFloat32));
    if (N == 0)
        return {y, mean, rstd};
    const auto stream = at::cuda::getCurrentCUDAStream();
    AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, x.scalar_type(), "layerNormForward", [&] {
        if constexpr (kernels::kNormRowType<scalar_t>) {
            if (normRowsFast<scalar_t>(D, kernels::kNormForwardPerLane<scalar_t>,
                                       {x.data_ptr(), weight.data_ptr(), bias.data_ptr(), y.data_ptr()})) {
                const kernels::NormForwardArgs<scalar_t> args{x.data_ptr<scalar_t>(),
                                                              weight.data_ptr<float>(),
                                                              bias.data_ptr<float>(),
                                                              y.data_ptr<scalar_t>(),
                                                              mean.data_ptr<float>(),
                                                              rstd.data_ptr<float>(),
                                                              N,
                                                              static_cast<int>(D),
                                                              static_cast<float>(eps)};
                C10_CUDA_CHECK((kernels::launchNormForward<scalar_t, true>(args, smCount(), stream)));
                return;
            }
        }
        layerNormForwardKernel<scalar_t><<<normBlocks(N, 8), kNormThreads, 0, stream>>>(
            x.data_ptr<scalar_t>(), weight.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<scalar_t>(),
            mean.data_ptr<float>(), rstd.data_ptr<float>(), N, D, static_cast<float>(eps));
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return {y, mean, rstd};
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> layerNormBackward(const torch::Tensor& x,
                                                                           const torch::Tensor& weight,
                                                                           const torch::Tensor& mean,
                                                                           const torch::Tensor& rstd,
                                                                           const torch::Tensor& dy)
{
    TORCH_CHECK(x.is_cuda() && x.is_contiguous() && weight.is_cuda() && weight.scalar_type() == torch::kFloat32 &&
                    weight.numel() == x.size(-1) && x.size(-1) <= kLayerNormMaxWidth,
                "layerNormBackward: unsupported operands");
    const c10::cuda::CUDAGuard guard(x.device());
    const int64_t D = x.size(-1), N = x.numel() / D;
    auto g = dy.to(x.scalar_type()).contiguous();
    TORCH_CHECK(g.sizes() == x.sizes() && mean.numel() == N && rstd.numel() == N &&
                    mean.scalar_type() == torch::kFloat32 && rstd.scalar_type() == torch::kFloat32,
                "layerNormBackward: dy must have x's shape, mean and rstd one fp32 value per row");
    auto dx = torch::empty_like(x);
    if (N == 0)
        return {dx, torch::zeros_like(weight), torch::zeros_like(weight)};
    const auto stream = at::cuda::getCurrentCUDAStream();
    const size_t sharedBytes = 2 * static_cast<size_t>(D) * sizeof(float);
    torch::Tensor dwPartial, dbPartial;
    AT_DISPATCH_FLOATING_TYPES_AND(at::kBFloat16, x.scalar_type(), "layerNormBackward", [&] {
        if constexpr (kernels::kNormRowType<scalar_t>) {
            if (normRowsFast<scalar_t>(D, kernels::kNormBackwardPerLane<scalar_t, true>,
                                       {x.data_ptr(), weight.data_ptr(), g.data_ptr(), dx.data_ptr()})) {
                const int blocks = kernels::normBackwardGrid<scalar_t, true>(N, static_cast<int>(D), smCount());
                dwPartial = torch::empty({blocks, D}, weight.options());
                dbPartial = torch::empty({blocks, D}, weight.options());
                const kernels::NormBackwardArgs<scalar_t> args{
                    x.data_ptr<scalar_t>(),      weight.data_ptr<float>(),    mean.data_ptr<float>(),
                    rstd.data_ptr<float>(),      g.data_ptr<scalar_t>(),      dx.data_ptr<scalar_t>(),
                    dwPartial.data_ptr<float>(), dbPartial.data_ptr<float>(), N,
                    static_cast<int>(D)};
                C10_CUDA_CHECK((kernels::launchNormBackward<scalar_t, true>(args, blocks, stream)));
                return;
            }
        }
        const int blocks = normBlocks(N, 8);
        dwPartial = torch::empty({blocks, D}, weight.options());
        dbPartial = torch::empty({blocks, D}, weight.options());
        layerNormBackwardKernel<scalar_t><<<blocks, kNormThreads, sharedBytes, stream>>>(
            x.data_ptr<scalar_t>(), weight.data_ptr<float>(), mean.data_ptr<float>(), rstd.data_ptr<float>(),
            g.data_ptr<scalar_t>(), dx.data_ptr<scalar_t>(), dwPartial.data_ptr<float>(), dbPartial.data_ptr<float>(), N,
            D);
    });
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return {dx, dwPartial.sum(0), dbPartial.sum(0)};
}

bool sumOfSquaresSupports(const std::vector<torch::Tensor>& tensors)
{
    if (!passKernelsOn() || tensors.empty())
        return false;
    for (const auto& t : tensors)
        if (!t.defined() || !t.is_cuda() || !t.is_contiguous() || t.device() != tensors[0].device() ||
            (t.scalar_type() != torch::kFloat32 && t.scalar_type() != torch::kBFloat16))
            return false;
    return true;
}

torch::Tensor sumOfSquares(const std::vector<torch::Tensor>& tensors)
{
    TORCH_CHECK(sumOfSquaresSupports(tensors), "sumOfSquares: contiguous fp32/bf16 CUDA tensors on one device");
    const c10::cuda::CUDAGuard guard(tensors[0].device());
    // The launches' chunk tables first, so that one partial buffer holds every block's sum.
    std::vector<SquaresBatch> batches;
    int64_t chunks = 0;
    for (const auto& t : tensors) {
        if (t.numel() == 0)
            continue;
        if (batches.empty() || batches.back().count == kSquaresTensors) {
            batches.emplace_back();
            batches.back().count = 0;
            batches.back().firstChunk[0] = chunks;
        }
        auto& b = batches.back();
        const int i = b.count++;
        b.data[i] = t.data_ptr();
        b.numel[i] = t.numel();
        b.bf16[i] = t.scalar_type() == torch::kBFloat16;
        b.aligned[i] = reinterpret_cast<uintptr_t>(t.data_ptr()) % 16 == 0;
        chunks += (t.numel() + kSquaresChunk - 1) / kSquaresChunk;
        b.firstChunk[i + 1] = chunks;
    }
    auto partial = torch::empty({chunks}, tensors[0].options().dtype(torch::kFloat32));
    if (chunks == 0)
        return partial.sum();
    const auto stream = at::cuda::getCurrentCUDAStream();
    for (auto& b : batches) {
        // Block ids count from the batch's first chunk: shift the table so that it starts at 0.
        const int64_t first = b.firstChunk[0], blocks = b.firstChunk[b.count] - first;
        for (int i = 0; i <= b.count; ++i)
            b.firstChunk[i] -= first;
        TORCH_CHECK(blocks < (int64_t{1} << 31), "sumOfSquares: too many chunks in one launch");
        sumSquaresKernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(b, partial.data_ptr<float>() + first);
        C10_CUDA_KERNEL_LAUNCH_CHECK();
    }
    return partial.sum();
}

}  // namespace wb::rt::cuda
