// GpuMonitor: the node's GPU system metrics — utilization, memory used, power, temperature and
// SM clock — sampled every few seconds on a thread of its own through NVML, loaded at run time
// (dlopen of libnvidia-ml.so.1, or $WB_NVML_LIBRARY), so moe-train needs no NVML at build time and
// a CPU build or a machine without the driver simply has none. The training thread takes the
// newest sample between steps and writes it as a "gpu" metrics record (it stays the only writer
// of metrics.jsonl). Threading: start/takeNew/destructor on the training thread; the sampler
// thread touches only NVML and the sample under m_mutex.
#pragma once

#include "core/metrics_schema.h"

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace wb::rt {

class GpuMonitor {
public:
    /// Samples the NVML devices `indices` every `interval` (the first at once). Null, with the
    /// reason in `whyNot` (no NVML library, no driver, a device that does not answer), when it
    /// cannot.
    static std::unique_ptr<GpuMonitor> start(const std::vector<int>& indices, std::chrono::milliseconds interval,
                                             std::string& whyNot);
    ~GpuMonitor();
    GpuMonitor(const GpuMonitor&) = delete;
    GpuMonitor& operator=(const GpuMonitor&) = delete;

    /// The newest sample not taken yet (time stamped; step left for the caller), else nullopt.
    std::optional<core::GpuRecord> takeNew();

    /// The NVML device indices of this node's local ranks: CUDA_VISIBLE_DEVICES's integers when it
    /// lists them (NVML does not apply it), else 0 .. localRanks − 1.
    static std::vector<int> localDeviceIndices(int localRanks);
    /// The sampling period: $WB_GPU_SAMPLE_S seconds (0.1 .. 3600), default 5.
    static std::chrono::milliseconds intervalFromEnvironment();

private:
    struct Nvml;  // the loaded library and its entry points (gpu_monitor.cpp)
    GpuMonitor(std::unique_ptr<Nvml> nvml, std::vector<int> indices, std::chrono::milliseconds interval);
    void run();
    core::GpuRecord sample() const;

    std::unique_ptr<Nvml> m_nvml;
    std::vector<int> m_indices;
    std::chrono::milliseconds m_interval;
    std::mutex m_mutex;
    std::condition_variable m_wake;
    bool m_stop = false;                  // guarded by m_mutex
    std::optional<core::GpuRecord> m_new; // guarded by m_mutex: the newest sample not yet taken
    std::thread m_thread;                 // last: started once everything above exists
};

}  // namespace wb::rt
