// SshTarget: the run directory contract over SSH. One thread per target (see the header).
//
// Every remote command is a small POSIX sh script assembled here with every variable part passed
// through shellQuote(), so a run id, a path or a config name can hold anything without reaching
// the shell as code. Each script runs under `sh -c` (asShScript), so it is POSIX sh whatever the
// remote user's login shell is; that shell only parses one single-quoted word.
//
// Detaching: `setsid nohup sh -c 'echo $$ >pid; exec "$@"' ... &`. The trainer's pid is written
// by the trainer's own shell after setsid(), so it is the session and process-group id whether or
// not setsid had to fork; nohup plus redirecting all three std streams lets the SSH channel close
// and the connection drop without the run noticing.
#include "remote/ssh_target.h"
#include "remote/run_dir_protocol.h"

#include "core/log.h"
#include "remote/run_dir_claim.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

namespace wb::remote {

using core::ErrorCode;
using core::makeError;
using core::Result;

namespace {

// Shell function shared by status and cancel: true while a non-zombie process is in group $pid.
// kill -0 alone would count a zombie that a non-reaping init keeps around.
constexpr const char* kAliveFunction =
    "alive() { kill -0 -\"$pid\" 2>/dev/null || return 1; "
    "command -v ps >/dev/null 2>&1 || return 0; "
    "ps -e -o pgid= -o stat= | awk -v g=\"$pid\" '$1==g && $2 !~ /^Z/ {f=1} END {exit !f}'; }\n";

// Reads DIR/pid into $pid (0 when missing, torn or not a number > 1: never signal init or "all").
std::string readPidScript(const std::string& runDir)
{
    return "pid=$(cat " + shellQuote(runDir + "/pid") + " 2>/dev/null)\n"
           "case \"$pid\" in ''|*[!0-9]*) pid=0 ;; esac\n"
           "[ \"$pid\" -gt 1 ] || pid=0\n";
}

// The login shell only has to parse one single-quoted word (bash, zsh, dash, ksh, fish all do);
// the script itself always runs under POSIX sh, whatever the user's login shell is.
std::string asShScript(const std::string& script) { return "sh -c " + shellQuote(script); }

}  // namespace

void SshTargetOptions::attach(const SshTargetHooks& hooks)
{
    if (hooks.askSecret)
        host.askSecret = hooks.askSecret;
    if (hooks.onReconnecting)
        onReconnecting = hooks.onReconnecting;
}

SshTarget::SshTarget(SshTargetOptions options) : m_options(std::move(options)) {}

SshTarget::~SshTarget() = default;

Result<void> SshTarget::connect(HostKeyInfo* hostKey)
{
    m_session.reset();
    auto session = SshSession::connect(m_options.host, hostKey);
    if (!session)
        return session.error();
    m_session = std::move(*session);
    m_everConnected = true;
    return {};
}

// Backoff: 250 ms doubling to 5 s, within reconnectBudget. Only IoError (network) is retried:
// a refused host key or refused authentication will not fix itself.
Result<SshSession*> SshTarget::ensureSession()
{
    if (m_session && m_session->isConnected()) {
        m_session->keepaliveIfIdle();
        if (m_session->isConnected())
            return m_session.get();
    }
    const bool reconnecting = m_everConnected;
    m_session.reset();
    const auto deadline = std::chrono::steady_clock::now() + m_options.reconnectBudget;
    auto delay = std::chrono::milliseconds(250);
    for (int attempt = 1;; ++attempt) {
        auto connected = connect();
        if (connected) {
            if (reconnecting) {
                ++m_reconnects;
                wb::log::get("remote")->info("reconnected to {} (attempt {})", m_options.host.host, attempt);
            }
            return m_session.get();
        }
        const auto& error = connected.error();
        if (error.code != ErrorCode::IoError || std::chrono::steady_clock::now() + delay > deadline)
            return error;
        wb::log::get("remote")->warn("connection to {} failed ({}); retrying in {} ms",
                                     m_options.host.host, error.message, delay.count());
        if (m_options.onReconnecting)
            m_options.onReconnecting(attempt, error.message);
        std::this_thread::sleep_for(delay);
        delay = std::min(delay * 2, std::chrono::milliseconds(5000));
    }
}

template <typename Op>
auto SshTarget::withReconnect(Op&& op) -> decltype(op(std::declval<SshSession&>()))
{
    auto session = ensureSession();
    if (!session)
        return session.error();
    auto result = op(**session);
    if (result || (*session)->isConnected())
        return result;
    // The connection dropped under us (sshd restarted, network cut): the remote side is intact,
    // so reconnect and repeat the (idempotent) operation.
    wb::log::get("remote")->warn("connection to {} lost ({}); reconnecting", m_options.host.host,
                                 result.error().message);
    if (m_options.onReconnecting)
        m_options.onReconnecting(0, result.error().message);
    session = ensureSession();
    if (!session)
        return session.error();
    return op(**session);
}

Result<CommandResult> SshTarget::runCommand(const std::string& command, std::chrono::milliseconds timeout)
{
    return withReconnect([&](SshSession& s) { return s.run(command, timeout); });
}

Result<CommandResult> SshTarget::runScript(const std::string& script, std::chrono::milliseconds timeout)
{
    return runCommand(asShScript(script), timeout);
}

Result<std::string> SshTarget::remoteRunsRoot()
{
    if (!m_runsRoot.empty())
        return m_runsRoot;
    std::string root = m_options.runsRoot.empty() ? "~/.cache/moe-workbench/runs" : m_options.runsRoot;
    if (root == "~" || root.rfind("~/", 0) == 0) {
        auto home = runScript("printf '%s' \"$HOME\"", commandTimeout());
        if (!home)
            return home.error();
        if (home->exitStatus != 0 || home->out.empty() || home->out.front() != '/')
            return makeError(ErrorCode::Failed, "cannot find the remote home directory ($HOME is '" + home->out + "')",
                             name());
        root = home->out + root.substr(1);
    }
    if (root.front() != '/')
        return makeError(ErrorCode::InvalidArgument, "the remote runs root must be absolute or start with ~/", root);
    m_runsRoot = root;
    return m_runsRoot;
}

RemoteOps SshTarget::remoteOps()
{
    RemoteOps ops;
    ops.runScript = [this](const std::string& script, std::chrono::milliseconds timeout) {
        return runScript(script, timeout);
    };
    ops.writeFile = [this](const std::string& path, const std::string& content, int mode) {
        return withReconnect([&](SshSession& s) { return s.writeFile(path, content, mode); });
    };
    return ops;
}

Result<NodeReport> SshTarget::checkNode()
{
    auto result = runScript(nodeCheckScript(m_options.provisioning.cacheDir), commandTimeout());
    if (!result)
        return result.error();
    NodeReport node = parseNodeCheck(result->out);
    if (node.cacheDir.empty())
        return makeError(ErrorCode::Failed,
                         "the node check did not run (exit " + std::to_string(result->exitStatus) + "): " +
                             trimmed(result->err),
                         name());
    return node;
}

Result<std::string> SshTarget::moeTrain()
{
    if (!m_options.provision)
        return m_options.moeTrainPath;
    if (!m_builtMoeTrain.empty())
        return m_builtMoeTrain;
    Provisioner provisioner(remoteOps(), m_options.provisioning, node(),
                            [this](const core::LaunchProgress& p) { reportProgress(p); });
    auto node = provisioner.check();
    if (!node)
        return node.error();
    m_gpuRanks = node->ranksPerNode();
    auto built = provisioner.ensureBuilt(*node);
    m_uploadedBundle = provisioner.uploaded();
    if (!built)
        return built.error();
    m_builtMoeTrain = *built;
    return m_builtMoeTrain;
}

Result<std::string> SshTarget::hostAddress()
{
    auto session = ensureSession();
    if (!session)
        return session.error();
    return (*session)->hostName();
}

Result<int> SshTarget::ranksFor(const std::string& configJson)
{
    if (!isCudaConfig(configJson))
        return 1;
    if (m_gpuRanks == 0 && m_options.provision) {
        // Provisioning checks the node anyway (and counts its GPUs): no second check.
        if (auto built = moeTrain(); !built)
            return built.error();
    }
    if (m_gpuRanks == 0) {
        auto checked = checkNode();
        if (!checked)
            return checked.error();
        m_gpuRanks = checked->ranksPerNode();
        reportProgress({"check", node(), 1.0,
                        checked->gpus.empty() ? std::string("no GPU found: 1 rank")
                                              : std::to_string(m_gpuRanks) + " x " + checked->gpus.front().name +
                                                    ": " + std::to_string(m_gpuRanks) + " rank(s), one per GPU"});
    }
    return m_gpuRanks;
}

Result<void> SshTarget::validateConfig(const std::string& configJson)
{
    auto ranks = ranksFor(configJson);
    if (!ranks)
        return ranks.error();
    auto valid = validateConfigForWorld(configJson, *ranks);
    if (!valid && *ranks > 1 && valid.error().code == ErrorCode::InvalidArgument)
        return makeError(ErrorCode::InvalidArgument,
                         valid.error().message + "\n(checked for " + std::to_string(*ranks) +
                             " ranks: a cuda run starts one rank per GPU of the node; the layout and the global batch "
                             "must fit that many)",
                         valid.error().context);
    return valid;
}

Result<void> SshTarget::validateConfigForWorld(const std::string& configJson, int worldSize)
{
    auto moeTrainPath = moeTrain();
    if (!moeTrainPath)
        return moeTrainPath.error();
    const std::string moe = shellQuotePath(*moeTrainPath);
    auto temp = runScript("[ -x " + moe + " ] || exit 127; mktemp", commandTimeout());
    if (!temp)
        return temp.error();
    if (temp->exitStatus == 127)
        return makeError(ErrorCode::NotFound,
                         "moe-train is missing or not executable on the host: let the workbench build "
                         "it there (`hosts add NAME --remote-moe-train auto`) or build it yourself "
                         "(cmake -S runtime) and pass its path with --remote-moe-train",
                         name() + ":" + *moeTrainPath);
    const std::string path = trimmed(temp->out);
    if (temp->exitStatus != 0 || path.empty())
        return makeError(ErrorCode::Failed, "mktemp failed on the host: " + trimmed(temp->err), name());
    auto written = withReconnect([&](SshSession& s) { return s.writeFile(path, configJson, 0600); });
    if (!written)
        return written.error();
    const std::string world = worldSize > 1 ? " --nproc-per-node " + std::to_string(worldSize) : "";
    auto checked = runScript(moe + " --validate " + shellQuote(path) + world + " 2>&1; rc=$?; rm -f " +
                                  shellQuote(path) + "; exit $rc",
                              commandTimeout());
    if (!checked)
        return checked.error();
    if (checked->exitStatus == 0)
        return {};
    if (checked->exitStatus == 2)
        return makeError(ErrorCode::InvalidArgument, "moe-train on the host rejects the config:\n" + trimmed(checked->out));
    return makeError(ErrorCode::Failed,
                     "moe-train --validate failed on the host with exit code " +
                         std::to_string(checked->exitStatus) + ":\n" + trimmed(checked->out),
                     name());
}

Result<core::LaunchedRun> SshTarget::launch(const core::LaunchRequest& request)
{
    auto ranks = ranksFor(request.configJson);
    if (!ranks)
        return ranks.error();
    if (*ranks > 1)
        return launchWithArgs(request, {"--nproc-per-node", std::to_string(*ranks)});
    return launchWithArgs(request, {});
}

Result<core::LaunchedRun> SshTarget::launchWithArgs(const core::LaunchRequest& request,
                                                    const std::vector<std::string>& extraArgs)
{
    auto log = wb::log::get("remote");
    if (!core::validRunId(request.runId))
        return makeError(ErrorCode::InvalidArgument,
                         "a run id may hold only letters, digits, '-', '_' and '.'", request.runId);
    auto moeTrainPath = moeTrain();
    if (!moeTrainPath)
        return moeTrainPath.error();
    auto root = remoteRunsRoot();
    if (!root)
        return root.error();
    reportProgress({"start", node(), -1.0, "starting moe-train in " + *root + "/" + request.runId});
    const std::string runDir = *root + "/" + request.runId;
    const std::string moe = shellQuotePath(*moeTrainPath);
    std::string extra;
    for (const auto& arg : extraArgs)
        extra += " " + shellQuote(arg);
    const std::string dir = shellQuote(runDir);

    // Every step below may be repeated (runScript retries once after a timeout or a dropped
    // connection, and a timed-out command may have run): each recognises its own earlier effect
    // by the launch token, so a retry never takes its own directory for another run's and never
    // starts a second trainer.
    const std::string token = launchTokenOr(request.launchToken);

    // 1. The directory, claimed with the token.
    auto made = runScript("[ -x " + moe + " ] || exit 127\n" + claimRunDirScript(*root, runDir, token), commandTimeout());
    if (!made)
        return made.error();
    if (made->exitStatus == 127)
        return makeError(ErrorCode::NotFound,
                         "moe-train is missing or not executable on the host: let the workbench build "
                         "it there (`hosts add NAME --remote-moe-train auto`) or pass its path with "
                         "--remote-moe-train",
                         name() + ":" + *moeTrainPath);
    if (made->exitStatus == kExitForeignRunDir)
        return makeError(ErrorCode::Busy,
                         "the run directory already exists on the host (another run uses this id); "
                         "launch again for a new id",
                         name() + ":" + runDir);
    if (made->exitStatus != 0)
        return makeError(ErrorCode::Failed, "cannot create the run directory: " + trimmed(made->err),
                         name() + ":" + runDir);

    // 2. run.json by SFTP (temp file + rename: the trainer never sees half of it; a repeat
    // writes the same bytes).
    auto written = withReconnect(
        [&](SshSession& s) { return s.writeFile(runDir + "/run.json", request.configJson, 0644); });
    if (!written)
        return written.error();

    // 3. Start detached and wait (<= 10 s) for the trainer's own shell to record its pid. The
    // .started lock makes a repeat wait for the first start's pid instead of starting again.
    const std::string start =
        "cd " + dir + " || exit 3\n" + requireOwnRunDirScript(runDir, token) +
        "command -v setsid >/dev/null 2>&1 || { echo 'setsid is missing on the host (util-linux)' >&2; exit 126; }\n"
        "if mkdir .started 2>/dev/null; then\n"
        "  setsid nohup sh -c 'echo $$ > pid.tmp && mv pid.tmp pid && exec \"$@\"' moe-train " + moe +
        " --config " + shellQuote(runDir + "/run.json") + " --run-dir " + dir + extra +
        " </dev/null >>stdout.log 2>&1 &\n"
        "fi\n"
        "i=0; while [ ! -s pid ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n"
        "cat pid 2>/dev/null || { echo 'moe-train did not start; see stdout.log' >&2; exit 1; }\n";
    auto started = runScript(start, commandTimeout());
    if (!started)
        return started.error();
    if (started->exitStatus == kExitForeignRunDir)
        return makeError(ErrorCode::Busy, "the run directory on the host belongs to another launch", name() + ":" + runDir);
    if (started->exitStatus != 0)
        return makeError(ErrorCode::Failed, "starting moe-train failed: " + trimmed(started->err),
                         name() + ":" + runDir);
    int64_t pid = 0;
    try {
        pid = std::stoll(started->out);
    } catch (const std::exception&) {
        return makeError(ErrorCode::Corrupt, "the pid file holds '" + trimmed(started->out) + "'",
                         name() + ":" + runDir);
    }
    log->info("launched run {} on {} as pid {} in {}", request.runId, name(), pid, runDir);
    reportProgress({"start", node(), 1.0, "moe-train started as pid " + std::to_string(pid)});
    return core::LaunchedRun{request.runId, name(), runDir, pid};
}

Result<core::MetricsChunk> SshTarget::readMetrics(const std::string& runDir, int64_t offset, int64_t maxBytes)
{
    return readFile(runDir + "/metrics.jsonl", offset, maxBytes);
}

Result<core::MetricsChunk> SshTarget::readFile(const std::string& path, int64_t offset, int64_t maxBytes)
{
    auto read = withReconnect([&](SshSession& s) { return s.readFile(path, offset, maxBytes); });
    if (!read)
        return read.error();
    core::MetricsChunk chunk;
    chunk.offset = offset;
    if (!read->exists)
        return chunk;  // not written yet
    chunk.fileSize = read->fileSize;
    if (offset > chunk.fileSize)
        return makeError(ErrorCode::Corrupt,
                         "the file is shorter (" + std::to_string(chunk.fileSize) +
                             " bytes) than what was already ingested (" + std::to_string(offset) +
                             "); the file was truncated or replaced",
                         name() + ":" + path);
    chunk.bytes = std::move(read->bytes);
    return chunk;
}

Result<core::RunStatus> SshTarget::status(const std::string& runDir)
{
    // One round trip: the liveness line, then status.json verbatim.
    const std::string script = "[ -d " + shellQuote(runDir) + " ] || " + exitWith(kExitNoRunData) + "\n" + readPidScript(runDir) +
                               kAliveFunction +
                               "a=0; [ \"$pid\" -gt 1 ] && alive && a=1\n"
                               // The process that wrote status.json (its "pid" line): -1 none named,
                               // 1 alive, 0 gone or a zombie (issue 20 item 6: a trainer resumed by
                               // hand records its shell's group, which outlives it).
                               "w=-1; sp=$(sed -n 's/^ *\"pid\": *\\([0-9][0-9]*\\).*/\\1/p' " +
                               shellQuote(runDir + "/status.json") + " 2>/dev/null | head -n 1)\n"
                               "if [ -n \"$sp\" ] && [ \"$sp\" -gt 1 ]; then w=0; kill -0 \"$sp\" 2>/dev/null && "
                               "! ps -o stat= -p \"$sp\" 2>/dev/null | grep -q Z && w=1; fi\n"
                               "echo \"pid=$pid\"; echo \"alive=$a\"; echo \"writer=$w\"\n" +
                               kStatusSeparatorLine +
                               "cat " + shellQuote(runDir + "/status.json") + " 2>/dev/null\n"
                               "exit 0\n";
    auto result = runScript(script, commandTimeout());
    if (!result)
        return result.error();
    if (result->exitStatus == kExitNoRunData)
        return makeError(ErrorCode::NotFound, "the run directory does not exist on the host", name() + ":" + runDir);
    if (result->exitStatus != 0)
        return makeError(ErrorCode::Failed, "reading the run status failed: " + trimmed(result->err), name() + ":" + runDir);

    const StatusReply reply = parseStatusReply(result->out);
    const auto number = [&](const char* key) -> std::optional<long> {
        const auto it = reply.fields.find(key);
        if (it == reply.fields.end() || it->second.empty())
            return std::nullopt;
        char* end = nullptr;
        const long value = std::strtol(it->second.c_str(), &end, 10);
        return *end == '\0' ? std::optional<long>(value) : std::nullopt;
    };
    const auto pid = number("pid"), alive = number("alive"), writer = number("writer");
    if (!pid || !alive || !writer)
        return makeError(ErrorCode::Corrupt, "unexpected answer from the host: " + result->out.substr(0, 200),
                         name() + ":" + runDir);

    // status.json is rewritten while we read it; a torn or empty one just means "no news".
    const core::StatusFileFields file = core::parseStatusFile(reply.statusJson);
    core::RunStatus status = core::statusOfFile(file);
    status.state = core::runStateOf(file, *pid != 0, *alive == 1, *writer < 0 ? std::nullopt : std::optional<bool>(*writer == 1));
    status.processAlive = status.state == core::RunState::Running;
    return status;
}

Result<void> SshTarget::cancel(const std::string& runDir, std::chrono::milliseconds grace)
{
    const long tenths = std::max<long>(1, static_cast<long>(grace.count() / 100));
    // The whole dance runs on the host: signals and the waits do not depend on the connection.
    const std::string script =
        readPidScript(runDir) + kAliveFunction +
        "[ \"$pid\" -gt 1 ] || { echo 'no readable pid file' >&2; " + exitWith(kExitNoRunData) + "; }\n"
        "alive || { echo gone; exit 0; }\n"
        "kill -TERM -\"$pid\" 2>/dev/null\n"
        "i=0; while alive && [ $i -lt " + std::to_string(tenths) + " ]; do sleep 0.1; i=$((i+1)); done\n"
        "alive || { echo term; exit 0; }\n"
        "kill -KILL -\"$pid\" 2>/dev/null\n"
        "i=0; while alive && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done\n"
        "alive || { echo kill; exit 0; }\n"
        "ps -e -o pgid= -o pid= -o stat= -o comm= | awk -v g=\"$pid\" '$1==g && $3 !~ /^Z/ {print $2 \" (\" $4 \")\"}' >&2\n"
        + exitWith(kExitSurvivedKill) + "\n";
    auto result = runScript(script, grace + std::chrono::seconds(30));
    if (!result)
        return result.error();
    if (result->exitStatus == kExitNoRunData)
        return makeError(ErrorCode::NotFound,
                         "no readable pid file on the host; the run never started, or its directory is gone",
                         name() + ":" + runDir);
    if (result->exitStatus == kExitSurvivedKill)
        return makeError(ErrorCode::Failed,
                         "processes of the run survived SIGKILL on the host: " + trimmed(result->err),
                         name() + ":" + runDir);
    if (result->exitStatus != 0)
        return makeError(ErrorCode::Failed, "cancel failed on the host: " + trimmed(result->err), name() + ":" + runDir);
    const std::string how = trimmed(result->out);
    if (how == "kill")
        wb::log::get("remote")->warn("cancel on {}: run in {} needed SIGKILL after {} ms", name(), runDir, grace.count());
    else
        wb::log::get("remote")->info("cancel on {}: run in {} ended ({})", name(), runDir, how);
    return {};
}

}  // namespace wb::remote
