// The MoE router (see router.h for the formulas and why it is one autograd node).
#include "runtime/model/router.h"

#include "runtime/model/router_graphs.h"

#include <ATen/autocast_mode.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <cstdint>
#include <map>
#include <mutex>

namespace wb::rt {

namespace {

// The load-balancing loss E · coeff · Σ_e f_e · P_e from this share's E-sized statistics: the
// assignment counts (f_e, no gradient, as in Switch / Megatron) and Σ_t p_te (P_e carries the
// gradient). With sumOverShares (sequence parallelism) every share takes part, even one without
// tokens: the counts and token total of the whole micro-batch come from one collective, and this
// share contributes its part of Σ_e f_e · P_e. No host read of the total (a sync per layer on
// CUDA): with no token anywhere the counts and sums are zero and the clamp only avoids 0/0.
torch::Tensor auxLossFromStatistics(const torch::Tensor& counts_E, const torch::Tensor& probSum_E, int64_t T,
                                    int64_t topK, double auxLossCoeff, const ShareSum& sumOverShares)
{
    const int64_t E = counts_E.size(0);
    const double scale = static_cast<double>(E) * auxLossCoeff;
    if (sumOverShares) {
        const auto total_E1 = [&] {
            torch::NoGradGuard noGrad;
            return sumOverShares(torch::cat({counts_E, torch::full({1}, double(T), counts_E.options())}));
        }();
        auto tokens = total_E1.slice(0, E, E + 1).clamp_min(1.0);
        auto fraction_E = total_E1.slice(0, 0, E) / (tokens * topK);
        return ((fraction_E * (probSum_E / tokens)).sum() * scale).to(torch::kFloat32);
    }
    if (T == 0)
        return torch::zeros({}, probSum_E.options().dtype(torch::kFloat32));
    auto fraction_E = counts_E / static_cast<double>(T * topK);
    return ((fraction_E * (probSum_E / static_cast<double>(T))).sum() * scale).to(torch::kFloat32);
}

}  // namespace

RouterOutput routeTopK(const torch::Tensor& logits_TE, int topK, double auxLossCoeff,
                       torch::ScalarType routerDtype, const ShareSum& sumOverShares)
{
    RouterOutput out;
    const int64_t T = logits_TE.size(0), E = logits_TE.size(1);
    auto probs_TE = torch::softmax(logits_TE.to(routerDtype), -1);
    auto [topProbs_TK, ids_TK] = probs_TE.topk(topK, -1);
    out.weights_TK = (topProbs_TK / topProbs_TK.sum(-1, true)).to(torch::kFloat32);
    out.expertIds_TK = ids_TK;
    out.probs_TE = probs_TE.to(torch::kFloat32);
    // f_e counts assignments (no gradient, as in Switch / Megatron); P_e carries the gradient.
    auto counts_E = torch::zeros({E}, probs_TE.options()).index_add_(
        0, ids_TK.flatten(), torch::ones({T * topK}, probs_TE.options()));
    out.auxLoss = auxLossFromStatistics(counts_E, probs_TE.sum(0), T, topK, auxLossCoeff, sumOverShares);
    return out;
}

RouterTensors routerForwardMath(const torch::Tensor& logits_TE, int64_t topK, const torch::Tensor& mask_T)
{
    RouterTensors r;
    const int64_t T = logits_TE.size(0), E = logits_TE.size(1);
    r.probs_TE = torch::softmax(logits_TE, -1);
    auto [top_TK, ids_TK] = r.probs_TE.topk(topK, -1);
    r.weights_TK = (top_TK / top_TK.sum(-1, true)).to(torch::kFloat32);
    r.ids_TK = ids_TK;
    // The counts take one unit per assignment of a real token (flat order t·K + k).
    auto perAssignment_A = mask_T.defined() ? mask_T.unsqueeze(1).expand({T, topK}).reshape({T * topK})
                                            : torch::ones({T * topK}, r.probs_TE.options());
    r.counts_E = torch::zeros({E}, r.probs_TE.options()).index_add_(0, ids_TK.flatten(), perAssignment_A);
    r.probSum_E = mask_T.defined() ? (r.probs_TE * mask_T.unsqueeze(1)).sum(0) : r.probs_TE.sum(0);
    return r;
}

torch::Tensor routerBackwardMath(const torch::Tensor& probs_TE, const torch::Tensor& ids_TK, const torch::Tensor& mask_T,
                                 const torch::Tensor& gWeights_TK, const torch::Tensor& gProbSum_E)
{
    // The formulas and their order are autograd's for the composed ops (routeTopK), so a CPU run
    // gives the same gradients bit for bit (the golden losses stay): Div's two backward terms
    // g / s and −g · ((p / s) / s) summed over K, top-K's scatter, mean's g / T broadcast, and
    // the fused softmax backward p ⊙ (dp − ⟨dp, p⟩).
    auto dProbs_TE = torch::zeros_like(probs_TE);
    if (gWeights_TK.defined()) {
        auto top_TK = probs_TE.gather(1, ids_TK);
        auto sum_T1 = top_TK.sum(-1, true);
        auto g_TK = gWeights_TK.to(probs_TE.scalar_type());
        auto dTop_TK = g_TK / sum_T1 + (-g_TK * ((top_TK / sum_T1) / sum_T1)).sum(-1, true);
        dProbs_TE.scatter_(1, ids_TK, dTop_TK);  // a token's K ids are distinct: no accumulation
    }
    if (gProbSum_E.defined())
        dProbs_TE.add_(mask_T.defined() ? mask_T.unsqueeze(1) * gProbSum_E.unsqueeze(0) : gProbSum_E.unsqueeze(0));
    return at::_softmax_backward_data(dProbs_TE, probs_TE, -1, probs_TE.scalar_type());
}

namespace {

// Backward needs the graphs object the forward used; an autograd context keeps only IValues, so
// it keeps the object's address and this table maps it back (a weak reference: a graphs object
// destroyed before backward makes that backward run eagerly). Any thread.
std::mutex g_graphsMutex;
std::map<std::intptr_t, std::weak_ptr<RouterGraphs>> g_graphs;  // guarded by g_graphsMutex

int64_t rememberGraphs(const std::shared_ptr<RouterGraphs>& graphs)
{
    const auto key = reinterpret_cast<std::intptr_t>(graphs.get());
    std::lock_guard lock(g_graphsMutex);
    g_graphs[key] = graphs;
    return static_cast<int64_t>(key);
}

std::shared_ptr<RouterGraphs> lookUpGraphs(int64_t key)
{
    std::lock_guard lock(g_graphsMutex);
    auto it = g_graphs.find(static_cast<std::intptr_t>(key));
    return it == g_graphs.end() ? nullptr : it->second.lock();
}

// Inputs x_TD (any float dtype), W_ED (fp32 parameter); outputs weights_TK (fp32, differentiable),
// ids_TK, probs_TE, counts_E (not differentiable) and probSum_E (router dtype, differentiable: the
// aux loss's gradient path). Saves x, W (inputs anyway), probs and ids: less than autograd keeps
// for the composed ops (softmax output, top-K values and indices, the quotient's operands).
class RouterFunction : public torch::autograd::Function<RouterFunction> {
public:
    static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_TD,
                                                  const torch::Tensor& W_ED, int64_t topK, int64_t routerDtype,
                                                  int64_t graphsKey)
    {
        const auto dtype = static_cast<torch::ScalarType>(routerDtype);
        // x·Wᵀ as autograd's matmul would run it (a 2-D matmul is mm), eagerly: see router.h.
        auto logits_TE = torch::mm(x_TD.to(dtype), W_ED.to(dtype).t());
        std::shared_ptr<RouterGraphs> graphs = graphsKey ? lookUpGraphs(graphsKey) : nullptr;
        RouterTensors r = graphs && graphs->covers(logits_TE.size(0)) ? graphs->forward(logits_TE, topK)
                                                                      : routerForwardMath(logits_TE, topK);
        ctx->save_for_backward({x_TD, W_ED, r.probs_TE, r.ids_TK});
        ctx->saved_data["dtype"] = routerDtype;
        ctx->saved_data["graphs"] = graphsKey;
        ctx->mark_non_differentiable({r.ids_TK, r.probs_TE, r.counts_E});
        return {r.weights_TK, r.ids_TK, r.probs_TE, r.counts_E, r.probSum_E};
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list grads)
    {
        c10::impl::ExcludeDispatchKeyGuard noAutocast(c10::autocast_dispatch_keyset);
        const auto saved = ctx->get_saved_variables();
        const auto& x_TD = saved[0];
        const auto& W_ED = saved[1];
        const auto dtype = static_cast<torch::ScalarType>(ctx->saved_data["dtype"].toInt());
        auto x = x_TD.to(dtype), w = W_ED.to(dtype);
        const auto& gWeights_TK = grads[0];
        const auto& gProbSum_E = grads[4];
        std::shared_ptr<RouterGraphs> graphs = lookUpGraphs(ctx->saved_data["graphs"].toInt());
        const auto& probs_TE = saved[2];
        const auto& ids_TK = saved[3];
        auto dLogits_TE = graphs && graphs->covers(probs_TE.size(0))
                              ? graphs->backward(probs_TE, ids_TK, gWeights_TK, gProbSum_E)
                              : routerBackwardMath(probs_TE, ids_TK, {}, gWeights_TK, gProbSum_E);
        // mm's backward as autograd runs it for x·Wᵀ (row-major x, W): dlogits·W and dlogitsᵀ·x.
        auto dx = torch::mm(dLogits_TE, w), dW = torch::mm(dLogits_TE.t(), x);
        return {dx.to(x_TD.scalar_type()), dW.to(W_ED.scalar_type()), torch::Tensor(), torch::Tensor(),
                torch::Tensor()};
    }
};

}  // namespace

RouterOutput routeTokens(const torch::Tensor& x_TD, const torch::Tensor& W_ED, int topK, double auxLossCoeff,
                         torch::ScalarType routerDtype, const ShareSum& sumOverShares,
                         const std::shared_ptr<RouterGraphs>& graphs)
{
    // Logits in the router dtype: a bf16 matmul would make near-ties flip between runs. Autocast
    // would turn the matmul into bf16, so it is switched off for the router only.
    c10::impl::ExcludeDispatchKeyGuard noAutocast(c10::autocast_dispatch_keyset);
    const int64_t T = x_TD.size(0);
    auto outs = RouterFunction::apply(x_TD, W_ED, static_cast<int64_t>(topK), static_cast<int64_t>(routerDtype),
                                      graphs ? rememberGraphs(graphs) : int64_t{0});
    RouterOutput out;
    out.weights_TK = outs[0];
    out.expertIds_TK = outs[1];
    out.probs_TE = outs[2].to(torch::kFloat32);
    const auto& counts_E = outs[3];
    const auto& probSum_E = outs[4];
    out.auxLoss = auxLossFromStatistics(counts_E, probSum_E, T, topK, auxLossCoeff, sumOverShares);
    return out;
}

}  // namespace wb::rt
