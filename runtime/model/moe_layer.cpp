// MoE router and experts (see moe_layer.h for the shape legend and the formulas).
#include "runtime/model/moe_layer.h"

#include "runtime/model/cuda/fused_kernels.h"
#include "runtime/model/recompute.h"
#include "runtime/model/torch_compat.h"

#include <cmath>

namespace wb::rt {

namespace {

// SwiGLU silu(gate) ⊙ up over [N, 2F] (gate | up) as one autograd node. Saves only gateUp (which
// the grouped GEMM's backward keeps anyway) and writes the gradient of both halves straight into
// one [N, 2F] buffer: composed of ATen ops, autograd would keep silu(gate) and build that buffer
// from zero-filled slice gradients plus an add (three extra passes over [N, 2F] per layer).
//   d gate = silu'(gate) · (dy ⊙ up)   (at::silu_backward, computed in fp32 inside the kernel)
//   d up   = dy ⊙ silu(gate)
class SwiGlu : public torch::autograd::Function<SwiGlu> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& gateUp_NF2)
    {
        ctx->save_for_backward({gateUp_NF2});
        if (cuda::swigluSupports(gateUp_NF2))
            return cuda::swigluForward(gateUp_NF2);  // one pass (cuda/fused_kernels.h)
        const int64_t F = gateUp_NF2.size(-1) / 2;
        return torch::silu(gateUp_NF2.slice(-1, 0, F)).mul_(gateUp_NF2.slice(-1, F));
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads)
    {
        const auto gateUp_NF2 = ctx->get_saved_variables()[0];
        if (cuda::swigluSupports(gateUp_NF2))
            return {cuda::swigluBackward(gateUp_NF2, grads[0])};
        const int64_t F = gateUp_NF2.size(-1) / 2;
        const auto gate_NF = gateUp_NF2.slice(-1, 0, F), up_NF = gateUp_NF2.slice(-1, F);
        const auto& dy_NF = grads[0];
        auto d_NF2 = torch::empty(gateUp_NF2.sizes(), gateUp_NF2.options());
        auto dGate_NF = d_NF2.slice(-1, 0, F), dUp_NF = d_NF2.slice(-1, F);
        at::silu_backward_out(dGate_NF, dy_NF * up_NF, gate_NF);
        at::mul_out(dUp_NF, dy_NF, torch::silu(gate_NF));
        return {d_NF2};
    }
};

// The SwiGLU activation and the down projection that consumes it: h = silu(gate) ⊙ up, y = h·down.
// Selective recompute "moe_act" makes the two one recompute unit, so only gateUp is kept and
// neither h nor anything inside is: h (the down GEMM's input, [N, F]) is what Megatron's moe_act
// discards. Megatron refills h's storage before the down GEMM's backward instead of running the
// GEMM again; here the down GEMM runs again in backward (a third of the experts' forward FLOPs).
// `down` is the weight operand as the GEMM takes it (it needs a gradient: it is an input of the
// unit, not captured).
torch::Tensor activateAndDown(const torch::Tensor& gateUp_NF2, const torch::Tensor& down,
                              const std::function<torch::Tensor(const torch::Tensor&, const torch::Tensor&)>& gemm)
{
    const LayerFn unit = [gemm](const std::vector<torch::Tensor>& in) {
        return std::vector<torch::Tensor>{gemm(SwiGlu::apply(in[0]), in[1])};
    };
    return maybeRecompute(RecomputeModule::MoeAct, unit, {gateUp_NF2, down})[0];
}

