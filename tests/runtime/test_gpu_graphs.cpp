// GPU-only checks of the router's CUDA graphs (label `gpu`; built only with WB_WITH_CUDA; exit 77
// = skipped without a GPU or without CUDA-graph support in this LibTorch):
//  - the graphed router node (RouterGraphs + the CUDA capturer) equals the eager node, forward
//    (weights, ids, aux loss) and backward (dx, dW), for two token counts in one bucket and one
//    in another, fp32 and bf16 layer inputs; one forward + backward graph pair per bucket;
//  - a weight update (in place, as the optimizer does it) is seen by the next replay;
//  - more tokens than the capacity run eagerly, with no new graph;
//  - forward and backward on a non-default stream (autograd runs the backward replay on the
//    forward's stream): two MoE layers sharing the graphs, both forwards before both backwards,
//    equal the same layers without graphs;
//  - a table (printed, not asserted): router forward + backward per layer, eager vs graphed, at
//    the benchmark slice's shape (16k tokens, D 2048, E 128, K 8).
// Errors are ‖graphed − eager‖ / ‖eager‖; the two run the same kernels (the GEMMs are eager in
// both) except that the graph's reductions over tokens see the padded row count, so they agree to
// fp32 rounding.
#include "check.h"
#include "moe_layers_step.h"

#include "runtime/model/cuda/cuda_graph.h"
#include "runtime/model/moe_layer.h"
#include "runtime/model/router.h"
#include "runtime/model/router_graphs.h"

#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/torch.h>

#include <chrono>

using namespace wb;

