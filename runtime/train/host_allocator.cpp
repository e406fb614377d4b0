#include "runtime/train/host_allocator.h"

#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace wb::rt {

HostAllocatorSettings hostAllocatorSettings()
{
    constexpr size_t kMiB = size_t(1) << 20;
    return {32 * kMiB, 256 * kMiB, 64 * kMiB};
}

std::string tuneHostAllocator()
{
#if defined(__GLIBC__)
    const HostAllocatorSettings s = hostAllocatorSettings();
    std::string applied;
    const auto set = [&](const char* environment, int parameter, size_t value, const char* name) {
        if (std::getenv(environment))
            return;
        if (mallopt(parameter, static_cast<int>(value)) == 1)
            applied += std::string(applied.empty() ? "" : ", ") + name + " " + std::to_string(value >> 20) + " MiB";
    };
    set("MALLOC_MMAP_THRESHOLD_", M_MMAP_THRESHOLD, s.mmapThreshold, "mmap threshold");
    set("MALLOC_TRIM_THRESHOLD_", M_TRIM_THRESHOLD, s.trimThreshold, "trim threshold");
    set("MALLOC_TOP_PAD_", M_TOP_PAD, s.topPad, "top pad");
    return applied;
#else
    return {};
#endif
}

}  // namespace wb::rt
