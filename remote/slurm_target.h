// SlurmTarget: runs moe-train as a Slurm batch job, submitted over SSH on a login node (a host
// registered in hosts.json). The run directory (DESIGN.md §3.3) lives under the host's runs root,
// which must be on a filesystem the compute nodes share with the login node. launch writes
// run.json and the planner's generated sbatch script (core::planner::slurmScript) there and runs
// `sbatch --parsable`; the job id is kept in DIR/slurm_job_id. The job runs one srun task per
// rank and writes run.json, stdout.log (every rank's lines, prefixed "RANK: "), pid.<node>.<local
// rank> (each rank's pid), and, from global rank 0 only, metrics.jsonl and status.json.
//
// status: squeue while the job is queued or running, then sacct (when accounting exists) or
// scontrol show job, plus status.json. readMetrics: SshTarget's (SFTP from a byte offset, with
// reconnects). cancel: scancel, wait until squeue no longer lists the job, SIGKILL through
// scancel after the grace, then check no moe-train of the run is left where the login node can
// see (pid files of processes on the login node itself, and any process with `--run-dir DIR`).
//
// Threading: owns one SshTarget (one SSH session), so one SlurmTarget is used from ONE thread (a
// worker, never the GUI thread). Every call may block for up to the reconnect budget.
#pragma once

#include "core/run_target.h"
#include "remote/slurm_settings.h"
#include "remote/ssh_target.h"

#include <memory>
#include <string>
#include <vector>

namespace wb::remote {

struct SlurmTargetOptions {
    std::string name;         ///< the hosts.json name: the target is "slurm:" + name
    SshTargetOptions ssh;     ///< the login node
    SlurmSettings slurm;
};

class SlurmTarget : public core::RunTarget {
public:
    explicit SlurmTarget(SlurmTargetOptions options);
    ~SlurmTarget() override;

    std::string name() const override { return "slurm:" + m_options.name; }

    /// `moe-train --validate` on the login node with WORLD_SIZE = nodes × ranks per node.
    core::Result<void> validateConfig(const std::string& configJson) override;
    /// Errors: InvalidArgument (bad run id, config, or settings), NotFound (moe-train or sbatch
    /// missing on the login node), Busy (the run directory exists), IoError (connection), Failed
    /// (sbatch refused the job: its message, and DIR/run.sbatch stays for a look).
    /// LaunchedRun.pid is 0 (Slurm owns the processes); target is "slurm:HOST job ID".
    core::Result<core::LaunchedRun> launch(const core::LaunchRequest& request) override;
    /// The node check for a Bridge job: the Slurm commands, slurm_conf, and bridgePython importing
    /// megatron.bridge on the login node (NotFound naming what failed and the fix). Returns
    /// RUNS_ROOT/runId.
    core::Result<std::string> prepareBridgeLaunch(const std::string& runId) override;
    /// Writes the folder's files and a `trainer` marker into the run directory and submits the
    /// script there with sbatch --output/--error DIR/stdout.log (appended: a requeued job goes on
    /// in the same file) and BRIDGE_PYTHON in its environment; idempotent as launch() is.
    core::Result<core::LaunchedRun> launchBridge(const core::BridgeJobRequest& request) override;
    core::Result<core::MetricsChunk> readMetrics(const std::string& runDir, int64_t offset,
                                                 int64_t maxBytes) override;
    core::Result<core::MetricsChunk> readFile(const std::string& path, int64_t offset, int64_t maxBytes) override;
    /// processAlive is true while Slurm still has the job queued or running: state Pending for
    /// PENDING (and other waiting states), Running for RUNNING/COMPLETING/SUSPENDED. Once it left
    /// the queue, the final state comes from status.json, and from sacct/scontrol (CANCELLED,
    /// TIMEOUT, NODE_FAIL, ...) when moe-train could not write it.
    core::Result<core::RunStatus> status(const std::string& runDir) override;
    /// scancel (SIGTERM: moe-train checkpoints and exits), SIGKILL via scancel after `grace`,
    /// then Failed naming any job state or moe-train process that is left.
    core::Result<void> cancel(const std::string& runDir, std::chrono::milliseconds grace) override;

    /// The job id recorded in DIR/slurm_job_id (NotFound before submission).
    core::Result<std::string> jobId(const std::string& runDir);
    /// The login node's SshTarget (for `hosts test` and tests).
    SshTarget& login() { return m_ssh; }

private:
    /// runCommand of a POSIX sh script (`sh -c '...'`), SLURM_CONF exported first when set.
    core::Result<CommandResult> runScript(const std::string& script, std::chrono::milliseconds timeout);
    /// sbatch, squeue, scancel, scontrol and moe-train on the login node; moe-train's path with
    /// "~/" expanded. NotFound naming what is missing.
    core::Result<std::string> checkLoginNode();
    /// The Slurm commands and slurm_conf, then `trainerCheck` (sh lines with their own exit
    /// codes, handed back to the caller), then $HOME printed. NotFound for the Slurm part.
    core::Result<CommandResult> checkSlurmClient(const std::string& trainerCheck);
    /// Claims RUNS_ROOT/runId with `token`, runs `writeFiles` there (sh lines, in the run
    /// directory), then `environment sbatch --parsable --comment=wb-launch:TOKEN --chdir=DIR
    /// sbatchArguments scriptName` under the .submitted lock, so that a repeat of a submission
    /// whose answer was lost finds the first job (by its comment) instead of submitting a second.
    /// Reports "submitted as Slurm job N"; the LaunchedRun's target is "slurm:HOST job N".
    core::Result<core::LaunchedRun> submitOnce(const std::string& root, const std::string& runId, const std::string& token,
                                         const std::string& writeFiles, const std::string& environment,
                                         const std::string& sbatchArguments, const std::string& scriptName);
    /// Ranks per node for this config (gpusPerNode, or 1 for cpu); InvalidArgument if unknown.
    core::Result<int> ranksPerNode(const std::string& device) const;

    /// NotFound: moe-train is not at the host's registered path on the login node (sh exit 127).
    core::Error moeTrainMissing() const;
    SlurmTargetOptions m_options;
    SshTarget m_ssh;
};

/// `slurm:NAME` for makeTarget: the host from hosts.json (NotFound naming `hosts add`) and its
/// settings from slurm.json; `hooks` go to the login node's session.
core::Result<std::unique_ptr<core::RunTarget>> makeSlurmTarget(const std::string& name, const std::string& hostsPath,
                                                               const SshTargetHooks& hooks = {});

}  // namespace wb::remote
