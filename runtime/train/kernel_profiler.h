// The kernel profile (kernel_profile.h) as the training loop runs it: the window from
// WB_PROFILE_STEPS, one trace file per rank in the run directory (kernel_trace.json on rank 0,
// kernel_trace.rank<k>.json on the others), an event when a trace is written. Training thread only.
#pragma once

#include "runtime/train/kernel_profile.h"
#include "runtime/train/run_reporting.h"

#include <cstdint>
#include <memory>
#include <string>

namespace wb::rt {

class KernelProfiler {
public:
    /// Null when WB_PROFILE_STEPS is unset, or (with a warning event at `step`) when this build
    /// cannot profile kernels. Throws RunFailure (exit 2) for a malformed WB_PROFILE_STEPS.
    static std::unique_ptr<KernelProfiler> fromEnvironment(const std::string& runDir, int rank, int64_t step,
                                                           const EventSink& event);

    KernelProfiler(KernelProfile::Window window, std::string tracePath, EventSink event);

    /// Before step `step` runs / after it has finished.
    void beforeStep(int64_t step);
    void afterStep(int64_t step);
    /// True when beforeStep(step) starts the trace / afterStep(step) ends it.
    bool startsAt(int64_t step) const { return m_profile.startsAt(step); }
    bool endsAfter(int64_t step) const { return m_profile.endsAfter(step); }

private:
    KernelProfile m_profile;
    EventSink m_event;
};

}  // namespace wb::rt
