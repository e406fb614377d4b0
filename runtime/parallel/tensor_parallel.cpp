// Tensor, sequence and expert tensor parallelism (see tensor_parallel.h for the layout).
//
// The collectives are custom autograd functions (as the EP all-to-all): each takes the group as
// an int64 (autograd's saved data holds IValues), runs blocking collectives on the calling
// thread, and every rank takes part in the backward one as well (gradients are materialized, so
// a rank whose output got no gradient still sends zeros). Shapes: N rows (dim 0) per rank, n =
// N/TP under sequence parallelism, M_r the MoE's non-padding tokens of TP rank r.
#include "runtime/parallel/tensor_parallel.h"

#include "runtime/model/vlm_model.h"
#include "runtime/parallel/expert_parallel.h"

#include <numeric>
#include <stdexcept>

namespace wb::rt {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

ProcessGroup& groupOf(AutogradContext* ctx)
{
    return *reinterpret_cast<ProcessGroup*>(ctx->saved_data["group"].toInt());
}

torch::Tensor allreduced(ProcessGroup& group, const torch::Tensor& x)
{
    std::vector<torch::Tensor> t{x.clone(at::MemoryFormat::Contiguous)};
    group.allreduce(t, ReduceOp::Sum);
    return t[0];
}

torch::Tensor allgathered(ProcessGroup& group, const torch::Tensor& x)
{
    auto shape = x.sizes().vec();
    shape[0] *= group.size();
    auto out = torch::empty(shape, x.options());
    group.allgather(out, x.contiguous());
    return out;
}

torch::Tensor reduceScattered(ProcessGroup& group, const torch::Tensor& x)
{
    TORCH_CHECK(x.size(0) % group.size() == 0, "reduce-scatter of ", x.size(0), " rows over ", group.size(), " ranks");
    auto shape = x.sizes().vec();
    shape[0] /= group.size();
    auto out = torch::empty(shape, x.options());
    group.reduceScatter(out, x.contiguous());
    return out;
}

torch::Tensor ownRows(ProcessGroup& group, const torch::Tensor& x)
{
    TORCH_CHECK(x.size(0) % group.size() == 0, "sequence split of ", x.size(0), " rows over ", group.size(), " ranks");
    const int64_t n = x.size(0) / group.size();
    return x.narrow(0, group.rank() * n, n).clone(at::MemoryFormat::Contiguous);
}

// One function per pair of (forward, backward) collectives; Kind selects the pair.
enum class Kind : int64_t { Copy, Reduce, Gather, ReduceScatter, Split, GatherSplitGrad };

struct RegionFunction : torch::autograd::Function<RegionFunction> {
    static torch::Tensor forward(AutogradContext* ctx, const torch::Tensor& x, int64_t group, int64_t kind)
    {
        ctx->saved_data["group"] = group;
        ctx->saved_data["kind"] = kind;
        ProcessGroup& pg = *reinterpret_cast<ProcessGroup*>(group);
        switch (static_cast<Kind>(kind)) {
        // The input itself: autograd returns it as a view with this node as its grad_fn (no copy).
        case Kind::Copy: return x;
        case Kind::Reduce: return allreduced(pg, x);
        case Kind::Gather: return allgathered(pg, x);
        case Kind::ReduceScatter: return reduceScattered(pg, x);
        case Kind::Split: return ownRows(pg, x);
        case Kind::GatherSplitGrad: return allgathered(pg, x);
        }
        TORCH_CHECK(false, "unknown region op");
    }

