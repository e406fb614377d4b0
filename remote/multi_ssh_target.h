// MultiSshTarget: one run over several SSH hosts (`--target ssh:A,B,...`), torchrun-style: one
// `moe-train --nproc-per-node N --nnodes M --node-rank K --master-addr ADDR --master-port PORT`
// per node, each detached in its own process group with its own run directory (DESIGN.md §3.3,
// under that host's runs root, named by the run id). Node 0 is the master: ADDR is its address as
// the other nodes reach it (the host entry's `address`, else the host name SSH connects to), PORT
// its entry's `master_port` (default 29500). N is the node's GPU count from the node check (1 on
// a CPU-only node); every node must have the same N.
//
// The LaunchedRun's runDir is node 0's directory; the other nodes' directories are found from the
// run id (its last path component) under their runs roots, so watch/cancel need nothing more than
// the target string and that directory, as for one host.
//   metrics  read from node 0 (global rank 0 writes the stream)
//   status   the worst of the nodes (failed > unknown > cancelled > running > pending > finished)
//   cancel   on every node at once (TERM to the group, KILL after the grace), then verified on each
//
// Threading: like SshTarget, one thread at a time; cancel() uses one short-lived thread per node,
// each with its own node's SshTarget (sessions are never shared between threads).
#pragma once

#include "core/run_target.h"
#include "remote/ssh_hosts.h"
#include "remote/ssh_target.h"

#include <memory>
#include <string>
#include <vector>

namespace wb::remote {

class MultiSshTarget : public core::RunTarget {
public:
    static constexpr int kDefaultMasterPort = 29500;

    /// `nodes`: at least two entries; node 0 is the master. `sourceDir`: the runtime sources for
    /// nodes whose moe_train is "auto". `hooks` go to every node's session (the prompt names the
    /// node: SshSession's prompts say user@host).
    MultiSshTarget(std::vector<SshHostEntry> nodes, std::string sourceDir, const SshTargetHooks& hooks = {});
    ~MultiSshTarget() override;

    /// "ssh:A,B,..."
    std::string name() const override;

    /// Checks (and provisions) every node, then `moe-train --validate` on node 0 for the whole
    /// world size (nodes x ranks per node), so e.g. a global batch the ranks cannot split is
    /// refused before anything is created.
    core::Result<void> validateConfig(const std::string& configJson) override;
    /// Checks (and provisions) every node, then starts node 0, then the others. If a node fails
    /// to start, the nodes already started are cancelled and the error names the node.
    core::Result<core::LaunchedRun> launch(const core::LaunchRequest& request) override;
    core::Result<core::MetricsChunk> readMetrics(const std::string& runDir, int64_t offset,
                                                 int64_t maxBytes) override;
    core::Result<core::MetricsChunk> readFile(const std::string& path, int64_t offset, int64_t maxBytes) override;
    core::Result<core::RunStatus> status(const std::string& runDir) override;
    core::Result<void> cancel(const std::string& runDir, std::chrono::milliseconds grace) override;

    /// The run directory of `node` for the run whose node-0 directory is `runDir`.
    core::Result<std::string> nodeRunDir(size_t node, const std::string& runDir);
    SshTarget& node(size_t index) { return *m_targets[index]; }
    size_t nodeCount() const { return m_targets.size(); }

private:
    /// Checks every node once (then remembered): ranks per node, equal on all nodes; provisions
    /// moe-train where the entry says auto.
    core::Result<int> prepareNodes();

    std::vector<SshHostEntry> m_nodes;
    int m_ranksPerNode = 0;  // 0 until prepareNodes() succeeded
    std::vector<std::unique_ptr<SshTarget>> m_targets;
};

/// Severity order used for "worst of the nodes".
int runStateSeverity(core::RunState state);

}  // namespace wb::remote
