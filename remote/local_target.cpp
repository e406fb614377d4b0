// LocalTarget: fork/exec of moe-train, file reads of the run directory, process-group signals.
//
// Launch uses a double fork: the intermediate child forks the trainer and exits at once, and we
// reap it, so the trainer is re-parented to init (or the nearest subreaper) and never becomes a
// zombie of the workbench. The trainer calls setsid(): its pid is its session and process-group
// id, which is what DIR/pid records and what cancel() signals. A pipe with O_CLOEXEC reports the
// trainer's pid and, if exec fails, its errno; the pipe closing without an error means exec worked.
#include "remote/local_target.h"

#include "core/atomic_file.h"

#include "core/log.h"
#include "remote/process_group.h"
#include "remote/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

namespace wb::remote {

using core::ErrorCode;
using core::makeError;
using core::Result;

namespace {

class Fd {
public:
    explicit Fd(int fd = -1) : m_fd(fd) {}
    ~Fd() { reset(); }
    Fd(Fd&& other) noexcept : m_fd(std::exchange(other.m_fd, -1)) {}
    Fd& operator=(Fd&& other) noexcept
    {
        if (this != &other) {
            reset();
            m_fd = std::exchange(other.m_fd, -1);
        }
        return *this;
    }
    int get() const { return m_fd; }
    explicit operator bool() const { return m_fd >= 0; }
    void reset()
    {
        if (m_fd >= 0)
            ::close(m_fd);
        m_fd = -1;
    }

private:
    int m_fd;
};

std::string errnoText(int err) { return std::strerror(err); }

std::optional<std::string> readSmallFile(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
}

pid_t readPidFile(const std::string& runDir)
{
    auto text = readSmallFile(runDir + "/pid");
    if (!text)
        return 0;
    try {
        const long pid = std::stol(*text);
        return pid > 1 ? static_cast<pid_t>(pid) : 0;  // never signal init or "all processes"
    } catch (const std::exception&) {
        return 0;  // torn or empty
    }
}

// Message through the launch pipe. Each is well under PIPE_BUF, so writes are atomic and the
// two writers (intermediate child, trainer) never interleave bytes.
struct LaunchMessage {
    char tag;      // 'P' trainer pid, 'F' fork failed (errno), 'E' exec failed (errno)
    int32_t value;
};

void writeMessage(int fd, char tag, int32_t value)
{
    const LaunchMessage msg{tag, value};
    while (::write(fd, &msg, sizeof msg) < 0 && errno == EINTR) {
    }
}

// Runs in the trainer process between fork and exec: async-signal-safe calls only.
[[noreturn]] void execTrainer(int devNull, int logFd, int reportFd, const char* workDir,
                              const std::vector<char*>& argv)
{
    ::setsid();
    ::dup2(devNull, STDIN_FILENO);
    ::dup2(logFd, STDOUT_FILENO);
    ::dup2(logFd, STDERR_FILENO);
    // Dispositions set to "ignore" survive exec; the trainer must see SIGTERM/SIGINT/SIGPIPE.
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGQUIT, SIGCHLD})
        ::signal(sig, SIG_DFL);
    sigset_t none;
    ::sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Everything the workbench opened without O_CLOEXEC (a library's fd) must not leak into a
    // process that outlives us.
    ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
    if (::chdir(workDir) != 0) {
        writeMessage(reportFd, 'E', errno);
        ::_exit(127);
    }
    ::execv(argv[0], argv.data());
    writeMessage(reportFd, 'E', errno);
    ::_exit(127);
}

}  // namespace

LocalTarget::LocalTarget(std::string moeTrainPath, std::string runsRoot)
    : m_moeTrainPath(std::move(moeTrainPath)), m_runsRoot(std::move(runsRoot))
{
    // The trainer starts in its run directory, so a relative path would resolve against that.
    std::error_code ec;
    if (!m_moeTrainPath.empty()) {
        const auto absolute = std::filesystem::absolute(m_moeTrainPath, ec);
        if (!ec)
            m_moeTrainPath = absolute.lexically_normal().string();
    }
}