    static variable_list backward(AutogradContext* ctx, variable_list grads)
    {
        ProcessGroup& pg = groupOf(ctx);
        const auto& g = grads[0];
        torch::Tensor out;
        switch (static_cast<Kind>(ctx->saved_data["kind"].toInt())) {
        case Kind::Copy: out = allreduced(pg, g); break;
        case Kind::Reduce: out = g; break;
        case Kind::Gather: out = reduceScattered(pg, g); break;
        case Kind::ReduceScatter: out = allgathered(pg, g); break;
        case Kind::Split: out = allgathered(pg, g); break;
        case Kind::GatherSplitGrad: out = ownRows(pg, g); break;
        }
        return {out, torch::Tensor(), torch::Tensor()};
    }
};

torch::Tensor region(ProcessGroup& group, const torch::Tensor& x, Kind kind)
{
    return RegionFunction::apply(x, reinterpret_cast<int64_t>(&group), static_cast<int64_t>(kind));
}

// The experts under ETP = TP: each rank holds F/TP of every (local) expert, so its output is a
// partial sum over F. Without SP the tokens are the same on every TP rank: f on the inputs (the
// gradient of x and of the router weights is summed over the slices in backward), g on the
// output. With SP each rank routed its own tokens: they are gathered over TP first (Megatron's
// alltoall dispatcher all-gathers over TP before the EP all-to-all), every rank computes its
// slice for all of them (through EP's dispatch when EP > 1), and the partial outputs are
// reduce-scattered back to the ranks that own the tokens.
class ExpertTensorParallelRunner final : public ExpertsRunner {
public:
    ExpertTensorParallelRunner(ProcessGroup& group, bool sequenceParallel, ExpertsRunner* inner)
        : m_group(group), m_sequenceParallel(sequenceParallel), m_inner(inner)
    {
    }

    torch::Tensor run(const torch::Tensor& x_MD, const RouterOutput& route, const torch::Tensor& gateUp_LDF2,
                      const torch::Tensor& down_LFD, int numExperts) override
    {
        RouterOutput all = route;
        if (!m_sequenceParallel) {
            all.weights_TK = copyToTensorRegion(m_group, route.weights_TK);
            auto y_MD = experts(copyToTensorRegion(m_group, x_MD), all, gateUp_LDF2, down_LFD, numExperts);
            return reduceFromTensorRegion(m_group, y_MD);
        }
        const int tp = m_group.size();
        const std::vector<int64_t> rows =
            m_group.exchangeCounts(std::vector<int64_t>(static_cast<size_t>(tp), x_MD.size(0)), x_MD.device());
        all.weights_TK = gatherRowsVariable(m_group, route.weights_TK, rows);
        all.expertIds_TK = gatherRowsVariable(m_group, route.expertIds_TK, rows);
        auto y_AllD = experts(gatherRowsVariable(m_group, x_MD, rows), all, gateUp_LDF2, down_LFD, numExperts);
        return reduceScatterRowsVariable(m_group, y_AllD, rows);
    }

private:
    torch::Tensor experts(const torch::Tensor& x, const RouterOutput& route, const torch::Tensor& gateUp,
                          const torch::Tensor& down, int numExperts)
    {
        if (m_inner)
            return m_inner->run(x, route, gateUp, down, numExperts);
        return expertsForward(x, route.weights_TK, route.expertIds_TK, gateUp, down);
    }

    ProcessGroup& m_group;
    bool m_sequenceParallel;
    ExpertsRunner* m_inner;
};

// The parameter by value: a handle to the module's own TensorImpl, so set_data on it changes the
// module's parameter. (named_parameters() returns its dictionary by value: a reference into it
// dangles once the call's full expression ends — on the GPU build that crashed with SIGSEGV.)
torch::Tensor parameter(torch::nn::Module& module, const std::string& name)
{
    const auto parameters = module.named_parameters(/*recurse=*/true);
    const torch::Tensor* p = parameters.find(name);
    TORCH_CHECK(p != nullptr, "tensor parallel: the model has no parameter ", name);
    return *p;
}

// Under pipeline parallelism the other stages' parameters were freed before TP is installed
// (Pipeline::keepOwnStage: an empty tensor): there is nothing to slice, and no gradient to reduce.
bool held(const torch::Tensor& p)
{
    return p.numel() > 0;
}

// set_data keeps the parameter object (the module's member, autograd's leaf) and swaps its
// storage for a copy of the slice: the full tensor is freed.
void keepSlice(torch::Tensor& p, const torch::Tensor& slice)
{
    p.set_data(slice.clone(at::MemoryFormat::Contiguous));
}

}  // namespace

