// makeTarget: the one place that turns a target string into a RunTarget, for the CLI and the GUI.
//   local            this machine (LocalTarget)
//   ssh:HOST         one host registered in hosts.json (SshTarget)
//   ssh:A,B,...      several hosts, one launch per node with the rank environment (MultiSshTarget)
//   slurm:HOST       a Slurm cluster reached through login host HOST (SlurmTarget)
// Unknown host keys are refused by the targets; accepting one is `hosts test --accept-new-host-key`
// (CLI) or the host-key dialog (GUI).
// Threading: constructs objects only (no network); any thread.
#pragma once

#include "core/result.h"
#include "core/run_target.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace wb::remote {

struct TargetContext {
    std::string moeTrainPath;  ///< the local moe-train (beside the workbench's own binaries)
    std::string runsRoot;      ///< local run directories
    std::string hostsPath;     ///< hosts.json (remote::defaultHostsPath(store path))
    /// The runtime sources uploaded to hosts with moe_train "auto". Empty = the install's
    /// share/moe-workbench/runtime-src beside moeTrainPath, else the source tree of this build.
    std::string runtimeSourceDir = {};
    /// Told about each reconnect attempt of an SSH session of the target (ssh:, ssh:A,B, the
    /// login node of slurm:; the GUI shows "reconnecting"); may be empty.
    std::function<void(int attempt, const std::string& reason)> onReconnecting = {};
    /// Asks for a password or a keyboard-interactive answer (never stored) whenever an SSH
    /// session of the target needs one (every node of ssh:A,B, the login node of slurm:, and
    /// again after a reconnect); empty = the agent and key files only.
    std::function<std::optional<std::string>(const std::string& prompt, bool echo)> askSecret = {};
};

/// The runtime sources uploaded to provisioned hosts: context.runtimeSourceDir, else the
/// install's share/moe-workbench/runtime-src beside moeTrainPath, else this build's source tree;
/// empty when none is there.
std::string runtimeSourceDir(const TargetContext& context);

/// InvalidArgument naming the accepted forms when `spec` is none of them; NotFound (with the
/// registered names) for an unknown host.
core::Result<std::unique_ptr<core::RunTarget>> makeTarget(const std::string& spec,
                                                          const TargetContext& context);

}  // namespace wb::remote
