// The router as one autograd node (router.h) and its graphed form (router_graphs.h), on the CPU:
//  - node vs the composed-ATen router under autograd (routeTopK): weights, ids, aux loss and the
//    gradients of x and W exactly equal on the CPU (fp64 and fp32; several T, E, K, D; with a
//    sequence-parallel share sum; an fp32 input with the fp64 router);
//  - node gradients vs central finite differences (fp64, tiny case);
//  - RouterGraphs with a capturer that records the body and re-runs it on replay (a stand-in for
//    a CUDA graph: same static buffers, same copies in and out, same padding and masking): equal
//    to the eager node for two T in one bucket and T in other buckets, one graph pair per bucket,
//    eager above the capacity, a weight update seen by the next replay, and two layers sharing
//    the graphs (forward, forward, backward, backward) equal to two eager layers;
//  - the config checks for cuda_graph on this build.
#include "check.h"
#include "moe_layers_step.h"

#include "core/run_config.h"
#include "runtime/model/cuda/cuda_graph.h"
#include "runtime/model/moe_layer.h"
#include "runtime/model/router.h"
#include "runtime/model/router_graphs.h"
#include "runtime/train/runtime_checks.h"

#include <torch/torch.h>

// One suite of test_runtime_suites (runtime_suites.cpp runs it by name).
namespace wb::test::suite_router {

using namespace wb;

namespace {

double relErr(const torch::Tensor& a, const torch::Tensor& ref)
{
    auto d = (a.to(torch::kFloat64) - ref.to(torch::kFloat64)).norm().item<double>();
    return d / std::max(ref.to(torch::kFloat64).norm().item<double>(), 1e-300);
}

// A recorded body re-run on replay: what a CUDA graph does to the same fixed buffers, minus the
// kernels' launch savings. Counts captures and replays so a test can tell graphs were used.
class ReplayCapturer : public rt::GraphCapturer {
public:
    struct Counts {
        int captures = 0;
        int replays = 0;
    };
    explicit ReplayCapturer(std::shared_ptr<Counts> counts) : m_counts(std::move(counts)) {}
    std::unique_ptr<rt::CapturedGraph> capture(const std::function<void()>& body) override
    {
        ++m_counts->captures;
        body();  // the warm-up run
        return std::make_unique<Graph>(body, m_counts);
    }
    std::string describe() const override { return "re-run bodies (CPU test)"; }

private:
    class Graph : public rt::CapturedGraph {
    public:
        Graph(std::function<void()> body, std::shared_ptr<Counts> counts) : m_body(std::move(body)), m_counts(std::move(counts)) {}
        void replay() override
        {
            ++m_counts->replays;
            m_body();
        }

