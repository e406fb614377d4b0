// Learning-rate schedule: linear warmup to train.lr over lr_warmup_iters, then cosine, linear or
// constant decay to train.min_lr at train_iters (Megatron's OptimizerParamScheduler shape).
// Pure function; any thread.
#pragma once

#include "core/run_config.h"

#include <cstdint>

namespace wb::rt {

/// Learning rate for optimizer step `step` (1-based: the first step uses step = 1).
double learningRate(const core::TrainConfig& train, int64_t step);

}  // namespace wb::rt
