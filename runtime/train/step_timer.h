// Per-step phase timing for the metrics. CPU: the host clock at each boundary (ops are
// synchronous). CUDA: an event recorded on the current stream at each boundary, no host sync;
// finish() waits once at the end of the step for the current stream and sums the event
// intervals per phase.
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
    /// One device synchronize, then the per-phase sums are available from ms().
    void finish();
    double ms(Phase phase) const { return m_ms[phase]; }

private:
    struct DeviceEvents;  // CUDA events, defined only in CUDA builds
    bool m_cuda;
    std::array<double, kPhaseCount> m_ms{};
    std::chrono::steady_clock::time_point m_last;
    std::unique_ptr<DeviceEvents> m_events;
};

}  // namespace wb::rt
