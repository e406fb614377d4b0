// Builds without nvcc (the CPU build, or a CUDA build on a machine without the CUDA compiler):
// the fused kernels are absent and every caller takes its ATen path.
#include "runtime/model/cuda/fused_kernels.h"

namespace wb::rt::cuda {

bool fusedKernelsAvailable()
{
    return false;
}

bool ropeRotateSupports(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)
{
    return false;
}

torch::Tensor ropeRotate(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, double)
{
    TORCH_CHECK(false, "ropeRotate: this build has no CUDA kernels (built without nvcc)");
}

bool swigluSupports(const torch::Tensor&)
{
    return false;
}

torch::Tensor swigluForward(const torch::Tensor&)
{
    TORCH_CHECK(false, "swigluForward: this build has no CUDA kernels (built without nvcc)");
}

torch::Tensor swigluBackward(const torch::Tensor&, const torch::Tensor&)
{
    TORCH_CHECK(false, "swigluBackward: this build has no CUDA kernels (built without nvcc)");
}

bool gatherSumSupports(const torch::Tensor&, const torch::Tensor&, int64_t)
{
    return false;
}

torch::Tensor gatherSumRows(const torch::Tensor&, const torch::Tensor&, int64_t)
{
    TORCH_CHECK(false, "gatherSumRows: this build has no CUDA kernels (built without nvcc)");
}

bool scatterRowsSupports(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)
{
    return false;
}

void scatterRows(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, bool)
{
    TORCH_CHECK(false, "scatterRows: this build has no CUDA kernels (built without nvcc)");
}

bool sumOfSquaresSupports(const std::vector<torch::Tensor>&)
{
    return false;
}

torch::Tensor sumOfSquares(const std::vector<torch::Tensor>&)
{
    TORCH_CHECK(false, "sumOfSquares: this build has no CUDA kernels (built without nvcc)");
}

bool adamwSupports(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)
{
    return false;
}

bool adamwCopySupports(const torch::Tensor&, const torch::Tensor&)
{
    return false;
}

void adamwStep(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, const torch::Tensor&, double, double,
               double, double, double, int64_t, const torch::Tensor&, const torch::Tensor&, bool, int)
{
    TORCH_CHECK(false, "adamwStep: this build has no CUDA kernels (built without nvcc)");
}

bool combineSupports(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)
{
    return false;
}

torch::Tensor combineForward(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)
{
    TORCH_CHECK(false, "combineForward: this build has no CUDA kernels (built without nvcc)");
}

std::pair<torch::Tensor, torch::Tensor> combineBackward(const torch::Tensor&, const torch::Tensor&,
                                                        const torch::Tensor&, const torch::Tensor&)
{
    TORCH_CHECK(false, "combineBackward: this build has no CUDA kernels (built without nvcc)");
}

bool widenSupports(const torch::Tensor&)
{
    return false;
}

torch::Tensor widenToFloat(const torch::Tensor&)
{
    TORCH_CHECK(false, "widenToFloat: this build has no CUDA kernels (built without nvcc)");
}

bool crossEntropySupports(const torch::Tensor&, const torch::Tensor&)
{
    return false;
}

std::pair<torch::Tensor, torch::Tensor> crossEntropyForward(const torch::Tensor&, const torch::Tensor&)
{
    TORCH_CHECK(false, "crossEntropyForward: this build has no CUDA kernels (built without nvcc)");
}

torch::Tensor crossEntropyBackward(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                   const torch::Tensor&)
{
    TORCH_CHECK(false, "crossEntropyBackward: this build has no CUDA kernels (built without nvcc)");
}

bool rmsNormSupports(const torch::Tensor&, const torch::Tensor&)
{
    return false;
}

std::pair<torch::Tensor, torch::Tensor> rmsNormForward(const torch::Tensor&, const torch::Tensor&, double)
{
    TORCH_CHECK(false, "rmsNormForward: this build has no CUDA kernels (built without nvcc)");
}

std::pair<torch::Tensor, torch::Tensor> rmsNormBackward(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&,
                                                        const torch::Tensor&)
{
    TORCH_CHECK(false, "rmsNormBackward: this build has no CUDA kernels (built without nvcc)");
}

bool layerNormSupports(const torch::Tensor&, const torch::Tensor&, const torch::Tensor&)
{
    return false;
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> layerNormForward(const torch::Tensor&, const torch::Tensor&,
                                                                         const torch::Tensor&, double)
{
    TORCH_CHECK(false, "layerNormForward: this build has no CUDA kernels (built without nvcc)");
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> layerNormBackward(const torch::Tensor&, const torch::Tensor&,
                                                                          const torch::Tensor&, const torch::Tensor&,
                                                                          const torch::Tensor&)
{
    TORCH_CHECK(false, "layerNormBackward: this build has no CUDA kernels (built without nvcc)");
}

}  // namespace wb::rt::cuda