namespace {

double relErr(const torch::Tensor& fast, const torch::Tensor& ref)
{
    auto f = fast.to(torch::kFloat64).cpu(), r = ref.to(torch::kFloat64).cpu();
    if (!torch::isfinite(f).all().item<bool>())
        return 1e9;  // NaN never passes
    return ((f - r).norm() / r.norm().clamp_min(1e-30)).item<double>();
}

struct RouterRun {
    rt::RouterOutput out;
    torch::Tensor dx, dW;
};

RouterRun runNode(const torch::Tensor& x0, const torch::Tensor& w0, int K, const torch::Tensor& u,
                  const std::shared_ptr<rt::RouterGraphs>& graphs)
{
    auto x = x0.detach().clone().requires_grad_(true), w = w0.detach().clone().requires_grad_(true);
    RouterRun r;
    r.out = rt::routeTokens(x, w, K, 0.01, torch::kFloat32, {}, graphs);
    auto loss = (r.out.weights_TK * u).sum() + 3.0 * r.out.auxLoss;
    auto g = torch::autograd::grad({loss}, {x, w});
    r.dx = g[0];
    r.dW = g[1];
    return r;
}

void expectClose(const RouterRun& g, const RouterRun& e, double tol, const std::string& what)
{
    const double idsSame = g.out.expertIds_TK.eq(e.out.expertIds_TK).to(torch::kFloat64).mean().item<double>();
    WB_CHECK_MSG(idsSame >= 0.999, what << ": only " << idsSame << " of the expert ids agree");
    const double errs[] = {relErr(g.out.weights_TK, e.out.weights_TK), relErr(g.out.auxLoss, e.out.auxLoss),
                           relErr(g.dx, e.dx), relErr(g.dW, e.dW)};
    const char* names[] = {"weights", "aux", "dx", "dW"};
    for (int i = 0; i < 4; ++i)
        WB_CHECK_MSG(errs[i] < tol, what << ": " << names[i] << " rel err " << errs[i]);
    WB_CHECK_MSG(g.dx.scalar_type() == e.dx.scalar_type(), what << ": dx dtype");
    std::cout << what << ": weights " << errs[0] << ", aux " << errs[1] << ", dx " << errs[2] << ", dW " << errs[3] << std::endl;
}

void testGraphedRouter()
{
    const int64_t E = 128, K = 8, D = 512, capacity = 1024;
    const auto cuda = torch::TensorOptions().device(torch::kCUDA);
    auto graphs = std::make_shared<rt::RouterGraphs>(capacity, 256, rt::cuda::makeCudaGraphCapturer());
    graphs->setEnabled(true);
    torch::manual_seed(31);
    auto w = torch::randn({E, D}, cuda) * 0.05;
    const auto run = [&](int64_t T, torch::ScalarType xType, int expectBuilt, double tol, const std::string& what) {
        auto x = torch::randn({T, D}, cuda).to(xType);
        auto u = torch::randn({T, K}, cuda);
        RouterRun graphed = runNode(x, w, K, u, graphs);
        RouterRun eager = runNode(x, w, K, u, nullptr);
        expectClose(graphed, eager, tol, what);
        WB_CHECK_MSG(graphs->graphsBuilt() == expectBuilt, what << ": " << graphs->graphsBuilt() << " graphs built");
    };
    run(300, torch::kFloat32, 2, 1e-5, "fp32 T 300 (bucket 512)");
    run(400, torch::kFloat32, 2, 1e-5, "fp32 T 400 (bucket 512)");
    run(700, torch::kFloat32, 4, 1e-5, "fp32 T 700 (bucket 768)");
    run(450, torch::kBFloat16, 4, 1e-2, "bf16 input T 450 (bucket 512)");
    {
        torch::NoGradGuard noGrad;
        w.add_(torch::randn({E, D}, cuda) * 0.05);  // the optimizer's in-place update
    }
    run(333, torch::kFloat32, 4, 1e-5, "fp32 T 333 after a weight update");
    run(1025, torch::kFloat32, 4, 1e-5, "T 1025 above the capacity (eager)");
    std::cout << graphs->describe() << std::endl;
}

// Two layers sharing the graphs, forward and backward on a side stream.
void testLayersOnSideStream()
{
    const int D = 256, E = 16, K = 4, F = 128;
    torch::manual_seed(8);
    rt::MoeLayer a(D, E, K, F, 0.01, torch::kFloat32), b(D, E, K, F, 0.01, torch::kFloat32);
    a->to(torch::kCUDA);
    b->to(torch::kCUDA);
    rt::MoeLayer a2(D, E, K, F, 0.01, torch::kFloat32), b2(D, E, K, F, 0.01, torch::kFloat32);
    a2->to(torch::kCUDA);
    b2->to(torch::kCUDA);
    {
        torch::NoGradGuard noGrad;
        for (auto [src, dst] : {std::make_pair(a, a2), std::make_pair(b, b2)})
            for (size_t i = 0; i < src->parameters().size(); ++i)
                dst->parameters()[i].copy_(src->parameters()[i]);
    }
    auto graphs = std::make_shared<rt::RouterGraphs>(1024, 256, rt::cuda::makeCudaGraphCapturer());
    graphs->setEnabled(true);
    a->setRouterGraphs(graphs);
    b->setRouterGraphs(graphs);
    const auto run = [](rt::MoeLayer& l1, rt::MoeLayer& l2, const torch::Tensor& x1, const torch::Tensor& x2) {
        torch::cuda::synchronize();  // x1, x2 were made on the default stream
        c10::cuda::CUDAStream side = c10::cuda::getStreamFromPool();
        c10::cuda::CUDAStreamGuard onSide(side);
        auto result = test::twoLayersTwoMicroBatches(l1, l2, x1, x2);
        side.synchronize();
        return result;
    };
    auto x1 = torch::randn({300, D}, torch::kCUDA), x2 = torch::randn({333, D}, torch::kCUDA);
    auto [lossGraphed, gradsGraphed] = run(a, b, x1, x2);
    auto [lossEager, gradsEager] = run(a2, b2, x1, x2);
    WB_CHECK_MSG(relErr(lossGraphed, lossEager) < 1e-5, "two layers: loss " << lossGraphed.item<double>() << " vs " << lossEager.item<double>());
    for (size_t i = 0; i < gradsEager.size(); ++i)
        WB_CHECK_MSG(relErr(gradsGraphed[i], gradsEager[i]) < 1e-4, "two layers: param " << i << " grad rel err " << relErr(gradsGraphed[i], gradsEager[i]));
    WB_CHECK_MSG(graphs->graphsBuilt() == 2, "two layers: " << graphs->graphsBuilt() << " graphs built");
}

// Milliseconds per router forward + backward (one layer), eager vs graphed, after a warm-up. The
// graphs' gain is the launches of ~25 small kernels minus the copies in and out.
void printRouterTimings()
{
    const int64_t D = 2048, E = 128, K = 8, iters = 50;
    auto graphs = std::make_shared<rt::RouterGraphs>(16384, rt::RouterGraphs::kBucketTokens, rt::cuda::makeCudaGraphCapturer());
    graphs->setEnabled(true);
    torch::manual_seed(5);
    auto w = (torch::randn({E, D}, torch::kCUDA) * 0.02).requires_grad_(true);
    std::cout << "router forward + backward, one layer (ms)\n| tokens | eager | graphed |\n|---|---|---|" << std::endl;
    for (const int64_t T : {4000, 15900}) {
        auto x = torch::randn({T, D}, torch::kCUDA).requires_grad_(true);
        auto u = torch::randn({T, K}, torch::kCUDA);
        double ms[2];
        for (int graphed = 0; graphed < 2; ++graphed) {
            const auto step = [&] {
                auto r = rt::routeTokens(x, w, K, 0.01, torch::kFloat32, {}, graphed ? graphs : nullptr);
                torch::autograd::grad({(r.weights_TK * u).sum() + r.auxLoss}, {x, w});
            };
            for (int i = 0; i < 5; ++i)
                step();
            torch::cuda::synchronize();
            const auto start = std::chrono::steady_clock::now();
            for (int i = 0; i < iters; ++i)
                step();
            torch::cuda::synchronize();
            ms[graphed] = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / iters;
        }
        std::cout << "| " << T << " | " << ms[0] << " | " << ms[1] << " |" << std::endl;
    }
}

}  // namespace

int main()
{
    if (!torch::cuda::is_available()) {
        std::cout << "no CUDA device visible: skipped" << std::endl;
        return 77;
    }
    if (!rt::cuda::cudaGraphsAvailable()) {
        std::cout << "this build has no CUDA graphs (LibTorch < 2.1): skipped" << std::endl;
        return 77;
    }
    testGraphedRouter();
    testLayersOnSideStream();
    printRouterTimings();
    return test::checkExitCode("test_runtime_gpu_graphs");
}
