// The seam between what a captured graph holds (router_graphs.h: buckets, static buffers) and how
// it is captured (cuda/cuda_graph.h: at::cuda::CUDAGraph; the CPU tests: a body re-run on replay).
// Header only and free of LibTorch, so the CUDA capturer's file compiles in no time where CUDA is
// off. Threads: as the owner of the capturer says (RouterGraphs: one thread at a time).
#pragma once

#include <functional>
#include <memory>
#include <string>

namespace wb::rt {

/// A recorded sequence of kernels over fixed addresses; replay() runs it again (on CUDA: on the
/// current stream).
class CapturedGraph {
public:
    virtual ~CapturedGraph() = default;
    virtual void replay() = 0;
};

/// Records a body that reads and writes only tensors that outlive the graph (its temporaries
/// are the graph's own). Replays of every graph it made must not overlap (they share a pool).
class GraphCapturer {
public:
    virtual ~GraphCapturer() = default;
    virtual std::unique_ptr<CapturedGraph> capture(const std::function<void()>& body) = 0;
    /// For the log: "CUDA graphs (private pool, 3 warm-up runs)".
    virtual std::string describe() const = 0;
};

}  // namespace wb::rt
