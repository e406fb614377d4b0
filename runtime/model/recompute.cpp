// Activation recompute primitives (see recompute.h).
#include "runtime/model/recompute.h"

#include "runtime/model/torch_compat.h"

#include <ATen/CPUGeneratorImpl.h>
#if WB_WITH_CUDA
#include <ATen/autocast_mode.h>
#include <ATen/cuda/CUDAGeneratorImpl.h>
#endif

#include <atomic>

namespace wb::rt {

namespace {

thread_local SelectiveRecompute tlsSelective;
std::atomic<int64_t> unitsCreated{0};
std::atomic<int64_t> unitsRecomputed{0};

// What the backward needs besides the saved inputs: the function and the forward's autocast state.
struct RecomputeUnit : torch::CustomClassHolder {
    LayerFn fn;
    bool autocast = false;
    at::ScalarType autocastDtype = at::kBFloat16;
};

struct AutocastState {
    bool enabled = false;
    at::ScalarType dtype = at::kBFloat16;
};

AutocastState currentAutocast()
{
    AutocastState s;
#if WB_WITH_CUDA && WB_TORCH_AT_LEAST(2, 4)
    s.enabled = at::autocast::is_autocast_enabled(at::kCUDA);
    s.dtype = at::autocast::get_autocast_dtype(at::kCUDA);
#endif
    return s;
}

// Re-applies the forward's autocast state around the recomputation (RAII). The backward runs on
// an autograd thread (CUDA) or after the trainer's scope closed (CPU): either way not under it.
class AutocastRestore {
public:
    explicit AutocastRestore(const RecomputeUnit& unit) : m_previous(currentAutocast())
    {
#if WB_WITH_CUDA && WB_TORCH_AT_LEAST(2, 4)
        at::autocast::set_autocast_dtype(at::kCUDA, unit.autocastDtype);
        at::autocast::set_autocast_enabled(at::kCUDA, unit.autocast);
#else
        (void)unit;
#endif
    }
    ~AutocastRestore()
    {
#if WB_WITH_CUDA && WB_TORCH_AT_LEAST(2, 4)
        at::autocast::set_autocast_enabled(at::kCUDA, m_previous.enabled);
        at::autocast::set_autocast_dtype(at::kCUDA, m_previous.dtype);
        if (!m_previous.enabled)
            at::autocast::clear_cache();  // the bf16 weight copies made for the recomputation
#endif
    }
    AutocastRestore(const AutocastRestore&) = delete;
    AutocastRestore& operator=(const AutocastRestore&) = delete;

private:
    AutocastState m_previous;
};

// Snapshot of the default generators' states, to assert that a recomputed function draws no
// random numbers (recompute.h: RNG).
struct RngSnapshot {
    torch::Tensor cpu;
    torch::Tensor cuda;
};

RngSnapshot rngSnapshot(const std::vector<torch::Tensor>& inputs)
{
    RngSnapshot s;
    s.cpu = at::detail::getDefaultCPUGenerator().get_state();
#if WB_WITH_CUDA
    for (const auto& t : inputs)
        if (t.defined() && t.is_cuda()) {
            s.cuda = at::cuda::detail::getDefaultCUDAGenerator(t.device().index()).get_state();
            break;
        }
#else
    (void)inputs;
#endif
    return s;
}

bool sameState(const torch::Tensor& a, const torch::Tensor& b)
{
    return a.defined() == b.defined() && (!a.defined() || torch::equal(a, b));
}

class CheckpointFunction : public torch::autograd::Function<CheckpointFunction> {
public:
    static torch::autograd::variable_list forward(torch::autograd::AutogradContext* ctx,
                                                  c10::intrusive_ptr<RecomputeUnit> unit, at::TensorList inputs)
    {
        torch::NoGradGuard noGrad;  // Function::apply already disables grad; said here for the reader
        std::vector<torch::Tensor> in(inputs.begin(), inputs.end());
        const RngSnapshot before = rngSnapshot(in);
        std::vector<torch::Tensor> outputs = unit->fn(in);
        const RngSnapshot after = rngSnapshot(in);
        TORCH_CHECK(sameState(before.cpu, after.cpu) && sameState(before.cuda, after.cuda),
                    "a recomputed layer drew random numbers (dropout?): activation recompute in moe-train "
                    "does not save and restore RNG state, so the recomputation would differ; remove the "
                    "random op or turn recompute off");
        ctx->save_for_backward(in);
        ctx->saved_data["unit"] = c10::IValue::make_capsule(unit);
        ++unitsCreated;
        return outputs;
    }

    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                   torch::autograd::variable_list gradOutputs)
    {
        auto unit = c10::static_intrusive_pointer_cast<RecomputeUnit>(ctx->saved_data["unit"].toCapsule());
        const std::vector<torch::Tensor> saved = ctx->get_saved_variables();
        std::vector<torch::Tensor> detached;
        detached.reserve(saved.size());
        for (const auto& t : saved)
            detached.push_back(t.detach().requires_grad_(t.requires_grad()));
        std::vector<torch::Tensor> outputs;
        {
            torch::AutoGradMode gradOn(true);
            AutocastRestore autocast(*unit);
            outputs = unit->fn(detached);
        }
        ++unitsRecomputed;
        std::vector<torch::Tensor> roots, grads;
        for (size_t i = 0; i < outputs.size() && i < gradOutputs.size(); ++i)
            if (outputs[i].requires_grad() && gradOutputs[i].defined()) {
                roots.push_back(outputs[i]);
                grads.push_back(gradOutputs[i]);
            }
        if (!roots.empty())
            torch::autograd::backward(roots, grads);
        torch::autograd::variable_list result;
        result.reserve(detached.size() + 1);
        result.emplace_back();  // the unit: not a tensor
        for (const auto& t : detached)
            result.push_back(t.requires_grad() ? t.grad() : torch::Tensor());
        return result;
    }
};

}  // namespace

