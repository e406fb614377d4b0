// What the trainer asks of the device for its metrics: name, peak dense bf16 rate for MFU,
// library versions, caching-allocator memory. Every CUDA call is compiled out of CPU builds,
// where these answer "cpu", 0 and the process RSS. Training thread only.
#pragma once

#include <torch/torch.h>

#include <map>
#include <string>

namespace wb::rt {

/// "cpu", or the CUDA device's name ("NVIDIA H200").
std::string deviceName(torch::Device device);

/// Datasheet dense bf16 TFLOP/s per GPU, from the device name: H100/H200 989, B200 2250,
/// GB200/GB300 2500 (the numbers torchtitan and Megatron use); 0 for a CPU or an unknown GPU.
double peakDenseBf16Tflops(const std::string& deviceName);

/// Versions for the meta line beside moe-train's and LibTorch's: cuda (build), cuda_runtime,
/// cudnn, nccl (headers this was built with) where the build has them.
std::map<std::string, std::string> acceleratorVersions();

struct MemoryReading {
    double allocatedGib = 0.0;  ///< live tensors now (CUDA) / RSS (CPU)
    double reservedGib = 0.0;   ///< held by the caching allocator (CUDA) / RSS (CPU)
    double peakGib = 0.0;       ///< peak allocated since the start or the last reset / VmHWM (CPU)
    double reservedPeakGib = 0.0;  ///< peak held by the caching allocator (CUDA) / VmHWM (CPU)
    double deviceGib = 0.0;        ///< the device's memory (CUDA) / 0 (CPU)
};

/// CUDA: c10::cuda::CUDACachingAllocator::getDeviceStats (aggregate pool). CPU: /proc RSS.
MemoryReading readMemory(torch::Device device);

}  // namespace wb::rt
