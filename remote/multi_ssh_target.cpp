// MultiSshTarget (see the header). Caller's thread; cancel() fans out to one thread per node.
#include "remote/multi_ssh_target.h"

#include "remote/run_dir_claim.h"

#include "core/log.h"

#include <algorithm>
#include <future>
#include <memory>
#include <mutex>

namespace wb::remote {

using core::ErrorCode;
using core::makeError;
using core::Result;

namespace {

std::string lastComponent(const std::string& path)
{
    const auto slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

int runStateSeverity(core::RunState state)
{
    switch (state) {
    case core::RunState::Finished: return 0;
    case core::RunState::Pending: return 1;
    case core::RunState::Running: return 2;
    case core::RunState::Cancelled: return 3;
    case core::RunState::Unknown: return 4;
    case core::RunState::Failed: return 5;
    }
    return 4;
}

MultiSshTarget::MultiSshTarget(std::vector<SshHostEntry> nodes, std::string sourceDir, const SshTargetHooks& hooks)
    : m_nodes(std::move(nodes))
{
    // cancel() runs the nodes' sessions on threads of their own, so the hooks may be called from
    // two threads at once: one at a time (a terminal prompt must not interleave with another,
    // and the caller's reconnect bookkeeping expects one thread).
    auto one = std::make_shared<std::mutex>();
    SshTargetHooks serialized;
    if (hooks.askSecret)
        serialized.askSecret = [one, ask = hooks.askSecret](const std::string& prompt, bool echo) {
            std::lock_guard<std::mutex> lock(*one);
            return ask(prompt, echo);
        };
    if (hooks.onReconnecting)
        serialized.onReconnecting = [one, told = hooks.onReconnecting](int attempt, const std::string& reason) {
            std::lock_guard<std::mutex> lock(*one);
            told(attempt, reason);
        };
    for (const auto& entry : m_nodes) {
        auto options = entry.targetOptions();
        options.provisioning.sourceDir = sourceDir;
        options.attach(serialized);
        m_targets.push_back(std::make_unique<SshTarget>(std::move(options)));
    }
}

MultiSshTarget::~MultiSshTarget() = default;

std::string MultiSshTarget::name() const
{
    std::string out = "ssh:";
    for (size_t i = 0; i < m_nodes.size(); ++i)
        out += (i ? "," : "") + m_nodes[i].name;
    return out;
}

Result<void> MultiSshTarget::validateConfig(const std::string& configJson)
{
    auto ranks = prepareNodes();
    if (!ranks)
        return ranks.error();
    const int perNode = isCudaConfig(configJson) ? *ranks : 1;
    return m_targets.front()->validateConfigForWorld(configJson, perNode * static_cast<int>(m_targets.size()));
}

Result<std::string> MultiSshTarget::nodeRunDir(size_t node, const std::string& runDir)
{
    if (node == 0)
        return runDir;
    auto root = m_targets[node]->remoteRunsRoot();
    if (!root)
        return root.error();
    return *root + "/" + lastComponent(runDir);
}

Result<int> MultiSshTarget::prepareNodes()
{
    if (m_ranksPerNode > 0)
        return m_ranksPerNode;
    bool differ = false;
    int ranksPerNode = 0;
    std::string counts;
    for (size_t i = 0; i < m_targets.size(); ++i) {
        auto& target = *m_targets[i];
        target.setProgressCallback([this](const core::LaunchProgress& p) { reportProgress(p); });
        const std::string& host = m_nodes[i].name;
        reportProgress({"check", host, -1.0, "checking node " + std::to_string(i) + " of " + std::to_string(m_targets.size())});
        auto node = target.checkNode();
        if (!node)
            return makeError(node.error().code, "node " + host + ": " + node.error().message, node.error().context);
        const int ranks = node->ranksPerNode();
        counts += (i ? ", " : "") + host + ": " + std::to_string(ranks);
        if (ranksPerNode == 0)
            ranksPerNode = ranks;
        else if (ranks != ranksPerNode)
            differ = true;
        reportProgress({"check", host, 1.0,
                        (node->gpus.empty() ? std::string("CPU-only node, 1 rank")
                                            : std::to_string(ranks) + " x " + node->gpus.front().name + ", " +
                                                  std::to_string(ranks) + " ranks")});
        // Provisioning (moe_train "auto") happens here, once per node.
        if (auto moe = target.moeTrain(); !moe)
            return makeError(moe.error().code, "node " + host + ": " + moe.error().message, moe.error().context);
    }
    if (differ)
        return makeError(ErrorCode::InvalidArgument,
                         "every node needs the same number of GPUs (ranks per node: " + counts +
                             "); pick nodes of one kind",
                         name());
    m_ranksPerNode = ranksPerNode;
    return m_ranksPerNode;
}

Result<core::LaunchedRun> MultiSshTarget::launch(const core::LaunchRequest& request)
{
    auto log = wb::log::get("remote");
    // 1. Every node checked (its GPU count decides the ranks per node) with moe-train there.
    auto prepared = prepareNodes();
    if (!prepared)
        return prepared.error();
    const int ranksPerNode = isCudaConfig(request.configJson) ? *prepared : 1;  // a cpu run: one rank per node

    // 2. The rendezvous: node 0's address as the others reach it, and its port.
    std::string masterAddr = m_nodes.front().address;
    if (masterAddr.empty()) {
        auto addr = m_targets.front()->hostAddress();
        if (!addr)
            return addr.error();
        masterAddr = *addr;
    }
    const int masterPort = m_nodes.front().masterPort > 0 ? m_nodes.front().masterPort : kDefaultMasterPort;
    const int numNodes = static_cast<int>(m_targets.size());
    log->info("multi-node run {}: {} nodes x {} ranks, master {}:{}", request.runId, numNodes, ranksPerNode,
              masterAddr, masterPort);

    // 3. Node 0 first (global rank 0 hosts the TCPStore), then the others.
    // One token per node: a retry on a node finds its own directory, while two nodes whose runs
    // roots are the same folder (a shared home) still refuse each other's.
    const std::string token = launchTokenOr(request.launchToken);
    core::LaunchedRun first;
    std::vector<std::pair<size_t, std::string>> started;
    for (size_t i = 0; i < m_targets.size(); ++i) {
        const std::vector<std::string> args = {"--nproc-per-node", std::to_string(ranksPerNode),
                                               "--nnodes",         std::to_string(numNodes),
                                               "--node-rank",      std::to_string(i),
                                               "--master-addr",    masterAddr,
                                               "--master-port",    std::to_string(masterPort)};
        core::LaunchRequest nodeRequest = request;
        nodeRequest.launchToken = token + "-node" + std::to_string(i);
        auto launched = m_targets[i]->launchWithArgs(nodeRequest, args);
        if (!launched) {
            // Do not leave the started nodes waiting for a rendezvous that will never complete.
            for (const auto& [node, dir] : started)
                if (auto ended = m_targets[node]->cancel(dir, std::chrono::seconds(5)); !ended)
                    log->warn("cleaning up node {} after a failed launch: {}", m_nodes[node].name,
                              ended.error().toString());
            return makeError(launched.error().code,
                             "node " + m_nodes[i].name + " (" + std::to_string(i) + " of " + std::to_string(numNodes) +
                                 "): " + launched.error().message +
                                 (started.empty() ? "" : " (the nodes already started were cancelled)"),
                             launched.error().context);
        }
        started.emplace_back(i, launched->runDir);
        if (i == 0)
            first = *launched;
    }
    first.target = name();
    return first;
}

Result<core::MetricsChunk> MultiSshTarget::readMetrics(const std::string& runDir, int64_t offset, int64_t maxBytes)
{
    return m_targets.front()->readMetrics(runDir, offset, maxBytes);
}

Result<core::MetricsChunk> MultiSshTarget::readFile(const std::string& path, int64_t offset, int64_t maxBytes)
{
    return m_targets.front()->readFile(path, offset, maxBytes);
}

Result<core::RunStatus> MultiSshTarget::status(const std::string& runDir)
{
    core::RunStatus worst;
    worst.state = core::RunState::Finished;
    bool anyAlive = false;
    int worstSeverity = -1;
    for (size_t i = 0; i < m_targets.size(); ++i) {
        auto dir = nodeRunDir(i, runDir);
        if (!dir)
            return dir.error();
        auto status = m_targets[i]->status(*dir);
        core::RunStatus nodeStatus;
        if (status) {
            nodeStatus = *status;
        } else if (status.error().code == ErrorCode::NotFound) {
            nodeStatus.state = core::RunState::Failed;
            nodeStatus.message = status.error().message;
        } else {
            return makeError(status.error().code, "node " + m_nodes[i].name + ": " + status.error().message,
                             status.error().context);
        }
        anyAlive = anyAlive || nodeStatus.processAlive;
        const int severity = runStateSeverity(nodeStatus.state);
        if (severity > worstSeverity) {
            worstSeverity = severity;
            worst = nodeStatus;
            if (!worst.message.empty() && i > 0)
                worst.message = "node " + m_nodes[i].name + ": " + worst.message;
        }
    }
    worst.processAlive = anyAlive;
    return worst;
}

Result<void> MultiSshTarget::cancel(const std::string& runDir, std::chrono::milliseconds grace)
{
    std::vector<std::string> dirs;
    for (size_t i = 0; i < m_targets.size(); ++i) {
        auto dir = nodeRunDir(i, runDir);
        if (!dir)
            return dir.error();
        dirs.push_back(*dir);
    }
    // Every node at once: each SshTarget on its own thread (one thread per session, as required),
    // so the TERM reaches all ranks within one round trip and the graces overlap.
    std::vector<std::future<Result<void>>> pending;
    for (size_t i = 0; i < m_targets.size(); ++i)
        pending.push_back(std::async(std::launch::async, [this, i, &dirs, grace] {
            return m_targets[i]->cancel(dirs[i], grace);
        }));
    std::string failures;
    ErrorCode code = ErrorCode::Failed;
    for (size_t i = 0; i < pending.size(); ++i) {
        auto result = pending[i].get();
        // No pid file: that node never started (a launch that failed there); nothing to end.
        if (result || result.error().code == ErrorCode::NotFound)
            continue;
        code = result.error().code;
        failures += (failures.empty() ? "" : "; ") + std::string("node ") + m_nodes[i].name + ": " +
                    result.error().message;
    }
    if (!failures.empty())
        return makeError(code, failures, name());
    return {};
}

}  // namespace wb::remote
