// The MoE router: logits x·Wᵀ in the router dtype, softmax over E, top-K, the K probabilities
// renormalized to sum to 1, and the Switch-Transformer load-balancing loss
// coeff · E · Σ_e f_e · P_e (f_e = share of the T·K assignments that go to e, P_e = mean router
// probability of e), as Megatron's switch_load_balancing_loss_func computes it.
// Shapes: T tokens (padding removed), D model width, E experts, K active experts per token.
//
// routeTokens runs it as ONE autograd node with a hand-written backward (RouterFunction in
// router.cpp). Between the GEMMs (logits = x·Wᵀ; dx = dlogits·W, dW = dlogitsᵀ·x) its forward and
// backward are fixed sequences of small static-shape kernels with no host read: the piece CUDA
// graphs capture (router_graphs.h). The GEMMs stay outside the graphs, reading x in place: a graph
// over them would need x [T, D] copied into a static buffer and dx copied out, per layer — more
// memory traffic than the launches it saves. The aux loss itself is composed outside the node
// from two E-sized outputs (assignment counts, probability sums), so sequence parallelism's sum
// over the shares stays an ordinary collective between graphs.
// routeTopK is the same function composed of ATen ops under autograd: the reference the tests
// compare the node against. Training thread (forward) and autograd's thread (backward).
#pragma once

#include <torch/torch.h>

#include <functional>
#include <memory>

namespace wb::rt {

class RouterGraphs;

struct RouterOutput {
    torch::Tensor weights_TK;    ///< renormalized top-K probabilities (fp32)
    torch::Tensor expertIds_TK;  ///< int64
    torch::Tensor probs_TE;      ///< full softmax (fp32), for diagnostics (no gradient)
    torch::Tensor auxLoss;       ///< scalar, already multiplied by coeff
};

/// Sums a tensor over the ranks that share a micro-batch's tokens (sequence parallelism); empty
/// = this rank has all of them.
using ShareSum = std::function<torch::Tensor(const torch::Tensor&)>;

/// Routing from router logits (any float dtype; computed in `routerDtype`), composed of ATen ops
/// (autograd differentiates it). With `sumOverShares` the T tokens are this rank's share of the
/// micro-batch: the assignment counts and the token total are summed over the shares, so the aux
/// losses of the shares add up to the aux loss of the whole micro-batch (as Megatron reduces
/// tokens_per_expert over the TP × CP group).
RouterOutput routeTopK(const torch::Tensor& logits_TE, int topK, double auxLossCoeff,
                       torch::ScalarType routerDtype = torch::kFloat32, const ShareSum& sumOverShares = {});

/// The router from the layer's input and weight as one autograd node (see the file comment):
/// same values as routeTopK(x·Wᵀ) and the same gradients for x_TD (any float dtype) and W_ED
/// (the fp32 parameter). Autocast is excluded inside. With `graphs` (not owned, may be null) the
/// node's forward and backward replay captured graphs where the graphs cover T.
RouterOutput routeTokens(const torch::Tensor& x_TD, const torch::Tensor& W_ED, int topK, double auxLossCoeff,
                         torch::ScalarType routerDtype, const ShareSum& sumOverShares,
                         const std::shared_ptr<RouterGraphs>& graphs = nullptr);

/// The node's forward after the router GEMM, in static shapes, on logits_TE in the router dtype.
/// `mask_T` (router dtype, 1 = token, 0 = padding row; undefined = all tokens) weights the counts
/// and the probability sums, so padded rows add nothing to the aux statistics.
struct RouterTensors {
    torch::Tensor weights_TK;  ///< fp32
    torch::Tensor ids_TK;      ///< int64
    torch::Tensor probs_TE;    ///< router dtype
    torch::Tensor counts_E;    ///< router dtype: Σ_t mask_t · #{k: ids[t, k] = e}
    torch::Tensor probSum_E;   ///< router dtype: Σ_t mask_t · probs[t, e]
};
RouterTensors routerForwardMath(const torch::Tensor& logits_TE, int64_t topK, const torch::Tensor& mask_T = {});

/// The node's backward down to the logits: d weights → d top-K probabilities (quotient rule) →
/// scattered into d probs, plus the probability sums' gradient on the unmasked rows → softmax
/// backward. Returns dlogits_TE (router dtype); dx = dlogits·W and dW = dlogitsᵀ·x follow.
/// `gWeights_TK` (fp32) and `gProbSum_E` may be undefined (= zero).
torch::Tensor routerBackwardMath(const torch::Tensor& probs_TE, const torch::Tensor& ids_TK, const torch::Tensor& mask_T,
                                 const torch::Tensor& gWeights_TK, const torch::Tensor& gProbSum_E);

}  // namespace wb::rt