    private:
        std::function<void()> m_body;
        std::shared_ptr<Counts> m_counts;
    };
    std::shared_ptr<Counts> m_counts;
};

struct RouterRun {
    rt::RouterOutput out;
    torch::Tensor dx, dW;
};

// Forward, then the gradients of Σ weights·u + 3·aux (both gradient paths of the node).
RouterRun runNode(const torch::Tensor& x0, const torch::Tensor& w0, int K, double coeff, torch::ScalarType dtype,
                  const torch::Tensor& u, const std::shared_ptr<rt::RouterGraphs>& graphs = nullptr,
                  const rt::ShareSum& share = {})
{
    auto x = x0.detach().clone().requires_grad_(true), w = w0.detach().clone().requires_grad_(true);
    RouterRun r;
    r.out = rt::routeTokens(x, w, K, coeff, dtype, share, graphs);
    auto loss = (r.out.weights_TK * u).sum() + 3.0 * r.out.auxLoss;
    auto g = torch::autograd::grad({loss}, {x, w});
    r.dx = g[0];
    r.dW = g[1];
    return r;
}

RouterRun runReference(const torch::Tensor& x0, const torch::Tensor& w0, int K, double coeff, torch::ScalarType dtype,
                       const torch::Tensor& u, const rt::ShareSum& share = {})
{
    auto x = x0.detach().clone().requires_grad_(true), w = w0.detach().clone().requires_grad_(true);
    RouterRun r;
    r.out = rt::routeTopK(torch::matmul(x.to(dtype), w.to(dtype).t()), K, coeff, dtype, share);
    auto loss = (r.out.weights_TK * u).sum() + 3.0 * r.out.auxLoss;
    auto g = torch::autograd::grad({loss}, {x, w});
    r.dx = g[0];
    r.dW = g[1];
    return r;
}

void expectSame(const RouterRun& a, const RouterRun& ref, double tol, const std::string& what)
{
    WB_CHECK_MSG(torch::equal(a.out.expertIds_TK, ref.out.expertIds_TK), what << ": expert ids differ");
    WB_CHECK_MSG(a.out.weights_TK.scalar_type() == torch::kFloat32, what << ": weights not fp32");
    WB_CHECK_MSG(relErr(a.out.weights_TK, ref.out.weights_TK) <= tol, what << ": weights rel err " << relErr(a.out.weights_TK, ref.out.weights_TK));
    WB_CHECK_MSG(relErr(a.out.auxLoss, ref.out.auxLoss) <= tol, what << ": aux " << a.out.auxLoss.item<double>() << " vs " << ref.out.auxLoss.item<double>());
    WB_CHECK_MSG(relErr(a.out.probs_TE, ref.out.probs_TE) <= tol, what << ": probs rel err " << relErr(a.out.probs_TE, ref.out.probs_TE));
    WB_CHECK_MSG(a.dx.scalar_type() == ref.dx.scalar_type(), what << ": dx dtype");
    WB_CHECK_MSG(relErr(a.dx, ref.dx) <= tol, what << ": dx rel err " << relErr(a.dx, ref.dx));
    WB_CHECK_MSG(relErr(a.dW, ref.dW) <= tol, what << ": dW rel err " << relErr(a.dW, ref.dW));
}

void testNodeMatchesAutograd()
{
    struct Case {
        int64_t T, E, K, D;
    };
    const Case cases[] = {{1, 4, 1, 3}, {7, 8, 2, 5}, {33, 16, 4, 12}, {130, 128, 8, 32}};
    const torch::ScalarType dtypes[] = {torch::kFloat64, torch::kFloat32};
    int seed = 10;
    for (const torch::ScalarType dtype : dtypes)
        for (const Case& c : cases) {
            torch::manual_seed(seed++);
            auto opts = torch::TensorOptions().dtype(dtype);
            auto x = torch::randn({c.T, c.D}, opts), w = torch::randn({c.E, c.D}, opts) * 0.5;
            auto u = torch::randn({c.T, c.K});
            const std::string what = std::string(dtype == torch::kFloat64 ? "fp64" : "fp32") + " T" + std::to_string(c.T) +
                                     " E" + std::to_string(c.E) + " K" + std::to_string(c.K);
            // Exactly equal on the CPU: the backward repeats autograd's formulas in autograd's order
            // (so switching the model to the node left the golden losses unchanged).
            expectSame(runNode(x, w, c.K, 0.01, dtype, u), runReference(x, w, c.K, 0.01, dtype, u), 0.0, what);
            // Sequence parallelism: this share plus an identical one elsewhere (the sum doubles).
            const rt::ShareSum twoShares = [](const torch::Tensor& t) { return t * 2.0; };
            expectSame(runNode(x, w, c.K, 0.01, dtype, u, nullptr, twoShares),
                       runReference(x, w, c.K, 0.01, dtype, u, twoShares), 0.0, what + " shared");
        }
    // An fp32 layer input and weight with the fp64 router (the casts' gradients).
    torch::manual_seed(3);
    auto x = torch::randn({20, 6}), w = torch::randn({5, 6});
    auto u = torch::randn({20, 2});
    expectSame(runNode(x, w, 2, 0.1, torch::kFloat64, u), runReference(x, w, 2, 0.1, torch::kFloat64, u), 0.0,
               "fp32 input, fp64 router");
    // No token: a zero aux loss, empty outputs.
    auto none = rt::routeTokens(torch::zeros({0, 6}), w, 2, 0.1, torch::kFloat32, {}, nullptr);
    WB_CHECK(none.weights_TK.size(0) == 0 && none.auxLoss.item<double>() == 0.0);
}

// The hand-written backward against central differences of the forward, all in fp64: the node's
// outputs are fp32 (as the model wants them), so this drives routerForwardMath / routerBackwardMath
// (and the GEMMs after them) directly. f = Σ u·w + c·Σ_e f_e·P_e with w, f_e, P_e rebuilt in fp64
// from the forward's outputs.
void testFiniteDifferences()
{
    torch::manual_seed(5);
    const int64_t T = 5, E = 6, K = 2, D = 4;
    const double c = 0.7, eps = 1e-6;
    auto opts = torch::TensorOptions().dtype(torch::kFloat64);
    auto x = torch::randn({T, D}, opts), w = torch::randn({E, D}, opts);
    auto u = torch::randn({T, K}, opts);
    auto ids0 = rt::routerForwardMath(x.mm(w.t()), K).ids_TK;
    auto f = [&](const torch::Tensor& xv, const torch::Tensor& wv) {
        auto r = rt::routerForwardMath(xv.mm(wv.t()), K);
        WB_CHECK_MSG(torch::equal(r.ids_TK, ids0), "a perturbation changed the top-K choice");
        auto top = r.probs_TE.gather(1, r.ids_TK);
        auto weights = top / top.sum(-1, true);
        auto aux = (r.counts_E / double(T * K) * r.probSum_E / double(T)).sum() * c;
        return ((weights * u).sum() + aux).item<double>();
    };
    auto r = rt::routerForwardMath(x.mm(w.t()), K);
    auto gProbSum = r.counts_E / double(T * K) / double(T) * c;  // f_e is constant (no gradient)
    auto dLogits = rt::routerBackwardMath(r.probs_TE, r.ids_TK, {}, u, gProbSum);
    auto dx = dLogits.mm(w), dW = dLogits.t().mm(x);
    double worst = 0.0;
    for (int which = 0; which < 2; ++which) {
        const auto& param = which == 0 ? x : w;
        const auto& grad = which == 0 ? dx : dW;
        for (int64_t i = 0; i < param.numel(); ++i) {
            auto plus = param.clone(), minus = param.clone();
            plus.view(-1)[i] += eps;
            minus.view(-1)[i] -= eps;
            const double numeric = which == 0 ? (f(plus, w) - f(minus, w)) / (2 * eps) : (f(x, plus) - f(x, minus)) / (2 * eps);
            worst = std::max(worst, std::fabs(numeric - grad.view(-1)[i].item<double>()));
        }
    }
    WB_CHECK_MSG(worst < 1e-8, "finite differences: worst abs diff " << worst);
    std::cout << "finite differences: worst abs diff " << worst << std::endl;
    // The mask: padded rows (zero logits) add nothing to the statistics and get exactly zero
    // gradient; the real rows' results are unchanged.
    auto logitsPad = torch::cat({x.mm(w.t()), torch::zeros({3, E}, opts)});
    auto mask = torch::cat({torch::ones({T}, opts), torch::zeros({3}, opts)});
    auto rp = rt::routerForwardMath(logitsPad, K, mask);
    WB_CHECK(relErr(rp.counts_E, r.counts_E) == 0.0 && relErr(rp.probSum_E, r.probSum_E) < 1e-15);
    auto dLogitsPad = rt::routerBackwardMath(rp.probs_TE, rp.ids_TK, mask, torch::cat({u, torch::zeros({3, K}, opts)}), gProbSum);
    WB_CHECK(relErr(dLogitsPad.slice(0, 0, T), dLogits) < 1e-15 && dLogitsPad.slice(0, T).abs().max().item<double>() == 0.0);
}

void testGraphsOnCpu()
{
    WB_CHECK(rt::RouterGraphs::bucketOf(1, 256) == 256 && rt::RouterGraphs::bucketOf(256, 256) == 256 &&
             rt::RouterGraphs::bucketOf(257, 256) == 512);
    const int64_t E = 16, K = 4, D = 24, capacity = 700;
    for (const auto& [dtype, tol] : {std::make_pair(torch::kFloat64, 1e-12), std::make_pair(torch::kFloat32, 2e-6)}) {
        auto counts = std::make_shared<ReplayCapturer::Counts>();
        auto graphs = std::make_shared<rt::RouterGraphs>(capacity, 256, std::make_unique<ReplayCapturer>(counts));
        torch::manual_seed(21);
        auto w = torch::randn({E, D}) * 0.3;
        const auto run = [&](int64_t T, int expectBuilt, const std::string& what) {
            auto x = torch::randn({T, D});
            auto u = torch::randn({T, K});
            const int replaysBefore = counts->replays;
            RouterRun graphed = runNode(x, w, K, 0.01, dtype, u, graphs);
            expectSame(graphed, runNode(x, w, K, 0.01, dtype, u), tol, what);
            WB_CHECK_MSG(graphs->graphsBuilt() == expectBuilt, what << ": " << graphs->graphsBuilt() << " graphs built");
            return counts->replays - replaysBefore;
        };
        // Disabled (warm-up steps): the eager node, no capture.
        WB_CHECK(run(300, 0, "disabled") == 0);
        graphs->setEnabled(true);
        WB_CHECK(run(300, 2, "T 300 (bucket 512)") == 2);  // forward + backward replayed
        WB_CHECK(run(400, 2, "T 400 (bucket 512 again)") == 2);
        WB_CHECK(run(700, 4, "T 700 (bucket 768)") == 2);
        WB_CHECK(run(100, 6, "T 100 (bucket 256)") == 2);
        WB_CHECK(run(701, 6, "T 701 (above the capacity: eager)") == 0);
        WB_CHECK(counts->captures == 6);
        // A weight update (the optimizer's in-place step) is seen by the next replay.
        w.add_(torch::randn({E, D}) * 0.2);
        WB_CHECK(run(350, 6, "T 350 after a weight update") == 2);
        const auto b = graphs->buckets();
        WB_CHECK((b == std::vector<int64_t>{256, 512, 768}));
        WB_CHECK(graphs->staticBytes() > 0);
        std::cout << graphs->describe() << std::endl;
    }
}

// Two MoE layers sharing one RouterGraphs, in the order 1F1B and gradient accumulation use them:
// both forwards before both backwards. Equal to the same two layers without graphs.
void testLayersShareGraphs()
{
    const int D = 16, E = 8, K = 2, F = 12;
    torch::manual_seed(8);
    rt::MoeLayer a(D, E, K, F, 0.01, torch::kFloat32), b(D, E, K, F, 0.01, torch::kFloat32);
    rt::MoeLayer a2(D, E, K, F, 0.01, torch::kFloat32), b2(D, E, K, F, 0.01, torch::kFloat32);
    {
        torch::NoGradGuard noGrad;
        for (auto [src, dst] : {std::make_pair(a, a2), std::make_pair(b, b2)})
            for (size_t i = 0; i < src->parameters().size(); ++i)
                dst->parameters()[i].copy_(src->parameters()[i]);
    }
    auto counts = std::make_shared<ReplayCapturer::Counts>();
    auto graphs = std::make_shared<rt::RouterGraphs>(512, 256, std::make_unique<ReplayCapturer>(counts));
    graphs->setEnabled(true);
    a->setRouterGraphs(graphs);
    b->setRouterGraphs(graphs);
    const auto run = [](rt::MoeLayer& l1, rt::MoeLayer& l2, const torch::Tensor& x1, const torch::Tensor& x2) {
        // Two micro-batches' forwards (different T, one bucket), then one backward over both.
        return test::twoLayersTwoMicroBatches(l1, l2, x1, x2);
    };
    auto x1 = torch::randn({300, D}), x2 = torch::randn({333, D});
    auto [lossGraphed, gradsGraphed] = run(a, b, x1, x2);
    auto [lossEager, gradsEager] = run(a2, b2, x1, x2);
    WB_CHECK_MSG(relErr(lossGraphed, lossEager) < 1e-6, "loss " << lossGraphed.item<double>() << " vs " << lossEager.item<double>());
    for (size_t i = 0; i < gradsEager.size(); ++i)
        WB_CHECK_MSG(relErr(gradsGraphed[i], gradsEager[i]) < 1e-5, "param " << i << " grad rel err " << relErr(gradsGraphed[i], gradsEager[i]));
    WB_CHECK_MSG(graphs->graphsBuilt() == 2 && counts->replays == 8, graphs->graphsBuilt() << " graphs, " << counts->replays << " replays");
}

void testConfigChecks()
{
    const auto problemsFor = [](const std::string& graphJson) {
        auto parsed = core::parseRunConfig(R"({"runtime": {"device": "cuda"}, "data": {"source": "mock"}, "cuda_graph": )" + graphJson + "}");
        WB_CHECK_MSG(parsed.problems.empty(), "parse: " << (parsed.problems.empty() ? "" : parsed.problems[0].toString()));
        std::string all;
        for (const auto& p : rt::runtimeProblems(parsed.config, 1))
            all += p.toString() + "\n";
        return all;
    };
    const std::string ok = problemsFor(R"({"impl": "local", "scope": ["moe_router"]})");
    if (rt::cuda::cudaGraphsAvailable())
        WB_CHECK_MSG(ok.find("cuda_graph") == std::string::npos, ok);
    else
        WB_CHECK_MSG(ok.find("cuda_graph.impl: this moe-train was built without CUDA graphs") != std::string::npos, ok);
    const std::string attn = problemsFor(R"({"impl": "local", "scope": ["moe_router", "attn"]})");
    WB_CHECK_MSG(attn.find("cuda_graph.scope: \"attn\" cannot be captured") != std::string::npos &&
                     attn.find("cu_seqlens") != std::string::npos && attn.find("remove \"attn\"") != std::string::npos,
                 attn);
    const std::string pre = problemsFor(R"({"impl": "local", "scope": ["moe_router", "moe_preprocess"]})");
    WB_CHECK_MSG(pre.find("cuda_graph.scope: \"moe_preprocess\" is not captured") != std::string::npos, pre);
    const std::string te = problemsFor(R"({"impl": "transformer_engine", "scope": ["moe_router"]})");
    WB_CHECK_MSG(te.find("cuda_graph.impl: \"transformer_engine\"") != std::string::npos && te.find("set cuda_graph.impl \"local\"") != std::string::npos, te);
    const std::string empty = problemsFor(R"({"impl": "local", "scope": []})");
    WB_CHECK_MSG(empty.find("cuda_graph.scope: impl \"local\" with no scope") != std::string::npos, empty);
    WB_CHECK(problemsFor(R"({"impl": "none"})").find("cuda_graph") == std::string::npos);
}

}  // namespace

int run(int, char**)
{
    torch::set_num_threads(1);
    testNodeMatchesAutograd();
    testFiniteDifferences();
    testGraphsOnCpu();
    testLayersShareGraphs();
    testConfigChecks();
    return test::checkExitCode("test_runtime_router");
}

}  // namespace wb::test::suite_router