torch::Tensor copyToTensorRegion(ProcessGroup& group, const torch::Tensor& x) { return region(group, x, Kind::Copy); }
torch::Tensor reduceFromTensorRegion(ProcessGroup& group, const torch::Tensor& x) { return region(group, x, Kind::Reduce); }
torch::Tensor gatherSequence(ProcessGroup& group, const torch::Tensor& x) { return region(group, x, Kind::Gather); }
torch::Tensor reduceScatterSequence(ProcessGroup& group, const torch::Tensor& x) { return region(group, x, Kind::ReduceScatter); }
torch::Tensor splitSequence(ProcessGroup& group, const torch::Tensor& x) { return region(group, x, Kind::Split); }
torch::Tensor gatherSequenceSplitGrad(ProcessGroup& group, const torch::Tensor& x) { return region(group, x, Kind::GatherSplitGrad); }

// A variable all-gather as an all-to-all (which takes per-rank counts; c10d's all-gather does
// not): every rank sends its rows to every rank. Backward (the reverse all-to-all) returns each
// copy's gradient to its owner, where the copies' gradients are summed (the cat's backward).
torch::Tensor gatherRowsVariable(ProcessGroup& group, const torch::Tensor& x, const std::vector<int64_t>& rows)
{
    const int n = group.size();
    const int64_t mine = rows[static_cast<size_t>(group.rank())];
    TORCH_CHECK(x.size(0) == mine, "variable gather: ", x.size(0), " rows, the counts say ", mine);
    auto copies = torch::cat(std::vector<torch::Tensor>(static_cast<size_t>(n), x), 0);
    return allToAllWithGrad(group, copies, rows, std::vector<int64_t>(static_cast<size_t>(n), mine));
}

torch::Tensor reduceScatterRowsVariable(ProcessGroup& group, const torch::Tensor& x, const std::vector<int64_t>& rows)
{
    const int n = group.size();
    const int64_t mine = rows[static_cast<size_t>(group.rank())];
    auto parts = allToAllWithGrad(group, x, std::vector<int64_t>(static_cast<size_t>(n), mine), rows);
    auto shape = parts.sizes().vec();
    shape[0] = mine;
    shape.insert(shape.begin(), n);
    // The dtype is explicit: under CUDA autocast a bare sum is an fp32 op, and its fp32 result
    // would not add into the bf16 residual stream (index_add_ dtype mismatch on the GPU).
    return parts.view(shape).sum(0, /*keepdim=*/false, x.scalar_type());
}

torch::Tensor TensorParallelRegion::enter(const torch::Tensor& x)
{
    return m_sequenceParallel ? gatherSequence(m_group, x) : copyToTensorRegion(m_group, x);
}

torch::Tensor TensorParallelRegion::leave(const torch::Tensor& y)
{
    return m_sequenceParallel ? reduceScatterSequence(m_group, y) : reduceFromTensorRegion(m_group, y);
}

torch::Tensor TensorParallelRegion::scatterTokens(const torch::Tensor& x)
{
    return m_sequenceParallel ? splitSequence(m_group, x) : x;
}

torch::Tensor TensorParallelRegion::gatherTokens(const torch::Tensor& x)
{
    return m_sequenceParallel ? gatherSequenceSplitGrad(m_group, x) : x;
}

std::pair<int64_t, int64_t> TensorParallelRegion::localTokens(int64_t numTokens) const
{
    if (!m_sequenceParallel)
        return {0, numTokens};
    const int64_t tp = m_group.size();
    TORCH_CHECK(numTokens % tp == 0, "sequence parallelism: a micro-batch of ", numTokens,
                " tokens does not split over tensor_model_parallel_size ", tp,
                "; make train.seq_length a multiple of it");
    const int64_t n = numTokens / tp;
    return {m_group.rank() * n, (m_group.rank() + 1) * n};
}

