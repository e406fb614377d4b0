// The kernel profile in the training loop (see kernel_profiler.h).
#include "runtime/train/kernel_profiler.h"

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <utility>

namespace wb::rt {

// WB_PROFILE_STEPS (kernel_profile.h): every rank profiles the window into its own trace file.
std::unique_ptr<KernelProfiler> KernelProfiler::fromEnvironment(const std::string& runDir, int rank, int64_t step,
                                                                const EventSink& event)
{
    std::optional<KernelProfile::Window> window;
    try {
        window = KernelProfile::windowFromEnvironment();
    } catch (const std::invalid_argument& e) {
        throw RunFailure{2, e.what()};
    }
    if (!window)
        return nullptr;
    if (!KernelProfile::available()) {
        event("warning", "WB_PROFILE_STEPS is set, but this build has no kernel profiler (a CUDA build on LibTorch >= 2.0 has it); not profiling", step);
        return nullptr;
    }
    const std::string name = rank == 0 ? "kernel_trace.json" : "kernel_trace.rank" + std::to_string(rank) + ".json";
    return std::make_unique<KernelProfiler>(*window, (std::filesystem::path(runDir) / name).string(), event);
}

KernelProfiler::KernelProfiler(KernelProfile::Window window, std::string tracePath, EventSink event)
    : m_profile(window, std::move(tracePath)), m_event(std::move(event))
{
}

void KernelProfiler::beforeStep(int64_t step)
{
    m_profile.beforeStep(step);
}

void KernelProfiler::afterStep(int64_t step)
{
    if (auto trace = m_profile.afterStep(step))
        m_event("info", "kernel profile written to " + *trace, step);
}

}  // namespace wb::rt