Result<void> LocalTarget::validateConfig(const std::string& configJson)
{
    if (::access(m_moeTrainPath.c_str(), X_OK) != 0)
        return makeError(ErrorCode::NotFound,
                         "moe-train is missing or not executable; build it (cmake --build build "
                         "--target moe-train) or pass its path with --moe-train",
                         m_moeTrainPath);
    // The config goes to a private temp file: moe-train --validate reads a path.
    std::string path = (std::filesystem::temp_directory_path() / "moe-workbench-validate-XXXXXX.json").string();
    const int fd = ::mkstemps(path.data(), 5);
    if (fd < 0)
        return makeError(ErrorCode::IoError, "cannot create a temporary file: " + errnoText(errno), path);
    const bool written = ::write(fd, configJson.data(), configJson.size()) == static_cast<ssize_t>(configJson.size());
    ::close(fd);
    if (!written) {
        ::unlink(path.c_str());
        return makeError(ErrorCode::IoError, "cannot write the temporary config", path);
    }
    auto result = runAndCapture({m_moeTrainPath, "--validate", path}, std::chrono::seconds(60));
    ::unlink(path.c_str());
    if (!result)
        return result.error();
    if (result->exitCode == 0)
        return {};
    std::string output = result->output;
    while (!output.empty() && (output.back() == '\n' || output.back() == ' '))
        output.pop_back();
    // moe-train names the file it read, our private temp file: the user knows it as the config
    // (issue 20 item 13: launch errors named /tmp/moe-workbench-validate-XXXXXX.json).
    for (size_t at = output.find(path); at != std::string::npos; at = output.find(path, at))
        output.replace(at, path.size(), "the config");
    if (result->exitCode == 2)
        return makeError(ErrorCode::InvalidArgument, "moe-train rejects the config:\n" + output);
    return makeError(ErrorCode::Failed,
                     "moe-train --validate failed with exit code " + std::to_string(result->exitCode) + ":\n" + output,
                     m_moeTrainPath);
}