// The per-expert loop over the sorted assignments. xSorted_AD is grouped by expert; counts are
// the group sizes (host ints). This is the piece a grouped GEMM replaces.
torch::Tensor runExpertsLoop(const torch::Tensor& xSorted_AD, const std::vector<int64_t>& counts,
                             const torch::Tensor& gateUp_EDF2, const torch::Tensor& down_EFD)
{
    std::vector<torch::Tensor> outputs;
    int64_t start = 0;
    for (size_t e = 0; e < counts.size(); ++e) {
        if (counts[e] == 0)
            continue;
        auto x_ND = xSorted_AD.slice(0, start, start + counts[e]);
        auto gateUp_NF2 = torch::matmul(x_ND, gateUp_EDF2[static_cast<int64_t>(e)]);
        outputs.push_back(activateAndDown(gateUp_NF2, down_EFD[static_cast<int64_t>(e)],
                                          [](const torch::Tensor& h, const torch::Tensor& w) { return torch::matmul(h, w); }));
        start += counts[e];
    }
    return torch::cat(outputs, 0);
}


// Token rows in expert order and back, as gathers in both directions (no index_add: no atomics,
// deterministic, and the rows stay in the activations' dtype). `order_A` sorts the T·K
// assignments (flat t·K + k) by expert; `slot_A` is its inverse (slot[order[j]] = j).
//   dispatch: x_TD → x[order / K]  (each token's row K times);  backward: Σ over a token's K rows
//   combine:  y_AD (expert order) → y_TKD (token order);        backward: the opposite gather
class DispatchRows : public torch::autograd::Function<DispatchRows> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x_TD,
                                 const torch::Tensor& tokenOf_A, const torch::Tensor& slot_A, int64_t K)
    {
        ctx->save_for_backward({slot_A});
        ctx->saved_data["K"] = K;
        return x_TD.index_select(0, tokenOf_A);
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads)
    {
        const auto slot_A = ctx->get_saved_variables()[0];
        const int64_t K = ctx->saved_data["K"].toInt();
        const auto g_AD = grads[0].contiguous();
        const int64_t D = g_AD.size(1);
        // One pass on CUDA (gather, fp32 sum over K, cast back: cuda::gatherSumRows), else ATen's three.
        auto g_TD = cuda::gatherSumSupports(g_AD, slot_A, K) ? cuda::gatherSumRows(g_AD, slot_A, K)
                                                             : g_AD.index_select(0, slot_A)
                                                                   .view({-1, K, D})
                                                                   .sum(at::IntArrayRef{1}, false, torch::kFloat32)
                                                                   .to(g_AD.scalar_type());
        return {g_TD, torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

class CombineRows : public torch::autograd::Function<CombineRows> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& y_AD,
                                 const torch::Tensor& order_A, const torch::Tensor& slot_A, int64_t K)
    {
        ctx->save_for_backward({order_A});
        return y_AD.index_select(0, slot_A).view({-1, K, y_AD.size(1)});
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads)
    {
        const auto order_A = ctx->get_saved_variables()[0];
        const auto& g_TKD = grads[0];
        return {g_TKD.reshape({-1, g_TKD.size(2)}).index_select(0, order_A), torch::Tensor(), torch::Tensor(),
                torch::Tensor()};
    }
};

// CombineRows and the weighted sum over K as one node with hand-written kernels
// (cuda/fused_kernels.h): out[t] = Σ_k w[t, k] · rows[slot[t·K + k]], accumulated in fp32.
class WeightedCombine : public torch::autograd::Function<WeightedCombine> {
public:
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& rows_AD,
                                 const torch::Tensor& weights_TK, const torch::Tensor& slot_A)
    {
        ctx->save_for_backward({rows_AD, weights_TK, slot_A});
        return cuda::combineForward(rows_AD, weights_TK, slot_A);
    }
    static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::tensor_list grads)
    {
        const auto saved = ctx->get_saved_variables();
        auto [dRows, dWeights] = cuda::combineBackward(saved[0], saved[1], saved[2], grads[0]);
        return {dRows, dWeights, torch::Tensor()};
    }
};

