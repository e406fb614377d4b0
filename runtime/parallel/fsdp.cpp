// Fully sharded data parallelism (see fsdp.h for the strategies and the layout).
//
// ZeRO-3 hooks: run() wraps a layer as  inputs → [after-backward hook] → layer → [before-backward
// hook] → outputs. Both hooks are identity autograd functions; in backward the one on the outputs
// runs first (gather the unit again, prefetch the previous layer) and the one on the inputs runs
// once the layer's backward is done (its gradients are accumulated: AccumulateGrad nodes have the
// highest priority in autograd's ready queue), which reduce-scatters and frees. Every rank builds
// the same graph, so the collectives are issued in the same order everywhere. A layer whose
// inputs need no gradient gets no input hook; it is reduced after the micro-batch instead.
//
// Freeing keeps the parameter tensor and its storage object and only releases the memory under
// it (as FSDP2 resizes storage to 0), so views and autograd's saved references stay valid; a
// gather puts a fresh allocation under the same storage without bumping the version counter
// (the layer's saved tensors must not look modified).
#include "runtime/parallel/fsdp.h"

#include "runtime/model/tensor_bytes.h"

#include <ATen/autocast_mode.h>

#include <regex>
#include <stdexcept>

namespace wb::rt {

namespace {

// A unit's hook tag: on its outputs (its backward begins) or on its inputs (its backward is done).
int64_t unitTag(size_t unit, bool before)
{
    return static_cast<int64_t>(unit) * 2 + (before ? 1 : 0);
}

// Releases the memory under `p` (its shape and identity stay).
void releaseStorage(const torch::Tensor& p)
{
    auto* storage = p.storage().unsafeGetStorageImpl();
    storage->set_data_ptr_noswap(at::DataPtr(nullptr, p.device()));
    storage->set_nbytes(0);
}

// Moves `fresh`'s memory (same shape, contiguous, offset 0) under `p`'s storage.
void adoptStorage(const torch::Tensor& p, const torch::Tensor& fresh)
{
    auto* src = fresh.storage().unsafeGetStorageImpl();
    auto* dst = p.storage().unsafeGetStorageImpl();
    const size_t bytes = src->nbytes();
    dst->set_data_ptr_noswap(src->set_data_ptr(at::DataPtr(nullptr, fresh.device())));
    dst->set_nbytes(bytes);
    src->set_nbytes(0);
}


}  // namespace

struct Fsdp::Param {
    torch::Tensor param;  // the module's parameter
    torch::Tensor shard;  // fp32 [chunk], the optimizer's tensor
    int64_t numel = 0;
    int64_t chunk = 0;
    bool expert = false;
    bool decay = false;
    bool freeable = false;  // ZeRO-3 layer parameter: memory released between uses
    bool seen = false;      // had a local gradient this step
};

struct Fsdp::Gather {
    ProcessGroup* group = nullptr;
    std::vector<size_t> params;
    torch::Tensor out;
    std::unique_ptr<CommWork> work;
};

struct Fsdp::Unit {
    std::string stack;  // "" (root), "vision", "decoder"
    int index = 0;
    std::vector<size_t> params;
    bool gathered = true;
    bool reduced = false;  // this micro-batch
    std::vector<Gather> pending;
};

std::optional<ShardingStrategy> parseShardingStrategy(const std::string& name)
{
    if (name == "optim")
        return ShardingStrategy::Optim;
    if (name == "optim_grads")
        return ShardingStrategy::OptimGrads;
    if (name == "optim_grads_params")
        return ShardingStrategy::OptimGradsParams;
    return std::nullopt;
}

std::string shardingStrategyName(ShardingStrategy strategy)
{
    switch (strategy) {
    case ShardingStrategy::Optim: return "optim";
    case ShardingStrategy::OptimGrads: return "optim_grads";
    case ShardingStrategy::OptimGradsParams: return "optim_grads_params";
    }
    return "?";
}

Fsdp::Fsdp(torch::nn::Module& model, ShardingStrategy strategy, ProcessGroup& dense, ProcessGroup& expert,
           std::function<bool(const torch::Tensor&)> isExpert, int gradDivisor, int expertGradDivisor, ProcessGroup* world)
    : m_model(model), m_strategy(strategy), m_dense(dense), m_expert(expert), m_gradDivisor(gradDivisor),
      m_expertGradDivisor(expertGradDivisor > 0 ? expertGradDivisor : gradDivisor), m_world(world ? *world : dense)
{
    torch::NoGradGuard noGrad;
    // Units: the root (everything outside a layer), then every vision block and decoder layer.
    m_units.push_back(Unit{});
    std::map<std::string, size_t> unitByPrefix;
    const std::regex layerName(R"(^(vision\.blocks|decoder\.layers)\.(\d+)$)");
    for (const auto& item : model.named_modules()) {
        std::smatch m;
        const std::string& name = item.key();
        if (!std::regex_match(name, m, layerName))
            continue;
        Unit unit;
        unit.stack = m[1].str() == "vision.blocks" ? "vision" : "decoder";
        unit.index = std::stoi(m[2].str());
        m_unitOf[item.value().get()] = m_units.size();
        unitByPrefix[name + "."] = m_units.size();
        m_units.push_back(std::move(unit));
    }
    for (const auto& item : model.named_parameters()) {
        const torch::Tensor& p = item.value();
        if (!p.requires_grad())
            continue;  // frozen: stays whole, no optimizer state
        size_t unit = 0;
        for (const auto& [prefix, index] : unitByPrefix)
            if (item.key().rfind(prefix, 0) == 0)
                unit = index;
        Param sp;
        sp.param = p;
        sp.numel = p.numel();
        sp.expert = isExpert && isExpert(p);
        sp.decay = p.dim() >= 2;
        ProcessGroup& group = sp.expert ? m_expert : m_dense;
        const int64_t n = group.size();
        sp.chunk = (sp.numel + n - 1) / n;
        auto flat = torch::constant_pad_nd(p.detach().reshape({-1}).to(torch::kFloat32), {0, n * sp.chunk - sp.numel});
        sp.shard = flat.narrow(0, group.rank() * sp.chunk, sp.chunk).clone().set_requires_grad(true);
        sp.freeable = strategy == ShardingStrategy::OptimGradsParams && unit != 0 && p.is_contiguous() &&
                      p.storage_offset() == 0 && tensorBytes(p) == static_cast<int64_t>(p.storage().nbytes());
        m_units[unit].params.push_back(m_params.size());
        m_params.push_back(std::move(sp));
    }
    if (m_strategy == ShardingStrategy::OptimGradsParams)
        for (size_t u = 1; u < m_units.size(); ++u)
            releaseUnit(u);
}

Fsdp::~Fsdp() = default;

std::vector<ProcessGroup*> Fsdp::groups() const
{
    if (&m_expert == &m_dense)
        return {&m_dense};
    return {&m_dense, &m_expert};
}

ProcessGroup* Fsdp::groupOf(const Param& p) const
{
    return p.expert ? &m_expert : &m_dense;
}

std::vector<torch::Tensor> Fsdp::shards(bool decay) const
{
    std::vector<torch::Tensor> out;
    for (const auto& p : m_params)
        if (p.decay == decay)
            out.push_back(p.shard);
    return out;
}

// Issues the unit's all-gathers (one per group), or with `wait` also completes them.
void Fsdp::gatherUnit(size_t u, bool wait)
{
    Unit& unit = m_units[u];
    if (!unit.gathered && unit.pending.empty()) {
        for (ProcessGroup* group : groups()) {
            Gather g;
            g.group = group;
            std::vector<torch::Tensor> pieces;
            for (size_t i : unit.params)
                if (groupOf(m_params[i]) == group) {
                    g.params.push_back(i);
                    pieces.push_back(m_params[i].shard.detach());
                }
            if (g.params.empty())
                continue;
            auto send = torch::cat(pieces);
            g.out = torch::empty({send.numel() * group->size()}, send.options());
            g.work = group->allgatherAsync(g.out, send);
            unit.pending.push_back(std::move(g));
        }
        if (u != 0 && !unit.pending.empty())
            ++m_layerGathers;
    }
    if (wait && !unit.gathered)
        completeGather(u);
}

void Fsdp::completeGather(size_t u)
{
    torch::NoGradGuard noGrad;
    Unit& unit = m_units[u];
    for (Gather& g : unit.pending) {
        g.work->wait();
        const int64_t width = g.out.numel() / g.group->size();
        auto rows = g.out.view({g.group->size(), width});
        int64_t offset = 0;
        for (size_t i : g.params) {
            Param& p = m_params[i];
            auto full = rows.narrow(1, offset, p.chunk).reshape({-1}).narrow(0, 0, p.numel).view(p.param.sizes());
            offset += p.chunk;
            if (p.freeable) {
                auto fresh = torch::empty(p.param.sizes(), p.param.options());
                fresh.copy_(full);
                adoptStorage(p.param, fresh);
            } else {
                p.param.copy_(full);
            }
        }
    }
    unit.pending.clear();
    unit.gathered = true;
}

void Fsdp::releaseUnit(size_t u)
{
    Unit& unit = m_units[u];
    if (!unit.gathered)
        return;
    bool any = false;
    for (size_t i : unit.params)
        if (m_params[i].freeable) {
            releaseStorage(m_params[i].param);
            any = true;
        }
    unit.gathered = !any;
}

// Reduce-scatters the unit's gradients into the shards' gradients and frees the full ones.
void Fsdp::reduceUnit(size_t u)
{
    torch::NoGradGuard noGrad;
    Unit& unit = m_units[u];
    if (unit.reduced)
        return;
    unit.reduced = true;
    const bool bf16 = m_reduceDtype == torch::kBFloat16;
    const bool emulateBf16 = bf16 && !m_params.empty() && !m_params.front().shard.is_cuda();  // Gloo: no bf16
    const torch::ScalarType wire = bf16 && !emulateBf16 ? torch::kBFloat16 : torch::kFloat32;
    for (ProcessGroup* group : groups()) {
        const int64_t n = group->size();
        std::vector<size_t> members;
        std::vector<torch::Tensor> columns;
        for (size_t i : unit.params) {
            Param& p = m_params[i];
            if (groupOf(p) != group)
                continue;
            members.push_back(i);
            const torch::Tensor g = p.param.grad();
            p.seen = p.seen || g.defined();
            auto flat = g.defined() ? g.reshape({-1}).to(wire) : torch::zeros({p.numel}, p.shard.options().dtype(wire));
            columns.push_back(torch::constant_pad_nd(flat, {0, n * p.chunk - p.numel}).view({n, p.chunk}));
            p.param.mutable_grad() = torch::Tensor();
        }
        if (members.empty())
            continue;
        auto input = torch::cat(columns, 1).reshape({-1});
        if (emulateBf16)  // the values a bf16 reduce-scatter sends, summed in fp32 (exact for 2 ranks)
            input = input.to(torch::kBFloat16).to(torch::kFloat32);
        auto output = torch::empty({input.numel() / n}, input.options());
        group->reduceScatter(output, input);
        if (emulateBf16)  // ... and the bf16 sum it returns
            output = output.to(torch::kBFloat16).to(torch::kFloat32);
        if (output.scalar_type() != torch::kFloat32)
            output = output.to(torch::kFloat32);
        int64_t offset = 0;
        for (size_t i : members) {
            Param& p = m_params[i];
            auto piece = output.narrow(0, offset, p.chunk);
            offset += p.chunk;
            if (p.shard.grad().defined())
                p.shard.mutable_grad().add_(piece);
            else
                p.shard.mutable_grad() = piece.clone();  // fp32: `output` is (converted above)
        }
    }
}

std::vector<torch::Tensor> Fsdp::run(const LayerKey& key, const LayerFn& fn, const std::vector<torch::Tensor>& inputs)
{
    const auto it = m_unitOf.find(key.module);
    if (m_strategy != ShardingStrategy::OptimGradsParams || it == m_unitOf.end() ||
        (m_visionUpFront && m_units[it->second].stack == "vision"))
        return runLayer(m_inner, key, fn, inputs);
    const size_t u = it->second;
    gatherUnit(u, true);
    // Prefetch: the next layer of the same stack is gathered while this one computes.
    if (u + 1 < m_units.size() && m_units[u + 1].stack == m_units[u].stack && key.index + 1 < key.count)
        gatherUnit(u + 1, false);
    const bool hooks = torch::GradMode::is_enabled();
    const auto in = hooks && anyRequiresGrad(inputs) ? withBackwardHook(inputs, this, unitTag(u, false)) : inputs;
    std::vector<torch::Tensor> outputs;
    {
        // CUDA autocast caches a bf16 copy of every fp32 leaf weight until the micro-batch's
        // autocast scope ends: that would keep every layer (in bf16) alive after its release.
        const bool cache = at::autocast::is_autocast_cache_enabled();
        at::autocast::set_autocast_cache_enabled(false);
        try {
            outputs = runLayer(m_inner, key, fn, in);
        } catch (...) {
            at::autocast::set_autocast_cache_enabled(cache);
            throw;
        }
        at::autocast::set_autocast_cache_enabled(cache);
    }
    const bool backwardComes = hooks && anyRequiresGrad(outputs);
    // Kept gathered until its backward (reshard_after_forward false): afterUnitBackward, or at the
    // latest afterBackward(), frees it.
    if (m_reshardAfterForward || !backwardComes)
        releaseUnit(u);
    if (backwardComes)
        outputs = withBackwardHook(outputs, this, unitTag(u, true));
    return outputs;
}

void Fsdp::onBackward(int64_t tag)
{
    const auto unit = static_cast<size_t>(tag >> 1);
    if (tag & 1)
        beforeUnitBackward(unit);
    else
        afterUnitBackward(unit);
}

void Fsdp::beforeUnitBackward(size_t u)
{
    gatherUnit(u, true);
    if (u > 1 && m_units[u - 1].stack == m_units[u].stack)
        gatherUnit(u - 1, false);  // prefetch the layer whose backward comes next
}

void Fsdp::afterUnitBackward(size_t u)
{
    reduceUnit(u);
    releaseUnit(u);
}

void Fsdp::beginMicroBatch(bool hasImages)
{
    m_visionUpFront = false;
    if (m_strategy != ShardingStrategy::OptimGradsParams)
        return;
    bool anyVision = false;
    for (const auto& unit : m_units)
        anyVision = anyVision || unit.stack == "vision";
    if (!anyVision || m_dense.size() == 1)
        return;
    // A rank without images skips the vision encoder; if others run it, their per-layer gathers
    // would find no partner. Then every rank gathers the vision units now, together.
    std::vector<torch::Tensor> count{torch::full({1}, hasImages ? 1.0f : 0.0f,
                                                 m_params.empty() ? torch::TensorOptions() : m_params[0].shard.options())};
    m_dense.allreduce(count, ReduceOp::Sum);
    const float withImages = count[0].item<float>();
    if (withImages > 0.0f && withImages < static_cast<float>(m_dense.size())) {
        m_visionUpFront = true;
        for (size_t u = 1; u < m_units.size(); ++u)
            if (m_units[u].stack == "vision")
                gatherUnit(u, true);
    }
}

void Fsdp::afterBackward()
{
    ++m_microBatches;
    if (m_strategy == ShardingStrategy::Optim)
        return;
    for (size_t u = 0; u < m_units.size(); ++u) {
        reduceUnit(u);
        if (m_strategy == ShardingStrategy::OptimGradsParams && u != 0)
            releaseUnit(u);
    }
    for (auto& unit : m_units)
        unit.reduced = false;
    m_visionUpFront = false;
}

std::string Fsdp::summary() const
{
    std::string s = "FSDP " + shardingStrategyName(m_strategy) + ": ";
    if (m_strategy == ShardingStrategy::OptimGradsParams)
        s += std::to_string(m_layerGathers) + " all-gathers of " + std::to_string(m_units.size() - 1) + " layers in " +
             std::to_string(m_microBatches) + " micro-batches (reshard after forward: " +
             (m_reshardAfterForward ? "yes" : "no") + "), ";
    return s + "gradients reduce-scattered in " + (m_reduceDtype == torch::kBFloat16 ? "bf16" : "fp32");
}

void Fsdp::finishGradients()
{
    torch::NoGradGuard noGrad;
    if (m_strategy == ShardingStrategy::Optim) {
        for (size_t u = 0; u < m_units.size(); ++u)
            reduceUnit(u);
        for (auto& unit : m_units)
            unit.reduced = false;
    }
    if (m_params.empty())
        return;
    // A gradient that no rank produced stays undefined, so AdamW skips it as on one rank.
    // Parameter i is the same tensor of the model on every rank of m_world (an expert slice: the
    // same layer's slice; a TP slice: the same module's slice), so one max over the world decides
    // for all copies at once: under TP with SP an expert may get tokens on one TP rank only.
    auto present = torch::zeros({static_cast<int64_t>(m_params.size())}, torch::kFloat32);
    for (size_t i = 0; i < m_params.size(); ++i)
        present[static_cast<int64_t>(i)] = m_params[i].seen ? 1.0f : 0.0f;
    std::vector<torch::Tensor> presence{present.to(m_params[0].shard.device())};
    m_world.allreduce(presence, ReduceOp::Max);
    present = presence[0].cpu();
    for (size_t i = 0; i < m_params.size(); ++i) {
        Param& p = m_params[i];
        p.seen = false;
        if (present[static_cast<int64_t>(i)].item<float>() == 0.0f)
            p.shard.mutable_grad() = torch::Tensor();
        else if (p.shard.grad().defined())
            p.shard.mutable_grad().mul_(1.0 / (p.expert ? m_expertGradDivisor : m_gradDivisor));
    }
}

torch::Tensor Fsdp::gradNormSquared(ProcessGroup& world, const std::function<int(const torch::Tensor&)>& copiesOf)
{
    torch::NoGradGuard noGrad;
    auto options = m_params.empty() ? torch::TensorOptions().dtype(torch::kFloat32)
                                    : m_params[0].shard.options().requires_grad(false);
    auto total = torch::zeros({1}, options);
    for (const auto& p : m_params) {
        if (!p.shard.grad().defined())
            continue;
        auto square = p.shard.grad().pow(2).sum();
        // The shard group's ranks each hold a different part; the other copies of the whole
        // gradient (copiesOf / group size of them, e.g. the TP ranks of a replicated norm) hold
        // the same parts again.
        const int copies = copiesOf ? copiesOf(p.param) / groupOf(p)->size() : 1;
        total += copies > 1 ? square / static_cast<double>(copies) : square;
    }
    std::vector<torch::Tensor> sum{total};
    world.allreduce(sum, ReduceOp::Sum);
    return sum[0].squeeze();
}

void Fsdp::afterOptimizerStep()
{
    for (size_t u = 0; u < m_units.size(); ++u) {
        if (m_strategy == ShardingStrategy::OptimGradsParams && u != 0)
            continue;  // gathered when next needed
        m_units[u].gathered = false;  // the shards changed: the whole parameters are stale
        gatherUnit(u, true);
    }
}

torch::Tensor Fsdp::shardOf(const torch::Tensor& param) const
{
    for (const auto& p : m_params)
        if (p.param.unsafeGetTensorImpl() == param.unsafeGetTensorImpl())
            return p.shard;
    return {};
}

ShardedBytes Fsdp::bytes(int64_t momentBytesPerValue) const
{
    ShardedBytes b;
    for (const auto& p : m_model.parameters())
        b.parameters += tensorBytes(p);
    for (const auto& p : m_params) {
        const int64_t shard = tensorBytes(p.shard);
        if (p.freeable)
            b.parameters -= tensorBytes(p.param);  // only gathered around its layer
        b.parameters += shard;                   // the fp32 shard the optimizer updates
        b.gradients += shard + (m_strategy == ShardingStrategy::Optim ? tensorBytes(p.param) : 0);
        b.optimizerState += p.shard.numel() * momentBytesPerValue;  // AdamW exp_avg, exp_avg_sq
    }
    return b;
}

}  // namespace wb::rt
