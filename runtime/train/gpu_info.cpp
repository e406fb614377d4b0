// Device queries for the metrics (see gpu_info.h).
#include "runtime/train/gpu_info.h"

#include "runtime/train/process_stats.h"

#if WB_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <cuda_runtime_api.h>
#if __has_include(<nccl.h>)
#include <nccl.h>
#endif
#endif

namespace wb::rt {

std::string deviceName(torch::Device device)
{
#if WB_WITH_CUDA
    if (device.is_cuda())
        return at::cuda::getCurrentDeviceProperties()->name;
#endif
    return device.is_cuda() ? "cuda" : "cpu";
}

double peakDenseBf16Tflops(const std::string& name)
{
    // Order matters: "GB200" contains "B200".
    const std::pair<const char*, double> table[] = {
        {"GB300", 2500.0}, {"GB200", 2500.0}, {"B200", 2250.0}, {"H200", 989.0}, {"H100", 989.0}};
    for (const auto& [key, tflops] : table)
        if (name.find(key) != std::string::npos)
            return tflops;
    return 0.0;
}

std::map<std::string, std::string> acceleratorVersions()
{
    std::map<std::string, std::string> out;
#if WB_WITH_CUDA
    auto dotted = [](int v, int major) { return std::to_string(v / major) + "." + std::to_string(v % major / 10); };
    out["cuda"] = dotted(CUDA_VERSION, 1000);
    int runtime = 0;
    if (cudaRuntimeGetVersion(&runtime) == cudaSuccess)
        out["cuda_runtime"] = dotted(runtime, 1000);
    if (at::detail::getCUDAHooks().hasCuDNN())
        out["cudnn"] = std::to_string(at::detail::getCUDAHooks().versionCuDNN());
#if defined(NCCL_MAJOR)
    out["nccl"] = std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH) +
                  " (headers)";
#endif
#endif
    return out;
}

MemoryReading readMemory(torch::Device device)
{
    MemoryReading r;
#if WB_WITH_CUDA
    if (device.is_cuda()) {
        constexpr double kGib = 1024.0 * 1024.0 * 1024.0;
        const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.index() < 0 ? 0 : device.index());
        const size_t all = 0;  // StatType::AGGREGATE; its namespace moved between releases
        r.allocatedGib = static_cast<double>(stats.allocated_bytes[all].current) / kGib;
        r.reservedGib = static_cast<double>(stats.reserved_bytes[all].current) / kGib;
        r.peakGib = static_cast<double>(stats.allocated_bytes[all].peak) / kGib;
        r.reservedPeakGib = static_cast<double>(stats.reserved_bytes[all].peak) / kGib;
        r.deviceGib = static_cast<double>(
                          at::cuda::getDeviceProperties(device.index() < 0 ? 0 : device.index())->totalGlobalMem) /
                      kGib;
        return r;
    }
#endif
    (void)device;
    r.allocatedGib = r.reservedGib = residentGib();
    r.peakGib = r.reservedPeakGib = peakResidentGib();
    return r;
}

}  // namespace wb::rt
