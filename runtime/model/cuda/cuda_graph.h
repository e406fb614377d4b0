// The CUDA-graph capturer behind RouterGraphs (router_graphs.h): at::cuda::CUDAGraph over one
// private memory pool shared by every graph it captures, warm-up runs and the capture on a
// dedicated side stream (never the default stream), replay on the caller's current stream.
// Compiled in every build; without CUDA (WB_WITH_CUDA=OFF, or LibTorch < 2.1) it reports itself
// absent. Training thread or autograd's device thread, one at a time (RouterGraphs' mutex).
#pragma once

#include "runtime/model/graph_capturer.h"

#include <memory>

namespace wb::rt::cuda {

/// True when this build can capture CUDA graphs.
bool cudaGraphsAvailable();

/// A capturer that runs the body `warmupRuns` times on its side stream before capturing it (as
/// PyTorch requires: lazy initializations such as cuBLAS workspaces must not happen during
/// capture). Throws std::runtime_error when cudaGraphsAvailable() is false.
std::unique_ptr<GraphCapturer> makeCudaGraphCapturer(int warmupRuns = 3);

}  // namespace wb::rt::cuda
