// MoE router and experts (see moe_layer.h for the shape legend and the formulas).
#include "runtime/model/moe_layer.h"

#include <cmath>

namespace wb::rt {

RouterOutput routeTopK(const torch::Tensor& logits_TE, int topK, double auxLossCoeff,
                       torch::ScalarType routerDtype)
{
    RouterOutput out;
    const int64_t T = logits_TE.size(0), E = logits_TE.size(1);
    auto probs_TE = torch::softmax(logits_TE.to(routerDtype), -1);
    auto [topProbs_TK, ids_TK] = probs_TE.topk(topK, -1);
    out.weights_TK = (topProbs_TK / topProbs_TK.sum(-1, true)).to(torch::kFloat32);
    out.expertIds_TK = ids_TK;
    out.probs_TE = probs_TE.to(torch::kFloat32);
    if (T == 0) {
        out.auxLoss = torch::zeros({}, logits_TE.options().dtype(torch::kFloat32));
        return out;
    }
    // f_e counts assignments (no gradient, as in Switch / Megatron); P_e carries the gradient.
    auto counts_E = torch::zeros({E}, probs_TE.options()).index_add_(
        0, ids_TK.flatten(), torch::ones({T * topK}, probs_TE.options()));
    auto fraction_E = counts_E / static_cast<double>(T * topK);
    auto meanProb_E = probs_TE.mean(0);
    out.auxLoss = ((fraction_E * meanProb_E).sum() * (static_cast<double>(E) * auxLossCoeff)).to(torch::kFloat32);
    return out;
}

namespace {

// The per-expert loop over the sorted assignments. xSorted_AD is grouped by expert; counts are
// the group sizes (host ints). This is the piece a grouped GEMM replaces.
torch::Tensor runExpertsLoop(const torch::Tensor& xSorted_AD, const std::vector<int64_t>& counts,
                             const torch::Tensor& gateUp_EDF2, const torch::Tensor& down_EFD)
{
    const int64_t F = down_EFD.size(1);
    std::vector<torch::Tensor> outputs;
    int64_t start = 0;
    for (size_t e = 0; e < counts.size(); ++e) {
        if (counts[e] == 0)
            continue;
        auto x_ND = xSorted_AD.slice(0, start, start + counts[e]);
        auto gateUp_NF2 = torch::matmul(x_ND, gateUp_EDF2[static_cast<int64_t>(e)]);
        auto h_NF = torch::silu(gateUp_NF2.slice(-1, 0, F)) * gateUp_NF2.slice(-1, F);
        outputs.push_back(torch::matmul(h_NF, down_EFD[static_cast<int64_t>(e)]));
        start += counts[e];
    }
    return torch::cat(outputs, 0);
}

}  // namespace

torch::Tensor expertsForward(const torch::Tensor& x_TD, const torch::Tensor& weights_TK,
                             const torch::Tensor& expertIds_TK, const torch::Tensor& gateUp_EDF2,
                             const torch::Tensor& down_EFD)
{
    const int64_t T = x_TD.size(0), K = expertIds_TK.size(1), E = gateUp_EDF2.size(0);
    if (T == 0)
        return torch::zeros_like(x_TD);
    auto flatIds_A = expertIds_TK.flatten();
    auto order_A = std::get<1>(flatIds_A.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false));
    auto tokenOf_A = order_A.div(K, "floor");
    auto xSorted_AD = x_TD.index_select(0, tokenOf_A);
    auto countsTensor = torch::bincount(flatIds_A, {}, E).to(torch::kCPU);
    std::vector<int64_t> counts(countsTensor.data_ptr<int64_t>(), countsTensor.data_ptr<int64_t>() + E);
    auto ySorted_AD = runExpertsLoop(xSorted_AD, counts, gateUp_EDF2, down_EFD);
    auto w_A1 = weights_TK.flatten().index_select(0, order_A).unsqueeze(1).to(ySorted_AD.scalar_type());
    return torch::zeros_like(x_TD).index_add(0, tokenOf_A, ySorted_AD * w_A1);
}

MoeLayerImpl::MoeLayerImpl(int hiddenSize, int numExperts, int topK, int ffnHiddenSize,
                           double auxLossCoeff, torch::ScalarType routerDtype)
    : m_numExperts(numExperts), m_topK(topK), m_auxLossCoeff(auxLossCoeff), m_routerDtype(routerDtype)
{
    const double std = 0.02;
    m_routerWeight_ED = register_parameter("router", torch::randn({numExperts, hiddenSize}) * std);
    m_gateUp_EDF2 = register_parameter("gate_up", torch::randn({numExperts, hiddenSize, 2 * ffnHiddenSize}) * std);
    m_down_EFD = register_parameter("down", torch::randn({numExperts, ffnHiddenSize, hiddenSize}) * std);
}

std::pair<torch::Tensor, torch::Tensor> MoeLayerImpl::forward(const torch::Tensor& x_TD)
{
    // Router logits in the router dtype: a bf16 matmul would make near-ties flip between runs.
    auto logits_TE = torch::matmul(x_TD.to(m_routerDtype), m_routerWeight_ED.to(m_routerDtype).t());
    RouterOutput route = routeTopK(logits_TE, m_topK, m_auxLossCoeff, m_routerDtype);
    auto y_TD = expertsForward(x_TD, route.weights_TK, route.expertIds_TK, m_gateUp_EDF2, m_down_EFD);
    return {y_TD, route.auxLoss};
}

}  // namespace wb::rt