bool SelectiveRecompute::has(RecomputeModule m) const
{
    switch (m) {
    case RecomputeModule::CoreAttn: return coreAttn;
    case RecomputeModule::MoeAct: return moeAct;
    case RecomputeModule::LayerNorm: return layernorm;
    case RecomputeModule::Mlp: return mlp;
    case RecomputeModule::Moe: return moe;
    }
    return false;
}

SelectiveRecomputeScope::SelectiveRecomputeScope(const SelectiveRecompute& modules) : m_previous(tlsSelective)
{
    tlsSelective = modules;
}

SelectiveRecomputeScope::~SelectiveRecomputeScope()
{
    tlsSelective = m_previous;
}

const SelectiveRecompute& SelectiveRecomputeScope::current()
{
    return tlsSelective;
}

std::vector<torch::Tensor> checkpointed(const LayerFn& fn, const std::vector<torch::Tensor>& inputs)
{
    bool anyGrad = false;
    for (const auto& t : inputs)
        anyGrad = anyGrad || (t.defined() && t.requires_grad());
    // Without a gradient to carry there is nothing to save (frozen vision, evaluation): call it.
    if (!torch::GradMode::is_enabled() || !anyGrad)
        return fn(inputs);
    auto unit = c10::make_intrusive<RecomputeUnit>();
    unit->fn = fn;
    const AutocastState autocast = currentAutocast();
    unit->autocast = autocast.enabled;
    unit->autocastDtype = autocast.dtype;
    return CheckpointFunction::apply(unit, at::TensorList(inputs));
}

std::vector<torch::Tensor> maybeRecompute(RecomputeModule module, const LayerFn& fn,
                                          const std::vector<torch::Tensor>& inputs)
{
    return tlsSelective.has(module) ? checkpointed(fn, inputs) : fn(inputs);
}

torch::Tensor maybeRecompute(RecomputeModule module, const std::function<torch::Tensor(const torch::Tensor&)>& fn,
                             const torch::Tensor& input)
{
    if (!tlsSelective.has(module))
        return fn(input);
    const LayerFn wrapped = [fn](const std::vector<torch::Tensor>& x) { return std::vector<torch::Tensor>{fn(x[0])}; };
    return checkpointed(wrapped, {input})[0];
}

RecomputeCounters recomputeCounters()
{
    return {unitsCreated.load(), unitsRecomputed.load()};
}

}  // namespace wb::rt
