// Expert parallelism (see expert_parallel.h for the layout and the shape legend).
//
// Per MoE layer and micro-batch: (1) sort the A assignments by expert (so they are grouped by
// destination rank, then by expert), (2) exchange the per-expert counts with the EP group,
// (3) all-to-all the token rows, (4) run the local experts on what arrived (expertsForward with
// K = 1, weight 1: the same kernels, grouped GEMM on the GPU), (5) all-to-all the results back,
// (6) weight by the router and sum into the tokens with expertsForward's own combine (combineRows).
// The counts cost one device→host copy per layer (the split sizes are host ints for c10d).
#include "runtime/parallel/expert_parallel.h"

#include <numeric>
#include <stdexcept>

namespace wb::rt {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

struct AllToAllFunction : torch::autograd::Function<AllToAllFunction> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, std::vector<int64_t> outputSplits,
                                 std::vector<int64_t> inputSplits, int64_t group)
    {
        ctx->saved_data["out"] = outputSplits;
        ctx->saved_data["in"] = inputSplits;
        ctx->saved_data["group"] = group;
        auto* pg = reinterpret_cast<ProcessGroup*>(group);
        const int64_t rows = std::accumulate(outputSplits.begin(), outputSplits.end(), int64_t{0});
        auto shape = x.sizes().vec();
        shape[0] = rows;
        auto out = torch::empty(shape, x.options());
        pg->allToAll(out, x.contiguous(), outputSplits, inputSplits);
        return out;
    }

    // Every rank must take part even when its gradient is zero: materialized grads (the default)
    // guarantee a defined tensor here.
    static variable_list backward(AutogradContext* ctx, variable_list grads)
    {
        const auto outputSplits = ctx->saved_data["out"].toIntVector();
        const auto inputSplits = ctx->saved_data["in"].toIntVector();
        auto* pg = reinterpret_cast<ProcessGroup*>(ctx->saved_data["group"].toInt());
        const int64_t rows = std::accumulate(inputSplits.begin(), inputSplits.end(), int64_t{0});
        auto shape = grads[0].sizes().vec();
        shape[0] = rows;
        auto gradIn = torch::empty(shape, grads[0].options());
        pg->allToAll(gradIn, grads[0].contiguous(), inputSplits, outputSplits);
        return {gradIn, torch::Tensor(), torch::Tensor(), torch::Tensor()};
    }
};

}  // namespace

torch::Tensor allToAllWithGrad(ProcessGroup& group, const torch::Tensor& x, const std::vector<int64_t>& outputSplits,
                               const std::vector<int64_t>& inputSplits)
{
    return AllToAllFunction::apply(x, outputSplits, inputSplits, reinterpret_cast<int64_t>(&group));
}

ExpertParallel::ExpertParallel(ProcessGroup& world, int epSize, int etpSize) : m_epSize(epSize)
{
    const int n = world.size(), r = world.rank(), block = epSize * etpSize;
    if (epSize < 1 || etpSize < 1 || n % block != 0)
        throw std::invalid_argument("expert_model_parallel_size " + std::to_string(epSize) + " × expert_tensor_parallel_size " +
                                    std::to_string(etpSize) + " does not divide the " + std::to_string(n) + " ranks");
    // Every rank creates its EP group, then its EDP group: the same order everywhere, so no rank
    // waits in its second group for one still forming its first.
    const std::string epName = "ep" + std::to_string(r / block) + (etpSize > 1 ? "t" + std::to_string(r % etpSize) : "");
    m_expertGroup = world.newGroup(strideRanks(r / block * block + r % etpSize, etpSize, epSize), epName);
    m_expertDataGroup = world.newGroup(strideRanks(r % block, block, n / block), "edp" + std::to_string(r % block));
}

