// What the workbench's own shell scripts on a target say back: the exit codes that tell their
// findings apart from a command that failed, and the status script's answer (key=value lines, a
// separator, then status.json verbatim) that the SSH and Slurm targets both parse. Pure functions;
// any thread.
#pragma once

#include <map>
#include <string>

namespace wb::remote {

// Exit codes, chosen outside the ranges sh (126, 127, 128+N), sbatch (1) and moe-train (0-5) use.
/// The run directory exists and belongs to another launch (another token, or an older workbench's).
inline constexpr int kExitForeignRunDir = 17;
/// The run directory, its pid file or its Slurm job id is not there: nothing of the run to act on.
inline constexpr int kExitNoRunData = 44;
/// Processes of the run's group survived SIGKILL (they are listed on stderr).
inline constexpr int kExitSurvivedKill = 45;
/// The login node's python for Megatron-Bridge cannot `import megatron.bridge` (its last lines follow).
inline constexpr int kExitNoBridge = 47;
/// sbatch refused the job (its stderr is passed on; the answer file records the refusal).
inline constexpr int kExitSubmitRefused = 50;

/// "exit N" for a script line.
inline std::string exitWith(int code)
{
    return "exit " + std::to_string(code);
}

/// The script line that ends the key=value part of a status answer; status.json follows it.
inline constexpr const char* kStatusSeparatorLine = "echo ---\n";

/// A status script's answer: its key=value lines (a key without '=' maps to "") and status.json
/// as read (torn, empty or missing reads as ""; parse it with core::parseStatusFile).
struct StatusReply {
    std::map<std::string, std::string> fields;
    std::string statusJson;
};
StatusReply parseStatusReply(const std::string& out);

/// `text` without leading and trailing white space (a command's output or error, for messages).
std::string trimmed(std::string text);

}  // namespace wb::remote