torch::Tensor TensorParallelRegion::maxOverShards(const torch::Tensor& x)
{
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> t{x.detach().clone(at::MemoryFormat::Contiguous)};
    m_group.allreduce(t, ReduceOp::Max);
    return t[0];
}

TensorParallel::TensorParallel(ProcessGroup& world, const core::ParallelConfig& p)
    : m_size(p.tensorModelParallelSize), m_sequenceParallel(p.sequenceParallel), m_expertTensorSize(p.expertTensorParallelSize),
      m_expertParallelSize(p.expertModelParallelSize)
{
    const int n = world.size(), r = world.rank();
    if (m_size < 1 || n % m_size != 0)
        throw std::invalid_argument("parallel.tensor_model_parallel_size " + std::to_string(m_size) + " does not divide the " + std::to_string(n) +
                                    " ranks; use a divisor of the number of ranks");
    if (m_expertTensorSize != 1 && m_expertTensorSize != m_size)
        throw std::invalid_argument("parallel.expert_tensor_parallel_size " + std::to_string(m_expertTensorSize) +
                                    ": moe-train runs ETP 1 (experts whole on every TP rank) or ETP = TP (" + std::to_string(m_size) +
                                    "); set one of those");
    // Same creation order on every rank: its TP group, then its DP group (then EP's groups).
    m_tensorGroup = world.newGroup(strideRanks(r / m_size * m_size, 1, m_size), "tp" + std::to_string(r / m_size));
    m_dataGroup = world.newGroup(strideRanks(r % m_size, m_size, n / m_size), "tpdp" + std::to_string(r % m_size));
}

TensorParallel::~TensorParallel() = default;

void TensorParallel::sliceAttention(torch::nn::Module& attention, int64_t Dh)
{
    const int64_t tp = m_size, r = rank();
    torch::Tensor q = parameter(attention, "q.weight");
    torch::Tensor k = parameter(attention, "k.weight");
    torch::Tensor v = parameter(attention, "v.weight");
    torch::Tensor out = parameter(attention, "out.weight");
    if (!held(q))  // another pipeline stage's layer
        return;
    const int64_t H = q.size(0) / Dh, G = k.size(0) / Dh;
    if (H % tp != 0)
        throw std::invalid_argument("parallel.tensor_model_parallel_size " + std::to_string(tp) + " does not divide the decoder's " +
                                    std::to_string(H) + " attention heads; choose a TP that divides num_attention_heads");
    const int64_t heads = H / tp;
    keepSlice(q, q.narrow(0, r * heads * Dh, heads * Dh));
    keepSlice(out, out.narrow(1, r * heads * Dh, heads * Dh));
    markSliced(q);
    markSliced(out);
    // Megatron-Core requires num_query_groups % TP == 0 (TransformerConfig raises otherwise), and
    // so does core's validation: no KV replication. Rank r's heads use groups r·G/TP … .
    if (G % tp != 0)
        throw std::invalid_argument("parallel.tensor_model_parallel_size " + std::to_string(tp) + " does not divide the decoder's " +
                                    std::to_string(G) + " KV groups; choose a TP that divides num_query_groups");
    const int64_t groups = G / tp;
    for (torch::Tensor* kv : {&k, &v}) {
        keepSlice(*kv, kv->narrow(0, r * groups * Dh, groups * Dh));
        markSliced(*kv);
    }
}

