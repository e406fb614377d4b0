// RunTarget: where a run executes (this machine, SSH hosts, a Slurm cluster). Declared in core so
// ui/ and the CLI can drive any target; remote/ implements it (LocalTarget, SshTarget,
// MultiSshTarget, SlurmTarget);
// app/ injects the real one. The run directory contract is DESIGN.md §3.3.
// Threading: an implementation may block (process spawn, network); never call from the GUI thread.
// One instance is used from one thread at a time unless the implementation says otherwise.
#pragma once

#include "core/result.h"
#include "core/run_state.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace wb::core {

/// A run id usable as a directory name on any target: letters, digits, '-', '_', '.', not
/// "." or "..", not starting with '-', at most 200 characters.
bool validRunId(const std::string& id);

struct LaunchRequest {
    std::string runId;       ///< store id, becomes the run directory name
    std::string name;
    std::string configJson;  ///< canonical RunConfig JSON, written as DIR/run.json
    /// Names this launch attempt on the target (written into the run directory). A remote step
    /// that timed out may have run; its retry finds its own token and continues instead of
    /// taking the directory for another run's. Empty = the target makes one (newLaunchToken).
    std::string launchToken;
};

/// 32 hex digits from the OS's random source: unique per launch. Any thread.
std::string newLaunchToken();

/// A Megatron-Bridge batch job the workbench submits (`launch --bridge DIR`): the generated folder's
/// files go into the run directory, `script` is submitted there, and the job's output goes to
/// DIR/kBridgeJobLog, which the Bridge log follower reads.
struct BridgeJobRequest {
    std::string runId;
    std::string name;
    std::vector<std::pair<std::string, std::string>> files;  ///< file name (no '/') → content
    std::string script = "bridge.sbatch";                      ///< one of `files`: what is submitted
    std::string launchToken;                                   ///< as LaunchRequest::launchToken
};

/// The file in a Bridge job's run directory that its stdout and stderr go to.
inline constexpr const char* kBridgeJobLog = "stdout.log";

struct LaunchedRun {
    std::string runId;
    std::string target;      ///< "local", "ssh:host", ...
    std::string runDir;      ///< absolute on the target
    int64_t pid = 0;         ///< process-group leader on the target
};

struct RunStatus {
    RunState state = RunState::Unknown;
    int exitCode = -1;       ///< valid once not Running
    std::string status;      ///< status.json "status" word (finished, oom, ...), may be empty
    std::string message;     ///< status.json "message" or why the state is what it is
    bool processAlive = false;
};

/// What targets read of a run directory's status.json (moe-train's StatusFile). A torn, empty or
/// absent file is "no news": every field at its default.
struct StatusFileFields {
    std::string status;           ///< the status word; "" when not known
    std::optional<int> exitCode;
    std::string message;
    int64_t pid = 0;              ///< the trainer process that wrote it; 0 when not recorded
};
StatusFileFields parseStatusFile(std::string_view text);

/// The run's own words from status.json (status word, exit code, message) as a RunStatus whose
/// state the target decides (runStateOf for a process it watches, the scheduler's view for Slurm).
RunStatus statusOfFile(const StatusFileFields& file);

/// The state a final status word ends a run in: finished, stopped (cancelled), anything else failed.
RunState finalStateOf(std::string_view statusWord);

/// A run's state from what its target sees: whether DIR/pid was readable (`havePid`) and its
/// process group has a live member (`groupAlive`), status.json, and whether the process that
/// wrote status.json lives (`writerAlive`; nullopt when status.json names none). A live writer
/// of a word that is not final (starting, running) is a running run; so is a live group, unless status.json holds a final word whose writer is
/// gone: a trainer started by hand from a shell (`moe-train --resume` in a stopped run's
/// directory, issue 20 item 6) records the shell's group, which outlives the trainer.
RunState runStateOf(const StatusFileFields& file, bool havePid, bool groupAlive, std::optional<bool> writerAlive);

