#include "runtime/train/gpu_monitor.h"

#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <type_traits>
#include <utility>

namespace wb::rt {

namespace {

// The few NVML entry points used, with their C signatures (NVML's public API): every call returns
// nvmlReturn_t, 0 = NVML_SUCCESS. Devices are opaque handles.
using NvmlDevice = void*;
struct NvmlUtilization {
    unsigned int gpu;     // % of the last sample period a kernel ran
    unsigned int memory;  // % of it the memory was read or written
};
struct NvmlMemory {
    unsigned long long total, free, used;  // bytes
};
constexpr int kNvmlSuccess = 0;
constexpr int kNvmlTemperatureGpu = 0;  // NVML_TEMPERATURE_GPU
constexpr int kNvmlClockSm = 1;         // NVML_CLOCK_SM
constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

}  // namespace

struct GpuMonitor::Nvml {
    void* library = nullptr;
    int (*init)() = nullptr;
    int (*shutdown)() = nullptr;
    int (*handleByIndex)(unsigned int, NvmlDevice*) = nullptr;
    int (*utilization)(NvmlDevice, NvmlUtilization*) = nullptr;
    int (*memory)(NvmlDevice, NvmlMemory*) = nullptr;
    int (*power)(NvmlDevice, unsigned int*) = nullptr;          // milliwatts
    int (*temperature)(NvmlDevice, int, unsigned int*) = nullptr;  // °C
    int (*clock)(NvmlDevice, int, unsigned int*) = nullptr;        // MHz
    std::vector<NvmlDevice> devices;

    ~Nvml()
    {
        if (shutdown)
            shutdown();
        if (library)
            ::dlclose(library);
    }
};

std::unique_ptr<GpuMonitor> GpuMonitor::start(const std::vector<int>& indices, std::chrono::milliseconds interval,
                                              std::string& whyNot)
{
    const char* override = std::getenv("WB_NVML_LIBRARY");
    const std::string name = override && *override ? override : "libnvidia-ml.so.1";
    auto nvml = std::make_unique<Nvml>();
    nvml->library = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!nvml->library) {
        const char* error = ::dlerror();
        whyNot = "NVML is not loadable (" + name + ": " + (error ? error : "not found") + ")";
        return nullptr;
    }
    const auto symbol = [&](const char* what, auto& slot) {
        slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(::dlsym(nvml->library, what));
        if (!slot && whyNot.empty())
            whyNot = name + " lacks " + what;
    };
    symbol("nvmlInit_v2", nvml->init);
    symbol("nvmlShutdown", nvml->shutdown);
    symbol("nvmlDeviceGetHandleByIndex_v2", nvml->handleByIndex);
    symbol("nvmlDeviceGetUtilizationRates", nvml->utilization);
    symbol("nvmlDeviceGetMemoryInfo", nvml->memory);
    symbol("nvmlDeviceGetPowerUsage", nvml->power);
    symbol("nvmlDeviceGetTemperature", nvml->temperature);
    symbol("nvmlDeviceGetClockInfo", nvml->clock);
    if (!whyNot.empty())
        return nullptr;
    if (const int rc = nvml->init(); rc != kNvmlSuccess) {
        nvml->shutdown = nullptr;  // not initialized: nothing to shut down
        whyNot = "nvmlInit failed (NVML error " + std::to_string(rc) + "; is the NVIDIA driver loaded?)";
        return nullptr;
    }
    for (int index : indices) {
        NvmlDevice device = nullptr;
        if (const int rc = nvml->handleByIndex(static_cast<unsigned int>(index), &device); rc != kNvmlSuccess) {
            whyNot = "NVML has no device " + std::to_string(index) + " (NVML error " + std::to_string(rc) + ")";
            return nullptr;
        }
        nvml->devices.push_back(device);
    }
    if (indices.empty()) {
        whyNot = "no GPU to sample";
        return nullptr;
    }
    return std::unique_ptr<GpuMonitor>(new GpuMonitor(std::move(nvml), indices, interval));
}

GpuMonitor::GpuMonitor(std::unique_ptr<Nvml> nvml, std::vector<int> indices, std::chrono::milliseconds interval)
    : m_nvml(std::move(nvml)), m_indices(std::move(indices)), m_interval(interval), m_thread([this] { run(); })
{
}

GpuMonitor::~GpuMonitor()
{
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
    }
    m_wake.notify_all();
    if (m_thread.joinable())
        m_thread.join();
}

void GpuMonitor::run()
{
    std::unique_lock lock(m_mutex);
    while (!m_stop) {
        lock.unlock();
        core::GpuRecord record = sample();  // NVML calls take ~1 ms each: outside the lock
        lock.lock();
        m_new = std::move(record);
        m_wake.wait_for(lock, m_interval, [this] { return m_stop; });
    }
}

core::GpuRecord GpuMonitor::sample() const
{
    core::GpuRecord record;
    record.time = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    const double nan = std::nan("");
    for (size_t i = 0; i < m_indices.size(); ++i) {
        NvmlDevice device = m_nvml->devices[i];
        core::GpuSample s;
        s.index = m_indices[i];
        NvmlUtilization util{};
        s.utilPct = m_nvml->utilization(device, &util) == kNvmlSuccess ? util.gpu : nan;
        NvmlMemory memory{};
        if (m_nvml->memory(device, &memory) == kNvmlSuccess) {
            s.memUsedGib = static_cast<double>(memory.used) / kGib;
            s.memTotalGib = static_cast<double>(memory.total) / kGib;
        }
        unsigned int value = 0;
        s.powerW = m_nvml->power(device, &value) == kNvmlSuccess ? value / 1000.0 : nan;
        s.tempC = m_nvml->temperature(device, kNvmlTemperatureGpu, &value) == kNvmlSuccess ? value : nan;
        s.smClockMhz = m_nvml->clock(device, kNvmlClockSm, &value) == kNvmlSuccess ? value : nan;
        record.gpus.push_back(s);
    }
    return record;
}

std::optional<core::GpuRecord> GpuMonitor::takeNew()
{
    std::lock_guard lock(m_mutex);
    return std::exchange(m_new, std::nullopt);
}

std::vector<int> GpuMonitor::localDeviceIndices(int localRanks)
{
    std::vector<int> out;
    if (const char* visible = std::getenv("CUDA_VISIBLE_DEVICES"); visible && *visible) {
        std::stringstream list(visible);
        std::string item;
        while (std::getline(list, item, ',') && static_cast<int>(out.size()) < localRanks) {
            char* end = nullptr;
            const long index = std::strtol(item.c_str(), &end, 10);
            if (item.empty() || *end != '\0' || index < 0)
                return {};  // UUIDs or MIG names: not mapped to NVML indices here
            out.push_back(static_cast<int>(index));
        }
        return out;
    }
    for (int i = 0; i < localRanks; ++i)
        out.push_back(i);
    return out;
}

std::chrono::milliseconds GpuMonitor::intervalFromEnvironment()
{
    const char* v = std::getenv("WB_GPU_SAMPLE_S");
    const double seconds = v && *v ? std::atof(v) : 5.0;
    if (!(seconds >= 0.1 && seconds <= 3600.0))
        return std::chrono::milliseconds(5000);
    return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

}  // namespace wb::rt