void TensorParallel::sliceVisionBlock(torch::nn::Module& block, int64_t Dh)
{
    const int64_t tp = m_size, r = rank();
    torch::Tensor qkv = parameter(block, "qkv.weight");
    torch::Tensor qkvBias = parameter(block, "qkv.bias");
    torch::Tensor proj = parameter(block, "proj.weight");
    torch::Tensor fc1 = parameter(block, "fc1.weight");
    torch::Tensor fc1Bias = parameter(block, "fc1.bias");
    torch::Tensor fc2 = parameter(block, "fc2.weight");
    if (!held(qkv))  // the vision encoder lives on the first pipeline stage only
        return;
    const int64_t D = qkv.size(1), H = D / Dh, F = fc1.size(0);
    if (H % tp != 0 || F % tp != 0)
        throw std::invalid_argument("parallel.tensor_model_parallel_size " + std::to_string(tp) + " does not divide the vision encoder's " +
                                    std::to_string(H) + " heads and " + std::to_string(F) + " MLP width; choose a TP that divides both");
    const int64_t width = H / tp * Dh, f = F / tp;
    // qkv rows are [3, H, Dh]: this rank's heads of q, of k and of v.
    keepSlice(qkv, qkv.view({3, D, D}).narrow(1, r * width, width).reshape({3 * width, D}));
    keepSlice(qkvBias, qkvBias.view({3, D}).narrow(1, r * width, width).reshape({3 * width}));
    keepSlice(proj, proj.narrow(1, r * width, width));
    keepSlice(fc1, fc1.narrow(0, r * f, f));
    keepSlice(fc1Bias, fc1Bias.narrow(0, r * f, f));
    keepSlice(fc2, fc2.narrow(1, r * f, f));
    for (torch::Tensor* p : {&qkv, &qkvBias, &proj, &fc1, &fc1Bias, &fc2})
        markSliced(*p);
}

void TensorParallel::sliceExperts(torch::nn::Module& moe)
{
    const int64_t tp = m_size, r = rank();
    torch::Tensor gateUp = parameter(moe, "gate_up");
    torch::Tensor down = parameter(moe, "down");
    if (!held(down))
        return;
    const int64_t F = down.size(1);
    if (F % tp != 0)
        throw std::invalid_argument("parallel.expert_tensor_parallel_size " + std::to_string(tp) + " does not divide the experts' " +
                                    std::to_string(F) + " FFN width (moe_ffn_hidden_size); choose a divisor or ETP 1");
    const int64_t f = F / tp;
    // gate_up is [L, D, gate F | up F]: this rank's columns of each half, kept in that layout.
    keepSlice(gateUp, torch::cat({gateUp.narrow(2, r * f, f), gateUp.narrow(2, F + r * f, f)}, 2));
    keepSlice(down, down.narrow(1, r * f, f));
}

// The embedding (first pipeline stage) and the output layer (last stage) are separate weights
// (not tied), each sliced where it is held.
void TensorParallel::sliceVocabulary(torch::nn::Module& decoder)
{
    const int64_t tp = m_size, r = rank();
    for (const char* name : {"embedding.weight", "output.weight"}) {
        torch::Tensor weight = parameter(decoder, name);
        if (!held(weight))
            continue;
        const int64_t V = weight.size(0);
        if (V % tp != 0)
            throw std::invalid_argument("parallel.tensor_model_parallel_size " + std::to_string(tp) + " does not divide the vocabulary of " +
                                        std::to_string(V) + " (the embedding and output rows are split over TP); pad vocab_size to a multiple");
        const int64_t rows = V / tp;
        keepSlice(weight, weight.narrow(0, r * rows, rows));
        markSliced(weight);
    }
}

bool TensorParallel::isExpert(const torch::Tensor& p) const
{
    for (const auto& t : m_experts)
        if (t.unsafeGetTensorImpl() == p.unsafeGetTensorImpl())
            return true;
    return false;
}

