// Activation recompute (runtime/train/recompute_runner.h): every mode trains the tiny sample model
// to the same losses as no recompute over 5 steps (fp32, one thread: within 1e-5 relative; in
// practice bit-identical), keeps fewer bytes alive after the forward (counted by the runtime's
// counting CPU allocator: the tensors autograd saved), and recomputes in backward exactly the
// units it created. Config checks: modules this model lacks are config errors, unknown names too.
#include "check.h"
#include "tiny_run.h"

#include "runtime/model/recompute.h"
#include "runtime/train/runtime_checks.h"

// One suite of test_runtime_suites (runtime_suites.cpp runs it by name).
namespace wb::test::suite_recompute {

using namespace wb;

namespace {

core::RecomputeConfig full(const std::string& method, int n)
{
    core::RecomputeConfig r;
    r.granularity = "full";
    r.method = method;
    r.recomputeNumLayers = n;
    return r;
}

core::RecomputeConfig selective(std::vector<std::string> modules)
{
    core::RecomputeConfig r;
    r.granularity = "selective";
    r.modules = std::move(modules);
    return r;
}

void testModesMatchNone()
{
    const core::RunConfig c = test::sampleMockConfig();
    const auto batches = test::mockBatches(c, 5);
    const test::TinyRunResult none = test::trainTiny(c, {}, batches);
    std::cout << "mode                         held after fwd   step peak   (bytes of CPU tensors)\n";
    std::printf("%-28s %12lld %12lld\n", "none", static_cast<long long>(none.forwardHeldBytes),
                static_cast<long long>(none.stepPeakBytes));
    const std::pair<std::string, core::RecomputeConfig> modes[] = {
        {"full uniform 1", full("uniform", 1)},
        {"full uniform 2", full("uniform", 2)},
        {"full block 1", full("block", 1)},
        {"selective core_attn", selective({"core_attn"})},
        {"selective moe_act", selective({"moe_act"})},
        {"selective layernorm", selective({"layernorm"})},
        {"selective mlp", selective({"mlp"})},
        {"selective moe", selective({"moe"})},
        {"selective all five", selective({"core_attn", "moe_act", "layernorm", "mlp", "moe"})},
    };
    int64_t fullUniform = 0, fullBlock = 0;
    for (const auto& [name, r] : modes) {
        const auto before = rt::recomputeCounters();
        const test::TinyRunResult got = test::trainTiny(c, r, batches);
        const auto after = rt::recomputeCounters();
        std::printf("%-28s %12lld %12lld\n", name.c_str(), static_cast<long long>(got.forwardHeldBytes),
                    static_cast<long long>(got.stepPeakBytes));
        WB_CHECK_MSG(got.losses.size() == none.losses.size(), name);
        for (size_t i = 0; i < got.losses.size() && i < none.losses.size(); ++i)
            WB_CHECK_MSG(std::fabs(got.losses[i] - none.losses[i]) <= 1e-5 * std::fabs(none.losses[i]),
                         name << " step " << i + 1 << ": " << got.losses[i] << " vs " << none.losses[i]);
        WB_CHECK_MSG(got.forwardHeldBytes < none.forwardHeldBytes,
                     name << " keeps " << got.forwardHeldBytes << " bytes after the forward, none " << none.forwardHeldBytes);
        WB_CHECK_MSG(after.units > before.units, name << ": no recompute unit was created");
        WB_CHECK_MSG(after.units - before.units == after.recomputed - before.recomputed,
                     name << ": " << after.units - before.units << " units, " << after.recomputed - before.recomputed << " recomputed");
        if (name == "full uniform 1")
            fullUniform = got.forwardHeldBytes;
        if (name == "full block 1")
            fullBlock = got.forwardHeldBytes;
    }
    // Block 1 recomputes the first layer of each stack only: it keeps more than uniform.
    WB_CHECK_MSG(fullUniform < fullBlock, fullUniform << " vs " << fullBlock);
    std::cout << "losses (none): ";
    for (double l : none.losses)
        std::cout << l << " ";
    std::cout << std::endl;
}

// A recompute unit whose function draws random numbers is refused (no RNG replay).
void testRandomFunctionRefused()
{
    auto x = torch::randn({4, 4}, torch::requires_grad());
    const rt::LayerFn noisy = [](const std::vector<torch::Tensor>& in) {
        return std::vector<torch::Tensor>{in[0] * torch::rand_like(in[0])};
    };
    bool threw = false;
    try {
        rt::checkpointed(noisy, {x});
    } catch (const c10::Error& e) {
        threw = std::string(e.what()).find("random numbers") != std::string::npos;
    }
    WB_CHECK(threw);
    // Gradients through a unit equal the direct ones (inputs and captured-free parameters).
    auto w = torch::randn({4, 4}, torch::requires_grad());
    const rt::LayerFn f = [](const std::vector<torch::Tensor>& in) {
        return std::vector<torch::Tensor>{torch::tanh(in[0].matmul(in[1])).sum(), in[0].sin()};
    };
    auto direct = f({x, w});
    (direct[0] + direct[1].sum()).backward();
    auto gx = x.grad().clone(), gw = w.grad().clone();
    x.grad().zero_();
    w.grad().zero_();
    auto viaUnit = rt::checkpointed(f, {x, w});
    WB_CHECK(viaUnit[0].requires_grad() && viaUnit[0].grad_fn());
    (viaUnit[0] + viaUnit[1].sum()).backward();
    WB_CHECK(torch::equal(x.grad(), gx) && torch::equal(w.grad(), gw));
}

void testConfigChecks()
{
    core::RunConfig c = test::sampleMockConfig();
    c.recompute = selective({"core_attn", "shared_experts"});
    bool named = false;
    for (const auto& p : rt::allProblems(c, 1))
        named = named || (p.path == "recompute.modules" && p.message.find("shared_experts") != std::string::npos);
    WB_CHECK_MSG(named, "shared_experts must be a config error");
    c.recompute = selective({"core_attn", "moe_act", "layernorm", "mlp", "moe"});
    WB_CHECK(rt::allProblems(c, 1).empty());
    c.recompute = full("block", 2);
    WB_CHECK(rt::allProblems(c, 1).empty());
    // Unknown names are rejected by core's parser (choice list).
    const std::string text = test::readFile(std::string(WB_SOURCE_DIR) + "/resources/configs/sample-mock.json");
    std::string bad = text;
    bad.insert(bad.rfind('}'), ",\n  \"recompute\": {\"granularity\": \"selective\", \"modules\": [\"core_atn\"]}\n");
    const auto parsed = core::parseRunConfig(bad);
    bool rejected = false;
    for (const auto& p : parsed.problems)
        rejected = rejected || p.path.find("recompute.modules") != std::string::npos;
    WB_CHECK_MSG(rejected, "an unknown module name must be a config error");
}

}  // namespace

int run(int, char**)
{
    testRandomFunctionRefused();
    testConfigChecks();
    testModesMatchNone();
    return test::checkExitCode("test_runtime_recompute");
}

}  // namespace wb::test::suite_recompute
