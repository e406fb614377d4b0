/* A stand-in for libnvidia-ml.so.1 (the test loads it through WB_NVML_LIBRARY): the entry points
 * GpuMonitor calls, with NVML's C signatures, answering fixed values per device so the test can
 * check what the monitor reads and writes. Device 1 has no power sensor (NVML_ERROR_NOT_SUPPORTED
 * = 3), device 7 does not exist (NVML_ERROR_INVALID_ARGUMENT = 2). FAKE_NVML_INIT_FAILS makes
 * nvmlInit fail (NVML_ERROR_DRIVER_NOT_LOADED = 9). */
#include <stdint.h>
#include <stdlib.h>

typedef struct { unsigned int gpu, memory; } Utilization;
typedef struct { unsigned long long total, free, used; } Memory;

static int initialized;

int nvmlInit_v2(void)
{
    if (getenv("FAKE_NVML_INIT_FAILS"))
        return 9;
    initialized = 1;
    return 0;
}
int nvmlShutdown(void) { initialized = 0; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void** device)
{
    if (!initialized || index > 3)
        return 2;
    *device = (void*)(uintptr_t)(index + 1);
    return 0;
}
static unsigned int indexOf(void* device) { return (unsigned int)((uintptr_t)device - 1); }
int nvmlDeviceGetUtilizationRates(void* device, Utilization* u)
{
    u->gpu = 90 + indexOf(device);
    u->memory = 40;
    return 0;
}
int nvmlDeviceGetMemoryInfo(void* device, Memory* m)
{
    (void)device;
    m->total = 140ull << 30;
    m->used = 85ull << 30;
    m->free = m->total - m->used;
    return 0;
}
int nvmlDeviceGetPowerUsage(void* device, unsigned int* milliwatts)
{
    if (indexOf(device) == 1)
        return 3;
    *milliwatts = 612500;
    return 0;
}
int nvmlDeviceGetTemperature(void* device, int sensor, unsigned int* celsius)
{
    (void)device;
    if (sensor != 0)
        return 2;
    *celsius = 61;
    return 0;
}
int nvmlDeviceGetClockInfo(void* device, int clock, unsigned int* mhz)
{
    (void)device;
    if (clock != 1)
        return 2;
    *mhz = 1980;
    return 0;
}
