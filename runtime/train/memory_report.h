// Where the memory of a run goes, for the out-of-memory message (exit 3) and for tests:
//  - a counting CPU allocator (c10::alloc_cpu underneath, as LibTorch's default) that knows the bytes of live
//    CPU tensors and their peak — the CPU counterpart of the CUDA caching allocator's statistics;
//  - the largest consumers computed from the tensors themselves: parameters, gradients, optimizer
//    state, and activations estimated as peak − those three;
//  - the message that names them and ranks the knobs that would help (recompute, micro-batch
//    size, freezing the vision encoder, FSDP / expert parallelism) by the bytes each addresses.
// The counter is process-wide (the allocator is); everything else runs on the training thread.
#pragma once

#include "core/run_config.h"

#include <torch/torch.h>

#include <cstdint>
#include <string>

namespace wb::rt {

/// Installs the counting CPU allocator (once; later calls do nothing). Tensors allocated before
/// it are not counted.
void installCpuTensorCounter();

struct TensorBytes {
    int64_t current = 0;  ///< bytes of live CPU tensors (allocated through the counter)
    int64_t peak = 0;     ///< the most `current` has been since install or the last reset
};
TensorBytes cpuTensorBytes();
/// Sets the peak to the current value (e.g. before a measured phase).
void resetCpuTensorPeak();

struct MemoryConsumers {
    int64_t parameters = 0;          ///< all parameters (trainable or not)
    int64_t trainable = 0;           ///< parameters that get gradients
    int64_t gradients = 0;           ///< one gradient per trainable parameter (its size, allocated or not)
    int64_t optimizerState = 0;      ///< AdamW moments allocated now
    int64_t optimizerProjected = 0;  ///< AdamW moments once allocated (trainable values × moment bytes)
    int64_t visionTrainable = 0;     ///< trainable vision encoder + projector parameters
    int64_t peak = 0;                ///< peak tensor bytes of the device (0 = unknown)
    int64_t allocatedAtPeakKnown = 0;///< parameters + gradients + optimizer state allocated now
    int64_t failedRequest = 0;       ///< the allocation that failed (from the error text; 0 = unknown)
    /// Activations (and other temporaries) estimate: what was reached plus what was asked for,
    /// minus the persistent tensors.
    int64_t activations() const
    {
        const int64_t needed = peak + failedRequest;
        return needed > allocatedAtPeakKnown ? needed - allocatedAtPeakKnown : 0;
    }
};

/// Measures `model` and `optimizer` (may be null) on `device`: the CUDA caching allocator's peak
/// on CUDA, the counting allocator's on the CPU. `momentBytesPerValue`: what both AdamW moments
/// take per trainable value once allocated (8 fp32, 4 bf16; MomentDtypes::bytesPerValue).
MemoryConsumers measureConsumers(torch::nn::Module& model, torch::optim::Optimizer* optimizer, torch::Device device,
                                 int64_t momentBytesPerValue = 8);

/// "out of memory on <device> (<what>): largest consumers: … ; try: 1. … 2. …".
std::string outOfMemoryMessage(const MemoryConsumers& m, const core::RunConfig& config, const std::string& device,
                               const std::string& what);

/// The size of the failed allocation in an out-of-memory message: "you tried to allocate N bytes"
/// (CPU) or "Tried to allocate 2.00 GiB" (CUDA). 0 when it does not say.
int64_t failedRequestBytes(const std::string& what);

/// True for the LibTorch / C++ messages of a failed allocation (CUDA "out of memory", the CPU
/// allocator's "not enough memory", OutOfMemoryError).
bool isOutOfMemoryMessage(const std::string& what);

}  // namespace wb::rt
