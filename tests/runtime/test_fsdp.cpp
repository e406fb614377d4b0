// FSDP's layer runner on one rank (no network): ZeRO-3 frees a layer's parameter memory after its
// forward and gathers it again for its backward; the shards' gradients equal the gradients of the
// same model run without FSDP; and an inner runner that recomputes the layer in backward (as
// activation recompute does) runs inside the gather, once in forward and once in backward.
// Plain executable, label unit.
#include "check.h"

#include "runtime/parallel/fsdp.h"

// One suite of test_runtime_suites (runtime_suites.cpp runs it by name).
namespace wb::test::suite_fsdp {

namespace test = wb::test;
using namespace wb::rt;

namespace {

constexpr int kLayers = 3;
constexpr int kWidth = 8;

// A root parameter ("head") and decoder.layers.N, named as in the VLM so FSDP finds the units.
struct ToyDecoderImpl : torch::nn::Module {
    ToyDecoderImpl()
    {
        layers = register_module("layers", torch::nn::ModuleList());
        for (int i = 0; i < kLayers; ++i)
            layers->push_back(torch::nn::Linear(kWidth, kWidth));
    }
    torch::nn::ModuleList layers{nullptr};
};
TORCH_MODULE(ToyDecoder);

struct ToyModelImpl : torch::nn::Module {
    ToyModelImpl()
    {
        head = register_module("head", torch::nn::Linear(kWidth, 1));
        decoder = register_module("decoder", ToyDecoder());
    }
    torch::Tensor forward(const torch::Tensor& x, LayerRunner* runner)
    {
        auto h = x;
        for (int i = 0; i < kLayers; ++i) {
            auto* layer = decoder->layers->ptr<torch::nn::LinearImpl>(i).get();
            const LayerFn fn = [layer](const std::vector<torch::Tensor>& in) {
                return std::vector<torch::Tensor>{torch::tanh(layer->forward(in[0]))};
            };
            h = runLayer(runner, {"decoder", i, kLayers, layer}, fn, {h})[0];
        }
        return head->forward(h).pow(2).sum();
    }
    torch::nn::Linear head{nullptr};
    ToyDecoder decoder{nullptr};
};
TORCH_MODULE(ToyModel);

// Minimal activation recompute: forward without a graph, backward re-runs the layer.
struct Recompute : torch::autograd::Function<Recompute> {
    static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, int64_t fn)
    {
        ctx->save_for_backward({x});
        ctx->saved_data["fn"] = fn;
        torch::NoGradGuard noGrad;
        return (*reinterpret_cast<LayerFn*>(fn))({x})[0];
    }
    static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx, torch::autograd::variable_list grads)
    {
        auto x = ctx->get_saved_variables()[0].detach().requires_grad_(true);
        torch::AutoGradMode grad(true);
        auto y = (*reinterpret_cast<LayerFn*>(ctx->saved_data["fn"].toInt()))({x})[0];
        y.backward(grads[0]);
        return {x.grad(), torch::Tensor()};
    }
};

// Checks that the layer's parameters have memory whenever the layer runs.
class RecomputeRunner : public LayerRunner {
public:
    std::vector<torch::Tensor> run(const LayerKey& key, const LayerFn& fn, const std::vector<torch::Tensor>& inputs) override
    {
        auto kept = std::make_shared<LayerFn>([this, key, fn](const std::vector<torch::Tensor>& in) {
            ++calls;
            for (const auto& p : key.module->parameters())
                if (p.storage().nbytes() == 0)
                    ++callsWithoutMemory;
            return fn(in);
        });
        m_kept.push_back(kept);  // the model's fn dies with the loop; backward needs it later
        return {Recompute::apply(inputs[0], reinterpret_cast<int64_t>(kept.get()))};
    }
    int calls = 0;
    int callsWithoutMemory = 0;

private:
    std::vector<std::shared_ptr<LayerFn>> m_kept;
};

int releasedLayerParameters(ToyModel& model)
{
    int released = 0;
    for (const auto& p : model->decoder->parameters())
        released += p.storage().nbytes() == 0 ? 1 : 0;
    return released;
}

void testZero3MatchesUnsharded(bool withRecompute)
{
    std::cerr << "ZeRO-3 " << (withRecompute ? "with" : "without") << " an inner recompute runner" << std::endl;
    torch::manual_seed(7);
    ToyModel reference;
    ToyModel sharded;
    {
        torch::NoGradGuard noGrad;
        auto from = reference->parameters(), to = sharded->parameters();
        for (size_t i = 0; i < from.size(); ++i)
            to[i].copy_(from[i]);
    }
    // The input needs a gradient: the recompute function's node (and FSDP's input hook) hang
    // off the tensors a layer gets, not off the parameters it captures.
    const auto x = torch::randn({5, kWidth}).requires_grad_(true);
    reference->forward(x, nullptr).backward();

    auto group = makeSingleProcessGroup();
    Fsdp fsdp(*sharded, ShardingStrategy::OptimGradsParams, *group, *group, nullptr, 1);
    RecomputeRunner inner;
    if (withRecompute)
        fsdp.setInner(&inner);
    WB_CHECK_MSG(releasedLayerParameters(sharded) == 2 * kLayers, "layers not freed after sharding");
    fsdp.beginMicroBatch(false);
    auto loss = sharded->forward(x, &fsdp);
    WB_CHECK_MSG(releasedLayerParameters(sharded) == 2 * kLayers, "layers not freed after forward");
    loss.backward();
    WB_CHECK_MSG(releasedLayerParameters(sharded) == 2 * kLayers, "layers not freed after backward");
    fsdp.afterBackward();
    fsdp.finishGradients();

    // One rank: each shard is the whole flattened parameter, in the model's parameter order.
    auto shards = fsdp.shards(true), noDecay = fsdp.shards(false);
    auto refParams = reference->parameters();
    std::vector<torch::Tensor> refDecay, refNoDecay;
    for (const auto& p : refParams)
        (p.dim() >= 2 ? refDecay : refNoDecay).push_back(p);
    WB_CHECK(shards.size() == refDecay.size() && noDecay.size() == refNoDecay.size());
    for (size_t i = 0; i < std::min(shards.size(), refDecay.size()); ++i)
        WB_CHECK_MSG(shards[i].grad().defined() && shards[i].grad().allclose(refDecay[i].grad().reshape({-1}), 1e-6, 1e-7),
                     "decay shard " << i);
    for (size_t i = 0; i < std::min(noDecay.size(), refNoDecay.size()); ++i)
        WB_CHECK_MSG(noDecay[i].grad().defined() && noDecay[i].grad().allclose(refNoDecay[i].grad().reshape({-1}), 1e-6, 1e-7),
                     "no-decay shard " << i);
    if (withRecompute) {
        WB_CHECK_MSG(inner.calls == 2 * kLayers, "inner runner ran " << inner.calls << " times");
        WB_CHECK_MSG(inner.callsWithoutMemory == 0, inner.callsWithoutMemory << " runs of a layer without its parameters");
    }
    const ShardedBytes bytes = fsdp.bytes();
    WB_CHECK(bytes.optimizerState > 0 && bytes.gradients > 0 && bytes.parameters > 0);
}

}  // namespace

int run(int, char**)
{
    testZero3MatchesUnsharded(false);
    testZero3MatchesUnsharded(true);
    return test::checkExitCode("test_runtime_fsdp");
}

}  // namespace wb::test::suite_fsdp
