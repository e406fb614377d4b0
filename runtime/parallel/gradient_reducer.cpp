// Gradient buckets reduced while backward runs (see gradient_reducer.h).
//
// Why a post hook on the gradient accumulator (AccumulateGrad) and not a tensor hook: a tensor
// hook sees the incoming gradient before it is added to .grad, so with gradient accumulation the
// bucket would miss the earlier micro-batches' sum; the accumulator's post hook runs after .grad
// holds the whole step's gradient. LibTorch 1.13 and 2.x both have Node::add_post_hook with the
// same FunctionPostHook signature (2.x's register_post_accumulate_grad_hook is Python-facing and
// newer than 1.13), which is what c10d's Reducer uses.
//
// Why only in the last micro-batch: earlier backwards only accumulate; reducing them would move
// GBS/(MBS·DP) times the data (Megatron reduces only in the last too: no_sync for the others).
//
// Why late accumulations are watched instead of trusting one hook call per parameter: a parameter
// used by two autograd graphs in one backward (a recompute unit's inner backward and the outer
// graph, or two units) is accumulated twice, and the first call would launch its bucket too
// early. No parameter of this model is (each lives in one recompute unit), but a later model
// change must not silently average half a gradient, nor write into a buffer an allreduce is
// reading: a pre hook on the accumulator notices the late call before it accumulates and sends it
// to a tensor of its own; the late parts are agreed over the ranks with the presence flags,
// reduced in finish() and added, and the bucket is launched only in finish() from then on —
// correct, only not overlapped.
#include "runtime/parallel/gradient_reducer.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>

