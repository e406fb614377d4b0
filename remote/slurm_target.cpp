// SlurmTarget: sbatch/squeue/sacct/scontrol/scancel over SSH. One thread per target (see header).
//
// Every remote command is a POSIX sh script assembled here with each variable part (paths, the
// run id, job ids, file contents) passed through shellQuote(), then sent as `sh -c '<script>'`
// through SshTarget::runCommand, which reconnects on a dropped connection and repeats the script
// once. So every script here is safe to run twice; the submission is made so with a lock
// directory (see launch).
//
// The sbatch script is the planner's (core::planner::slurmScript): one srun task per rank
// running moe-train with the torchrun environment from Slurm's, RUN_ID and RUNS_ROOT taken from
// the environment sbatch exports to the job. Nothing secret passes through here; commands are logged
// at debug level by SshSession, their output never.
#include "remote/slurm_target.h"
#include "remote/run_dir_protocol.h"

#include "remote/run_dir_claim.h"

#include "core/log.h"
#include "core/planner/generators.h"
#include "core/run_config.h"
#include "remote/ssh_hosts.h"

#include <algorithm>
#include <cctype>
#include <sstream>


namespace wb::remote {

using core::ErrorCode;
using core::makeError;
using core::Result;

namespace {

// How long a launch waits for one sbatch (polled in command-sized pieces).
constexpr auto kSubmitPatience = std::chrono::minutes(5);

// Reads DIR/slurm_job_id into $job ("" when missing or not a plain job id). The job's own script
// rewrites the file when it starts (echo > file: empty for a moment), so an empty read of a
// submitted run (DIR/.submitted exists) is retried for up to 2 s before it counts.
std::string readJobScript(const std::string& runDir)
{
    const std::string file = shellQuote(runDir + "/slurm_job_id");
    return "readjob() { job=$(head -n 1 " + file + " 2>/dev/null); case \"$job\" in ''|*[!0-9_]*) job= ;; esac; }\n"
           "readjob; i=0\n"
           "while [ -z \"$job\" ] && [ -d " + shellQuote(runDir + "/.submitted") + " ] && [ $i -lt 20 ]; do "
           "sleep 0.1; readjob; i=$((i+1)); done\n";
}

// Shell function: prints the job's squeue state and succeeds while Slurm still has it queued or
// running. A job squeue no longer knows ("Invalid job id") has left the queue; any other squeue
// failure (controller unreachable) counts as still there, so nobody mistakes an outage for an end.
constexpr const char* kQueueFunction =
    "queued() {\n"
    "  q=$(squeue -h -j \"$job\" -o %T 2>&1); qrc=$?\n"
    "  q=$(printf '%s' \"$q\" | head -n 1)\n"
    "  if [ $qrc -ne 0 ]; then\n"
    "    case \"$q\" in *'nvalid job id'*) q=; return 1 ;; esac\n"
    "    q=\"squeue failed: $q\"; return 0\n"
    "  fi\n"
    "  case \"$q\" in ''|COMPLETED|CANCELLED*|FAILED|TIMEOUT|NODE_FAIL|PREEMPTED|BOOT_FAIL|DEADLINE|OUT_OF_MEMORY|REVOKED) return 1 ;; esac\n"
    "  return 0\n"
    "}\n";

bool pendingState(const std::string& state)
{
    static const char* kWaiting[] = {"PENDING", "CONFIGURING", "REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD",
                                     "RESV_DEL_HOLD", "POWER_UP_NODE", "SPECIAL_EXIT", "RESIZING"};
    return std::any_of(std::begin(kWaiting), std::end(kWaiting), [&](const char* s) { return state == s; });
}

// Slurm's "exit:signal" → a process-style exit code (128 + signal when killed by one).
int exitCodeFromSlurm(const std::string& text)
{
    int code = -1, signal = 0;
    if (std::sscanf(text.c_str(), "%d:%d", &code, &signal) < 1)
        return -1;
    return signal > 0 ? 128 + signal : code;
}

std::string lowercase(std::string text)
{
    std::transform(text.begin(), text.end(), text.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return text;
}

// What the status script printed: the job id, squeue's state (while queued) or sacct's /
// scontrol's (after), and status.json.
struct StatusAnswer {
    std::string job;
    bool inQueue = false;
    std::string queue;       ///< squeue's state, or "squeue failed: ..."
    std::string slurmState;  ///< after the queue: COMPLETED, CANCELLED, TIMEOUT, ... ("" = unknown)
    std::string slurmExit;   ///< "exit:signal"
    std::string statusJson;
    bool bridge = false;     ///< a Megatron-Bridge job (DIR/trainer): no status.json comes, Slurm's state is the run's
};

StatusAnswer parseStatusAnswer(const std::string& out)
{
    const StatusReply reply = parseStatusReply(out);
    const auto field = [&](const char* key) -> const std::string* {
        const auto it = reply.fields.find(key);
        return it == reply.fields.end() ? nullptr : &it->second;
    };
    StatusAnswer answer;
    if (const std::string* job = field("job"))
        answer.job = *job;
    if (const std::string* trainer = field("trainer"))
        answer.bridge = *trainer == "megatron-bridge";
    if (const std::string* queue = field("queue")) {
        answer.queue = trimmed(*queue);
        answer.inQueue = true;
    }
    if (const std::string* sacct = field("sacct")) {  // "CANCELLED by 0|0:15"
        const auto bar = sacct->find('|');
        answer.slurmState = trimmed(sacct->substr(0, bar));
        answer.slurmExit = bar == std::string::npos ? "" : trimmed(sacct->substr(bar + 1));
    } else if (const std::string* scontrol = field("scontrol")) {
        std::istringstream words(*scontrol);
        for (std::string word; words >> word;) {
            if (word.rfind("JobState=", 0) == 0)
                answer.slurmState = word.substr(9);
            else if (word.rfind("ExitCode=", 0) == 0)
                answer.slurmExit = word.substr(9);
        }
    }
    answer.slurmState = answer.slurmState.substr(0, answer.slurmState.find(' '));  // "CANCELLED by 0"
    answer.statusJson = reply.statusJson;
    return answer;
}

core::RunStatus statusFromAnswer(const StatusAnswer& answer, const std::string& runDir)
{
    // status.json is rewritten while we read it; a torn or empty one just means "no news".
    core::RunStatus status = core::statusOfFile(core::parseStatusFile(answer.statusJson));
    const std::string& job = answer.job;
    if (job.empty()) {
        status.state = core::RunState::Failed;
        if (status.message.empty())
            status.message = "no Slurm job id in the run directory: the submission failed";
        return status;
    }
    if (answer.inQueue) {
        status.processAlive = true;
        if (answer.queue.rfind("squeue failed:", 0) == 0) {
            // The controller did not answer: the job is most likely still there; say why we think so.
            status.state = core::RunState::Unknown;
            status.message = "Slurm job " + job + ": " + answer.queue;
        } else if (pendingState(answer.queue)) {
            status.state = core::RunState::Pending;
            status.message = "Slurm job " + job + " is " + answer.queue;
        } else {
            status.state = core::RunState::Running;
        }
        return status;
    }
    // Left the queue. moe-train's own word wins; Slurm's state explains an end it could not write
    // (cancelled while pending, killed at the time limit, node failure).
    if (status.status.empty() || status.status == "running") {
        const std::string& state = answer.slurmState;
        const std::string output = runDir + (answer.bridge ? std::string("/") + core::kBridgeJobLog : "/slurm-" + job + ".out");
        if (state == "CANCELLED") {
            status.status = "stopped";
            status.message = "Slurm job " + job + " was cancelled";
        } else if (state == "COMPLETED" && answer.bridge) {
            // Bridge writes no status.json: the batch script's exit 0 is the run's end.
            status.status = "finished";
            status.message = "Slurm job " + job + " completed";
        } else if (!state.empty() && state != "COMPLETED") {
            status.status = lowercase(state);
            status.message = "Slurm job " + job + " ended " + state + " (exit " + answer.slurmExit + "); see " + output;
        } else if (state.empty() && status.message.empty()) {
            status.message = "Slurm no longer knows job " + job + " (no accounting, and it aged out of scontrol)";
        }
        if (status.exitCode < 0 && !answer.slurmExit.empty())
            status.exitCode = exitCodeFromSlurm(answer.slurmExit);
    }
    status.state = core::finalStateOf(status.status);
    return status;
}

}  // namespace

SlurmTarget::SlurmTarget(SlurmTargetOptions options) : m_options(std::move(options)), m_ssh(m_options.ssh) {}

SlurmTarget::~SlurmTarget() = default;

Result<CommandResult> SlurmTarget::runScript(const std::string& script, std::chrono::milliseconds timeout)
{
    std::string full;
    if (!m_options.slurm.slurmConf.empty())
        full = "SLURM_CONF=" + shellQuote(m_options.slurm.slurmConf) + "; export SLURM_CONF\n";
    full += script;
    return m_ssh.runCommand("sh -c " + shellQuote(full), timeout);
}

Result<int> SlurmTarget::ranksPerNode(const std::string& device) const
{
    if (device == "cpu")
        return m_options.slurm.cpuRanksPerNode;
    if (m_options.slurm.gpusPerNode > 0)
        return m_options.slurm.gpusPerNode;
    return makeError(ErrorCode::InvalidArgument,
                     "a cuda run on Slurm needs the GPUs per node: set \"gpus_per_node\" for this host in slurm.json "
                     "(beside hosts.json)",
                     name());
}

Result<void> SlurmTarget::validateConfig(const std::string& configJson)
{
    const auto parsed = core::parseRunConfig(configJson);
    if (!parsed.ok())
        return makeError(ErrorCode::InvalidArgument, core::formatProblems(parsed.problems));
    auto ranks = ranksPerNode(parsed.config.runtime.device);
    if (!ranks)
        return ranks.error();
    const int world = m_options.slurm.nodes * *ranks;
    if (parsed.config.runtime.device != "cpu") {
        // A login node often has no GPU, and moe-train --validate there would reject every cuda
        // config: check the layout here; the node-side checks run when the job starts (moe-train
        // then ends with status bad_config and the reason).
        if (auto problems = core::validateLayout(parsed.config, world); !problems.empty())
            return makeError(ErrorCode::InvalidArgument, "the config does not fit " + std::to_string(world) +
                                                             " GPU(s) (" + std::to_string(m_options.slurm.nodes) +
                                                             " node(s) in slurm.json):\n" + core::formatProblems(problems));
        return {};
    }
    const std::string moe = shellQuotePath(m_options.ssh.moeTrainPath);
    // The config travels inside the script (quoted), so no SFTP round trip is needed.
    const std::string script =
        "[ -x " + moe + " ] || exit 127\n"
        "f=$(mktemp) || exit 1\n"
        "printf '%s' " + shellQuote(configJson) + " > \"$f\"\n"
        "WORLD_SIZE=" + std::to_string(world) + " " + moe + " --validate \"$f\" 2>&1; rc=$?\n"
        "rm -f \"$f\"; exit $rc\n";
    auto checked = runScript(script, m_ssh.commandTimeout());
    if (!checked)
        return checked.error();
    if (checked->exitStatus == 127)
        return moeTrainMissing();
    if (checked->exitStatus == 0)
        return {};
    if (checked->exitStatus == 2)
        return makeError(ErrorCode::InvalidArgument, "moe-train on the cluster rejects the config for " +
                                                         std::to_string(world) + " rank(s):\n" + trimmed(checked->out));
    return makeError(ErrorCode::Failed,
                     "moe-train --validate failed on the login node with exit code " +
                         std::to_string(checked->exitStatus) + ":\n" + trimmed(checked->out),
                     name());
}

Result<CommandResult> SlurmTarget::checkSlurmClient(const std::string& trainerCheck)
{
    // A slurm_conf that is not there: sbatch would first try a configless DNS lookup of the
    // controller (about a minute) and then fail without naming the file.
    const std::string conf = m_options.slurm.slurmConf.empty()
                                 ? std::string()
                                 : "[ -f \"$SLURM_CONF\" ] || exit 125\n";
    auto checked = runScript("for c in sbatch squeue scancel scontrol; do command -v \"$c\" >/dev/null 2>&1 || "
                             "{ echo \"$c\"; exit 126; }; done\n" + conf + trainerCheck +
                             "printf '%s' \"$HOME\"\n",
                             m_ssh.commandTimeout());
    if (!checked)
        return checked.error();
    if (checked->exitStatus == 126)
        return makeError(ErrorCode::NotFound,
                         "'" + trimmed(checked->out) + "' is not on the login node's PATH for non-interactive "
                         "SSH commands; is this host a Slurm login node?",
                         name());
    if (checked->exitStatus == 125)
        return makeError(ErrorCode::NotFound,
                         "slurm.json sets slurm_conf for this host, but the login node has no such file; correct "
                         "the path (`hosts slurm NAME --slurm-conf PATH`) or remove it to use the login node's default",
                         name() + ":" + m_options.slurm.slurmConf);
    return checked;
}

core::Error SlurmTarget::moeTrainMissing() const
{
    return makeError(ErrorCode::NotFound,
                     "moe-train is missing or not executable on the login node; build the runtime on the cluster's "
                     "shared filesystem and register its path with hosts add --remote-moe-train",
                     name() + ":" + m_options.ssh.moeTrainPath);
}

Result<std::string> SlurmTarget::checkLoginNode()
{
    const std::string moe = shellQuotePath(m_options.ssh.moeTrainPath);
    auto checked = checkSlurmClient("[ -x " + moe + " ] || exit 127\n");
    if (!checked)
        return checked.error();
    if (checked->exitStatus == 127)
        return moeTrainMissing();
    if (checked->exitStatus != 0)
        return makeError(ErrorCode::Failed,
                         "checking the login node failed (exit " + std::to_string(checked->exitStatus) + "): " + trimmed(checked->err),
                         name());
    // The generated script quotes MOE_TRAIN, so "~/" must be expanded here.
    std::string moeTrain = m_options.ssh.moeTrainPath;
    if (moeTrain.rfind("~/", 0) == 0)
        moeTrain = checked->out + moeTrain.substr(1);
    return moeTrain;
}

Result<core::LaunchedRun> SlurmTarget::launch(const core::LaunchRequest& request)
{
    if (!core::validRunId(request.runId))
        return makeError(ErrorCode::InvalidArgument, "a run id may hold only letters, digits, '-', '_' and '.'",
                         request.runId);
    const auto parsed = core::parseRunConfig(request.configJson);
    if (!parsed.ok())
        return makeError(ErrorCode::InvalidArgument, core::formatProblems(parsed.problems));
    auto ranks = ranksPerNode(parsed.config.runtime.device);
    if (!ranks)
        return ranks.error();
    const SlurmSettings& slurm = m_options.slurm;
    const std::string host = m_options.ssh.host.host;

    // 1. Check: the Slurm client commands and moe-train, and the remote home for "~/" paths.
    reportProgress({"check", host, 0.0, "looking for sbatch and moe-train"});
    auto root = m_ssh.remoteRunsRoot();
    if (!root)
        return root.error();
    auto moeTrain = checkLoginNode();
    if (!moeTrain)
        return moeTrain.error();
    reportProgress({"check", host, 1.0, "sbatch and moe-train found"});

    // 2. The planner's sbatch script for this config and cluster.
    core::planner::GeneratorTarget generator;
    generator.nodes = slurm.nodes;
    generator.gpusPerNode = parsed.config.runtime.device == "cpu" ? 0 : *ranks;
    generator.cpuRanksPerNode = m_options.slurm.cpuRanksPerNode;
    generator.runsRoot = *root;  // also in the script: sbatch may not export RUN_ID/RUNS_ROOT
    generator.runId = request.runId;
    generator.account = slurm.account;
    generator.partition = slurm.partition;
    generator.timeLimit = slurm.timeLimit;
    generator.masterPort = slurm.masterPort;
    generator.moeTrain = *moeTrain;
    const std::string sbatchScript = core::planner::slurmScript(parsed.config, generator);

    // 3. The run directory, its files, and the submission (submitOnce: safe to repeat).
    reportProgress({"start", host, -1.0, "submitting to Slurm"});
    const std::string token = launchTokenOr(request.launchToken);
    const std::string writeFiles =
        "printf '%s\\n' " + shellQuote(request.configJson) + " > run.json.tmp && mv run.json.tmp run.json || exit 1\n"
        "printf '%s' " + shellQuote(sbatchScript) + " > run.sbatch.tmp && mv run.sbatch.tmp run.sbatch || exit 1\n";
    const std::string environment = "RUN_ID=" + shellQuote(request.runId) + " RUNS_ROOT=" + shellQuote(*root);
    return submitOnce(*root, request.runId, token, writeFiles, environment, "", "run.sbatch");
}

Result<std::string> SlurmTarget::prepareBridgeLaunch(const std::string& runId)
{
    if (!core::validRunId(runId))
        return makeError(ErrorCode::InvalidArgument, "a run id may hold only letters, digits, '-', '_' and '.'", runId);
    const std::string host = m_options.ssh.host.host;
    const std::string& python = m_options.slurm.bridgePython;
    reportProgress({"check", host, 0.0, "looking for sbatch and Megatron-Bridge (" + python + ")"});
    auto root = m_ssh.remoteRunsRoot();
    if (!root)
        return root.error();
    // On the login node, with the python the job is given: clusters keep their training
    // environment on the filesystem the nodes share, so what imports here imports there. The
    // import's own last lines say why it failed (no module, a broken install, a CUDA library).
    auto checked = checkSlurmClient("py=" + shellQuotePath(python) + "\n"
                                    "command -v \"$py\" >/dev/null 2>&1 || exit 127\n"
                                    "out=$(\"$py\" -c 'import megatron.bridge' 2>&1) || { printf '%s\\n' \"$out\" | tail -n 4 >&2; " +
                                    exitWith(kExitNoBridge) + "; }\n");
    if (!checked)
        return checked.error();
    const std::string fix = "; give the python that has Megatron-Bridge (a venv or conda env on the cluster's shared "
                            "filesystem) with `hosts slurm " + m_options.name + " --bridge-python PATH`";
    if (checked->exitStatus == 127)
        return makeError(ErrorCode::NotFound,
                         "bridge_python '" + python + "' is not on the login node's PATH for non-interactive SSH commands" + fix,
                         name() + ":bridge_python");
    if (checked->exitStatus == kExitNoBridge)
        return makeError(ErrorCode::NotFound,
                         "`" + python + " -c \"import megatron.bridge\"` fails on the login node, so the job would fail "
                         "the same way:\n" + trimmed(checked->err) + "\nInstall Megatron-Bridge into that python (pip "
                         "install megatron-bridge)" + fix,
                         name() + ":bridge_python");
    if (checked->exitStatus != 0)
        return makeError(ErrorCode::Failed,
                         "checking the login node failed (exit " + std::to_string(checked->exitStatus) + "): " + trimmed(checked->err),
                         name());
    reportProgress({"check", host, 1.0, "sbatch and Megatron-Bridge found"});
    return *root + "/" + runId;
}

Result<core::LaunchedRun> SlurmTarget::launchBridge(const core::BridgeJobRequest& request)
{
    if (!core::validRunId(request.runId))
        return makeError(ErrorCode::InvalidArgument, "a run id may hold only letters, digits, '-', '_' and '.'",
                         request.runId);
    const auto named = [&](const std::string& file) { return file == request.script; };
    if (std::none_of(request.files.begin(), request.files.end(), [&](const auto& f) { return named(f.first); }))
        return makeError(ErrorCode::InvalidArgument, "the job's files do not hold its script", request.script);
    const std::string host = m_options.ssh.host.host;
    auto root = m_ssh.remoteRunsRoot();
    if (!root)
        return root.error();
    reportProgress({"start", host, -1.0, "submitting the Megatron-Bridge job to Slurm"});
    const std::string token = launchTokenOr(request.launchToken);
    const std::string runDir = *root + "/" + request.runId;
    // Each file through a temp name, so a repeat never sees half a file; `trainer` tells status
    // that no status.json is coming (Slurm's own end state is the run's).
    std::string writeFiles = "printf 'megatron-bridge\\n' > trainer || exit 1\n";
    for (const auto& [file, content] : request.files) {
        if (file.empty() || file.find('/') != std::string::npos || file.front() == '.')
            return makeError(ErrorCode::InvalidArgument, "a job file needs a plain name", file);
        const std::string to = shellQuote(file);
        writeFiles += "printf '%s' " + shellQuote(content) + " > " + shellQuote(file + ".tmp") + " && mv " +
                      shellQuote(file + ".tmp") + " " + to + " || exit 1\n";
    }
    writeFiles += "chmod +x " + shellQuote(request.script) + "\n";
    const std::string log = shellQuote(runDir + "/" + core::kBridgeJobLog);
    const SlurmSettings& slurm = m_options.slurm;
    std::string arguments = "--job-name=" + shellQuote("wb-" + request.runId) + " --output=" + log + " --error=" + log +
                            " --open-mode=append";
    for (const auto& [option, value] : {std::pair{"--partition=", slurm.partition}, {"--account=", slurm.account},
                                        {"--time=", slurm.timeLimit}})
        if (!value.empty())
            arguments += " " + std::string(option) + shellQuote(value);
    const std::string environment = "BRIDGE_PYTHON=" + shellQuote(slurm.bridgePython) + " RUN_ID=" +
                                    shellQuote(request.runId) + " RUNS_ROOT=" + shellQuote(*root);
    return submitOnce(*root, request.runId, token, writeFiles, environment, arguments, request.script);
}

// The submission, safe to repeat. A timed-out or dropped submit may have run, so the script
// is safe to repeat under the launch token: the directory is claimed with it (claimRunDirScript),
// and the .submitted lock makes a repeat wait for the first attempt's outcome (its job id, or
// sbatch's refusal) instead of submitting a second job. The submitter records its pid; if it died
// without an answer, the job is looked up in the queue by the token (sbatch --comment) before
// anything is submitted again.
Result<core::LaunchedRun> SlurmTarget::submitOnce(const std::string& root, const std::string& runId, const std::string& token,
                                            const std::string& writeFiles, const std::string& environment,
                                            const std::string& sbatchArguments, const std::string& scriptName)
{
    const std::string host = m_options.ssh.host.host;
    const std::string runDir = root + "/" + runId;
    const std::string dir = shellQuote(runDir);
    const std::string comment = "wb-launch:" + token;
    // A repeat waits for the first attempt for most of one command's time, then answers 75 (still
    // submitting) and is asked again: sbatch against a slow slurmctld can take minutes.
    // Measured in wall seconds on the host, not in loop turns: a loaded login node takes longer
    // than 0.1 s per turn, and the repeat must answer well inside the command timeout.
    const long waitSeconds = std::max<long>(1, static_cast<long>(m_ssh.commandTimeout().count() / 2000));
    const std::string script =
        claimRunDirScript(root, runDir, token) +
        "cd " + dir + " || exit 1\n"
        "outcome() {\n"
        "  [ -s slurm_job_id ] && { cat slurm_job_id; exit 0; }\n"
        "  [ -s sbatch.rc ] && { cat sbatch.err >&2; " + exitWith(kExitSubmitRefused) + "; }\n"
        "  return 0\n"
        "}\n"
        "if ! mkdir .submitted 2>/dev/null; then\n"
        "  start=$(date +%s); end=$((start + " + std::to_string(waitSeconds) + "))\n"
        "  while [ \"$(date +%s)\" -lt \"$end\" ]; do\n"
        "    outcome\n"
        "    p=$(cat .submitted/pid 2>/dev/null); case \"$p\" in ''|*[!0-9]*) p=0 ;; esac\n"
        "    [ \"$p\" -gt 1 ] && kill -0 \"$p\" 2>/dev/null || [ \"$(date +%s)\" -lt $((start + 2)) ] || break\n"
        "    sleep 0.1\n"
        "  done\n"
        "  outcome\n"
        "  [ \"$p\" -gt 1 ] && kill -0 \"$p\" 2>/dev/null && exit 75\n"
        "  job=$(squeue -h -u \"$(id -un)\" -o '%i %k' 2>/dev/null | awk -v c=" + shellQuote(comment) +
        " '$2 == c {print $1; exit}')\n"
        "  if [ -n \"$job\" ]; then printf '%s\\n' \"$job\" > slurm_job_id.tmp && mv slurm_job_id.tmp slurm_job_id; cat slurm_job_id; exit 0; fi\n"
        "fi\n"
        "echo $$ > .submitted/pid\n"
        + writeFiles + environment + " sbatch --parsable --comment=" + shellQuote(comment) + " --chdir=" + dir + " " +
        sbatchArguments + " " + shellQuote(scriptName) + " > sbatch.out 2> sbatch.err\n"
        "rc=$?\n"
        "if [ $rc -ne 0 ]; then echo $rc > sbatch.rc; cat sbatch.err >&2; " + exitWith(kExitSubmitRefused) + "; fi\n"
        "job=$(head -n 1 sbatch.out | cut -d ';' -f 1)\n"
        "printf '%s\\n' \"$job\" > slurm_job_id.tmp && mv slurm_job_id.tmp slurm_job_id\n"
        "rm -f sbatch.out sbatch.err\n"
        "printf '%s' \"$job\"\n";
    const auto patience = std::chrono::steady_clock::now() + kSubmitPatience;
    // Asked again while the first submission is still in progress (75), and also after a repeat
    // that itself timed out or lost its connection (IoError): the script is safe to repeat.
    // At most 3 such IoError repeats: an unreachable login node fails in minutes, not in 5 x 60 s.
    auto submitted = runScript(script, m_ssh.commandTimeout());
    int lostAnswers = 0;
    while (((submitted && submitted->exitStatus == 75) ||
            (!submitted && submitted.error().code == ErrorCode::IoError && ++lostAnswers <= 3)) &&
           std::chrono::steady_clock::now() < patience) {
        reportProgress({"start", host, -1.0, "sbatch is still answering; waiting for it"});
        submitted = runScript(script, m_ssh.commandTimeout());
    }
    if (!submitted)
        return submitted.error();
    if (submitted->exitStatus == 75)
        return makeError(ErrorCode::IoError,
                         "sbatch did not answer within " +
                             std::to_string(std::chrono::duration_cast<std::chrono::seconds>(kSubmitPatience).count()) +
                             " s on the login node; the job may still be submitted: `runs --sync` or the run's "
                             "directory will show it",
                         name() + ":" + runDir);
    if (submitted->exitStatus == kExitForeignRunDir)
        return makeError(ErrorCode::Busy,
                         "the run directory already exists on the cluster (another run uses this id); "
                         "launch again for a new id",
                         name() + ":" + runDir);
    if (submitted->exitStatus == kExitSubmitRefused)
        return makeError(ErrorCode::Failed,
                         "sbatch refused the job: " + trimmed(submitted->err) + "\n(the script is " + runDir + "/" +
                             scriptName + "; check partition, account and time in slurm.json)",
                         name());
    if (submitted->exitStatus != 0)
        return makeError(ErrorCode::Failed, "preparing the run directory failed: " + trimmed(submitted->err),
                         name() + ":" + runDir);
    const std::string job = trimmed(submitted->out);
    if (job.empty() || !std::all_of(job.begin(), job.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '_'; }))
        return makeError(ErrorCode::Corrupt, "sbatch answered '" + job + "' instead of a job id", name() + ":" + runDir);
    reportProgress({"start", host, 1.0, "submitted as Slurm job " + job});
    wb::log::get("remote")->info("run {} ({}) submitted on {} as Slurm job {} in {}", runId, scriptName, name(), job, runDir);
    return core::LaunchedRun{runId, name() + " job " + job, runDir, 0};
}

Result<core::MetricsChunk> SlurmTarget::readMetrics(const std::string& runDir, int64_t offset, int64_t maxBytes)
{
    return m_ssh.readMetrics(runDir, offset, maxBytes);
}

Result<std::string> SlurmTarget::jobId(const std::string& runDir)
{
    auto result = runScript(readJobScript(runDir) + "[ -n \"$job\" ] || " + exitWith(kExitNoRunData) + "\nprintf '%s' \"$job\"\n", m_ssh.commandTimeout());
    if (!result)
        return result.error();
    if (result->exitStatus == kExitNoRunData)
        return makeError(ErrorCode::NotFound, "no Slurm job id in the run directory (the job was never submitted)",
                         name() + ":" + runDir);
    if (result->exitStatus != 0)
        return makeError(ErrorCode::Failed, "reading the job id failed: " + trimmed(result->err), name() + ":" + runDir);
    return result->out;
}

Result<core::MetricsChunk> SlurmTarget::readFile(const std::string& path, int64_t offset, int64_t maxBytes)
{
    return m_ssh.readFile(path, offset, maxBytes);
}

Result<core::RunStatus> SlurmTarget::status(const std::string& runDir)
{
    // One round trip: "job=", then "queue=" (squeue) or, once it left the queue, "sacct=" or
    // "scontrol=", then "---" and status.json verbatim.
    const std::string script =
        "[ -d " + shellQuote(runDir) + " ] || " + exitWith(kExitNoRunData) + "\n" + readJobScript(runDir) + kQueueFunction +
        "echo \"job=$job\"\n"
        "echo \"trainer=$(head -n 1 " + shellQuote(runDir + "/trainer") + " 2>/dev/null)\"\n"
        "if [ -n \"$job\" ]; then\n"
        "  if queued; then echo \"queue=$q\"; else\n"
        "    a=$(sacct -j \"$job\" -n -P -X -o State,ExitCode 2>/dev/null | head -n 1)\n"
        "    if [ -n \"$a\" ]; then echo \"sacct=$a\"; else\n"
        "      echo \"scontrol=$(scontrol show job \"$job\" -o 2>/dev/null | tr ' ' '\\n' | grep -E '^(JobState|ExitCode)=' | tr '\\n' ' ')\"\n"
        "    fi\n"
        "  fi\n"
        "fi\n" +
        kStatusSeparatorLine + "cat " + shellQuote(runDir + "/status.json") + " 2>/dev/null\n"
        "exit 0\n";
    auto result = runScript(script, m_ssh.commandTimeout());
    if (!result)
        return result.error();
    if (result->exitStatus == kExitNoRunData)
        return makeError(ErrorCode::NotFound, "the run directory does not exist on the cluster", name() + ":" + runDir);
    if (result->exitStatus != 0)
        return makeError(ErrorCode::Failed, "reading the run status failed: " + trimmed(result->err), name() + ":" + runDir);

    return statusFromAnswer(parseStatusAnswer(result->out), runDir);
}

Result<void> SlurmTarget::cancel(const std::string& runDir, std::chrono::milliseconds grace)
{
    const long tenths = std::max<long>(1, static_cast<long>(grace.count() / 100));
    // All on the login node, so the waits do not depend on the connection. The last part looks
    // for what Slurm may have missed: a trainer whose pid file says it ran on this node, or any
    // process whose arguments name this run directory (moe-train --run-dir DIR and its ranks).
    // "--run-""dir" keeps this script's own command line from matching.
    const std::string script =
        "dir=" + shellQuote(runDir) + "\n" + readJobScript(runDir) + kQueueFunction +
        "[ -n \"$job\" ] || { echo 'no Slurm job id in the run directory' >&2; " + exitWith(kExitNoRunData) + "; }\n"
        "how=gone\n"
        "if queued; then\n"
        "  how=term; scancel \"$job\" 2>/dev/null\n"
        "  i=0; while queued && [ $i -lt " + std::to_string(tenths) + " ]; do sleep 0.1; i=$((i+1)); done\n"
        "  if queued; then\n"
        "    how=kill; scancel --signal=KILL --full \"$job\" 2>/dev/null; scancel \"$job\" 2>/dev/null\n"
        "    i=0; while queued && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n"
        "    queued && { echo \"job $job is still in the queue ($q)\" >&2; exit 46; }\n"
        "  fi\n"
        "fi\n"
        "echo \"$how\"\n"
        "me=$(hostname -s 2>/dev/null); me_full=$(hostname 2>/dev/null)\n"
        "P=\"--run-\"\"dir $dir\"; export P\n"
        "left() {\n"
        "  for f in \"$dir\"/pid.*; do\n"
        "    [ -e \"$f\" ] || continue\n"
        "    node=${f##*/pid.}; node=${node%.*}; pid=$(head -n 1 \"$f\")\n"
        "    case \"$pid\" in ''|*[!0-9]*) continue ;; esac\n"
        "    if [ \"$node\" != \"$me\" ] && [ \"$node\" != \"$me_full\" ]; then continue; fi\n"
        "    st=$(ps -o stat= -p \"$pid\" 2>/dev/null)\n"
        "    case \"$st\" in ''|Z*) continue ;; esac\n"
        "    tr '\\0' ' ' < /proc/\"$pid\"/cmdline 2>/dev/null | grep -q moe-train && echo \"$pid (pid.$node)\"\n"
        "  done\n"
        "  ps -e -ww -o pid= -o stat= -o args= 2>/dev/null | awk 'index($0, ENVIRON[\"P\"]) && $2 !~ /^Z/ {print $1 \" (\" $3 \")\"}'\n"
        "}\n"
        "i=0; while [ -n \"$(left)\" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done\n"
        "s=$(left | sort -u | tr '\\n' ' ')\n"
        "[ -z \"$s\" ] || { echo \"$s\" >&2; exit 45; }\n"
        "for f in \"$dir\"/pid.*; do [ -e \"$f\" ] || continue; node=${f##*/pid.}; node=${node%.*}\n"
        "  [ \"$node\" = \"$me\" ] || [ \"$node\" = \"$me_full\" ] || echo \"unverified=$node\"\n"
        "done | sort -u\n"
        "exit 0\n";
    auto result = runScript(script, grace + std::chrono::seconds(90));
    if (!result)
        return result.error();
    if (result->exitStatus == kExitNoRunData)
        return makeError(ErrorCode::NotFound, "no Slurm job id in the run directory; the job was never submitted",
                         name() + ":" + runDir);
    if (result->exitStatus == 46)
        return makeError(ErrorCode::Failed, "scancel did not end the job: " + trimmed(result->err),
                         name() + ":" + runDir);
    if (result->exitStatus == 45)
        return makeError(ErrorCode::Failed,
                         "the Slurm job ended but processes of the run are still alive on the login node: " +
                             trimmed(result->err),
                         name() + ":" + runDir);
    if (result->exitStatus != 0)
        return makeError(ErrorCode::Failed, "cancel failed on the login node: " + trimmed(result->err),
                         name() + ":" + runDir);
    auto log = wb::log::get("remote");
    std::istringstream lines(result->out);
    std::string how;
    std::getline(lines, how);
    for (std::string line; std::getline(lines, line);)
        if (line.rfind("unverified=", 0) == 0)
            log->info("cancel on {}: node {} is not visible from the login node; Slurm ended the job there",
                      name(), line.substr(11));
    if (how == "kill")
        log->warn("cancel on {}: run in {} needed SIGKILL after {} ms", name(), runDir, grace.count());
    else
        log->info("cancel on {}: run in {} ended ({})", name(), runDir, how);
    return {};
}

Result<std::unique_ptr<core::RunTarget>> makeSlurmTarget(const std::string& name, const std::string& hostsPath,
                                                          const SshTargetHooks& hooks)
{
    auto entry = SshHostRegistry(hostsPath).find(name);
    if (!entry)
        return entry.error();
    auto settings = loadSlurmSettings(slurmSettingsPath(hostsPath), name);
    if (!settings)
        return settings.error();
    auto login = entry->targetOptions();
    login.attach(hooks);
    return std::unique_ptr<core::RunTarget>(std::make_unique<SlurmTarget>(SlurmTargetOptions{name, login, *settings}));
}

}  // namespace wb::remote