void ExpertParallel::install(torch::nn::Module& model)
{
    const int64_t epRank = m_expertGroup->rank();
    torch::NoGradGuard noGrad;
    for (const auto& module : model.modules(/*include_self=*/true)) {
        auto moe = std::dynamic_pointer_cast<MoeLayerImpl>(module);
        if (!moe)
            continue;
        const int64_t E = moe->numExperts();
        if (E % m_epSize != 0)
            throw std::invalid_argument("expert_model_parallel_size " + std::to_string(m_epSize) + " does not divide " +
                                        std::to_string(E) + " experts");
        const int64_t L = E / m_epSize;
        auto params = moe->named_parameters(/*recurse=*/false);
        if (params["gate_up"].numel() == 0)
            continue;  // a layer of another pipeline stage (freed by Pipeline::keepOwnStage)
        for (const char* name : {"gate_up", "down"}) {
            torch::Tensor p = params[name];
            TORCH_CHECK(p.size(0) == E, "expert tensor ", name, " has ", p.size(0), " experts, the router ", E);
            // set_data keeps the parameter object (the module's member, autograd's leaf) and
            // swaps its storage for a copy of the slice: the full tensor is freed.
            p.set_data(p.narrow(0, epRank * L, L).clone());
            m_expertParameters.push_back(p);
        }
        moe->setExpertsRunner(this);
    }
}

bool ExpertParallel::isExpertParameter(const torch::Tensor& p) const
{
    for (const auto& e : m_expertParameters)
        if (e.unsafeGetTensorImpl() == p.unsafeGetTensorImpl())
            return true;
    return false;
}

torch::Tensor ExpertParallel::run(const torch::Tensor& x_TD, const RouterOutput& route, const torch::Tensor& gateUp_LDF2,
                                  const torch::Tensor& down_LFD, int numExperts)
{
    ProcessGroup& group = *m_expertGroup;
    const int ep = group.size();
    const int64_t E = numExperts, L = gateUp_LDF2.size(0);
    TORCH_CHECK(L * ep == E, "expert parallel: ", L, " local experts x ", ep, " ranks != ", E, " experts");
    auto flatIds_A = route.expertIds_TK.flatten();
    // (1) the rows in expert order, as on one rank (moe_layer.h): gathers both ways, no atomics.
    const SortedAssignments sorted = sortByExpert(route.expertIds_TK);
    auto xSorted_AD = dispatchRows(x_TD, sorted);

    // (2) counts: what this rank sends to each expert, L values per destination rank.
    auto countsTensor = torch::bincount(flatIds_A, {}, E).to(torch::kCPU).to(torch::kInt64).contiguous();
    std::vector<int64_t> counts(countsTensor.data_ptr<int64_t>(), countsTensor.data_ptr<int64_t>() + E);
    const std::vector<int64_t> received = group.exchangeCounts(counts, x_TD.device());  // [source][local expert]
    std::vector<int64_t> sendSplits(static_cast<size_t>(ep), 0), recvSplits(static_cast<size_t>(ep), 0);
    for (int64_t e = 0; e < E; ++e) {
        sendSplits[static_cast<size_t>(e / L)] += counts[static_cast<size_t>(e)];
        recvSplits[static_cast<size_t>(e / L)] += received[static_cast<size_t>(e)];
    }

    // (3)-(5): rows from source i arrive grouped by local expert (the sender sorted them).
    auto xRecv_RD = allToAllWithGrad(group, xSorted_AD, recvSplits, sendSplits);
    auto receivedCounts = torch::tensor(received, torch::kInt64).to(x_TD.device());
    auto localIds_R1 =
        torch::arange(L, receivedCounts.options()).repeat({ep}).repeat_interleave(receivedCounts).unsqueeze(1);
    auto ones_R1 = torch::ones({xRecv_RD.size(0), 1}, x_TD.options().dtype(torch::kFloat32));
    auto yRecv_RD = expertsForward(xRecv_RD, ones_R1, localIds_R1, gateUp_LDF2, down_LFD);
    auto ySorted_AD = allToAllWithGrad(group, yRecv_RD, sendSplits, recvSplits);

    // (6) as expertsForward: each token's K rows weighted by the router and summed (one pass on
    // CUDA; gathers, not index_add's atomics: the same sum in the same order on every run).
    return combineRows(ySorted_AD, route.weights_TK, sorted, x_TD.scalar_type());
}

}  // namespace wb::rt