namespace wb::rt {

namespace {

using torch::autograd::variable_list;

// Calls back after the accumulator has added the incoming gradient to .grad.
class ReadyHook final : public torch::autograd::FunctionPostHook {
public:
    explicit ReadyHook(std::function<void(bool)> ready) : m_ready(std::move(ready)) {}
    // `inputs`: the gradient the accumulator received (undefined ones are not accumulated).
    variable_list operator()(const variable_list& outputs, const variable_list& inputs) override
    {
        m_ready(!inputs.empty() && inputs[0].defined());
        return outputs;
    }

private:
    std::function<void(bool)> m_ready;
};

// Calls back before the accumulator adds the incoming gradient to .grad.
class AccumulateHook final : public torch::autograd::FunctionPreHook {
public:
    explicit AccumulateHook(std::function<void()> before) : m_before(std::move(before)) {}
    variable_list operator()(const variable_list& grads) override
    {
        m_before();
        return grads;
    }

private:
    std::function<void()> m_before;
};

// `flat`'s elements from `offset` on, shaped `sizes` (contiguous), sharing its storage. Not
// flat.narrow().view(): that is an autograd view, and LibTorch 1.13's Optimizer::zero_grad calls
// detach_() on every gradient, which throws for views (c10d's gradient_as_bucket_view hits the
// same; its Python zero_grad works around it). A tensor set_ onto the storage is a plain tensor.
torch::Tensor sliceOf(const torch::Tensor& flat, int64_t offset, c10::IntArrayRef sizes)
{
    std::vector<int64_t> strides(sizes.size(), 1);
    for (size_t d = sizes.size(); d-- > 1;)
        strides[d - 1] = strides[d] * std::max<int64_t>(sizes[d], 1);
    torch::NoGradGuard noGrad;
    return torch::empty({0}, flat.options()).set_(flat.storage(), flat.storage_offset() + offset, sizes, strides);
}

bool reduces(const ReducedParameter& p)
{
    return p.group != nullptr && p.group->size() > 1 && p.parameter.requires_grad() && p.parameter.numel() > 0;
}

}  // namespace

std::size_t gradientBucketBytes()
{
    const char* v = std::getenv("WB_GRAD_BUCKET_MB");
    const double mib = v && *v ? std::atof(v) : 25.0;
    return static_cast<std::size_t>(std::max(1.0, (mib > 0.0 ? mib : 25.0) * 1024.0 * 1024.0));
}

GradientReducer::GradientReducer(ProcessGroup& world, std::vector<ReducedParameter> parameters, std::size_t bucketBytes)
    : m_world(world), m_self(std::make_shared<GradientReducer*>(this))
{
    for (auto& p : parameters) {
        Param param;
        param.spec = std::move(p);
        m_params.push_back(std::move(param));
    }
    buildBuckets(bucketBytes);
    registerHooks();
    resetForNextStep();
    zeroGradients();
}

GradientReducer::~GradientReducer()
{
    *m_self = nullptr;
    for (Param& p : m_params)
        if (p.accumulator)
            p.accumulator->del_post_hook(p.hookKey);
}

// Lanes in the order their groups first appear; inside a lane the parameters in reverse order,
// the deferred ones after all others (so waiting for them never holds back a hooked bucket). A
// bucket closes at bucketBytes or where dtype, device or divisor change.
void GradientReducer::buildBuckets(std::size_t bucketBytes)
{
    std::map<ProcessGroup*, size_t> laneOf;
    std::vector<std::vector<size_t>> order;
    for (size_t k = m_params.size(); k-- > 0;) {
        if (!reduces(m_params[k].spec))
            continue;
        auto [it, added] = laneOf.try_emplace(m_params[k].spec.group, m_lanes.size());
        if (added) {
            m_lanes.push_back(Lane{m_params[k].spec.group, {}, 0});
            order.emplace_back();
        }
        order[it->second].push_back(k);
    }
    for (size_t l = 0; l < m_lanes.size(); ++l) {
        std::stable_partition(order[l].begin(), order[l].end(), [&](size_t i) { return !m_params[i].spec.deferred; });
        std::size_t bytes = 0;
        for (size_t i : order[l]) {
            const ReducedParameter& spec = m_params[i].spec;
            const torch::Tensor& t = spec.parameter;
            Bucket* last = m_lanes[l].buckets.empty() ? nullptr : &m_buckets[m_lanes[l].buckets.back()];
            if (!last || bytes >= bucketBytes || last->deferred != spec.deferred || last->divisor != spec.divisor ||
                m_params[last->members[0]].spec.parameter.scalar_type() != t.scalar_type() ||
                m_params[last->members[0]].spec.parameter.device() != t.device()) {
                Bucket b;
                b.group = spec.group;
                b.lane = l;
                b.divisor = spec.divisor;
                b.deferred = spec.deferred;
                m_lanes[l].buckets.push_back(m_buckets.size());
                m_buckets.push_back(std::move(b));
                last = &m_buckets.back();
                bytes = 0;
            }
            m_params[i].bucket = static_cast<int>(m_lanes[l].buckets.back());
            m_params[i].offset = last->numel;
            last->members.push_back(i);
            last->numel += t.numel();
            bytes += static_cast<std::size_t>(t.numel() * t.element_size());
        }
    }
    m_stats.buckets = static_cast<int64_t>(m_buckets.size());
    // The gradients' buffers, once: a bucket's members share dtype and device.
    for (Bucket& b : m_buckets) {
        if (b.deferred)
            continue;
        const torch::Tensor& first = m_params[b.members[0]].spec.parameter;
        b.flat = torch::zeros({b.numel}, first.options().requires_grad(false));
        m_stats.bufferBytes += b.numel * static_cast<int64_t>(b.flat.element_size());
        for (size_t i : b.members) {
            Param& p = m_params[i];
            p.view = sliceOf(b.flat, p.offset, p.spec.parameter.sizes());
        }
    }
}

// Deferred parameters get no hook: they wait for finish() anyway.
void GradientReducer::registerHooks()
{
    for (size_t i = 0; i < m_params.size(); ++i) {
        Param& p = m_params[i];
        if (p.bucket < 0 || p.spec.deferred)
            continue;
        p.accumulator = torch::autograd::impl::grad_accumulator(p.spec.parameter);
        TORCH_CHECK(p.accumulator, "gradient reducer: parameter ", i, " has no gradient accumulator (not a leaf?)");
        std::shared_ptr<GradientReducer*> self = m_self;
        p.hookKey = p.accumulator->add_post_hook(std::make_unique<ReadyHook>([self, i](bool received) {
            if (GradientReducer* r = *self)
                r->onGradientReady(i, received);
        }));
        p.accumulator->add_pre_hook(std::make_unique<AccumulateHook>([self, i] {
            if (GradientReducer* r = *self)
                r->beforeAccumulation(i);
        }));
    }
}

void GradientReducer::resetForNextStep()
{
    for (Param& p : m_params) {
        p.ready = false;
        p.touched = false;
        p.late = false;
    }
    for (Bucket& b : m_buckets) {
        b.pending = b.members.size();
        b.launched = false;
        b.launchedInBackward = false;
        if (b.deferred)
            b.flat = torch::Tensor();  // a copy, this step's only
        b.work.reset();
    }
    for (Lane& lane : m_lanes)
        lane.next = 0;
}

bool GradientReducer::isView(const Param& p) const
{
    const torch::Tensor& g = p.spec.parameter.grad();
    return g.defined() && p.view.defined() && g.data_ptr() == p.view.data_ptr() && g.sizes() == p.view.sizes() &&
           g.strides() == p.view.strides();
}

// One zero_ per buffer; the views are only reattached where something dropped or replaced them.
void GradientReducer::zeroGradients()
{
    torch::NoGradGuard noGrad;
    std::lock_guard<std::mutex> lock(m_mutex);
    for (Bucket& b : m_buckets)
        if (!b.deferred)
            b.flat.zero_();
    for (Param& p : m_params) {
        if (!p.view.defined())
            continue;
        // The view stands for what the optimizer's zero_grad left: nothing (dropped, or undefined
        // since finish()), a zeroed gradient (1.13 keeps a defined one), or a gradient someone set.
        if (!p.spec.parameter.grad().defined())
            p.definedAtStart = false;
        else if (!isView(p))
            p.definedAtStart = true;
        if (!isView(p))
            p.spec.parameter.mutable_grad() = p.view;
    }
}

torch::Tensor GradientReducer::bucketBuffer(const torch::Tensor& parameter) const
{
    for (const Param& p : m_params)
        if (p.view.defined() && p.spec.parameter.unsafeGetTensorImpl() == parameter.unsafeGetTensorImpl())
            return m_buckets[static_cast<size_t>(p.bucket)].flat;
    return {};
}

void GradientReducer::arm()
{
    std::lock_guard<std::mutex> lock(m_mutex);
    m_armed = true;
}

// Only a bucket launched in this backward can be late; its allreduce is reading the buffer, so
// the gradient is pointed at nothing and autograd accumulates this call into a new tensor.
void GradientReducer::beforeAccumulation(size_t index)
{
    torch::NoGradGuard noGrad;
    std::lock_guard<std::mutex> lock(m_mutex);
    Param& p = m_params[index];
    if (!m_buckets[static_cast<size_t>(p.bucket)].launched)
        return;
    p.late = true;
    if (isView(p))
        p.spec.parameter.mutable_grad() = torch::Tensor();
}

void GradientReducer::onGradientReady(size_t index, bool received)
{
    std::lock_guard<std::mutex> lock(m_mutex);
    Param& p = m_params[index];
    p.touched = p.touched || received;
    if (!m_armed)
        return;  // an earlier micro-batch: it only accumulates
    Bucket& bucket = m_buckets[static_cast<size_t>(p.bucket)];
    if (p.ready || bucket.launched)
        return;  // accumulated again before its bucket went out (in place), or late (seen before)
    p.ready = true;
    if (--bucket.pending == 0)
        launchInOrder(m_lanes[bucket.lane], /*inBackward=*/true, /*all=*/false);
}

void GradientReducer::launchInOrder(Lane& lane, bool inBackward, bool all)
{
    while (lane.next < lane.buckets.size()) {
        Bucket& b = m_buckets[lane.buckets[lane.next]];
        if (b.deferred || (!all && (b.pending > 0 || b.finishOnly)))
            return;
        launch(b, inBackward);
        ++lane.next;
    }
}

// The allreduce runs in place on the buffer the gradients are views of; this bucket's gradients
// are complete (its hooks fired) or, in finish(), final. A gradient that is not its view
// (someone replaced .grad without zeroGradients()) is copied in first and replaced by the view.
// Deferred buckets: a flat copy, taken now.
void GradientReducer::launch(Bucket& bucket, bool inBackward)
{
    torch::NoGradGuard noGrad;
    if (!bucket.deferred) {
        for (size_t i : bucket.members) {
            Param& p = m_params[i];
            if (isView(p))
                continue;
            torch::Tensor g = p.spec.parameter.grad();
            TORCH_CHECK(!g.defined() || g.scalar_type() == p.spec.parameter.scalar_type(), "gradient reducer: a ",
                        g.scalar_type(), " gradient of a ", p.spec.parameter.scalar_type(), " parameter");
            if (g.defined())
                p.view.copy_(g);
            else
                p.view.zero_();
            p.spec.parameter.mutable_grad() = p.view;
            ++m_stats.copiedIn;
        }
        bucket.work = bucket.group->allreduceAsync({bucket.flat}, ReduceOp::Sum);
        bucket.launched = true;
        bucket.launchedInBackward = inBackward;
        ++(inBackward ? m_stats.launchedInBackward : m_stats.launchedAtFinish);
        return;
    }
    std::vector<torch::Tensor> pieces;
    pieces.reserve(bucket.members.size());
    for (size_t i : bucket.members) {
        const torch::Tensor& p = m_params[i].spec.parameter;
        const torch::Tensor& g = p.grad();
        TORCH_CHECK(!g.defined() || g.scalar_type() == p.scalar_type(), "gradient reducer: a ", g.scalar_type(),
                    " gradient of a ", p.scalar_type(), " parameter");
        pieces.push_back(g.defined() ? g.reshape({-1}) : torch::zeros({p.numel()}, p.options()));
    }
    bucket.flat = torch::cat(pieces);
    bucket.work = bucket.group->allreduceAsync({bucket.flat}, ReduceOp::Sum);
    bucket.launched = true;
    bucket.launchedInBackward = inBackward;
    ++(inBackward ? m_stats.launchedInBackward : m_stats.launchedAtFinish);
}

// One max-allreduce over the world of [defined here] and [hook fired late here] per parameter.
void GradientReducer::agreePresence(std::vector<bool>& present, std::vector<bool>& lateAnywhere)
{
    const int64_t n = static_cast<int64_t>(m_params.size());
    auto flags = torch::zeros({2 * n}, torch::kFloat32);
    auto acc = flags.accessor<float, 1>();
    for (int64_t i = 0; i < n; ++i) {
        const Param& p = m_params[static_cast<size_t>(i)];
        const bool here = p.view.defined() ? p.touched || p.definedAtStart : p.spec.parameter.grad().defined();
        acc[i] = here ? 1.0f : 0.0f;
        acc[n + i] = p.late ? 1.0f : 0.0f;
    }
    if (m_world.size() > 1) {
        std::vector<torch::Tensor> t{n > 0 ? flags.to(m_params[0].spec.parameter.device()) : flags};
        m_world.allreduce(t, ReduceOp::Max);
        flags = t[0].cpu();
    }
    acc = flags.accessor<float, 1>();
    present.assign(static_cast<size_t>(n), false);
    lateAnywhere.assign(static_cast<size_t>(n), false);
    for (int64_t i = 0; i < n; ++i) {
        present[static_cast<size_t>(i)] = acc[i] > 0.0f;
        lateAnywhere[static_cast<size_t>(i)] = acc[n + i] > 0.0f;
    }
}

// A bucket with a gradient accumulated again after its launch (on any rank: the flags are the
// same everywhere after the max-allreduce): the late parts, which went to tensors of their own,
// are reduced in one more allreduce of the bucket's size (zeros where a rank has none), in bucket
// order on every rank of its group, and added to the first result; the gradients become their
// views again. From the next step on the bucket goes out only in finish().
void GradientReducer::reduceAgainWhereLate(const std::vector<bool>& lateAnywhere)
{
    for (Lane& lane : m_lanes)
        for (size_t b : lane.buckets) {
            Bucket& bucket = m_buckets[b];
            bool late = false;
            for (size_t i : bucket.members)
                late = late || lateAnywhere[i];
            if (!late || bucket.deferred)
                continue;
            bucket.work->wait();
            auto parts = torch::zeros_like(bucket.flat);
            for (size_t i : bucket.members) {
                Param& p = m_params[i];
                const torch::Tensor g = p.spec.parameter.grad();
                if (g.defined() && !isView(p))
                    parts.narrow(0, p.offset, g.numel()).copy_(g.reshape({-1}));
                p.spec.parameter.mutable_grad() = p.view;
            }
            std::vector<torch::Tensor> t{parts};
            bucket.group->allreduce(t, ReduceOp::Sum);
            bucket.flat.add_(t[0]);
            ++m_stats.reReduced;
            if (!bucket.finishOnly) {
                bucket.finishOnly = true;
                ++m_stats.finishOnlyBuckets;
            }
        }
}

// Each lane: its finish-only buckets after the others (the deferred ones stay last), the same
// order on every rank (finishOnly follows agreed flags).
void GradientReducer::moveFinishOnlyLast()
{
    for (Lane& lane : m_lanes)
        std::stable_sort(lane.buckets.begin(), lane.buckets.end(), [&](size_t x, size_t y) {
            auto rank = [&](size_t b) { return m_buckets[b].deferred ? 2 : m_buckets[b].finishOnly ? 1 : 0; };
            return rank(x) < rank(y);
        });
}

void GradientReducer::waitScaleCopyBack(Bucket& bucket, const std::vector<bool>& present)
{
    torch::NoGradGuard noGrad;
    bucket.work->wait();
    bucket.work.reset();
    bucket.flat.mul_(1.0 / bucket.divisor);  // as DataParallel::averageGradients: sum, then one scale
    if (!bucket.deferred) {  // the gradients are the buffer; one present nowhere is dropped until zeroGradients()
        for (size_t i : bucket.members) {
            m_params[i].definedAtStart = present[i];  // what the view stands for from now on
            if (!present[i])
                m_params[i].spec.parameter.mutable_grad() = torch::Tensor();
        }
        return;
    }
    for (size_t i : bucket.members) {
        if (!present[i])
            continue;  // undefined on every rank: stays undefined
        torch::Tensor g = m_params[i].spec.parameter.grad();
        g.copy_(bucket.flat.narrow(0, m_params[i].offset, g.numel()).view_as(g));
    }
    bucket.flat = torch::Tensor();
}

void GradientReducer::finish(const std::function<void()>& beforeDeferred)
{
    torch::NoGradGuard noGrad;
    std::lock_guard<std::mutex> lock(m_mutex);  // backward is over: no hook runs now
    m_armed = false;
    for (Lane& lane : m_lanes)
        launchInOrder(lane, /*inBackward=*/false, /*all=*/true);
    std::vector<bool> present, lateAnywhere;
    agreePresence(present, lateAnywhere);
    for (size_t i = 0; i < m_params.size(); ++i) {
        torch::Tensor p = m_params[i].spec.parameter;
        if (m_params[i].view.defined()) {  // bucketed: its zeros are already in the buffer
            const bool here = m_params[i].touched || m_params[i].definedAtStart;
            m_stats.zeroFilled += present[i] && !here ? 1 : 0;
            m_stats.undefinedEverywhere += present[i] ? 0 : 1;
        } else if (present[i] && !p.grad().defined()) {
            p.mutable_grad() = torch::zeros_like(p);  // the partial sums and copy-back need it here
            ++m_stats.zeroFilled;
        } else if (!present[i] && p.requires_grad()) {
            ++m_stats.undefinedEverywhere;
        }
    }
    reduceAgainWhereLate(lateAnywhere);
    if (beforeDeferred)
        beforeDeferred();
    for (Lane& lane : m_lanes)
        for (; lane.next < lane.buckets.size(); ++lane.next)
            launch(m_buckets[lane.buckets[lane.next]], false);
    for (Lane& lane : m_lanes)
        for (size_t b : lane.buckets)
            waitScaleCopyBack(m_buckets[b], present);
    // Groups of one rank (e.g. the expert-data-parallel group of EP = world): nothing to sum, only
    // the divisor, as DataParallel does it (a division, not a multiplication by the reciprocal).
    for (size_t i = 0; i < m_params.size(); ++i) {
        const ReducedParameter& spec = m_params[i].spec;
        if (m_params[i].bucket < 0 && spec.group && present[i] && spec.divisor != 1 && spec.parameter.grad().defined())
            spec.parameter.grad().div_(spec.divisor);
    }
    ++m_stats.steps;
    moveFinishOnlyLast();
    resetForNextStep();
}

GradientReducerStats GradientReducer::stats() const
{
    std::lock_guard<std::mutex> lock(m_mutex);
    return m_stats;
}

std::string GradientReducer::summary() const
{
    const GradientReducerStats s = stats();
    char text[480];
    std::snprintf(text, sizeof text,
                  "gradient reduction overlapped with backward: %lld buckets per step over %zu groups; after %lld steps "
                  "%lld launched during backward, %lld after it, %lld reduced again; %lld gradients zero-filled, "
                  "%lld undefined on every rank; %lld finish-only, %lld copied in; gradients are views of %.2f MiB of buffers",
                  static_cast<long long>(s.buckets), m_lanes.size(), static_cast<long long>(s.steps),
                  static_cast<long long>(s.launchedInBackward), static_cast<long long>(s.launchedAtFinish),
                  static_cast<long long>(s.reReduced), static_cast<long long>(s.zeroFilled),
                  static_cast<long long>(s.undefinedEverywhere), static_cast<long long>(s.finishOnlyBuckets),
                  static_cast<long long>(s.copiedIn), static_cast<double>(s.bufferBytes) / (1024.0 * 1024.0));
    return text;
}

}  // namespace wb::rt
