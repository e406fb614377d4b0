// GpuMonitor (runtime/train/gpu_monitor.h) against a stand-in NVML (fake_nvml.c, loaded through
// WB_NVML_LIBRARY): what it samples per device, a sensor a device lacks (NaN, not 0), the reasons
// it gives when NVML is missing, fails to start or lacks a device, CUDA_VISIBLE_DEVICES mapping,
// and that a sample becomes one "gpu" metrics line. Runs on the CPU; a real GPU round checks NVML.
#include "check.h"
#include "runtime/train/gpu_monitor.h"

#include <cstdlib>

using namespace wb;

namespace {

void testSamplesTheDevices()
{
    setenv("WB_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    std::string whyNot;
    auto monitor = rt::GpuMonitor::start({0, 1}, std::chrono::milliseconds(50), whyNot);
    WB_CHECK_MSG(monitor != nullptr, whyNot);
    if (!monitor)
        return;
    std::optional<core::GpuRecord> record;
    for (int i = 0; i < 100 && !record; ++i) {
        record = monitor->takeNew();
        if (!record)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    WB_CHECK(record.has_value());
    if (!record)
        return;
    WB_CHECK(record->time > 1.6e9);
    WB_CHECK(record->gpus.size() == 2);
    const core::GpuSample& a = record->gpus[0];
    WB_CHECK(a.index == 0 && a.utilPct == 90.0 && a.tempC == 61.0 && a.smClockMhz == 1980.0);
    WB_CHECK(std::abs(a.powerW - 612.5) < 1e-9);
    WB_CHECK(std::abs(a.memUsedGib - 85.0) < 1e-9 && std::abs(a.memTotalGib - 140.0) < 1e-9);
    const core::GpuSample& b = record->gpus[1];
    WB_CHECK(b.index == 1 && b.utilPct == 91.0);
    WB_CHECK(std::isnan(b.powerW));  // no power sensor: unknown, not 0 W
    // Taken once; the next sample arrives after the interval.
    WB_CHECK(!monitor->takeNew().has_value());
    std::optional<core::GpuRecord> next;
    for (int i = 0; i < 100 && !next; ++i) {
        next = monitor->takeNew();
        if (!next)
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    WB_CHECK(next.has_value() && next->time >= record->time);
    // As a metrics line and back: a gpu record, the missing power as null.
    record->step = 12;
    const std::string line = core::toJsonLine(*record);
    WB_CHECK_MSG(line.find("\"type\":\"gpu\"") != std::string::npos && line.find("\"power_w\":null") != std::string::npos,
                 line);
    auto parsed = core::parseMetricsLine(line);
    WB_CHECK(parsed && std::holds_alternative<core::GpuRecord>(*parsed));
    if (parsed) {
        const auto& back = std::get<core::GpuRecord>(*parsed);
        WB_CHECK(back.step == std::optional<int64_t>(12) && back.gpus.size() == 2 && back.gpus[0].smClockMhz == 1980.0 &&
                 std::isnan(back.gpus[1].powerW));
    }
    monitor.reset();  // joins the sampler promptly (the interval is a wait, not a sleep)
}

void testSaysWhyNot()
{
    std::string whyNot;
    setenv("WB_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
    WB_CHECK(!rt::GpuMonitor::start({0}, std::chrono::milliseconds(50), whyNot));
    WB_CHECK_MSG(whyNot.find("NVML is not loadable") != std::string::npos, whyNot);

    setenv("WB_NVML_LIBRARY", FAKE_NVML_PATH, 1);
    setenv("FAKE_NVML_INIT_FAILS", "1", 1);
    whyNot.clear();
    WB_CHECK(!rt::GpuMonitor::start({0}, std::chrono::milliseconds(50), whyNot));
    WB_CHECK_MSG(whyNot.find("nvmlInit failed") != std::string::npos && whyNot.find("driver") != std::string::npos, whyNot);
    unsetenv("FAKE_NVML_INIT_FAILS");

    whyNot.clear();
    WB_CHECK(!rt::GpuMonitor::start({0, 7}, std::chrono::milliseconds(50), whyNot));
    WB_CHECK_MSG(whyNot.find("no device 7") != std::string::npos, whyNot);
}

void testDeviceIndices()
{
    unsetenv("CUDA_VISIBLE_DEVICES");
    WB_CHECK((rt::GpuMonitor::localDeviceIndices(3) == std::vector<int>{0, 1, 2}));
    setenv("CUDA_VISIBLE_DEVICES", "4,6,7", 1);
    WB_CHECK((rt::GpuMonitor::localDeviceIndices(2) == std::vector<int>{4, 6}));
    setenv("CUDA_VISIBLE_DEVICES", "GPU-8f1e2c3d", 1);
    WB_CHECK(rt::GpuMonitor::localDeviceIndices(1).empty());  // UUIDs are not NVML indices
    unsetenv("CUDA_VISIBLE_DEVICES");
    setenv("WB_GPU_SAMPLE_S", "0.5", 1);
    WB_CHECK(rt::GpuMonitor::intervalFromEnvironment() == std::chrono::milliseconds(500));
    setenv("WB_GPU_SAMPLE_S", "-3", 1);
    WB_CHECK(rt::GpuMonitor::intervalFromEnvironment() == std::chrono::milliseconds(5000));
    unsetenv("WB_GPU_SAMPLE_S");
}

}  // namespace

int main()
{
    testSamplesTheDevices();
    testSaysWhyNot();
    testDeviceIndices();
    return test::checkExitCode("test_gpu_monitor");
}
