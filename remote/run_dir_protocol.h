// The exit codes the workbench's own shell scripts on a target use to say what they found, so
// the C++ side tells them apart from a command that failed (ssh_target.cpp, slurm_target.cpp).
// Chosen outside the ranges sh (126, 127, 128+N), sbatch (1) and moe-train (0-5) use.
#pragma once

#include <string>

namespace wb::remote {

/// The run directory, its pid file or its Slurm job id is not there: nothing of the run to act on.
inline constexpr int kExitNoRunData = 44;
/// The login node's python for Megatron-Bridge cannot `import megatron.bridge` (its last lines follow).
inline constexpr int kExitNoBridge = 47;
/// sbatch refused the job (its stderr is passed on; the answer file records the refusal).
inline constexpr int kExitSubmitRefused = 50;

/// "exit N" for a script line.
inline std::string exitWith(int code) { return "exit " + std::to_string(code); }

}  // namespace wb::remote
