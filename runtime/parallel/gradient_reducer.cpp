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
// Why a re-reduction instead of trusting one hook call per parameter: a parameter used by two
// autograd graphs in one backward (a recompute unit's inner backward and the outer graph, or two
// units) is accumulated twice, and the first call would launch its bucket too early. No parameter
// of this model is (each lives in one recompute unit), but a later model change must not silently
// average half a gradient: the late call is noticed, agreed over the ranks with the presence
// flags, and the bucket reduced again in finish() — correct, only not overlapped.
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
    explicit ReadyHook(std::function<void()> ready) : m_ready(std::move(ready)) {}
    variable_list operator()(const variable_list& outputs, const variable_list& /*inputs*/) override
    {
        m_ready();
        return outputs;
    }

private:
    std::function<void()> m_ready;
};

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
    : m_world(world)
{
    for (auto& p : parameters) {
        Param param;
        param.spec = std::move(p);
        m_params.push_back(std::move(param));
    }
    buildBuckets(bucketBytes);
    registerHooks();
    resetForNextStep();
}

GradientReducer::~GradientReducer()
{
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
        p.hookKey = p.accumulator->add_post_hook(std::make_unique<ReadyHook>([this, i] { onGradientReady(i); }));
    }
}

void GradientReducer::resetForNextStep()
{
    for (Param& p : m_params) {
        p.ready = false;
        p.late = false;
    }
    for (Bucket& b : m_buckets) {
        b.pending = b.members.size();
        b.launched = false;
        b.launchedInBackward = false;
        b.flat = torch::Tensor();
        b.work.reset();
    }
    for (Lane& lane : m_lanes)
        lane.next = 0;
}

void GradientReducer::arm()
{
    std::lock_guard<std::mutex> lock(m_mutex);
    m_armed = true;
}

void GradientReducer::onGradientReady(size_t index)
{
    std::lock_guard<std::mutex> lock(m_mutex);
    if (!m_armed)
        return;  // an earlier micro-batch: it only accumulates
    Param& p = m_params[index];
    Bucket& bucket = m_buckets[static_cast<size_t>(p.bucket)];
    if (p.ready) {
        p.late = p.late || bucket.launched;
        return;
    }
    p.ready = true;
    if (--bucket.pending == 0)
        launchInOrder(m_lanes[bucket.lane], /*inBackward=*/true, /*all=*/false);
}

void GradientReducer::launchInOrder(Lane& lane, bool inBackward, bool all)
{
    while (lane.next < lane.buckets.size()) {
        Bucket& b = m_buckets[lane.buckets[lane.next]];
        if (b.deferred || (!all && b.pending > 0))
            return;
        launch(b, inBackward);
        ++lane.next;
    }
}

// The flat copy is taken now, so backward may keep writing other gradients; this bucket's own
// are complete (its hooks fired) or, in finish(), final.
void GradientReducer::launch(Bucket& bucket, bool inBackward)
{
    torch::NoGradGuard noGrad;
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
        acc[i] = p.spec.parameter.grad().defined() ? 1.0f : 0.0f;
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

// A bucket launched with a gradient that was accumulated again afterwards: its first result is
// dropped and it goes out again, in bucket order, on every rank of its group (the flags are the
// same everywhere after the max-allreduce).
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
            launch(bucket, false);
            --m_stats.launchedAtFinish;  // counted once, as a re-reduction
            ++m_stats.reReduced;
        }
}

void GradientReducer::waitScaleCopyBack(Bucket& bucket, const std::vector<bool>& present)
{
    torch::NoGradGuard noGrad;
    bucket.work->wait();
    bucket.work.reset();
    bucket.flat.mul_(1.0 / bucket.divisor);  // as DataParallel::averageGradients: sum, then one scale
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
        if (present[i] && !p.grad().defined()) {
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
    char text[320];
    std::snprintf(text, sizeof text,
                  "gradient reduction overlapped with backward: %lld buckets per step over %zu groups; after %lld steps "
                  "%lld launched during backward, %lld after it, %lld reduced again; %lld gradients zero-filled, "
                  "%lld undefined on every rank",
                  static_cast<long long>(s.buckets), m_lanes.size(), static_cast<long long>(s.steps),
                  static_cast<long long>(s.launchedInBackward), static_cast<long long>(s.launchedAtFinish),
                  static_cast<long long>(s.reReduced), static_cast<long long>(s.zeroFilled),
                  static_cast<long long>(s.undefinedEverywhere));
    return text;
}

}  // namespace wb::rt
