// Learning-rate schedule (see lr_schedule.h).
#include "runtime/train/lr_schedule.h"

#include <algorithm>
#include <cmath>

namespace wb::rt {

double learningRate(const core::TrainConfig& t, int64_t step)
{
    if (t.lrWarmupIters > 0 && step <= t.lrWarmupIters)
        return t.lr * static_cast<double>(step) / static_cast<double>(t.lrWarmupIters);
    if (t.lrDecayStyle == "constant")
        return t.lr;
    const int64_t decaySteps = std::max<int64_t>(1, t.trainIters - t.lrWarmupIters);
    const double progress =
        std::clamp(static_cast<double>(step - t.lrWarmupIters) / static_cast<double>(decaySteps), 0.0, 1.0);
    const double factor = t.lrDecayStyle == "linear" ? 1.0 - progress
                                                      : 0.5 * (1.0 + std::cos(M_PI * progress));
    return t.minLr + (t.lr - t.minLr) * factor;
}

}  // namespace wb::rt
