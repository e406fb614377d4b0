// Provisioning a node for moe-train: check what the node has (GPUs, a LibTorch, CMake, a C++20
// compiler, disk), upload the runtime source bundle (runtime_bundle.h: the sources and the
// header-only libraries they include) by SFTP and build moe-train there, cached by the bundle's
// content hash:
//
//   <cacheDir>/<hash>/src/        the bundle (appears only complete: uploaded as src.partial-*,
//                                 then renamed)
//   <cacheDir>/<hash>/build/      cmake's build tree; build.log, build.pid, build.rc beside it
//   <cacheDir>/<hash>/bin/moe-train   the marker of a complete build (copied in last)
//
// A second launch with the same bundle finds bin/moe-train and skips upload and build.
// The build runs detached on the node (its own process group) and is polled, so a dropped
// connection does not stop it and a reconnect picks up where the polling was.
//
// Threading: a Provisioner is used from the thread that owns its RemoteOps' session (the target's
// worker thread), like the SshTarget that owns it.
#pragma once

#include "core/result.h"
#include "core/run_target.h"
#include "remote/runtime_bundle.h"
#include "remote/ssh_session.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace wb::remote {

/// What checkNode found. `problems` are blocking, each one sentence naming what is missing and
/// how to fix it; `notes` are facts a user should know (e.g. a CPU-only node).
struct NodeReport {
    struct Gpu {
        std::string name;
        int64_t memoryMiB = 0;
    };
    std::vector<Gpu> gpus;          ///< empty: a CPU-only node
    std::string torchSource;        ///< "python3 torch" or "system LibTorch", empty = none
    std::string torchPrefix;        ///< CMAKE_PREFIX_PATH for it ("" = cmake finds it alone)
    std::string torchVersion;
    std::string torchCuda;          ///< CUDA version of the LibTorch, empty for a CPU build
    std::string ncclDir;            ///< the PyTorch wheel's nvidia/nccl, when it has nccl.h
    std::string cmakeVersion;       ///< empty = no cmake
    std::string compiler;           ///< first line of `c++ --version`, empty = none
    bool cxx20 = false;
    bool ccache = false;
    int cpus = 1;
    int64_t freeDiskMiB = -1;       ///< in the cache dir (or its nearest existing parent)
    std::string cacheDir;           ///< absolute, as the node resolved it
    /// Where the node has its own nlohmann/json and stb headers ("" = none). Information only:
    /// the build always uses the copies in the bundle.
    std::string nodeJsonDir;
    std::string nodeStbDir;
    std::vector<std::string> problems;
    std::vector<std::string> notes;

    bool ok() const { return problems.empty(); }
    /// Ranks to start on this node: one per GPU, or 1 on a CPU-only node.
    int ranksPerNode() const { return gpus.empty() ? 1 : static_cast<int>(gpus.size()); }
    /// Several lines for a user: what was found, then every problem with its fix.
    std::string describe() const;
};

/// Whether a run config trains on GPUs (runtime.device "cuda"): such a run starts one rank per
/// GPU of each node (NodeReport::ranksPerNode), any other one rank. Only runtime.device is read
/// (default cpu, as core::RunConfig); unreadable JSON counts as cpu, since moe-train --validate is
/// what reports a bad config.
bool isCudaConfig(const std::string& configJson);

/// The POSIX sh script that inspects a node; prints `key=value` lines (see parseNodeCheck).
std::string nodeCheckScript(const std::string& cacheDir);
/// Parses the script's output and decides what is missing. Pure; tested without a node.
NodeReport parseNodeCheck(const std::string& output);

/// The build provisioning starts (detached, `sh -c`) in <cacheDir>/<hash>, the directory that
/// holds the bundle as src/: configures for the node's LibTorch (CUDA and the wheel's NCCL when
/// the node has GPUs and a CUDA LibTorch, ccache when present) and the bundle's own header-only
/// libraries (src/deps/include, when the bundle has them), builds moe-train with `jobs` jobs
/// and copies it to bin/moe-train; output in build.log, exit status in build.rc. Pure.
std::string buildScript(const NodeReport& node, int jobs);

/// What the provisioner needs from a connection: run a POSIX sh script, write a file atomically.
/// SshTarget supplies both (with its reconnect handling).
struct RemoteOps {
    std::function<core::Result<CommandResult>(const std::string& script, std::chrono::milliseconds timeout)> runScript;
    std::function<core::Result<void>(const std::string& path, const std::string& content, int mode)> writeFile;
};

struct ProvisionOptions {
    std::string sourceDir;  ///< local tree collectRuntimeBundle reads
    std::string cacheDir;   ///< on the node; "" = ~/.cache/moe-workbench/build; "~/" expanded there
    int buildJobs = 0;      ///< 0 = every CPU of the node
    /// How often the build's log is polled.
    std::chrono::milliseconds pollInterval{2000};
};

class Provisioner {
public:
    /// `node` names the host in progress reports; `progress` may be empty.
    Provisioner(RemoteOps ops, ProvisionOptions options, std::string node, core::LaunchProgressFn progress);

    /// Phase "check". Failed (with NodeReport::describe() as the message) when something is
    /// missing; IoError when the node cannot be reached.
    core::Result<NodeReport> check();
    /// Phases "upload" and "build" (after a successful check()). Returns the absolute path of the
    /// built moe-train on the node. Failed with the last ~30 lines of the build log when the
    /// build fails (no marker is left, so the next launch builds again).
    core::Result<std::string> ensureBuilt(const NodeReport& node);

    /// Whether the last ensureBuilt() uploaded anything (false when the cache was used).
    bool uploaded() const { return m_uploaded; }
    const std::string& bundleHash() const { return m_hash; }

private:
    void report(const std::string& phase, double fraction, const std::string& detail) const;
    core::Result<void> upload(const RuntimeBundle& bundle, const std::string& hashDir);
    core::Result<void> build(const NodeReport& node, const std::string& hashDir, const std::string& shortHash);

    RemoteOps m_ops;
    ProvisionOptions m_options;
    std::string m_node;
    core::LaunchProgressFn m_progress;
    bool m_uploaded = false;
    std::string m_hash;
};

}  // namespace wb::remote
