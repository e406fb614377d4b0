// Applies a config's parallel layout to the model (see parallel_training.h).
#include "runtime/parallel/parallel_training.h"

#include "runtime/model/tensor_bytes.h"
#include "runtime/model/vlm_model.h"

#include <cstdio>
#include <stdexcept>

namespace wb::rt {

namespace {

// The parameters whose gradient exists on some rank (one max-allreduce of a presence flag per
// parameter over `world`): an expert slice counts as present when its layer's experts got a token
// anywhere, as the single-rank layer's one tensor would. Where this rank has none, a zero gradient
// is made so the collectives pair up; one missing on every rank stays undefined (AdamW skips it).
std::vector<torch::Tensor> gradientsPresentAnywhere(ProcessGroup& world, const std::vector<torch::Tensor>& params)
{
    auto present = torch::zeros({static_cast<int64_t>(params.size())}, torch::kFloat32);
    for (size_t i = 0; i < params.size(); ++i)
        present[static_cast<int64_t>(i)] = params[i].grad().defined() ? 1.0f : 0.0f;
    std::vector<torch::Tensor> presence{params.empty() ? present : present.to(params[0].device())};
    world.allreduce(presence, ReduceOp::Max);
    present = presence[0].cpu();
    std::vector<torch::Tensor> out;
    for (size_t i = 0; i < params.size(); ++i) {
        torch::Tensor p = params[i];
        if (present[static_cast<int64_t>(i)].item<float>() == 0.0f)
            continue;
        if (!p.grad().defined())
            p.mutable_grad() = torch::zeros_like(p);
        out.push_back(p);
    }
    return out;
}

std::string mib(int64_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.2f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return text;
}


}  // namespace

ParallelTraining::ParallelTraining(const core::RunConfig& config, ProcessGroup& world) : m_config(config), m_world(world)
{
    const auto& p = config.parallel;
    if (p.tensorModelParallelSize > 1)
        m_tensorParallel = std::make_unique<TensorParallel>(world, p);
    if (p.contextParallelSize > 1)
        m_contextParallel = std::make_unique<ContextParallel>(world, p.contextParallelSize, p.tensorModelParallelSize);
    if (p.expertModelParallelSize > 1)
        m_expertParallel = std::make_unique<ExpertParallel>(world, p.expertModelParallelSize,
                                                            m_tensorParallel ? p.expertTensorParallelSize : 1);
    m_dense = std::make_unique<DataParallel>(m_tensorParallel ? m_tensorParallel->dataGroup() : world);
    if (m_expertParallel)
        m_experts = std::make_unique<DataParallel>(m_expertParallel->expertDataGroup());
    else if (m_tensorParallel)  // experts sliced over TP (ETP = TP) reduce like dense slices; whole ones over all ranks
        m_experts = std::make_unique<DataParallel>(p.expertTensorParallelSize > 1 ? m_tensorParallel->dataGroup() : world);
}

// Megatron's order tp-cp-dp: rank = tp + TP·(cp + CP·dp).
int ParallelTraining::dataParallelSize() const
{
    return m_world.size() / modelParallelBlock();
}

int ParallelTraining::dataParallelRank() const
{
    return m_world.rank() / modelParallelBlock();
}

int ParallelTraining::modelParallelBlock() const
{
    return (m_tensorParallel ? m_tensorParallel->size() : 1) * (m_contextParallel ? m_contextParallel->size() : 1);
}

ParallelTraining::~ParallelTraining()
{
    if (m_model)
        m_model->setLayerRunner(nullptr);
}

void ParallelTraining::attach(VlmModelImpl& model, LayerRunner* inner)
{
    m_model = &model;
    // Built from the same seed everywhere; the broadcast makes "same weights" a fact, not a hope.
    // Over all ranks (with TP m_dense is the DP group; the TP ranks slice the same weights).
    DataParallel(m_world).broadcastParameters(model.parameters());
    if (m_expertParallel)
        m_expertParallel->install(model);
    if (m_tensorParallel)
        m_tensorParallel->install(model, m_config.model, m_expertParallel.get());
    if (m_contextParallel)  // after TP: its aux-statistics sum wraps TP's
        m_contextParallel->install(model);
    const auto& p = m_config.parallel;
    // no_shard is Megatron's DDP: plain data parallelism below.
    const auto strategy = parseShardingStrategy(p.dataParallelShardingStrategy);
    if (p.useMegatronFsdp && strategy) {
        m_fsdp = makeFsdp(model, *strategy);
        m_fsdp->setInner(inner);
        m_fsdp->setReshardAfterForward(p.fsdpReshardAfterForward);
        m_fsdp->setReduceDtype(p.gradReduceInFp32 ? torch::kFloat32 : torch::kBFloat16);
        model.setLayerRunner(m_fsdp.get());
    } else {
        model.setLayerRunner(inner);
        if (p.overlapGradReduce && m_world.size() > 1)
            makeGradientReducer();
    }
}

// The overlapped form of finishGradients()' synchronous paths below: each parameter is reduced
// over the group and with the divisor that path uses, its presence agreed over the world.
// Tensor parallelism's partial gradients must be summed over TP before their data-parallel
// average (as Megatron does), so they are deferred to the end of backward.
void ParallelTraining::makeGradientReducer()
{
    const int dp = dataParallelSize();
    const TensorParallel* tp = m_tensorParallel.get();
    const int duplicates = tp && !tp->sequenceParallel() ? tp->size() / tp->expertTensorSize() : 1;
    std::vector<ReducedParameter> reduced;
    for (const torch::Tensor& p : m_model->parameters()) {
        ReducedParameter r;
        r.parameter = p;
        const bool expert = tp ? tp->isExpert(p) : m_expertParallel && m_expertParallel->isExpertParameter(p);
        r.group = expert ? &m_experts->group() : &m_dense->group();
        r.divisor = tp ? (expert ? dp * duplicates : dp) : dp;
        if (tp)
            for (const torch::Tensor& q : tp->partialParameters())
                r.deferred = r.deferred || q.unsafeGetTensorImpl() == p.unsafeGetTensorImpl();
        reduced.push_back(std::move(r));
    }
    m_reducer = std::make_unique<GradientReducer>(m_world, std::move(reduced), gradientBucketBytes());
}

// FSDP shards each trainable parameter over the ranks that hold the same values and reduces its
// gradient over them (a reduce-scatter is the allreduce of plain DP, each rank keeping its part):
//  - without TP: dense over all ranks, experts over EDP (EP) or all ranks;
//  - with TP (applied first: the parameters are the TP slices): dense ones (TP slices or
//    replicated) over the DP group of the rank's TP coordinate, experts over the group the
//    non-FSDP TP path averages them over (EDP with EP; DP with ETP = TP; all ranks with ETP 1),
//    divided by DP × (TP / ETP without SP), as finishTensorParallelGradients() does.
std::unique_ptr<Fsdp> ParallelTraining::makeFsdp(VlmModelImpl& model, ShardingStrategy strategy)
{
    const int dp = dataParallelSize();
    if (!m_tensorParallel) {
        ProcessGroup& expertGroup = m_expertParallel ? m_expertParallel->expertDataGroup() : m_world;
        const ExpertParallel* ep = m_expertParallel.get();
        auto isExpert = [ep](const torch::Tensor& t) { return ep && ep->isExpertParameter(t); };
        return std::make_unique<Fsdp>(model, strategy, m_world, expertGroup, isExpert, dp, dp, &m_world);
    }
    TensorParallel* tp = m_tensorParallel.get();
    ProcessGroup& expertGroup = m_expertParallel ? m_expertParallel->expertDataGroup()
                                : tp->expertTensorSize() > 1 ? tp->dataGroup()
                                                             : m_world;
    const int duplicates = tp->sequenceParallel() ? 1 : tp->size() / tp->expertTensorSize();
    auto isExpert = [tp](const torch::Tensor& t) { return tp->isExpert(t); };
    return std::make_unique<Fsdp>(model, strategy, tp->dataGroup(), expertGroup, isExpert, dp, dp * duplicates, &m_world);
}

std::vector<torch::Tensor> ParallelTraining::optimizedParameters(bool decay) const
{
    if (m_fsdp)
        return m_fsdp->shards(decay);
    // Weight decay only on matrices; norms and biases are excluded, as in Megatron.
    std::vector<torch::Tensor> out;
    for (const auto& p : m_model->parameters())
        if (p.requires_grad() && (p.dim() >= 2) == decay)
            out.push_back(p);
    return out;
}

void ParallelTraining::beginMicroBatch(bool hasImages)
{
    if (m_fsdp)
        m_fsdp->beginMicroBatch(hasImages);
}

void ParallelTraining::shardSequence(VlmBatch& batch) const
{
    if (m_contextParallel)
        m_contextParallel->shard(batch.decoder);
}

void ParallelTraining::beforeLastBackward()
{
    if (m_reducer)
        m_reducer->arm();
}

void ParallelTraining::afterBackward()
{
    if (m_fsdp)
        m_fsdp->afterBackward();
}

void ParallelTraining::finishGradients()
{
    if (m_fsdp) {
        m_fsdp->finishGradients();
        if (m_tensorParallel)
            sumPartialShardGradients();
        return;
    }
    if (m_reducer) {
        TensorParallel* tp = m_tensorParallel.get();
        m_reducer->finish(tp ? std::function<void()>([tp] { tp->reducePartialGradients(); }) : std::function<void()>());
        return;
    }
    if (m_tensorParallel) {
        finishTensorParallelGradients();
        return;
    }
    // Divided by the data-parallel ranks (world / CP): the CP ranks' gradients are shares of
    // their micro-batches', summed like the rest.
    const int dp = dataParallelSize();
    const auto params = m_model->parameters();
    if (!m_expertParallel) {
        m_dense->averageGradients(params, dp);
        return;
    }
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> dense, experts;
    for (const torch::Tensor& p : gradientsPresentAnywhere(m_world, params))
        (m_expertParallel->isExpertParameter(p) ? experts : dense).push_back(p);
    m_dense->averageGradients(dense, dp);
    // Summed over the ranks that hold the same experts, divided by all data-parallel ranks: each
    // rank's loss was scaled for its own micro-batches, as for the dense gradients.
    m_experts->averageGradients(experts, dp);
}

torch::Tensor ParallelTraining::gradNorm() const
{
    torch::NoGradGuard noGrad;
    if (m_fsdp && m_tensorParallel) {
        const TensorParallel* tp = m_tensorParallel.get();
        const int world = m_world.size();
        return m_fsdp->gradNormSquared(m_world, [tp, world](const torch::Tensor& p) { return tp->copiesOf(p, world); }).sqrt();
    }
    if (m_fsdp)
        return m_fsdp->gradNormSquared(m_world).sqrt();
    if (m_tensorParallel)
        return tensorParallelGradNorm();
    // Dense part as the single-rank trainer always computed it: the norm of the per-tensor norms.
    std::vector<torch::Tensor> dense, experts;
    for (bool decay : {true, false})
        for (const auto& p : optimizedParameters(decay))
            if (p.grad().defined())
                (m_expertParallel && m_expertParallel->isExpertParameter(p) ? experts : dense)
                    .push_back(p.grad().to(torch::kFloat32).norm());
    auto device = m_model->parameters().empty() ? torch::Device(torch::kCPU) : m_model->parameters()[0].device();
    auto total = dense.empty() ? torch::zeros({}, torch::TensorOptions().device(device)) : torch::stack(dense).norm();
    if (!m_expertParallel)
        return total;
    // The EP ranks hold different experts, the EDP ranks the same ones (already averaged): the
    // experts' squared norm is summed over the EP group.
    auto expertSquares = experts.empty() ? torch::zeros({}, total.options()) : torch::stack(experts).pow(2).sum();
    std::vector<torch::Tensor> sum{expertSquares.reshape({1})};
    m_expertParallel->expertGroup().allreduce(sum, ReduceOp::Sum);
    return (total.pow(2) + sum[0].squeeze()).sqrt();
}

void ParallelTraining::afterOptimizerStep()
{
    if (m_fsdp)
        m_fsdp->afterOptimizerStep();
    // The optimizer's zero_grad dropped (2.x) or zeroed (1.13) the gradients: the bucketed ones
    // become views of their zeroed buffers again, before the next step's first backward.
    if (m_reducer)
        m_reducer->zeroGradients();
}

std::string ParallelTraining::memorySummary(int64_t momentBytesPerValue) const
{
    int64_t params = 0, grads = 0, optimizer = 0;
    std::string layout = "dp" + std::to_string(dataParallelSize());
    if (m_tensorParallel)
        layout = "tp" + std::to_string(m_tensorParallel->size()) + (m_tensorParallel->sequenceParallel() ? " sp" : "") +
                 " etp" + std::to_string(m_tensorParallel->expertTensorSize()) + " dp" + std::to_string(dataParallelSize());
    if (m_contextParallel)
        layout += " cp" + std::to_string(m_contextParallel->size());
    if (m_expertParallel)
        layout += " ep" + std::to_string(m_expertParallel->size()) + " (edp" +
                  std::to_string(m_expertParallel->expertDataGroup().size()) + ")";
    if (m_fsdp) {
        const ShardedBytes b = m_fsdp->bytes(momentBytesPerValue);
        params = b.parameters;
        grads = b.gradients;
        optimizer = b.optimizerState;
        layout += " fsdp " + shardingStrategyName(m_fsdp->strategy());
    } else {
        for (const auto& p : m_model->parameters()) {
            params += tensorBytes(p);
            if (p.requires_grad()) {
                grads += tensorBytes(p);
                optimizer += p.numel() * momentBytesPerValue;
            }
        }
    }
    return layout + ": per rank parameters " + mib(params) + ", gradients " + mib(grads) + ", optimizer state " +
           mib(optimizer) + " (" + std::to_string(params + grads + optimizer) + " bytes)";
}

std::string ParallelTraining::gradientReductionSummary() const
{
    if (m_fsdp)
        return m_fsdp->summary();
    return m_reducer ? m_reducer->summary() : std::string();
}

// Tensor parallel layouts (tensor_parallel.h). Each gradient is reduced over the ranks that hold
// the same slice and trained on different tokens, once:
//  - partial ones (sequence-parallel norms and routers, replicated KV heads) are first summed
//    over TP: each TP rank saw only its tokens or its heads;
//  - dense parameters (TP slices or replicated) are averaged over the DP group (same TP rank);
//  - experts over the expert-data-parallel group (EP), over DP (no EP, ETP = TP) or over all
//    ranks (no EP, ETP = 1), divided by DP × (TP / ETP without sequence parallelism, where each
//    of the TP / ETP ranks that share a slice computed it on the same tokens, else 1).
void ParallelTraining::finishTensorParallelGradients()
{
    torch::NoGradGuard noGrad;
    const auto present = gradientsPresentAnywhere(m_world, m_model->parameters());
    m_tensorParallel->reducePartialGradients();
    std::vector<torch::Tensor> dense, experts;
    for (const torch::Tensor& p : present)
        (m_tensorParallel->isExpert(p) ? experts : dense).push_back(p);
    const int dp = dataParallelSize();
    m_dense->averageGradients(dense, dp);
    const int duplicates = m_tensorParallel->sequenceParallel() ? 1 : m_tensorParallel->size() / m_tensorParallel->expertTensorSize();
    m_experts->averageGradients(experts, dp * duplicates);
}

// FSDP × TP: the gradients that are partial per TP rank (sequence-parallel norms, routers, final
// norm) were reduce-scattered over DP inside each TP coordinate. They are dense and replicated
// over TP, so TP rank t's shard k covers the same elements as every other TP rank's shard k
// (same parameter size, same DP rank k); summing the shards over TP therefore equals summing the
// whole gradients over TP first and reduce-scattering after (both sums are linear; only the fp32
// order differs). The presence of each gradient was agreed over the world, so every TP rank
// sends the same list.
void ParallelTraining::sumPartialShardGradients()
{
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> grads;
    for (const auto& p : m_tensorParallel->partialParameters()) {
        const torch::Tensor shard = m_fsdp->shardOf(p);
        if (shard.defined() && shard.grad().defined())
            grads.push_back(shard.grad());
    }
    m_tensorParallel->sumOverTensorGroup(grads);
}

// Σ over parameters of ‖g‖² / (ranks holding that same gradient), summed over all ranks: every
// distinct slice once, whatever the layout.
torch::Tensor ParallelTraining::tensorParallelGradNorm() const
{
    torch::NoGradGuard noGrad;
    std::vector<torch::Tensor> squares;
    for (bool decay : {true, false})
        for (const auto& p : optimizedParameters(decay))
            if (p.grad().defined())
                squares.push_back(p.grad().to(torch::kFloat32).pow(2).sum() /
                                  static_cast<double>(m_tensorParallel->copiesOf(p, m_world.size())));
    auto device = m_model->parameters().empty() ? torch::Device(torch::kCPU) : m_model->parameters()[0].device();
    auto total = squares.empty() ? torch::zeros({1}, torch::TensorOptions().device(device)) : torch::stack(squares).sum().reshape({1});
    std::vector<torch::Tensor> sum{total};
    m_world.allreduce(sum, ReduceOp::Sum);
    return sum[0].squeeze().sqrt();
}

}  // namespace wb::rt