void TensorParallel::install(VlmModelImpl& model, const core::ModelConfig& config, ExpertsRunner* expertsInner)
{
    torch::NoGradGuard noGrad;
    m_decoderRegion = std::make_unique<TensorParallelRegion>(*m_tensorGroup, m_sequenceParallel);
    m_visionRegion = std::make_unique<TensorParallelRegion>(*m_tensorGroup, /*sequenceParallel=*/false);
    m_vocabRegion = std::make_unique<TensorParallelRegion>(*m_tensorGroup, /*sequenceParallel=*/false);
    if (m_expertTensorSize == m_size)
        m_expertsRunner = std::make_unique<ExpertTensorParallelRunner>(*m_tensorGroup, m_sequenceParallel, expertsInner);
    const int64_t visionHeadDim = config.vision.hiddenSize / std::max(1, config.vision.numAttentionHeads);
    ProcessGroup* tensorGroup = m_tensorGroup.get();
    auto partialUnderSp = [this](const torch::Tensor& p) {
        if (m_sequenceParallel && held(p))
            m_partial.push_back(p);
    };
    for (const auto& module : model.modules(/*include_self=*/true)) {
        if (auto layer = std::dynamic_pointer_cast<DecoderLayerImpl>(module)) {
            layer->setTensorParallel(m_decoderRegion.get());
            partialUnderSp(parameter(*layer, "attn_norm.weight"));
            partialUnderSp(parameter(*layer, "mlp_norm.weight"));
            partialUnderSp(parameter(*layer, "moe.router"));
        } else if (std::dynamic_pointer_cast<GqaAttentionImpl>(module)) {
            sliceAttention(*module, config.decoder.kvChannels);
        } else if (auto block = std::dynamic_pointer_cast<VisionBlockImpl>(module)) {
            sliceVisionBlock(*block, visionHeadDim);
            block->setTensorParallel(m_visionRegion.get());
        } else if (auto moe = std::dynamic_pointer_cast<MoeLayerImpl>(module)) {
            m_experts.push_back(parameter(*moe, "gate_up"));
            m_experts.push_back(parameter(*moe, "down"));
            if (m_expertsRunner) {
                sliceExperts(*moe);
                moe->setExpertsRunner(m_expertsRunner.get());
            }
            if (m_sequenceParallel)
                moe->setShareSum([tensorGroup](const torch::Tensor& t) { return allreduced(*tensorGroup, t); });
        } else if (auto decoder = std::dynamic_pointer_cast<MoeDecoderImpl>(module)) {
            sliceVocabulary(*decoder);
            decoder->setVocabParallel(m_vocabRegion.get());
            if (m_sequenceParallel) {
                decoder->setTensorParallel(m_decoderRegion.get());
                partialUnderSp(parameter(*decoder, "final_norm.weight"));
            }
        }
    }
}

void TensorParallel::reducePartialGradients()
{
    torch::NoGradGuard noGrad;
    if (m_partial.empty())
        return;
    std::vector<torch::Tensor> grads;
    for (auto& p : m_partial) {
        if (!p.grad().defined())
            p.mutable_grad() = torch::zeros_like(p);
        grads.push_back(p.grad());
    }
    sumOverTensorGroup(grads);
}

void TensorParallel::sumOverTensorGroup(const std::vector<torch::Tensor>& tensors)
{
    torch::NoGradGuard noGrad;
    if (tensors.empty())
        return;
    // One flat buffer, one allreduce.
    std::vector<torch::Tensor> flat;
    for (const auto& t : tensors)
        flat.push_back(t.flatten());
    auto summed = allreduced(*m_tensorGroup, torch::cat(flat));
    int64_t offset = 0;
    for (auto t : tensors) {
        t.copy_(summed.narrow(0, offset, t.numel()).view_as(t));
        offset += t.numel();
    }
}

int TensorParallel::copiesOf(const torch::Tensor& p, int worldSize) const
{
    // Experts: world / (EP · ETP) ranks hold the same slice (Megatron's expert-data-parallel size).
    if (isExpert(p))
        return worldSize / (m_expertParallelSize * m_expertTensorSize);
    const auto same = [&p](const torch::Tensor& t) { return t.unsafeGetTensorImpl() == p.unsafeGetTensorImpl(); };
    for (const auto& t : m_sliced)
        if (same(t))
            return worldSize / m_size;
    return worldSize;
}

}  // namespace wb::rt
