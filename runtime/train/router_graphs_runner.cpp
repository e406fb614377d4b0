// The router's CUDA graphs in the training loop (see router_graphs_runner.h).
#include "runtime/train/router_graphs_runner.h"

#include "runtime/model/cuda/cuda_graph.h"
#include "runtime/model/moe_layer.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <utility>

namespace wb::rt {

// Its capacity is the most tokens a micro-batch can hold; runtime_checks refuses every other scope.
std::unique_ptr<RouterGraphsRunner> RouterGraphsRunner::install(const core::RunConfig& config, torch::nn::Module& model,
                                                                int rank, EventSink event)
{
    const auto& g = config.cudaGraph;
    if (g.impl != "local" || std::find(g.scope.begin(), g.scope.end(), "moe_router") == g.scope.end())
        return nullptr;
    std::unique_ptr<GraphCapturer> capturer;
    try {
        capturer = cuda::makeCudaGraphCapturer();
    } catch (const std::runtime_error& e) {
        throw RunFailure{2, std::string("cuda_graph.impl: ") + e.what()};
    }
    const int64_t capacity = int64_t{config.train.microBatchSize} * config.train.seqLength;
    auto graphs = std::make_shared<RouterGraphs>(capacity, RouterGraphs::kBucketTokens, std::move(capturer));
    int layers = 0;
    for (const auto& module : model.modules(/*include_self=*/false))
        if (auto moe = std::dynamic_pointer_cast<MoeLayerImpl>(module)) {
            moe->setRouterGraphs(graphs);
            ++layers;
        }
    event("info", "cuda graphs: scope moe_router on " + std::to_string(layers) + " MoE layers, token buckets of " +
                      std::to_string(RouterGraphs::kBucketTokens) + " up to " + std::to_string(capacity) +
                      ", used after this process's first " + std::to_string(g.warmupSteps) + " steps (warmup_steps)",
          -1);
    return std::make_unique<RouterGraphsRunner>(std::move(graphs), g.warmupSteps, rank, std::move(event));
}

RouterGraphsRunner::RouterGraphsRunner(std::shared_ptr<RouterGraphs> graphs, int warmupSteps, int rank, EventSink event)
    : m_graphs(std::move(graphs)), m_warmupSteps(warmupSteps), m_rank(rank), m_event(std::move(event))
{
}

// cuda_graph.warmup_steps: the first steps of this process run the same router node eagerly, so
// the caching allocator and the kernels' lazy set-up settle before anything is captured.
void RouterGraphsRunner::beforeStep()
{
    m_graphs->setEnabled(m_stepsThisProcess >= m_warmupSteps);
    ++m_stepsThisProcess;
}

// Says so whenever new graphs were built (a new token bucket), with the running total.
void RouterGraphsRunner::afterStep(int64_t step)
{
    if (m_graphs->graphsBuilt() == m_graphsLogged)
        return;
    m_graphsLogged = m_graphs->graphsBuilt();
    const std::string what = "cuda graphs: " + m_graphs->describe();
    m_event("info", what, step);
    std::printf("moe-train: rank %d: %s\n", m_rank, what.c_str());
}

}  // namespace wb::rt
