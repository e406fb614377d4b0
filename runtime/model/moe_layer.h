// Top-k routed Mixture-of-Experts MLP of SwiGLU experts. Shapes: T tokens (flattened, padding
// already removed), D model width, E experts, K active experts per token, F expert FFN width,
// A = T·K token-expert assignments, N rows handed to one expert kernel call (an expert's slice of
// the sorted assignments, or all of them for the grouped GEMM). One training thread.
//
// Router: router.h (fp32 or fp64 softmax over E, top-K renormalized, Switch load-balancing loss),
// one autograd node with a hand-written backward; CUDA graphs replay it when installed from
// outside (setRouterGraphs, router_graphs.h).
//
// Experts: the weights are stacked ([E, D, 2F] gate|up and [E, F, D] down), the layout a grouped
// GEMM (at::_grouped_mm on LibTorch ≥ 2.8 / CUDA) consumes. expertsForward sorts the assignments by
// expert, runs the experts over contiguous slices, and scatter-adds back weighted by the router:
// one grouped GEMM per projection on CUDA (ExpertKernel::Grouped), the per-expert loop
// (runExpertsLoop) on the CPU and as the reference.
#pragma once

#include "runtime/model/bf16_weights.h"
#include "runtime/model/router.h"

#include <torch/torch.h>

#include <functional>
#include <memory>

namespace wb::rt {

/// How the experts' matrix products run. Auto = Grouped when available (CUDA build on LibTorch
/// >= 2.8, CUDA tensors, bf16 compute: x in bf16 or CUDA autocast on), else Loop.
enum class ExpertKernel { Auto, Loop, Grouped };

/// True when this build has at::_grouped_mm (CUDA, LibTorch >= 2.8).
bool groupedGemmAvailable();

/// Σ_k weight_TK · expert_{id_TK}(x_TD) with SwiGLU experts down(silu(x·gate) ⊙ (x·up)).
/// gateUp_EDF2 holds gate in [..., :F] and up in [..., F:]. The output has x_TD's dtype.
/// Grouped: one at::_grouped_mm per projection over all experts, bf16 operands, int32 cumulative
/// offsets computed on the device (no host sync). Loop: one matmul per non-empty expert, in the
/// operands' dtype (group sizes are copied to the host: one sync).
torch::Tensor expertsForward(const torch::Tensor& x_TD, const torch::Tensor& weights_TK,
                             const torch::Tensor& expertIds_TK, const torch::Tensor& gateUp_EDF2,
                             const torch::Tensor& down_EFD, ExpertKernel kernel = ExpertKernel::Auto);

/// A micro-batch's A = T·K assignments (token t, its k-th expert) sorted by expert, stably: row i
/// of the sorted rows is assignment order_A[i] = t·K + k, of token tokenOf_A[i]; slot_A is the
/// inverse (the row of assignment t·K + k). expertsForward and expert parallelism move rows
/// with it.
struct SortedAssignments {
    torch::Tensor order_A, tokenOf_A, slot_A;
    int64_t K = 1;
};
SortedAssignments sortByExpert(const torch::Tensor& expertIds_TK);

/// x_TD's rows in the sorted order (x_TD[tokenOf_A]); the backward sums each token's K rows by
/// gathers (no atomics: deterministic).
torch::Tensor dispatchRows(const torch::Tensor& x_TD, const SortedAssignments& sorted);

/// Per token, Σ_k weights_TK[t, k] · rows_AD[slot_A[t·K + k]] in `dtype`, accumulated in fp32 on
/// CUDA (one pass, cuda::combineForward) and as a batched [1, K] × [K, D] product elsewhere;
/// gathers only, forward and backward.
torch::Tensor combineRows(const torch::Tensor& rows_AD, const torch::Tensor& weights_TK,
                          const SortedAssignments& sorted, torch::ScalarType dtype);

/// How a MoE layer runs its routed experts. Default (no runner): expertsForward on the layer's own
/// weights. Expert parallelism installs a runner from outside (runtime/parallel/expert_parallel.h)
/// that sends each token to the rank holding its expert; the model itself knows nothing of ranks.
/// `gateUp_EDF2`/`down_EFD` are the experts this layer holds (with EP: its local slice), and
/// `numExperts` is the router's (global) expert count. Training thread only.
class ExpertsRunner {
public:
    virtual ~ExpertsRunner() = default;
    /// Must return what expertsForward returns for the global experts: Σ_k weight · expert(x).
    virtual torch::Tensor run(const torch::Tensor& x_TD, const RouterOutput& route, const torch::Tensor& gateUp_EDF2,
                              const torch::Tensor& down_EFD, int numExperts) = 0;
};

class MoeLayerImpl : public torch::nn::Module, public UsesBf16Weights {
public:
    /// `initDevice`: where the (large) expert weights are drawn; the CPU by default.
    MoeLayerImpl(int hiddenSize, int numExperts, int topK, int ffnHiddenSize, double auxLossCoeff,
                 torch::ScalarType routerDtype, torch::Device initDevice = torch::kCPU);
    /// x_TD → (y_TD, auxLoss scalar).
    std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& x_TD);
    /// Not owned; null = expertsForward on this layer's weights.
    void setExpertsRunner(ExpertsRunner* runner) { m_expertsRunner = runner; }
    /// Sequence parallelism (set from outside): see routeTopK. Empty = all tokens are here.
    void setShareSum(ShareSum sum) { m_shareSum = std::move(sum); }
    const ShareSum& shareSum() const { return m_shareSum; }
    /// CUDA graphs for the router (set from outside: cuda_graph scope "moe_router"); shared by
    /// every layer. Null = the router runs eagerly (the same node, the same math).
    void setRouterGraphs(std::shared_ptr<RouterGraphs> graphs) { m_routerGraphs = std::move(graphs); }
    int numExperts() const { return m_numExperts; }

private:
    torch::Tensor runExperts(const torch::Tensor& x_TD, const RouterOutput& route);

    ExpertsRunner* m_expertsRunner = nullptr;
    ShareSum m_shareSum;
    std::shared_ptr<RouterGraphs> m_routerGraphs;
    int m_numExperts;
    int m_topK;
    double m_auxLossCoeff;
    torch::ScalarType m_routerDtype;
    torch::Tensor m_routerWeight_ED;
    torch::Tensor m_gateUp_EDF2;
    torch::Tensor m_down_EFD;
};
TORCH_MODULE(MoeLayer);

}  // namespace wb::rt
