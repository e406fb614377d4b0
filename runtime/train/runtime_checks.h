// What this build of moe-train can run, on top of core's config validation: problems a config
// can have that are about the runtime (vocab too small for the byte tokenizer, parallelism not
// implemented yet, CUDA absent). Any thread.
#pragma once

#include "core/run_config.h"

#include <vector>

namespace wb::rt {

/// Runtime-specific problems for a config that runs on `worldSize` ranks.
std::vector<core::ConfigProblem> runtimeProblems(const core::RunConfig& config, int worldSize);

/// Core's validation + layout for the world size + runtimeProblems, duplicates removed.
std::vector<core::ConfigProblem> allProblems(const core::RunConfig& config, int worldSize);

/// WORLD_SIZE from the torchrun environment, 1 if unset.
int worldSizeFromEnvironment();

/// True when this binary was built with CUDA and a device is visible.
bool cudaUsable();

}  // namespace wb::rt
