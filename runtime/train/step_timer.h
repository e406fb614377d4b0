// Per-step phase timing for the metrics. CPU: the host clock at each boundary (ops are
// synchronous). CUDA: an event recorded on the current stream at each boundary, no host sync;
// finish() waits once at the end of the step for the current stream and sums the event
// intervals per phase — or, after markHostWait(), only for the work queued before the mark, and
// finishRest() adds the phases queued after it once they have run (the trainer's host-ahead step).
// Training thread only.
#pragma once

#include <torch/torch.h>

#include <array>
#include <chrono>
#include <memory>
#include <vector>

namespace wb::rt {

class StepTimer {
public:
    enum Phase { Vision, Projector, Decoder, Backward, Optimizer, kPhaseCount };

    explicit StepTimer(torch::Device device);
    ~StepTimer();

    /// Starts a run of consecutive phases (after a host-side wait such as the data loader).
    void begin();
    /// The time since the last begin()/end() belongs to `phase`.
    void end(Phase phase);
    /// One device synchronize, then the per-phase sums are available from ms(). After
    /// markHostWait() it waits only for the work queued before the mark; the phases that end
    /// after it are left for finishRest().
    void finish();
    /// CUDA: what is queued after this point (the optimizer's updates) may still run when finish()
    /// returns, while the host goes on queueing the next step. CPU (ops are synchronous): the
    /// phases that end after it are held back the same way, so the caller's flow is the same.
    void markHostWait();
    /// True when finish() left phases to finishRest().
    bool hasRest() const { return !m_rest.empty() || m_cpuHasRest; }
    /// Waits for the last event and adds the phases finish() left (their sums in ms()).
    void finishRest();
    double ms(Phase phase) const { return m_ms[phase]; }

private:
    struct DeviceEvents;  // CUDA events, defined only in CUDA builds
    bool m_cuda;
    std::array<double, kPhaseCount> m_ms{};
    std::chrono::steady_clock::time_point m_last;
    std::unique_ptr<DeviceEvents> m_events;
    int m_waitEvent = -1;                    ///< markHostWait's event, -1 when unmarked
    std::vector<std::array<int, 3>> m_rest;  ///< (phase, from, to) intervals finish() left
    bool m_cpuMarked = false;                ///< CPU: markHostWait() called
    bool m_cpuHasRest = false;               ///< CPU: a phase ended after the mark
    std::array<double, kPhaseCount> m_cpuRestMs{};
};

}  // namespace wb::rt
