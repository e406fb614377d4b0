// Hand-written CUDA kernels for the memory-bound pieces where ATen's generic elementwise kernels
// waste bandwidth on strided halves and broadcasts (measured with benchmarks/gpu_profile_ours.sh:
// rotate-half RoPE took ~17 ms of a 300 ms benchmark step as strided mul/addcmul kernels).
// Compiled only into CUDA builds that find nvcc (WB_HAVE_CUDA_KERNELS); callers keep the ATen
// path for the CPU, for other layouts, and as the reference the GPU test compares against.
// Each function launches on the current CUDA stream and reads no device value back.
#pragma once

#include <torch/torch.h>

#include <vector>

namespace wb::rt::cuda {

/// True when this build has the kernels below.
bool fusedKernelsAvailable();

/// Rotate-half RoPE of x [N, H, D] (any strides for N and H, unit stride for D) by the angles whose
/// cos/sin are given as [N, 1, D/2] or [N, D/2] (contiguous, x's dtype): out[n, h] = [x1·c − s·x2,
/// x2·c + s·x1] with s = sign·sin (sign −1: the backward). Math in fp32, one rounding per output.
/// Returns a new contiguous [N, H, D] tensor. Throws unless x is a CUDA tensor of that layout.
torch::Tensor ropeRotate(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin, double sign);

/// True when ropeRotate can take these operands.
bool ropeRotateSupports(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin);

/// SwiGLU over gateUp [N, 2F] (row-contiguous): silu(gate) ⊙ up → [N, F].
torch::Tensor swigluForward(const torch::Tensor& gateUp);
/// Its backward in one pass: [N, 2F] = [dy ⊙ up ⊙ silu'(gate), dy ⊙ silu(gate)].
torch::Tensor swigluBackward(const torch::Tensor& gateUp, const torch::Tensor& dy);
/// True when the SwiGLU kernels can take this operand (CUDA, contiguous, float/bf16/half).
bool swigluSupports(const torch::Tensor& gateUp);

/// The MoE combine: out[t] = Σ_k w[t, k] · rows[slot[t·K + k]] for rows [A, D] in expert order
/// (A = T·K), w [T, K] fp32, slot [A] int64 (a permutation). fp32 accumulation, output [T, D] in
/// rows' dtype. Replaces a gather of T·K rows plus a batched [1, K] × [K, D] GEMM.
torch::Tensor combineForward(const torch::Tensor& rows, const torch::Tensor& weights, const torch::Tensor& slot);
/// Its backward: dRows[slot[t·K + k]] = w[t, k] · dOut[t] (rows' dtype) and
/// dW[t, k] = ⟨rows[slot[t·K + k]], dOut[t]⟩ (fp32).
std::pair<torch::Tensor, torch::Tensor> combineBackward(const torch::Tensor& rows, const torch::Tensor& weights,
                                                        const torch::Tensor& slot, const torch::Tensor& dOut);
/// True when the combine kernels can take these operands (CUDA; rows contiguous bf16/fp16/fp32;
/// weights contiguous fp32 [T, K]; slot contiguous int64 [T·K]).
bool combineSupports(const torch::Tensor& rows, const torch::Tensor& weights, const torch::Tensor& slot);

/// The MoE dispatch's backward: out[t] = Σ_k rows[slot[t·K + k]] for rows [T·K, D] (the gradients
/// of the dispatched rows, in expert order), fp32 accumulation in k order, output [T, D] in rows'
/// dtype — the gather of T·K rows, the fp32 sum over K and the cast back in one pass.
torch::Tensor gatherSumRows(const torch::Tensor& rows, const torch::Tensor& slot, int64_t K);
/// True when gatherSumRows can take these operands (and WB_PASS_KERNELS is not 0).
bool gatherSumSupports(const torch::Tensor& rows, const torch::Tensor& slot, int64_t K);

/// dst[index[m]] = src[m] (accumulate: dst[index[m]] += src[m], rounded once) in place, for dst
/// [R, D] and src [M, D] of one dtype (fp32/bf16/fp16, contiguous CUDA) and index [M] int64 in
/// [0, R) with **no two equal** (the caller's contract: no atomics, so a repeated row would race).
/// ATen's index_add / index_select backward go through atomics (2.2 ms a step of the benchmark
/// slice for six [16k, 2048] bf16 index_adds).
void scatterRows(const torch::Tensor& dst, const torch::Tensor& index, const torch::Tensor& src, bool accumulate);
/// True when scatterRows can take these operands (and WB_PASS_KERNELS is not 0).
bool scatterRowsSupports(const torch::Tensor& dst, const torch::Tensor& index, const torch::Tensor& src);

/// Σ over every tensor of Σ x² (fp32 or bf16, contiguous CUDA, one device), accumulated in fp32:
/// the squared global L2 norm of the gradients as a 0-d fp32 tensor, in one launch per 48 tensors
/// with 16-byte loads (the gradient clip's norm; ATen's _foreach_norm took ~109 launches a step).
torch::Tensor sumOfSquares(const std::vector<torch::Tensor>& tensors);
/// True when sumOfSquares can take these tensors (and WB_PASS_KERNELS is not 0).
bool sumOfSquaresSupports(const std::vector<torch::Tensor>& tensors);

/// One AdamW step (decoupled weight decay, bias correction, no amsgrad: LibTorch's AdamW::step
/// formulas) over CUDA tensors p (fp32), g, m, v (fp32 or bf16 each) of equal size, contiguous, in
/// one pass that reads p, g, m, v and writes p, m, v (28 bytes per element with fp32 g, m, v;
/// 16-byte accesses when aligned). A bf16 gradient is widened exactly in the kernel. Gradients
/// are divided by `gradScale` (a 0-d fp32 device tensor, may be undefined) inside the kernel.
/// `step` is the step count after this update (1 for the first).
/// `bf16Copy` (may be undefined): a contiguous bf16 tensor of p's size that the same pass writes
/// with the updated weight rounded to nearest even (2 B more per element; bf16_weights.h).
/// `onePassGrid`: one block per 1024 elements instead of a grid-stride loop over a grid capped at
/// 32 blocks per SM, so that every block is short and the SMs free up between blocks for the
/// kernels of a higher-priority stream (the optimizer behind the next forward, optimizer_overlap.h).
/// `residentBlocks` > 0 (overrides onePassGrid): exactly that many blocks of 512 threads, each
/// looping over its share with several loads in flight, so the update runs on about that many SMs
/// beside matmuls told to leave them free (optimizer_overlap.h's SM budget); bit-identical results.
void adamwStep(const torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& m, const torch::Tensor& v,
               double lr, double beta1, double beta2, double eps, double weightDecay, int64_t step,
               const torch::Tensor& gradScale, const torch::Tensor& bf16Copy = {}, bool onePassGrid = false,
               int residentBlocks = 0);
/// True when adamwStep can take these operands.
bool adamwSupports(const torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& m, const torch::Tensor& v);
/// True when `copy` can be adamwStep's bf16Copy of p.
bool adamwCopySupports(const torch::Tensor& p, const torch::Tensor& copy);

/// x (bf16 or fp16, contiguous CUDA) widened to a new fp32 tensor of its shape, exactly as
/// x.to(kFloat32), in one vectorized pass (16-byte loads): ATen's copy for this cast is its generic
/// unrolled kernel (~2 TB/s on an H200), and the expert weights' bf16 gradients are 3.6 G values
/// per step of the benchmark slice.
torch::Tensor widenToFloat(const torch::Tensor& x);
/// True when widenToFloat can take x.
bool widenSupports(const torch::Tensor& x);

/// Cross-entropy of logits [N, V] (bf16, fp16 or fp32, contiguous CUDA) against labels [N]
/// (int64, each in [0, V)), without an fp32 copy of the logits: one pass per row keeps a running
/// max and Σ exp in fp32. Returns {loss [N], logsumexp [N]} in fp32 (loss = logsumexp − target
/// logit). A label outside [0, V) gives loss 0 and no gradient (the caller passes only targets).
std::pair<torch::Tensor, torch::Tensor> crossEntropyForward(const torch::Tensor& logits, const torch::Tensor& labels);
/// Its backward in one pass, in the logits' dtype: dLogits[n, v] = dLoss[n] · (exp(x − lse[n]) − [v = label]).
torch::Tensor crossEntropyBackward(const torch::Tensor& logits, const torch::Tensor& labels,
                                   const torch::Tensor& logsumexp, const torch::Tensor& dLoss);
/// True when the cross-entropy kernels can take these operands.
bool crossEntropySupports(const torch::Tensor& logits, const torch::Tensor& labels);

/// RMSNorm over the last dim of x (fp32 or bf16, contiguous CUDA; width ≤ 8192) with an fp32 weight
/// of that width: y = (x · rstd) · w, rstd = 1/sqrt(mean(x²) + eps), fp32 math, one rounding per
/// output (RmsNormImpl's formula in one pass instead of ~7 ATen kernels and an fp32 copy).
/// Returns {y (x's shape and dtype), rstd [rows] fp32}.
std::pair<torch::Tensor, torch::Tensor> rmsNormForward(const torch::Tensor& x, const torch::Tensor& weight, double eps);
/// Its backward in one pass over the rows (x̂ = x · rstd, g = dy · w): dx = rstd · (g − x̂ · mean(g · x̂))
/// in x's dtype, dw = Σ_rows dy · x̂ in fp32 (per-block partial rows summed by ATen: no atomics).
std::pair<torch::Tensor, torch::Tensor> rmsNormBackward(const torch::Tensor& x, const torch::Tensor& weight,
                                                        const torch::Tensor& rstd, const torch::Tensor& dy);
/// True when the RMSNorm kernels can take these operands.
bool rmsNormSupports(const torch::Tensor& x, const torch::Tensor& weight);

/// LayerNorm over the last dim of x (fp32 or bf16, contiguous CUDA; width ≤ 5120) with fp32 weight
/// and bias: y = (x − mean) · rstd · w + b, rstd = 1/sqrt(var + eps) (biased variance), fp32 math,
/// one rounding per output — what autocast's fp32 LayerNorm gives once its output is cast to the
/// next GEMM's bf16, without the fp32 copies of the rows either way. Returns {y (x's shape and
/// dtype), mean [rows], rstd [rows]} (fp32).
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> layerNormForward(const torch::Tensor& x,
                                                                         const torch::Tensor& weight,
                                                                         const torch::Tensor& bias, double eps);
/// Its backward in one pass over the rows: {dx (x's dtype), dw, db (fp32)}.
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> layerNormBackward(const torch::Tensor& x,
                                                                          const torch::Tensor& weight,
                                                                          const torch::Tensor& mean,
                                                                          const torch::Tensor& rstd,
                                                                          const torch::Tensor& dy);
/// True when the LayerNorm kernels can take these operands.
bool layerNormSupports(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

}  // namespace wb::rt::cuda
