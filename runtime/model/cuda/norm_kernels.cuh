// The vectorized RMSNorm and LayerNorm row kernels: device code and launch, no torch headers. The
// torch wrappers in fused_kernels.cu check the tensors, keep their scalar kernels for rows these do
// not take (normRowsTake false), and sum the backward's partial rows.
//
// Shapes: x, y, dy, dx [N, D] row-major (T fp32 or a 2-byte float); w, b [D] fp32; mean, rstd [N]
// fp32; dwPartial, dbPartial [R, D] fp32, one row per block of the backward's grid.
//
// Why: the scalar kernels give a row a 256-thread block, read it three times in 2-byte loads and sum
// through shared memory with two or three barriers per row — latency bound, ~4× below an H200's
// bandwidth for the rows of 1152–4608 the model has. Here a row group owns a row: kLanes (8, 16 or
// 32) lanes of one warp that sum by shuffles alone, or, for rows of more than 32·8 vectors, the whole
// block (kLanes 0: up to 8 warps, one barrier per sum). Lane l of a group of G threads holds the
// row's 16-byte vectors l, l + G, … (P of them, the last ones off past the row's end) in registers:
// the forward reads x once, the backward x and dy once. The backward adds dw (and db) in registers
// over the rows its group takes (grid-stride); a block's groups then add theirs into shared memory
// in a fixed order (deterministic for a given grid) and the block writes one partial row.
// Formulas and roundings are the scalar kernels'; only the order of the fp32 sums differs.
// Any thread; launches go on the stream given.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <type_traits>

