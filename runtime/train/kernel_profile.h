// Kernel-level profile of a few training steps through LibTorch's Kineto profiler, for finding
// where a GPU step's time goes (benchmarks/gpu_profile_ours.sh summarizes the trace). Enabled by
// the environment: WB_PROFILE_STEPS=A:B profiles steps A..B (inclusive) and writes a Chrome trace
// (chrome://tracing, Perfetto) to RUN_DIR/kernel_trace.json when step B ends. Off by default: the
// profiler costs host time per op. Builds without Kineto (the CPU build on Debian's LibTorch 1.13)
// report that instead of profiling. Training thread only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace wb::rt {

class KernelProfile {
public:
    struct Window {
        int64_t first = 0;
        int64_t last = 0;
    };
    /// Reads WB_PROFILE_STEPS; nullopt when unset. Throws std::invalid_argument for a malformed
    /// value (the message names the variable and the expected form).
    static std::optional<Window> windowFromEnvironment();
    /// True when this build can profile CUDA kernels (CUDA build on LibTorch >= 2.0).
    static bool available();

    KernelProfile(Window window, std::string tracePath);
    ~KernelProfile();

    /// Call before step `step` runs / after it has finished (the device synchronized).
    void beforeStep(int64_t step);
    /// Returns the trace path once written (after the window's last step), else nullopt.
    std::optional<std::string> afterStep(int64_t step);
    /// True when beforeStep(step) starts the trace.
    bool startsAt(int64_t step) const { return !m_running && step == m_window.first; }
    /// True when afterStep(step) ends a running trace.
    bool endsAfter(int64_t step) const { return m_running && step == m_window.last; }

private:
    Window m_window;
    std::string m_tracePath;
    bool m_running = false;
};

}  // namespace wb::rt
