// Step phase timing (see step_timer.h).
#include "runtime/train/step_timer.h"

#include <utility>

#if WB_WITH_CUDA
#include <ATen/cuda/CUDAEvent.h>
#endif

namespace wb::rt {

struct StepTimer::DeviceEvents {
#if WB_WITH_CUDA
    // Every begin()/end() records one event; each interval is (phase, from, to) into `events`,
    // `last` the event the next interval starts from.
    std::vector<at::cuda::CUDAEvent> events;
    std::vector<std::array<int, 3>> intervals;
    int last = -1;

    /// Adds one interval's elapsed time to its phase in `ms` (both events must have completed).
    void addInterval(const std::array<int, 3>& interval, std::array<double, kPhaseCount>& ms)
    {
        const auto& [phase, from, to] = interval;
        ms[static_cast<size_t>(phase)] +=
            events[static_cast<size_t>(from)].elapsed_time(events[static_cast<size_t>(to)]);
    }
#endif
};

StepTimer::StepTimer(torch::Device device) : m_cuda(device.is_cuda()), m_events(std::make_unique<DeviceEvents>())
{
    m_last = std::chrono::steady_clock::now();
}

StepTimer::~StepTimer() = default;

void StepTimer::begin()
{
#if WB_WITH_CUDA
    if (m_cuda) {
        m_events->events.emplace_back(cudaEventDefault);  // timing on (the default flag disables it)
        m_events->events.back().record();
        m_events->last = static_cast<int>(m_events->events.size()) - 1;
        return;
    }
#endif
    m_last = std::chrono::steady_clock::now();
}

void StepTimer::end(Phase phase)
{
#if WB_WITH_CUDA
    if (m_cuda) {
        m_events->events.emplace_back(cudaEventDefault);
        m_events->events.back().record();
        const int now = static_cast<int>(m_events->events.size()) - 1;
        m_events->intervals.push_back({static_cast<int>(phase), m_events->last, now});
        m_events->last = now;
        return;
    }
#endif
    const auto now = std::chrono::steady_clock::now();
    (m_cpuMarked ? m_cpuRestMs : m_ms)[phase] += std::chrono::duration<double, std::milli>(now - m_last).count();
    m_cpuHasRest = m_cpuHasRest || m_cpuMarked;
    m_last = now;
}

void StepTimer::markHostWait()
{
#if WB_WITH_CUDA
    if (m_cuda) {
        // An event outside the phase chain: the next end() still measures from m_events->last.
        m_events->events.emplace_back(cudaEventDisableTiming);
        m_events->events.back().record();
        m_waitEvent = static_cast<int>(m_events->events.size()) - 1;
        return;
    }
#endif
    m_cpuMarked = true;
}

void StepTimer::finish()
{
#if WB_WITH_CUDA
    if (m_cuda) {
        // The current stream only: work on other streams that it does not wait for (the
        // overlapped optimizer's updates, optimizer_overlap.h) goes on into the next step, and so
        // does the work queued after markHostWait's event.
        if (m_events->events.empty()) {
            torch::cuda::synchronize();
            return;
        }
        const int waitFor = m_waitEvent >= 0 ? m_waitEvent : static_cast<int>(m_events->events.size()) - 1;
        m_events->events[static_cast<size_t>(waitFor)].synchronize();
        for (const auto& interval : m_events->intervals) {
            if (interval[2] > waitFor)  // recorded after the wait point: may not have run yet
                m_rest.push_back(interval);
            else
                m_events->addInterval(interval, m_ms);
        }
        m_events->intervals.clear();
        if (m_rest.empty())
            m_events->events.clear();
    }
#endif
}

void StepTimer::finishRest()
{
#if WB_WITH_CUDA
    if (m_cuda && !m_rest.empty()) {
        m_events->events.back().synchronize();
        for (const auto& interval : m_rest)
            m_events->addInterval(interval, m_ms);
        m_rest.clear();
        m_events->events.clear();
    }
#endif
    for (size_t phase = 0; phase < m_ms.size(); ++phase)
        m_ms[phase] += std::exchange(m_cpuRestMs[phase], 0.0);
    m_cpuHasRest = false;
}

}  // namespace wb::rt
