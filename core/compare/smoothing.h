// Chart smoothing: an exponential moving average with debiasing (Adam's bias correction, as
// TensorBoard draws it). A plain EMA started at 0 drags the first points toward 0; dividing by
// 1 - w^t removes that start-up bias, so the smoothed line starts on the data. Pure; any thread.
#pragma once

#include <vector>

namespace wb::core {

/// s_t = w·s_{t-1} + (1 - w)·y_t with s_0 = 0, returned as s_t / (1 - w^t), t counting the finite
/// values seen so far. `weight` in [0, 1): 0 returns the input unchanged. A non-finite value (a
/// diverged loss) is passed through as is and does not enter the average.
std::vector<double> emaDebiased(const std::vector<double>& values, double weight);

}  // namespace wb::core