namespace wb::rt::cuda::kernels {

constexpr int kNormRowThreads = 256;  // a block of sub-warp groups; whole-block rows use ≤ 8 warps
constexpr int kNormMaxPerLane = 8;    // vectors per lane: 64 bf16 or 32 fp32 values

template <typename T>
constexpr int kNormVecWidth = static_cast<int>(16 / sizeof(T));  // elements per 16-byte access

template <typename T, int V>
struct alignas(sizeof(T) * V) NormVec {
    T v[V];
};

// fp32 and 2-byte types only: a vector's weights are whole float4s.
template <typename T>
constexpr bool kNormRowType = sizeof(T) == 2 || sizeof(T) == 4;

template <typename T>
struct NormForwardArgs {
    const T* x;
    const float* w;
    const float* b;  // LayerNorm only
    T* y;
    float* mean;  // LayerNorm only
    float* rstd;
    int64_t N;
    int D;
    float eps;
};

template <typename T>
struct NormBackwardArgs {
    const T* x;
    const float* w;
    const float* mean;  // LayerNorm only
    const float* rstd;
    const T* dy;
    T* dx;
    float* dwPartial;
    float* dbPartial;  // LayerNorm only
    int64_t N;
    int D;
};

// The calling thread's row group: kLanes lanes of a warp, or (kLanes 0) the whole block.
template <int kLanes>
struct RowGroup {
    static constexpr bool kBlock = kLanes == 0;
    __device__ static int size() { return kBlock ? static_cast<int>(blockDim.x) : kLanes; }
    __device__ static int perBlock() { return kBlock ? 1 : static_cast<int>(blockDim.x) / kLanes; }
    __device__ static int lane() { return kBlock ? static_cast<int>(threadIdx.x) : threadIdx.x % kLanes; }
    __device__ static int inBlock() { return kBlock ? 0 : threadIdx.x / kLanes; }
    __device__ static int inWarp() { return kBlock ? 0 : (threadIdx.x & 31) / kLanes; }
    __device__ static int64_t count() { return int64_t{gridDim.x} * perBlock(); }
    // The first group of the thread's warp. The row loop steps on it, not on the group's own row, so
    // that a warp's lanes leave the loop together (the shuffles need all 32).
    __device__ static int64_t warpFirst()
    {
        return int64_t{blockIdx.x} * perBlock() + (kBlock ? 0 : (threadIdx.x & ~31u) / kLanes);
    }
};

// Sums each v[k] over the row group. Whole-block groups go on through `partial` ([2·K][32] shared
// floats, one value per warp), alternating halves by `half`: a thread writes a half again only after
// the next sum's barrier, which every thread passes after reading this sum — one barrier per sum.
template <int kLanes, int K>
__device__ __forceinline__ void groupSum(float (&v)[K], float (*partial)[32], int& half)
{
    constexpr int width = kLanes == 0 ? 32 : kLanes;
#pragma unroll
    for (int offset = width / 2; offset > 0; offset >>= 1)
#pragma unroll
        for (int k = 0; k < K; ++k)
            v[k] += __shfl_xor_sync(0xffffffffu, v[k], offset);
    if constexpr (kLanes == 0) {
        float(*slot)[32] = partial + half * K;
        half ^= 1;
        const int warps = static_cast<int>(blockDim.x >> 5);
        if ((threadIdx.x & 31) == 0)
#pragma unroll
            for (int k = 0; k < K; ++k)
                slot[k][threadIdx.x >> 5] = v[k];
        __syncthreads();
#pragma unroll
        for (int k = 0; k < K; ++k) {
            float s = 0.0f;
            for (int i = 0; i < warps; ++i)
                s += slot[k][i];
            v[k] = s;
        }
    }
}

template <int V>
__device__ __forceinline__ void loadFloats(const float* p, float (&out)[V])
{
#pragma unroll
    for (int i = 0; i < V; i += 4) {
        const float4 q = *reinterpret_cast<const float4*>(p + i);
        out[i] = q.x;
        out[i + 1] = q.y;
        out[i + 2] = q.z;
        out[i + 3] = q.w;
    }
}

template <int V>
__device__ __forceinline__ void storeFloats(float* p, const float (&in)[V])
{
#pragma unroll
    for (int i = 0; i < V; i += 4)
        *reinterpret_cast<float4*>(p + i) = make_float4(in[i], in[i + 1], in[i + 2], in[i + 3]);
}

// RMSNorm y = x · rstd · w, rstd = 1/sqrt(mean(x²) + eps); LayerNorm (kLayer) y = (x − mean) · rstd · w + b,
// rstd = 1/sqrt(Σ(x − mean)²/D + eps), both sums over the registers.
template <typename T, int P, int kLanes, bool kLayer>
__global__ void __launch_bounds__(kNormRowThreads) normForwardRows(const NormForwardArgs<T> a)
{
    static_assert(kNormRowType<T>);
    constexpr int V = kNormVecWidth<T>;
    using Group = RowGroup<kLanes>;
    using Vec = NormVec<T, V>;
    __shared__ float partial[2][32];
    int half = 0;
    const int lane = Group::lane(), size = Group::size(), Dv = a.D / V;
    const float D = static_cast<float>(a.D);
    for (int64_t first = Group::warpFirst(); first < a.N; first += Group::count()) {
        const int64_t r = first + Group::inWarp();
        const bool rowOk = r < a.N;
        const T* xr = a.x + r * a.D;
        Vec xv[P];
        bool live[P];
#pragma unroll
        for (int p = 0; p < P; ++p) {
            live[p] = rowOk && lane + p * size < Dv;
            xv[p] = live[p] ? *reinterpret_cast<const Vec*>(xr + (lane + p * size) * V) : Vec{};
        }
        float s[1] = {0.0f};
        float mu = 0.0f;
        if constexpr (kLayer) {
#pragma unroll
            for (int p = 0; p < P; ++p)
#pragma unroll
                for (int e = 0; e < V; ++e)
                    s[0] += live[p] ? static_cast<float>(xv[p].v[e]) : 0.0f;
            groupSum<kLanes>(s, partial, half);
            mu = s[0] / D;
            s[0] = 0.0f;
        }
#pragma unroll
        for (int p = 0; p < P; ++p)
#pragma unroll
            for (int e = 0; e < V; ++e) {
                const float c = static_cast<float>(xv[p].v[e]) - mu;
                s[0] += live[p] ? c * c : 0.0f;
            }
        groupSum<kLanes>(s, partial, half);
        const float rs = rsqrtf(s[0] / D + a.eps);
        if (rowOk && lane == 0) {
            a.rstd[r] = rs;
            if constexpr (kLayer)
                a.mean[r] = mu;
        }
        T* yr = a.y + r * a.D;
#pragma unroll
        for (int p = 0; p < P; ++p) {
            if (!live[p])
                continue;
            const int col = (lane + p * size) * V;
            float w[V], b[V];
            loadFloats<V>(a.w + col, w);
            if constexpr (kLayer)
                loadFloats<V>(a.b + col, b);
            Vec out;
#pragma unroll
            for (int e = 0; e < V; ++e) {
                const float v = static_cast<float>(xv[p].v[e]);
                if constexpr (kLayer)
                    out.v[e] = static_cast<T>((v - mu) * rs * w[e] + b[e]);
                else
                    out.v[e] = static_cast<T>(v * rs * w[e]);
            }
            *reinterpret_cast<Vec*>(yr + col) = out;
        }
    }
}

// With x̂ = x · rstd (LayerNorm: (x − mean) · rstd) and g = dy · w: RMSNorm dx = rstd · (g − x̂ · mean(g · x̂));
// LayerNorm dx = rstd · (g − mean(g) − x̂ · mean(g · x̂)); dw = Σ_rows dy · x̂, db = Σ_rows dy.
// Sub-warp groups need 4·D (LayerNorm 8·D) bytes of dynamic shared memory for the block's partial rows.
template <typename T, int P, int kLanes, bool kLayer>
__global__ void __launch_bounds__(kNormRowThreads) normBackwardRows(const NormBackwardArgs<T> a)
{
    static_assert(kNormRowType<T>);
    constexpr int V = kNormVecWidth<T>, K = kLayer ? 2 : 1;
    using Group = RowGroup<kLanes>;
    using Vec = NormVec<T, V>;
    __shared__ float partial[2 * K][32];
    extern __shared__ float blockRows[];  // sub-warp groups: the block's dw row, then its db row
    int half = 0;
    const int lane = Group::lane(), size = Group::size(), Dv = a.D / V;
    const float D = static_cast<float>(a.D);
    float dw[P][V] = {}, db[kLayer ? P : 1][V] = {};
    for (int64_t first = Group::warpFirst(); first < a.N; first += Group::count()) {
        const int64_t r = first + Group::inWarp();
        const bool rowOk = r < a.N;
        const T* xr = a.x + r * a.D;
        const T* dyr = a.dy + r * a.D;
        Vec xv[P], dv[P];
        bool live[P];
#pragma unroll
        for (int p = 0; p < P; ++p) {
            live[p] = rowOk && lane + p * size < Dv;
            xv[p] = live[p] ? *reinterpret_cast<const Vec*>(xr + (lane + p * size) * V) : Vec{};
            dv[p] = live[p] ? *reinterpret_cast<const Vec*>(dyr + (lane + p * size) * V) : Vec{};
        }
        const float mu = kLayer && rowOk ? a.mean[r] : 0.0f, rs = rowOk ? a.rstd[r] : 0.0f;
        float s[K] = {};
#pragma unroll
        for (int p = 0; p < P; ++p) {
            if (!live[p])
                continue;
            float w[V];
            loadFloats<V>(a.w + (lane + p * size) * V, w);
#pragma unroll
            for (int e = 0; e < V; ++e) {
                const float d = static_cast<float>(dv[p].v[e]);
                if constexpr (kLayer) {
                    const float xh = (static_cast<float>(xv[p].v[e]) - mu) * rs, g = d * w[e];
                    s[0] += g;
                    s[1] += g * xh;
                    dw[p][e] += d * xh;
                    db[p][e] += d;
                } else {
                    const float xh = static_cast<float>(xv[p].v[e]) * rs;
                    s[0] += d * w[e] * xh;
                    dw[p][e] += d * xh;
                }
            }
        }
        groupSum<kLanes>(s, partial, half);
        const float meanG = kLayer ? s[0] / D : 0.0f, meanDot = s[K - 1] / D;
        T* dxr = a.dx + r * a.D;
#pragma unroll
        for (int p = 0; p < P; ++p) {
            if (!live[p])
                continue;
            const int col = (lane + p * size) * V;
            float w[V];
            loadFloats<V>(a.w + col, w);
            Vec out;
#pragma unroll
            for (int e = 0; e < V; ++e) {
                const float d = static_cast<float>(dv[p].v[e]);
                if constexpr (kLayer) {
                    const float xh = (static_cast<float>(xv[p].v[e]) - mu) * rs;
                    out.v[e] = static_cast<T>(rs * (d * w[e] - meanG - xh * meanDot));
                } else {
                    const float xh = static_cast<float>(xv[p].v[e]) * rs;
                    out.v[e] = static_cast<T>(rs * (d * w[e] - xh * meanDot));
                }
            }
            *reinterpret_cast<Vec*>(dxr + col) = out;
        }
    }
    float* dwOut = a.dwPartial + int64_t{blockIdx.x} * a.D;
    float* dbOut = kLayer ? a.dbPartial + int64_t{blockIdx.x} * a.D : nullptr;
    if constexpr (kLanes == 0) {
        // One group per block: its threads own distinct columns.
#pragma unroll
        for (int p = 0; p < P; ++p) {
            const int col = (lane + p * size) * V;
            if (lane + p * size >= Dv)
                continue;
            storeFloats<V>(dwOut + col, dw[p]);
            if constexpr (kLayer)
                storeFloats<V>(dbOut + col, db[p]);
        }
    } else {
        // The block's groups add their rows in turn; group 0 covers every column, so it writes.
        for (int turn = 0; turn < Group::perBlock(); ++turn) {
            if (Group::inBlock() == turn)
#pragma unroll
                for (int p = 0; p < P; ++p) {
                    const int col = (lane + p * size) * V;
                    if (lane + p * size >= Dv)
                        continue;
#pragma unroll
                    for (int e = 0; e < V; ++e) {
                        blockRows[col + e] = (turn == 0 ? 0.0f : blockRows[col + e]) + dw[p][e];
                        if constexpr (kLayer)
                            blockRows[a.D + col + e] = (turn == 0 ? 0.0f : blockRows[a.D + col + e]) + db[p][e];
                    }
                }
            __syncthreads();
        }
        for (int j = threadIdx.x; j < a.D; j += blockDim.x) {
            dwOut[j] = blockRows[j];
            if constexpr (kLayer)
                dbOut[j] = blockRows[a.D + j];
        }
    }
}

// How a row of Dv vectors is split: lanes 8, 16 or 32 of one warp per row (blocks of
// kNormRowThreads), or lanes 0: one row per block of `threads`; perLane vectors per lane (at most
// maxPerLane), 0 when the row is wider than 8 warps × maxPerLane vectors.
struct NormShape {
    int lanes, perLane, threads;
};

inline NormShape normShape(int64_t Dv, int maxPerLane)
{
    if (Dv <= 8)
        return {8, 1, kNormRowThreads};
    if (Dv <= 16)
        return {16, 1, kNormRowThreads};
    if (Dv <= 32 * maxPerLane)
        return {32, static_cast<int>((Dv + 31) / 32), kNormRowThreads};
    // Whole blocks: of the warp counts that fit, the one that leaves the fewest lanes idle, the fewer
    // warps on a tie (4608 bf16 = 576 vectors: 3 warps × 6 forward, 6 warps × 3 LayerNorm backward).
    NormShape best{0, 0, 0};
    int64_t bestIdle = INT64_MAX;
    for (int warps = static_cast<int>((Dv + 32 * maxPerLane - 1) / (32 * maxPerLane)); warps <= kNormRowThreads / 32;
         ++warps) {
        const int perLane = static_cast<int>((Dv + 32 * warps - 1) / (32 * warps));
        const int64_t idle = int64_t{32} * warps * perLane - Dv;
        if (perLane >= 2 && idle < bestIdle) {
            best = {0, perLane, 32 * warps};
            bestIdle = idle;
        }
    }
    return best;
}

// Vectors per lane at most. The backward keeps x, dy and the dw (and db) sums of its vectors in
// registers; past 32 values a lane (LayerNorm: 24) ptxas wanted 160–255 registers on sm_90, and
// at 255 it spilled, so wider rows take more warps (one barrier per row) instead.
template <typename T>
constexpr int kNormForwardPerLane = kNormMaxPerLane;
template <typename T, bool kLayer>
constexpr int kNormBackwardPerLane = std::min(kNormMaxPerLane, (kLayer ? 24 : 32) / kNormVecWidth<T>);

// True when the vector kernels take rows of D elements at these pointers (16-byte aligned, D a
// multiple of the vector width, not wider than normShape splits).
template <typename T>
bool normRowsTake(int64_t D, int maxPerLane, std::initializer_list<const void*> pointers)
{
    constexpr int V = kNormVecWidth<T>;
    bool ok = kNormRowType<T> && D > 0 && D % V == 0 && normShape(D / V, maxPerLane).perLane > 0;
    for (const void* p : pointers)
        ok = ok && reinterpret_cast<uintptr_t>(p) % 16 == 0;
    return ok;
}

// Calls f(P, lanes) as std::integral_constants with P = perLane, trying kFirst … kMax (only those
// are instantiated).
template <int kMax, int kFirst, typename Lanes, typename F>
void withPerLane(int perLane, Lanes lanes, F& f)
{
    if constexpr (kFirst <= kMax) {
        if (perLane == kFirst)
            return f(std::integral_constant<int, kFirst>{}, lanes);
        withPerLane<kMax, kFirst + 1>(perLane, lanes, f);
    }
}

// Calls f(P, kLanes) for the instantiation that shape names (a shape from normShape(Dv, kMax)).
template <int kMax, typename F>
void withNormShape(const NormShape& shape, F&& f)
{
    using std::integral_constant;
    if (shape.lanes == 8)
        return f(integral_constant<int, 1>{}, integral_constant<int, 8>{});
    if (shape.lanes == 16)
        return f(integral_constant<int, 1>{}, integral_constant<int, 16>{});
    if (shape.lanes == 32)
        return withPerLane<kMax, 1>(shape.perLane, integral_constant<int, 32>{}, f);
    withPerLane<kMax, 2>(shape.perLane, integral_constant<int, 0>{}, f);
}

// A grid that fits on the device at once (blocks resident per SM × SMs), no more than the rows need;
// the kernels loop over the rest. For the backward it is also the number of partial rows.
template <typename Kernel>
int normGrid(Kernel kernel, const NormShape& shape, size_t sharedBytes, int64_t N, int smCount)
{
    int resident = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, kernel, shape.threads, sharedBytes) != cudaSuccess)
        resident = 1;
    const int64_t rowsPerBlock = shape.lanes == 0 ? 1 : shape.threads / shape.lanes;
    const int64_t cap = int64_t{smCount} * std::max(resident, 1);
    return static_cast<int>(std::max<int64_t>(1, std::min((N + rowsPerBlock - 1) / rowsPerBlock, cap)));
}