/// A slice of DIR/metrics.jsonl starting at `offset`.
struct MetricsChunk {
    int64_t offset = 0;
    std::string bytes;
    int64_t fileSize = 0;    ///< size of the file when read (bytes may be capped below it)
};

/// One step of a launch, for the GUI's launch dialog (progress bars) and the CLI's progress lines.
/// Phases in order: "check" (the node: GPUs, LibTorch, compiler, disk), "upload" (the runtime
/// source bundle), "build" (moe-train on the node; "cached" in detail when skipped), "start".
/// A target reports only the phases it has (LocalTarget: "start").
struct LaunchProgress {
    std::string phase;
    std::string node;        ///< host the phase runs on; "" = this machine
    double fraction = -1.0;  ///< 0..1 within the phase; < 0 = indeterminate
    std::string detail;      ///< for the user: "3.1 of 4.0 MiB", "cached build 1a2b3c found"
};
/// Called on the thread that called launch(); a GUI queues it to its own thread.
using LaunchProgressFn = std::function<void(const LaunchProgress&)>;

class RunTarget {
public:
    virtual ~RunTarget() = default;

    /// Where launch() reports its phases; may be empty.
    void setProgressCallback(LaunchProgressFn fn) { m_progress = std::move(fn); }

    virtual std::string name() const = 0;

    /// The target's own checks of a config before anything is created: what only the runtime
    /// there knows (its tokenizer, its devices, whether the manifest exists on that machine).
    /// InvalidArgument with every problem listed, one per line. Default: no extra checks.
    virtual Result<void> validateConfig(const std::string& configJson) { return {}; }

    /// Creates the run directory, writes run.json and starts moe-train detached in its own process
    /// group. Returns once the process exists (not once it has trained anything).
    virtual Result<LaunchedRun> launch(const LaunchRequest& request) = 0;

    /// Before a Bridge job is recorded: checks that the target can run one (its batch system, and
    /// that the cluster's python imports megatron.bridge) and returns the run directory the job
    /// `runId` will use. Errors name what is missing and the fix. Default: not supported.
    virtual Result<std::string> prepareBridgeLaunch(const std::string& runId)
    {
        return makeError(ErrorCode::InvalidArgument,
                         "Megatron-Bridge jobs are launched on a Slurm cluster only; use --target slurm:HOST", runId);
    }

    /// Submits a Bridge job (after prepareBridgeLaunch). Safe to repeat with the same launch token:
    /// a retry finds the first attempt's job instead of submitting a second. Default: not supported.
    virtual Result<LaunchedRun> launchBridge(const BridgeJobRequest& request)
    {
        return makeError(ErrorCode::InvalidArgument,
                         "Megatron-Bridge jobs are launched on a Slurm cluster only; use --target slurm:HOST", request.runId);
    }

    /// Reads metrics.jsonl from `offset` (at most `maxBytes`). A missing file is an empty chunk.
    virtual Result<MetricsChunk> readMetrics(const std::string& runDir, int64_t offset,
                                             int64_t maxBytes) = 0;

    /// Reads any file of the target from `offset` (at most `maxBytes`): another trainer's log that
    /// the workbench follows (a Megatron-Bridge job's output). A missing file is an empty chunk;
    /// a file shorter than `offset` is Corrupt (truncated or replaced). Default: not supported.
    virtual Result<MetricsChunk> readFile(const std::string& path, int64_t offset, int64_t maxBytes)
    {
        (void)offset, (void)maxBytes;
        return makeError(ErrorCode::Failed, "this target cannot read files outside a run directory", path);
    }

    /// status.json + whether the process group is alive.
    virtual Result<RunStatus> status(const std::string& runDir) = 0;

    /// SIGTERM to the whole process group, SIGKILL after `grace`, then verifies nothing is left.
    virtual Result<void> cancel(const std::string& runDir, std::chrono::milliseconds grace) = 0;

protected:
    void reportProgress(const LaunchProgress& progress) const
    {
        if (m_progress)
            m_progress(progress);
    }

private:
    LaunchProgressFn m_progress;
};

}  // namespace wb::core
