// Context parallelism (see context_parallel.h for the layout and the split). Shapes: B rows, T
// tokens per row of the whole micro-batch, Tl = T/CP this rank's, Tk = CP·Tl keys, G KV groups,
// d head dim, I image tokens, D width.
#include "runtime/parallel/context_parallel.h"

#include "runtime/data/tokenizer.h"
#include "runtime/model/vlm_model.h"
#include "runtime/parallel/tensor_parallel.h"

#include <algorithm>
#include <stdexcept>

namespace wb::rt {

namespace {

torch::Tensor int64Tensor(const std::vector<int64_t>& values, torch::Device device)
{
    return torch::tensor(values, torch::kInt64).to(device);
}

}  // namespace

std::vector<int64_t> contextParallelPositions(int64_t T, int cp, int rank)
{
    TORCH_CHECK(cp >= 1 && T % (2 * cp) == 0, "context parallelism: ", T, " tokens per row do not split into 2 x ", cp, " chunks");
    const int64_t c = T / (2 * cp);
    std::vector<int64_t> positions;
    for (int64_t chunk : {int64_t{rank}, int64_t{2 * cp - 1 - rank}})
        for (int64_t t = chunk * c; t < (chunk + 1) * c; ++t)
            positions.push_back(t);
    return positions;
}

ContextParallel::ContextParallel(ProcessGroup& world, int cpSize, int tpSize)
{
    const int n = world.size(), r = world.rank(), block = cpSize * tpSize;
    if (cpSize < 1 || tpSize < 1 || n % block != 0)
        throw std::invalid_argument("parallel.context_parallel_size " + std::to_string(cpSize) + " × tensor_model_parallel_size " +
                                    std::to_string(tpSize) + " does not divide the " + std::to_string(n) +
                                    " ranks; use a world size that is a multiple of TP × CP");
    const int base = r / block * block + r % tpSize;  // dp·TP·CP + tp
    m_group = world.newGroup(strideRanks(base, tpSize, cpSize), "cp" + std::to_string(r / block) + "t" + std::to_string(r % tpSize));
}

ContextParallel::~ContextParallel() = default;

void ContextParallel::install(VlmModelImpl& model)
{
    ProcessGroup* group = m_group.get();
    for (const auto& module : model.modules(/*include_self=*/true)) {
        if (auto attention = std::dynamic_pointer_cast<GqaAttentionImpl>(module)) {
            attention->setContextParallel(this);
        } else if (auto moe = std::dynamic_pointer_cast<MoeLayerImpl>(module)) {
            // The aux loss's counts and token total are the micro-batch's: summed over the CP
            // shares, then over TP's (sequence parallelism) when it installed a sum of its own.
            ShareSum inner = moe->shareSum();
            moe->setShareSum([group, inner](const torch::Tensor& t) {
                auto sum = reduceFromTensorRegion(*group, t);
                return inner ? inner(sum) : sum;
            });
        }
    }
}

// One collective for both: [1, 2, B, G, Tl, d] gathered to [CP, 2, …], then the CP blocks laid
// along T in rank order. gatherSequence's backward reduce-scatters the gradient to the owners.
std::pair<torch::Tensor, torch::Tensor> ContextParallel::gatherKeysValues(const torch::Tensor& k_BGTd, const torch::Tensor& v_BGTd)
{
    const int64_t B = k_BGTd.size(0), G = k_BGTd.size(1), Tl = k_BGTd.size(2), d = k_BGTd.size(3);
    auto kv_12BGTd = torch::stack({k_BGTd, v_BGTd}).unsqueeze(0).contiguous();
    auto all_C2BGTd = gatherSequence(*m_group, kv_12BGTd);
    auto kv_2BGTkd = all_C2BGTd.permute({1, 2, 3, 0, 4, 5}).reshape({2, B, G, size() * Tl, d});
    return {kv_2BGTkd[0], kv_2BGTkd[1]};
}

void ContextParallel::shard(DecoderInputs& in) const
{
    TORCH_CHECK(!in.documents.defined(), "context parallelism runs on the dense attention core only (not varlen flash)");
    const auto device = in.tokenIds_BT.device();
    const int64_t T = in.tokenIds_BT.size(1);
    const int cp = size();
    const std::vector<int64_t> mine = contextParallelPositions(T, cp, rank());
    const int64_t Tl = static_cast<int64_t>(mine.size());
    std::vector<int64_t> keys;
    std::vector<int64_t> localOf(static_cast<size_t>(T), -1);  // whole-row position → this rank's
    for (int q = 0; q < cp; ++q)
        for (int64_t t : contextParallelPositions(T, cp, q))
            keys.push_back(t);
    for (int64_t i = 0; i < Tl; ++i)
        localOf[static_cast<size_t>(mine[static_cast<size_t>(i)])] = i;
    auto local_Tl = int64Tensor(mine, device);

    // The loss divisor and the mask come from the whole rows.
    in.lossTargets = in.targetIndex_N.defined() ? in.targetIndex_N.numel()
                                                : in.labels_BT.ne(kIgnoreLabel).sum().item<int64_t>();
    in.lossTargets = std::max<int64_t>(in.lossTargets, 1);
    auto allowed_BTT = in.allowed_BTT.defined() ? in.allowed_BTT : documentCausalMask(in.docIds_BT);
    in.allowed_BTT = allowed_BTT.index_select(1, local_Tl).index_select(2, int64Tensor(keys, device));

    // Image tokens this rank holds, in the order of the whole micro-batch's (its feature rows).
    auto imageIndex_I = in.imageIndex_I.defined() ? in.imageIndex_I : in.tokenIds_BT.eq(kImageId).flatten().nonzero().squeeze(1);
    if (imageIndex_I.numel() > 0) {
        auto local_I = int64Tensor(localOf, device).index_select(0, imageIndex_I.remainder(T));
        auto kept_J = local_I.ge(0).nonzero().squeeze(1);
        in.imageIndex_I = (imageIndex_I.div(T, "floor") * Tl + local_I).index_select(0, kept_J);
        if (in.imageEmbeds_ID.defined())
            in.imageEmbeds_ID = in.imageEmbeds_ID.index_select(0, kept_J);
        for (auto& features_ID : in.deepstack_ID)
            if (features_ID.defined())
                features_ID = features_ID.index_select(0, kept_J);
    } else {
        in.imageIndex_I = imageIndex_I;
    }
    for (torch::Tensor* t : {&in.tokenIds_BT, &in.labels_BT, &in.docIds_BT, &in.pos1d_BT})
        *t = t->index_select(1, local_Tl);
    in.pos3_3BT = in.pos3_3BT.index_select(2, local_Tl);
    // The decoder finds the non-padding and target tokens of the share itself.
    in.validIndex_N = torch::Tensor();
    in.targetIndex_N = torch::Tensor();
}

}  // namespace wb::rt
