// CUDA-graph capture and replay for RouterGraphs (see cuda_graph.h). The only file that touches
// at::cuda::CUDAGraph; everything around it (buckets, static buffers, copies) is device-agnostic
// and tested on the CPU.
//
// PyTorch's rules for a capture, and where each is kept:
//  - capture on a non-default stream: one side stream per capturer, taken from the pool once;
//  - warm up on that stream first (cuBLAS creates its handle workspace for a (handle, stream)
//    lazily, and a capture must not allocate it): `warmupRuns` eager runs of the body;
//  - no host synchronization inside: the router body is matmul, softmax, topk, gather, scatter,
//    index_add and reductions (no .item(), no nonzero, no bincount);
//  - the side stream starts after the work the caller queued (the static inputs' copies) and the
//    caller's stream waits for the warm-up runs before it replays over the same buffers (events);
//  - every graph shares one private pool (graph_pool_handle): safe because replays never overlap,
//    as all run in order on the caller's stream;
//  - capture mode thread-local, so the loader's threads (which never touch CUDA today) could not
//    invalidate a capture by an unrelated CUDA call.
// Replay launches on the current stream: in backward that is the stream autograd's engine set for
// the node (the forward's stream), so the replay is ordered after the incoming gradient.
#include "runtime/model/cuda/cuda_graph.h"

#include "runtime/model/torch_compat.h"

#include <stdexcept>
#include <string>

#if WB_WITH_CUDA && WB_TORCH_AT_LEAST(2, 1)
#define WB_HAVE_CUDA_GRAPHS 1
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>
#else
#define WB_HAVE_CUDA_GRAPHS 0
#endif

namespace wb::rt::cuda {

#if WB_HAVE_CUDA_GRAPHS
namespace {

class CudaGraph final : public CapturedGraph {
public:
    explicit CudaGraph(std::unique_ptr<at::cuda::CUDAGraph> graph) : m_graph(std::move(graph)) {}
    void replay() override { m_graph->replay(); }

private:
    std::unique_ptr<at::cuda::CUDAGraph> m_graph;
};

class CudaGraphCapturer final : public GraphCapturer {
public:
    explicit CudaGraphCapturer(int warmupRuns) : m_warmupRuns(warmupRuns) {}

    std::unique_ptr<CapturedGraph> capture(const std::function<void()>& body) override
    {
        const c10::cuda::CUDAStream caller = c10::cuda::getCurrentCUDAStream();
        if (!m_side) {  // on the caller's device, made current by the trainer
            m_side = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, caller.device_index());
            m_pool = at::cuda::graph_pool_handle();
        }
        at::cuda::CUDAEvent inputsReady;
        inputsReady.record(caller);
        inputsReady.block(*m_side);
        auto graph = std::make_unique<at::cuda::CUDAGraph>();
        {
            c10::cuda::CUDAStreamGuard onSide(*m_side);
            for (int i = 0; i < m_warmupRuns; ++i)
                body();
            graph->capture_begin(m_pool, cudaStreamCaptureModeThreadLocal);
            body();
            graph->capture_end();
        }
        at::cuda::CUDAEvent warmedUp;
        warmedUp.record(*m_side);
        warmedUp.block(caller);
        return std::make_unique<CudaGraph>(std::move(graph));
    }

    std::string describe() const override
    {
        return "CUDA graphs in one private pool, " + std::to_string(m_warmupRuns) +
               " warm-up runs before each capture on a side stream";
    }

private:
    const int m_warmupRuns;
    std::optional<c10::cuda::CUDAStream> m_side;
    decltype(at::cuda::graph_pool_handle()) m_pool{0, 0};  // c10's MempoolId_t, wherever it lives
};

}  // namespace

bool cudaGraphsAvailable()
{
    return true;
}

std::unique_ptr<GraphCapturer> makeCudaGraphCapturer(int warmupRuns)
{
    return std::make_unique<CudaGraphCapturer>(warmupRuns);
}

#else

bool cudaGraphsAvailable()
{
    return false;
}

std::unique_ptr<GraphCapturer> makeCudaGraphCapturer(int)
{
    throw std::runtime_error("CUDA graphs: this moe-train was built without CUDA (WB_WITH_CUDA=OFF) or against "
                             "LibTorch < 2.1");
}

#endif

}  // namespace wb::rt::cuda
