// AdamW construction and the ATen step for moments stored below fp32 (see optimizer.h).
#include "runtime/train/optimizer.h"

#include <cmath>
#include <map>
#include <sstream>
#include <type_traits>

namespace wb::rt {

std::unique_ptr<torch::optim::AdamW> makeOptimizer(torch::nn::Module& model, const core::TrainConfig& t)
{
    std::vector<torch::Tensor> decay, noDecay;
    for (auto& p : model.parameters())
        if (p.requires_grad())
            (p.dim() >= 2 ? decay : noDecay).push_back(p);
    return makeOptimizer(decay, noDecay, t);
}

std::unique_ptr<torch::optim::AdamW> makeOptimizer(const std::vector<torch::Tensor>& decay,
                                                   const std::vector<torch::Tensor>& noDecay,
                                                   const core::TrainConfig& t)
{
    auto options = [&](double wd) {
        return std::make_unique<torch::optim::AdamWOptions>(
            torch::optim::AdamWOptions(t.lr).betas({t.adamBeta1, t.adamBeta2}).eps(t.adamEps).weight_decay(wd));
    };
    std::vector<torch::optim::OptimizerParamGroup> groups;
    groups.emplace_back(decay, options(t.weightDecay));
    groups.emplace_back(noDecay, options(0.0));
    return std::make_unique<torch::optim::AdamW>(groups, torch::optim::AdamWOptions(t.lr));
}

int64_t MomentDtypes::bytesPerValue() const
{
    return static_cast<int64_t>(c10::elementSize(expAvg) + c10::elementSize(expAvgSq));
}

MomentDtypes momentDtypes(const core::TrainConfig& train)
{
    const auto type = [](const std::string& name) { return name == "bf16" ? torch::kBFloat16 : torch::kFloat32; };
    return {type(train.expAvgDtype), type(train.expAvgSqDtype)};
}

std::string dtypeName(torch::ScalarType type)
{
    if (type == torch::kFloat32)
        return "fp32";
    if (type == torch::kBFloat16)
        return "bf16";
    return c10::toString(type);
}

namespace {

// The optimizer's state map is keyed by a string of the TensorImpl address in LibTorch 1.x and by
// the address itself in 2.x: build whichever this LibTorch uses, as AdamW::step does.
template <typename Map>
typename Map::key_type stateKey(const Map&, const torch::Tensor& p)
{
    using Key = typename Map::key_type;
    if constexpr (std::is_same_v<Key, std::string>) {
        std::ostringstream text;  // what 1.x's c10::guts::to_string wrote
        text << p.unsafeGetTensorImpl();
        return text.str();
    } else
        return static_cast<Key>(p.unsafeGetTensorImpl());
}

}  // namespace

torch::optim::AdamWParamState& adamWState(torch::optim::AdamW& optimizer, const torch::Tensor& p,
                                          const MomentDtypes& dtypes)
{
    auto& state = optimizer.state();
    auto key = stateKey(state, p);
    auto found = state.find(key);
    if (found == state.end()) {
        auto fresh = std::make_unique<torch::optim::AdamWParamState>();
        fresh->step(0);
        fresh->exp_avg(torch::zeros_like(p, p.options().dtype(dtypes.expAvg), torch::MemoryFormat::Preserve));
        fresh->exp_avg_sq(torch::zeros_like(p, p.options().dtype(dtypes.expAvgSq), torch::MemoryFormat::Preserve));
        found = state.emplace(key, std::move(fresh)).first;
    }
    return static_cast<torch::optim::AdamWParamState&>(*found->second);
}

void adamWUpdateAten(const torch::Tensor& p, const torch::Tensor& g, const torch::Tensor& m, const torch::Tensor& v,
                     double lr, double beta1, double beta2, double eps, double weightDecay, int64_t step)
{
    torch::NoGradGuard noGrad;
    // fp32 working copies (for fp32 moments .to() returns the tensor itself and the update is in
    // place): the math never runs in bf16, so each step rounds the moments once, on store.
    torch::Tensor m32 = m.to(torch::kFloat32), v32 = v.to(torch::kFloat32);
    const torch::Tensor g32 = g.to(torch::kFloat32);
    p.mul_(1.0 - lr * weightDecay);
    m32.mul_(beta1).add_(g32, 1.0 - beta1);
    v32.mul_(beta2).addcmul_(g32, g32, 1.0 - beta2);
    const double biasCorrection1 = 1.0 - std::pow(beta1, static_cast<double>(step));
    const double biasCorrection2 = 1.0 - std::pow(beta2, static_cast<double>(step));
    const torch::Tensor denom = (v32.sqrt() / std::sqrt(biasCorrection2)).add_(eps);
    p.addcdiv_(m32, denom, -lr / biasCorrection1);
    // ATen's float → bfloat16 conversion rounds to nearest even (c10::BFloat16's constructor).
    m.copy_(m32);
    v.copy_(v32);
}

void adamWStepAten(torch::optim::AdamW& optimizer, const MomentDtypes& dtypes, const ParameterSubset* only)
{
    torch::NoGradGuard noGrad;
    for (auto& group : optimizer.param_groups()) {
        auto& options = static_cast<torch::optim::AdamWOptions&>(group.options());
        TORCH_CHECK(!options.amsgrad(), "adamWStepAten: amsgrad is not supported");
        for (auto& p : group.params()) {
            if (!p.grad().defined() || !inSubset(only, p))
                continue;
            auto& s = adamWState(optimizer, p, dtypes);
            s.step(s.step() + 1);
            adamWUpdateAten(p, p.grad(), s.exp_avg(), s.exp_avg_sq(), options.lr(), std::get<0>(options.betas()),
                            std::get<1>(options.betas()), options.eps(), options.weight_decay(), s.step());
        }
    }
}

std::string convertMoments(torch::optim::AdamW& optimizer, const MomentDtypes& dtypes)
{
    torch::NoGradGuard noGrad;
    std::map<std::string, int> changes;  // "bf16 → fp32" → tensors
    const auto convert = [&](const torch::Tensor& t, torch::ScalarType want, const char* what) {
        if (!t.defined() || t.scalar_type() == want)
            return t;
        ++changes[std::string(what) + " " + dtypeName(t.scalar_type()) + " → " + dtypeName(want)];
        return t.to(want);
    };
    for (auto& [key, state] : optimizer.state())
        if (auto* s = dynamic_cast<torch::optim::AdamWParamState*>(state.get())) {
            s->exp_avg(convert(s->exp_avg(), dtypes.expAvg, "exp_avg"));
            s->exp_avg_sq(convert(s->exp_avg_sq(), dtypes.expAvgSq, "exp_avg_sq"));
        }
    if (changes.empty())
        return "";
    std::string out = "the checkpoint's Adam moments are stored in another dtype than this run's train.exp_avg_dtype / "
                      "exp_avg_sq_dtype; converted:";
    for (const auto& [what, count] : changes)
        out += " " + what + " (" + std::to_string(count) + " tensors);";
    out.back() = '.';
    out += " bf16 → fp32 is exact; fp32 → bf16 rounds each moment to nearest even once.";
    return out;
}

}  // namespace wb::rt
