// CUDA graphs over the router (cuda_graph impl "local", scope "moe_router"; router_graphs.h) as
// the training loop runs them: installed from outside the model, like recompute, as one
// RouterGraphs shared by every MoE layer of this rank; eager for the process's first
// cuda_graph.warmup_steps steps; each new batch of graphs said in an event and the rank's log.
// Training thread only.
#pragma once

#include "core/run_config.h"
#include "runtime/model/router_graphs.h"
#include "runtime/train/run_reporting.h"

#include <torch/torch.h>

#include <cstdint>
#include <memory>

namespace wb::rt {

class RouterGraphsRunner {
public:
    /// Installs the graphs on every MoE layer of `model` when the config asks for them; null
    /// otherwise. Throws RunFailure (exit 2) when this build cannot capture CUDA graphs.
    static std::unique_ptr<RouterGraphsRunner> install(const core::RunConfig& config, torch::nn::Module& model, int rank,
                                                       EventSink event);

    RouterGraphsRunner(std::shared_ptr<RouterGraphs> graphs, int warmupSteps, int rank, EventSink event);

    /// Before each step of this process: graphs on once the warm-up steps have run.
    void beforeStep();
    /// After step `step`: says so when new graphs were built (a new token bucket).
    void afterStep(int64_t step);

private:
    std::shared_ptr<RouterGraphs> m_graphs;  // shared with the MoE layers
    int m_warmupSteps;
    int m_rank;
    EventSink m_event;
    int64_t m_stepsThisProcess = 0;  // steps run since start (the warm-up counts these, not the run's step)
    int m_graphsLogged = 0;          // graphs built when last reported
};

}  // namespace wb::rt
