// Top-k routed Mixture-of-Experts MLP of SwiGLU experts. Shapes: T tokens (flattened, padding
// already removed), D model width, E experts, K active experts per token, F expert FFN width,
// A = T·K token-expert assignments. One training thread.
//
// Router: fp32 (or fp64) softmax over E, top-K, the K probabilities renormalized to sum to 1, and
// the Switch-Transformer load-balancing loss coeff · E · Σ_e f_e · P_e (f_e = share of the A
// assignments that go to e, P_e = mean router probability of e), as Megatron's
// switch_load_balancing_loss_func computes it.
//
// Experts: the weights are stacked ([E, D, 2F] gate|up and [E, F, D] down), the layout a grouped
// GEMM (at::_grouped_mm on LibTorch ≥ 2.8 / CUDA) consumes. expertsForward sorts the assignments by
// expert, runs the experts over contiguous slices, and scatter-adds back weighted by the router;
// only the per-expert loop in runExpertsLoop is to be replaced by the grouped-GEMM call.
#pragma once

#include <torch/torch.h>

#include <functional>

namespace wb::rt {

struct RouterOutput {
    torch::Tensor weights_TK;    ///< renormalized top-K probabilities (fp32)
    torch::Tensor expertIds_TK;  ///< int64
    torch::Tensor probs_TE;      ///< full softmax (fp32), for diagnostics
    torch::Tensor auxLoss;       ///< scalar, already multiplied by coeff
};

/// Sums a tensor over the ranks that share a micro-batch's tokens (sequence parallelism); empty
/// = this rank has all of them.
using ShareSum = std::function<torch::Tensor(const torch::Tensor&)>;

/// Routing from router logits (any float dtype; computed in `routerDtype`). With `sumOverShares`
/// the T tokens are this rank's share of the micro-batch: the assignment counts and the token
/// total are summed over the shares, so the aux losses of the shares add up to the aux loss of
/// the whole micro-batch (as Megatron reduces tokens_per_expert over the TP × CP group).
RouterOutput routeTopK(const torch::Tensor& logits_TE, int topK, double auxLossCoeff,
                       torch::ScalarType routerDtype = torch::kFloat32, const ShareSum& sumOverShares = {});

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

class MoeLayerImpl : public torch::nn::Module {
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
    int numExperts() const { return m_numExperts; }

private:
    torch::Tensor runExperts(const torch::Tensor& x_TD, const RouterOutput& route);

    ExpertsRunner* m_expertsRunner = nullptr;
    ShareSum m_shareSum;
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
