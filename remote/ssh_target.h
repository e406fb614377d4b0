// SshTarget: runs moe-train on one SSH host with the run directory contract of DESIGN.md §3.3
// (~/.cache/moe-workbench/runs/<id>/ on the host), detached in its own session and process group
// (setsid + nohup), so the run survives the workbench and the connection. Metrics come back over
// SFTP from a byte offset; a dropped connection is re-established with backoff inside each call,
// and since the caller reads from the store's offset, the stream is backfilled with nothing lost
// or repeated.
//
// moe-train on the host: an explicit path (SshTargetOptions::moeTrainPath), or provisioned
// (SshTargetOptions::provision, hosts.json `moe_train: "auto"`): the node is checked, the runtime
// source bundle uploaded and built there once per source hash (remote/provision.h), reported
// through the launch progress phases check, upload, build; then start.
//
// Threading: owns one SshSession, so one SshTarget is used from ONE thread (a worker, never the
// GUI thread). Every call may block for up to the reconnect budget.
#pragma once

#include "core/run_target.h"
#include "remote/provision.h"
#include "remote/ssh_session.h"

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace wb::remote {

/// What a caller (the CLI, the GUI) attaches to every SSH session a target opens: the
/// password/keyboard-interactive prompt and the reconnect report. Both may be empty.
struct SshTargetHooks {
    /// Asked when no key works (SshHostSpec::askSecret); the answer is used once, never stored.
    std::function<std::optional<std::string>(const std::string& prompt, bool echo)> askSecret;
    /// Told about each reconnect attempt (SshTargetOptions::onReconnecting).
    std::function<void(int attempt, const std::string& reason)> onReconnecting;
};

struct SshTargetOptions {
    SshHostSpec host;
    /// The name users type (`ssh:NAME`, the hosts.json entry); empty = host.host. It is what the
    /// store records, so `watch`/`cancel` find the entry again even when it names another host.
    std::string hostName;
    std::string moeTrainPath;  ///< moe-train on the host: absolute, or "~/..." (expanded there)
    /// Build moe-train on the host (check, upload, build, cached by source hash) instead of
    /// using moeTrainPath. `provisioning.sourceDir` must then name the runtime sources here.
    bool provision = false;
    ProvisionOptions provisioning;
    /// Parent of the run directories on the host. Empty = ~/.cache/moe-workbench/runs of the
    /// remote user; a leading "~/" is expanded on the host.
    std::string runsRoot;
    /// How long one call keeps trying to reconnect (backoff 250 ms doubling to 5 s) before it
    /// gives up with IoError. The run itself is unaffected by a lost connection.
    std::chrono::milliseconds reconnectBudget{60000};
    /// How long one remote command may take before the connection is dropped and the command
    /// retried (idempotent: see run_dir_claim.h). Long waits (builds, cancel) poll instead.
    std::chrono::milliseconds commandTimeout{60000};
    /// Told about each reconnect attempt (attempt number, why), e.g. to show "reconnecting" rather
    /// than "failed". Called on the calling thread.
    std::function<void(int attempt, const std::string& reason)> onReconnecting;

    /// Sets host.askSecret and onReconnecting from `hooks` (empty ones leave them as they are).
    void attach(const SshTargetHooks& hooks);
};

class SshTarget : public core::RunTarget {
public:
    explicit SshTarget(SshTargetOptions options);
    ~SshTarget() override;

    /// "ssh:" + the entry name (or the host as given: an ssh config alias or a name).
    std::string name() const override { return "ssh:" + node(); }
    /// The entry name, or the host as given; progress reports name the node by it.
    const std::string& node() const { return m_options.hostName.empty() ? m_options.host.host : m_options.hostName; }

    /// Connects now (also done lazily by every call). Errors as SshSession::connect; an unknown
    /// or changed host key is never retried.
    core::Result<void> connect(HostKeyInfo* hostKey = nullptr);

    /// Runs `moe-train --validate` on the host on a temporary copy of the config, for the ranks
    /// a launch starts there (ranksFor).
    core::Result<void> validateConfig(const std::string& configJson) override;
    /// The ranks a run of this config starts on the node, as torchrun's --nproc-per-node gpu:
    /// one per GPU the node check finds for a cuda config, 1 for a cpu config or a CPU-only node.
    /// Remembered for the target's lifetime once the node was checked.
    core::Result<int> ranksFor(const std::string& configJson);
    /// The same for a run of `worldSize` ranks in all (multi-node: batch sizes must divide).
    core::Result<void> validateConfigForWorld(const std::string& configJson, int worldSize);
    /// Starts ranksFor(config) ranks (`--nproc-per-node N` when N > 1).
    /// Errors: InvalidArgument (bad run id), NotFound (moe-train missing on the host), Busy (the
    /// run directory exists), IoError (connection), Failed (the remote shell failed).
    core::Result<core::LaunchedRun> launch(const core::LaunchRequest& request) override;
    core::Result<core::MetricsChunk> readMetrics(const std::string& runDir, int64_t offset,
                                                 int64_t maxBytes) override;
    core::Result<core::MetricsChunk> readFile(const std::string& path, int64_t offset, int64_t maxBytes) override;
    /// Liveness: a non-zombie process left in the process group recorded in DIR/pid (via ps on the
    /// host; kill -0 where ps is missing).
    core::Result<core::RunStatus> status(const std::string& runDir) override;
    /// TERM to the group, KILL after `grace`, then Failed naming any survivor.
    core::Result<void> cancel(const std::string& runDir, std::chrono::milliseconds grace) override;

    /// Launch with extra moe-train arguments (multi-node: --nproc-per-node, --nnodes, ...).
    core::Result<core::LaunchedRun> launchWithArgs(const core::LaunchRequest& request,
                                                   const std::vector<std::string>& extraArgs);

    /// The node check (phase "check"): GPUs, LibTorch, cmake, compiler, disk. The report says
    /// what is missing; Failed only when the check itself could not run.
    core::Result<NodeReport> checkNode();
    /// The moe-train to run: the configured path, or the provisioned build (checking, uploading
    /// and building on first use; then remembered for this target's lifetime).
    core::Result<std::string> moeTrain();
    /// Whether provisioning uploaded the source bundle (false when a cached build was found).
    bool uploadedBundle() const { return m_uploadedBundle; }
    /// The host name as connected to (after ssh config's HostName); connects if needed.
    core::Result<std::string> hostAddress();

    /// Runs a command on the host (reconnecting as needed). For `hosts test` and tests.
    core::Result<CommandResult> runCommand(const std::string& command, std::chrono::milliseconds timeout);

    /// The absolute runs root on the host (resolves ~ on first use).
    core::Result<std::string> remoteRunsRoot();
    /// How many times a lost connection was re-established.
    int reconnectCount() const { return m_reconnects; }
    /// SshTargetOptions::commandTimeout.
    std::chrono::milliseconds commandTimeout() const { return m_options.commandTimeout; }

private:
    core::Result<SshSession*> ensureSession();
    RemoteOps remoteOps();
    /// runCommand of a POSIX sh script (wrapped as `sh -c '...'`).
    core::Result<CommandResult> runScript(const std::string& script, std::chrono::milliseconds timeout);
    /// Runs `op` on a live session; if it fails because the connection dropped, reconnects (with
    /// backoff) and runs it once more. A command that timed out counts as dropped (the session is
    /// closed then): it may have run, so only idempotent operations go through here.
    template <typename Op>
    auto withReconnect(Op&& op) -> decltype(op(std::declval<SshSession&>()));

    SshTargetOptions m_options;
    std::unique_ptr<SshSession> m_session;
    std::string m_runsRoot;  // absolute, once resolved
    std::string m_builtMoeTrain;  // provisioned moe-train, once built or found
    int m_gpuRanks = 0;  // ranks of a cuda run (the node's GPUs, at least 1), once checked (or provisioned)
    bool m_uploadedBundle = false;
    bool m_everConnected = false;
    int m_reconnects = 0;
};

}  // namespace wb::remote
