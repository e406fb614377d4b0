// Targets for the GUI: turns a target string ("local", "ssh:HOST", and whatever else
// remote::makeTarget learns: "ssh:A,B", "slurm:HOST") into a RunTarget, with the GUI's hooks
// attached to every SSH session of it: reconnect attempts (so the run list can say
// "reconnecting" instead of "failed") and the password / keyboard-interactive prompt (a dialog;
// answers are never stored). Also lists the targets a user can pick in the launch dialog.
// Threading: constructs objects and reads hosts.json only (no network); any thread. The target
// it returns is used on ONE thread afterwards (the worker that called this).
#pragma once

#include "core/result.h"
#include "core/run_target.h"

#include <QStringList>

#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace wb::ui {

/// Told about each reconnect attempt of a remote target (attempt ≥ 1, why). Called on the thread
/// that uses the target.
using ReconnectFn = std::function<void(int attempt, const std::string& reason)>;

/// Makes the target for `spec`; `onReconnecting` may be empty. The resolver the GUI uses is
/// makeGuiTarget below bound to the app's paths; tests bind their own paths.
using TargetResolver =
    std::function<core::Result<std::unique_ptr<core::RunTarget>>(const std::string& spec, ReconnectFn onReconnecting)>;

/// Asks for a password or keyboard-interactive answer (prompt, echo) on a worker thread;
/// nullopt = the user declined. See makeGuiSecretPrompt (host_key_dialog.h).
using SecretPrompt = std::function<std::optional<std::string>(const std::string& prompt, bool echo)>;

struct GuiTargetPaths {
    std::string moeTrainPath;  ///< the local moe-train
    std::string runsRoot;      ///< local run directories
    std::string hostsPath;     ///< hosts.json (slurm.json beside it)
    /// Given to every SSH session of ssh:, ssh:A,B and slurm: targets; empty = keys only.
    SecretPrompt askSecret = {};
};

/// "ssh:NAME" (one host) is built here so the reconnect hook can be attached (makeTarget has no
/// parameter for it); NAME may be a registered name or, for runs recorded by SshTarget::name(),
/// the host alias of a registered entry. Everything else goes to remote::makeTarget.
core::Result<std::unique_ptr<core::RunTarget>> makeGuiTarget(const std::string& spec, const GuiTargetPaths& paths,
                                                             const ReconnectFn& onReconnecting);

/// What the launch dialog offers: "local", then "ssh:NAME" for every registered host, then
/// "slurm:NAME" for every registered host that has an entry in slurm.json (beside hosts.json). A
/// hosts.json or slurm.json that cannot be read gives what could be read and `error` says why.
QStringList launchTargetChoices(const std::string& hostsPath, QString* error = nullptr);

}  // namespace wb::ui
