// LocalTarget: runs moe-train on this machine, detached, in its own session and process group,
// with the run directory contract of DESIGN.md §3.3. A launched run outlives the workbench.
// Threading: no shared mutable state; any thread, but launch() forks, so prefer calling it from a
// thread that holds no locks other threads need (the child only calls async-signal-safe code).
#pragma once

#include "core/paths.h"
#include "core/run_target.h"

#include <string>

namespace wb::remote {

class LocalTarget : public core::RunTarget {
public:
    /// `moeTrainPath`: the moe-train executable. `runsRoot`: parent of the run directories
    /// (core::defaultRunsRoot() unless the user chose another); created on first launch.
    LocalTarget(std::string moeTrainPath, std::string runsRoot);

    std::string name() const override { return "local"; }

    /// Runs `moe-train --validate` on the config: the runtime's own checks (tokenizer size,
    /// devices, supported layouts, the manifest on this machine). Nothing is created.
    core::Result<void> validateConfig(const std::string& configJson) override;

    /// Errors: InvalidArgument (bad run id), NotFound (moe-train missing), Busy (the run
    /// directory already exists), IoError (mkdir, write, fork, exec).
    core::Result<core::LaunchedRun> launch(const core::LaunchRequest& request) override;
    core::Result<core::MetricsChunk> readMetrics(const std::string& runDir, int64_t offset,
                                                 int64_t maxBytes) override;
    core::Result<core::MetricsChunk> readFile(const std::string& path, int64_t offset, int64_t maxBytes) override;
    /// Tolerates a missing or half-written status.json (then `status` is empty).
    core::Result<core::RunStatus> status(const std::string& runDir) override;
    /// Failed, naming the survivors, if anything in the group outlives SIGKILL.
    core::Result<void> cancel(const std::string& runDir, std::chrono::milliseconds grace) override;

    const std::string& runsRoot() const { return m_runsRoot; }

private:
    std::string m_moeTrainPath;
    std::string m_runsRoot;
};

}  // namespace wb::remote