Result<core::LaunchedRun> LocalTarget::launch(const core::LaunchRequest& request)
{
    auto log = wb::log::get("remote");
    if (!core::validRunId(request.runId))
        return makeError(ErrorCode::InvalidArgument,
                         "a run id may hold only letters, digits, '-', '_' and '.'", request.runId);
    if (::access(m_moeTrainPath.c_str(), X_OK) != 0)
        return makeError(ErrorCode::NotFound,
                         "moe-train is missing or not executable; build it (cmake --build build "
                         "--target moe-train) or pass its path with --moe-train",
                         m_moeTrainPath);

    std::error_code ec;
    std::filesystem::create_directories(m_runsRoot, ec);
    if (ec)
        return makeError(ErrorCode::IoError, "cannot create the runs folder: " + ec.message(),
                         m_runsRoot);
    const std::string runDir =
        std::filesystem::absolute(std::filesystem::path(m_runsRoot) / request.runId).string();
    // mkdir, not create_directories: an existing directory means another run owns it.
    if (::mkdir(runDir.c_str(), 0755) != 0) {
        if (errno == EEXIST)
            return makeError(ErrorCode::Busy,
                             "the run directory already exists (another run uses this id); "
                             "launch again for a new id",
                             runDir);
        return makeError(ErrorCode::IoError, "cannot create the run directory: " + errnoText(errno),
                         runDir);
    }
    const std::string configPath = runDir + "/run.json";
    if (auto r = core::writeFileAtomically(configPath, request.configJson); !r)
        return r.error();

    Fd devNull(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    const std::string logPath = runDir + "/stdout.log";
    Fd logFd(::open(logPath.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (!devNull || !logFd)
        return makeError(ErrorCode::IoError, "cannot open stdout.log or /dev/null: " +
                                                 errnoText(errno), logPath);
    int pipeFds[2];
    if (::pipe2(pipeFds, O_CLOEXEC) != 0)
        return makeError(ErrorCode::IoError, "pipe2 failed: " + errnoText(errno));
    Fd reportRead(pipeFds[0]);
    Fd reportWrite(pipeFds[1]);

    // Everything the children need is built before fork(): after it, no allocation.
    std::vector<std::string> args = {m_moeTrainPath, "--config", configPath, "--run-dir", runDir};
    std::vector<char*> argv;
    for (auto& arg : args)
        argv.push_back(arg.data());
    argv.push_back(nullptr);

    const pid_t middle = ::fork();
    if (middle < 0)
        return makeError(ErrorCode::IoError, "fork failed: " + errnoText(errno));
    if (middle == 0) {
        const pid_t trainer = ::fork();
        if (trainer == 0)
            execTrainer(devNull.get(), logFd.get(), reportWrite.get(), runDir.c_str(), argv);
        if (trainer < 0)
            writeMessage(reportWrite.get(), 'F', errno);
        else
            writeMessage(reportWrite.get(), 'P', trainer);
        ::_exit(0);
    }
    reportWrite.reset();
    while (::waitpid(middle, nullptr, 0) < 0 && errno == EINTR) {
    }

    // Read until EOF: the trainer's copy of the pipe closes at exec (success) or exit (failure).
    pid_t trainerPid = 0;
    int childErrno = 0;
    char failedTag = 0;
    LaunchMessage msg{};
    for (;;) {
        const ssize_t n = ::read(reportRead.get(), &msg, sizeof msg);
        if (n < 0 && errno == EINTR)
            continue;
        if (n != static_cast<ssize_t>(sizeof msg))
            break;
        if (msg.tag == 'P')
            trainerPid = msg.value;
        else {
            failedTag = msg.tag;
            childErrno = msg.value;
        }
    }
    if (failedTag != 0 || trainerPid <= 0)
        return makeError(ErrorCode::IoError,
                         std::string(failedTag == 'F' ? "fork" : "starting moe-train") +
                             " failed: " + errnoText(childErrno),
                         m_moeTrainPath);

    if (auto r = core::writeFileAtomically(runDir + "/pid", std::to_string(trainerPid) + "\n"); !r)
        return r.error();
    log->info("launched run {} as pid {} in {}", request.runId, trainerPid, runDir);
    return core::LaunchedRun{request.runId, name(), runDir, trainerPid};
}

Result<core::MetricsChunk> LocalTarget::readMetrics(const std::string& runDir, int64_t offset,
                                                    int64_t maxBytes)
{
    return readFile(runDir + "/metrics.jsonl", offset, maxBytes);
}

Result<core::MetricsChunk> LocalTarget::readFile(const std::string& path, int64_t offset, int64_t maxBytes)
{
    core::MetricsChunk chunk;
    chunk.offset = offset;
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) {
        if (errno == ENOENT)
            return chunk;  // not written yet
        return makeError(ErrorCode::IoError, "cannot open: " + errnoText(errno), path);
    }
    struct stat st{};
    if (::fstat(fd.get(), &st) != 0)
        return makeError(ErrorCode::IoError, "cannot stat: " + errnoText(errno), path);
    chunk.fileSize = st.st_size;
    if (offset > chunk.fileSize)
        return makeError(ErrorCode::Corrupt,
                         "the file is shorter (" + std::to_string(chunk.fileSize) +
                             " bytes) than what was already ingested (" + std::to_string(offset) +
                             "); the file was truncated or replaced",
                         path);
    const int64_t want = std::min(maxBytes, chunk.fileSize - offset);
    chunk.bytes.resize(static_cast<size_t>(want));
    int64_t got = 0;
    while (got < want) {
        const ssize_t n = ::pread(fd.get(), chunk.bytes.data() + got, static_cast<size_t>(want - got),
                                  offset + got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return makeError(ErrorCode::IoError, "cannot read: " + errnoText(errno), path);
        if (n == 0)
            break;
        got += n;
    }
    chunk.bytes.resize(static_cast<size_t>(got));
    return chunk;
}

Result<core::RunStatus> LocalTarget::status(const std::string& runDir)
{
    std::error_code ec;
    if (!std::filesystem::is_directory(runDir, ec))
        return makeError(ErrorCode::NotFound, "the run directory does not exist", runDir);

    // status.json is rewritten while we read it; a torn or empty one just means "no news".
    const auto text = readSmallFile(runDir + "/status.json");
    const core::StatusFileFields file = text ? core::parseStatusFile(*text) : core::StatusFileFields{};
    core::RunStatus status = core::statusOfFile(file);
    const pid_t pgid = readPidFile(runDir);
    const std::optional<bool> writerAlive =
        file.pid > 0 ? std::optional<bool>(processAlive(static_cast<pid_t>(file.pid))) : std::nullopt;
    status.state = core::runStateOf(file, pgid != 0, groupAlive(pgid), writerAlive);
    status.processAlive = status.state == core::RunState::Running;
    return status;
}

Result<void> LocalTarget::cancel(const std::string& runDir, std::chrono::milliseconds grace)
{
    auto log = wb::log::get("remote");
    const pid_t pgid = readPidFile(runDir);
    if (pgid == 0)
        return makeError(ErrorCode::NotFound,
                         "no readable pid file; the run never started, or its directory is gone",
                         runDir);
    if (!groupAlive(pgid))
        return {};

    // moe-train checkpoints on SIGTERM and exits 5; give it `grace` to do so.
    log->info("cancel: SIGTERM to process group {}", pgid);
    ::kill(-pgid, SIGTERM);
    if (waitGroupGone(pgid, grace))
        return {};

    log->warn("cancel: process group {} still alive after {} ms ({}); sending SIGKILL", pgid,
              grace.count(), describeMembers(liveGroupMembers(pgid)));
    ::kill(-pgid, SIGKILL);
    if (waitGroupGone(pgid, std::chrono::seconds(5)))
        return {};
    const auto survivors = liveGroupMembers(pgid);
    return makeError(ErrorCode::Failed,
                     "processes of the run survived SIGKILL: " + describeMembers(survivors) +
                         "; they may be stuck in the kernel (D state); check with `ps -o "
                         "pid,stat,cmd -g " +
                         std::to_string(pgid) + "`",
                     runDir);
}

}  // namespace wb::remote