#if WB_HAVE_GROUPED_MM
// One grouped GEMM per projection. Operands in bf16: A = xSorted [A, D] row-major (ragged over
// experts by offs), B = [E, D, 2F] / [E, F, D] row-major; every non-unit stride is a multiple of
// 8 elements (16 bytes) when D and F are multiples of 8, which the caller checks.
torch::Tensor runExpertsGrouped(const torch::Tensor& xSorted_AD, const torch::Tensor& offsets_E,
                                const torch::Tensor& gateUp_EDF2, const torch::Tensor& down_EFD)
{
    auto x_AD = xSorted_AD.to(torch::kBFloat16).contiguous();
    auto gateUp_AF2 = at::_grouped_mm(x_AD, bf16Operand(gateUp_EDF2), offsets_E);
    return activateAndDown(gateUp_AF2, bf16Operand(down_EFD),
                           [offsets_E](const torch::Tensor& h, const torch::Tensor& w) {
                               return at::_grouped_mm(h, w, offsets_E);
                           });
}
#endif

}  // namespace

bool groupedGemmAvailable()
{
    return WB_HAVE_GROUPED_MM;
}

SortedAssignments sortByExpert(const torch::Tensor& expertIds_TK)
{
    SortedAssignments s;
    s.K = expertIds_TK.size(1);
    auto flatIds_A = expertIds_TK.flatten();
    s.order_A = std::get<1>(flatIds_A.sort(/*stable=*/true, /*dim=*/0, /*descending=*/false));
    s.tokenOf_A = s.order_A.div(s.K, "floor");
    s.slot_A =
        torch::empty_like(s.order_A).scatter_(0, s.order_A, torch::arange(s.order_A.size(0), s.order_A.options()));
    return s;
}

torch::Tensor dispatchRows(const torch::Tensor& x_TD, const SortedAssignments& sorted)
{
    return DispatchRows::apply(x_TD, sorted.tokenOf_A, sorted.slot_A, sorted.K);
}

torch::Tensor combineRows(const torch::Tensor& rows_AD, const torch::Tensor& weights_TK,
                          const SortedAssignments& sorted, torch::ScalarType dtype)
{
    if (cuda::combineSupports(rows_AD, weights_TK, sorted.slot_A))  // gather + weighted sum in one pass
        return WeightedCombine::apply(rows_AD, weights_TK, sorted.slot_A).to(dtype);
    auto y_TKD = CombineRows::apply(rows_AD, sorted.order_A, sorted.slot_A, sorted.K);
    auto w_T1K = weights_TK.to(y_TKD.scalar_type()).unsqueeze(1);
    return torch::bmm(w_T1K, y_TKD).squeeze(1).to(dtype);
}