template <typename T, bool kLayer>
cudaError_t launchNormForward(const NormForwardArgs<T>& a, int smCount, cudaStream_t stream)
{
    const NormShape shape = normShape(a.D / kNormVecWidth<T>, kNormForwardPerLane<T>);
    withNormShape<kNormForwardPerLane<T>>(shape, [&](auto perLane, auto lanes) {
        const auto kernel = normForwardRows<T, decltype(perLane)::value, decltype(lanes)::value, kLayer>;
        kernel<<<normGrid(kernel, shape, 0, a.N, smCount), shape.threads, 0, stream>>>(a);
    });
    return cudaGetLastError();
}

inline size_t normBackwardShared(const NormShape& shape, int64_t D, bool layer)
{
    return shape.lanes == 0 ? 0 : static_cast<size_t>(D) * sizeof(float) * (layer ? 2 : 1);
}

// The backward's grid: blocks = partial rows the caller allocates.
template <typename T, bool kLayer>
int normBackwardGrid(int64_t N, int D, int smCount)
{
    const NormShape shape = normShape(D / kNormVecWidth<T>, kNormBackwardPerLane<T, kLayer>);
    int blocks = 1;
    withNormShape<kNormBackwardPerLane<T, kLayer>>(shape, [&](auto perLane, auto lanes) {
        const auto kernel = normBackwardRows<T, decltype(perLane)::value, decltype(lanes)::value, kLayer>;
        blocks = normGrid(kernel, shape, normBackwardShared(shape, D, kLayer), N, smCount);
    });
    return blocks;
}

template <typename T, bool kLayer>
cudaError_t launchNormBackward(const NormBackwardArgs<T>& a, int blocks, cudaStream_t stream)
{
    const NormShape shape = normShape(a.D / kNormVecWidth<T>, kNormBackwardPerLane<T, kLayer>);
    withNormShape<kNormBackwardPerLane<T, kLayer>>(shape, [&](auto perLane, auto lanes) {
        const auto kernel = normBackwardRows<T, decltype(perLane)::value, decltype(lanes)::value, kLayer>;
        kernel<<<blocks, shape.threads, normBackwardShared(shape, a.D, kLayer), stream>>>(a);
    });
    return cudaGetLastError();
}

}  // namespace wb::rt::cuda::kernels