torch::Tensor expertsForward(const torch::Tensor& x_TD, const torch::Tensor& weights_TK,
                             const torch::Tensor& expertIds_TK, const torch::Tensor& gateUp_EDF2,
                             const torch::Tensor& down_EFD, ExpertKernel kernel)
{
    const int64_t T = x_TD.size(0), E = gateUp_EDF2.size(0);
    // No rows (an expert-parallel rank no token was routed to): an empty result that stays in
    // x's graph. zeros_like would cut it, and then this rank's backward would skip the
    // all-to-alls around the experts that its EP peers run: a hang (and the expert weights'
    // gradients stay undefined here, which the data-parallel reduction zero-fills).
    if (T == 0)
        return x_TD * 0.0;
    const int64_t D = gateUp_EDF2.size(1), F = down_EFD.size(1);
    const bool groupedUsable = groupedGemmAvailable() && x_TD.is_cuda() && D % 8 == 0 && F % 8 == 0;
    if (kernel == ExpertKernel::Auto)
        kernel = groupedUsable && (x_TD.scalar_type() == torch::kBFloat16 || cudaAutocastBf16On()) ? ExpertKernel::Grouped
                                                                                              : ExpertKernel::Loop;
    TORCH_CHECK(kernel != ExpertKernel::Grouped || groupedUsable,
                "the grouped expert GEMM needs a CUDA build on LibTorch >= 2.8, CUDA tensors and D, F multiples of 8");
    auto flatIds_A = expertIds_TK.flatten();
    const SortedAssignments sorted = sortByExpert(expertIds_TK);
    // Rows move by gathers only (dispatchRows / combineRows: no atomics, deterministic). With the
    // grouped kernel the rows are bf16 all the way: the T tokens are cast once, not their T·K copies.
    const bool grouped = kernel == ExpertKernel::Grouped;
    auto xRows_AD = dispatchRows(grouped ? x_TD.to(torch::kBFloat16) : x_TD, sorted);
    torch::Tensor yRows_AD;
    if (grouped) {
#if WB_HAVE_GROUPED_MM
        // scatter_add, not bincount: CUDA bincount reads the max id back to the host (a sync).
        auto counts_E = torch::zeros({E}, flatIds_A.options()).scatter_add_(0, flatIds_A, torch::ones_like(flatIds_A));
        yRows_AD = runExpertsGrouped(xRows_AD, counts_E.cumsum(0).to(torch::kInt32), gateUp_EDF2, down_EFD);
#endif
    } else {
        auto countsTensor = torch::bincount(flatIds_A, {}, E).to(torch::kCPU);
        std::vector<int64_t> counts(countsTensor.data_ptr<int64_t>(), countsTensor.data_ptr<int64_t>() + E);
        yRows_AD = runExpertsLoop(xRows_AD, counts, gateUp_EDF2, down_EFD);
    }
    return combineRows(yRows_AD, weights_TK, sorted, x_TD.scalar_type());
}

MoeLayerImpl::MoeLayerImpl(int hiddenSize, int numExperts, int topK, int ffnHiddenSize,
                           double auxLossCoeff, torch::ScalarType routerDtype, torch::Device initDevice)
    : m_numExperts(numExperts), m_topK(topK), m_auxLossCoeff(auxLossCoeff), m_routerDtype(routerDtype)
{
    // Drawn on initDevice: the 30B slice's experts are 3.6 G values, slow to draw on a CPU.
    const double std = 0.02;
    const auto options = torch::TensorOptions().device(initDevice);
    m_routerWeight_ED = register_parameter("router", torch::randn({numExperts, hiddenSize}, options).mul_(std));
    m_gateUp_EDF2 = register_parameter("gate_up", torch::randn({numExperts, hiddenSize, 2 * ffnHiddenSize}, options).mul_(std));
    m_down_EFD = register_parameter("down", torch::randn({numExperts, ffnHiddenSize, hiddenSize}, options).mul_(std));
}

std::pair<torch::Tensor, torch::Tensor> MoeLayerImpl::forward(const torch::Tensor& x_TD)
{
    // One autograd node (router.h), in the router dtype with autocast excluded; replayed from
    // CUDA graphs when they are installed and cover this micro-batch's token count.
    RouterOutput route = routeTokens(x_TD, m_routerWeight_ED, m_topK, m_auxLossCoeff, m_routerDtype, m_shareSum,
                                     m_routerGraphs);
    return {runExperts(x_TD, route), route.auxLoss};
}

// The experts-runner hook (expert parallelism dispatches from here; see ExpertsRunner).
torch::Tensor MoeLayerImpl::runExperts(const torch::Tensor& x_TD, const RouterOutput& route)
{
    // With kept bf16 copies (bf16_weights.h) the experts get them; else their fp32 masters, cast
    // by the grouped GEMM's bf16Operand.
    const auto gateUp_EDF2 = weightOperand(m_gateUp_EDF2), down_EFD = weightOperand(m_down_EFD);
    if (m_expertsRunner)
        return m_expertsRunner->run(x_TD, route, gateUp_EDF2, down_EFD, m_numExperts);
    return expertsForward(x_TD, route.weights_TK, route.expertIds_TK, gateUp_EDF2, down_EFD);
}

}  // namespace wb::rt
