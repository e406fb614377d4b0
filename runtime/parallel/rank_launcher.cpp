// Local rank launcher (see rank_launcher.h).
//
// The parent blocks SIGTERM/SIGINT and collects them with sigtimedwait between waitpid polls, so
// it needs no signal handler and no global state; children unblock them before exec. Children
// stay in the parent's process group, so ending the group (as the workbench cancels a run) ends
// every rank.
#include "runtime/parallel/rank_launcher.h"

#include "core/metrics_schema.h"
#include "runtime/train/status_file.h"

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

namespace wb::rt {

namespace {

// A free TCP port on loopback for the TCPStore (bind to 0, read it back, close). Another process
// could take it before rank 0 binds; rendezvous then fails with exit 4 rather than hanging.
int freeLoopbackPort()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return 29500;
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    int port = 29500;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
        port = ntohs(addr.sin_port);
    ::close(fd);
    return port;
}

// In the child: redirect output, set the environment, exec. Never returns.
[[noreturn]] void execRank(const LaunchOptions& o, int localRank, const std::string& addr, int port,
                           const sigset_t& oldMask)
{
    const int rank = o.nodeRank * o.numRanks + localRank;
    const std::string log = o.runDir + "/rank" + std::to_string(rank) + ".log";
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
        ::dup2(fd, STDOUT_FILENO);
        ::dup2(fd, STDERR_FILENO);
    }
    const auto set = [](const char* name, const std::string& value) { ::setenv(name, value.c_str(), 1); };
    set("RANK", std::to_string(rank));
    set("LOCAL_RANK", std::to_string(localRank));
    set("WORLD_SIZE", std::to_string(o.numNodes * o.numRanks));
    set("LOCAL_WORLD_SIZE", std::to_string(o.numRanks));
    set("GROUP_RANK", std::to_string(o.nodeRank));
    set("MASTER_ADDR", addr);
    set("MASTER_PORT", std::to_string(port));
    set("WB_COMM_TIMEOUT_S", std::to_string(static_cast<double>(o.commTimeout.count()) / 1000.0));
    ::sigprocmask(SIG_SETMASK, &oldMask, nullptr);
    std::vector<char*> argv;
    std::string arg0 = o.executable;
    argv.push_back(arg0.data());
    std::vector<std::string> args = o.args;
    for (auto& a : args)
        argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(o.executable.c_str(), argv.data());
    std::fprintf(stderr, "moe-train: rank %d: cannot start %s: %s\n", rank, o.executable.c_str(), std::strerror(errno));
    ::_exit(127);
}

struct RankState {
    pid_t pid = -1;
    bool running = false;
};

std::string describe(int status)
{
    if (WIFEXITED(status))
        return "exited with code " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status))
        return "was killed by signal " + std::to_string(WTERMSIG(status));
    return "ended (status " + std::to_string(status) + ")";
}

void signalAll(const std::vector<RankState>& ranks, int sig)
{
    for (const auto& r : ranks)
        if (r.running) {
            ::kill(r.pid, sig);
            // A stopped rank (SIGSTOP, a debugger's stop, Ctrl-Z) keeps a SIGTERM pending until it
            // runs again: continue it, so that it stops now instead of at the SIGKILL 10 s later.
            if (sig == SIGTERM)
                ::kill(r.pid, SIGCONT);
        }
}

}  // namespace

int launchLocalRanks(const LaunchOptions& o)
{
    using Clock = std::chrono::steady_clock;
    std::error_code ec;
    std::filesystem::create_directories(o.runDir, ec);
    const bool multiNode = o.numNodes > 1;
    const std::string addr = multiNode ? o.masterAddr : "127.0.0.1";
    const int port = multiNode ? o.masterPort : freeLoopbackPort();
    const int base = o.nodeRank * o.numRanks;  // global rank of local rank 0

    sigset_t stopSignals, oldMask;
    sigemptyset(&stopSignals);
    sigaddset(&stopSignals, SIGTERM);
    sigaddset(&stopSignals, SIGINT);
    ::sigprocmask(SIG_BLOCK, &stopSignals, &oldMask);

    std::vector<RankState> ranks(static_cast<size_t>(o.numRanks));
    std::cout << "moe-train: starting " << o.numRanks << " local ranks";
    if (multiNode)
        std::cout << " on node " << o.nodeRank << " of " << o.numNodes << " (ranks " << base << ".."
                  << base + o.numRanks - 1 << " of " << o.numNodes * o.numRanks << ")";
    std::cout << " (master " << addr << ":" << port << ", logs " << o.runDir << "/rank<k>.log)" << std::endl;
    for (int k = 0; k < o.numRanks; ++k) {
        const pid_t pid = ::fork();
        if (pid == 0)
            execRank(o, k, addr, port, oldMask);
        if (pid < 0) {
            std::cerr << "moe-train: fork failed for rank " << k << ": " << std::strerror(errno) << std::endl;
            signalAll(ranks, SIGTERM);
            break;
        }
        ranks[static_cast<size_t>(k)] = {pid, true};
        std::cout << "moe-train: rank " << k << " pid " << pid << std::endl;
    }

    // Failures in the order the ranks ended. The cause is the first one that is neither a
    // comm_error (4: a symptom of another rank's failure) nor a rank this parent had to end;
    // if there is none, the first failure.
    struct Failure {
        int rank;
        int status;
        bool endedByLauncher;
    };
    std::vector<Failure> failures;
    bool terminating = false;
    int rank0Status = -1;
    constexpr Clock::time_point kNever = Clock::time_point::max();
    Clock::time_point terminateAt = kNever, killAt = kNever;
    int running = 0;
    for (const auto& r : ranks)
        running += r.running ? 1 : 0;
    while (running > 0) {
        int status = 0;
        const pid_t pid = ::waitpid(-1, &status, WNOHANG);
        if (pid > 0) {
            for (size_t k = 0; k < ranks.size(); ++k) {
                if (ranks[k].pid != pid || !ranks[k].running)
                    continue;
                ranks[k].running = false;
                --running;
                const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
                std::cout << "moe-train: rank " << base + static_cast<int>(k) << " " << describe(status) << std::endl;
                if (k == 0 && base == 0)
                    rank0Status = status;
                if (!ok) {
                    if (failures.empty())
                        terminateAt = Clock::now() + o.commTimeout + std::chrono::seconds(10);
                    failures.push_back({static_cast<int>(k), status, terminating});
                }
            }
            continue;
        }
        const auto now = Clock::now();
        if (now >= terminateAt) {
            std::cerr << "moe-train: ranks still running after rank " << base + failures.front().rank
                      << " failed and the comm timeout passed; terminating them" << std::endl;
            terminating = true;
            signalAll(ranks, SIGTERM);
            terminateAt = kNever;
            killAt = now + std::chrono::seconds(10);
        }
        if (now >= killAt) {
            signalAll(ranks, SIGKILL);
            killAt = kNever;
        }
        const timespec wait{0, 50 * 1000 * 1000};
        const int sig = ::sigtimedwait(&stopSignals, nullptr, &wait);
        if (sig > 0)
            signalAll(ranks, sig);  // ranks agree on the stop at the next step and checkpoint
    }
    ::sigprocmask(SIG_SETMASK, &oldMask, nullptr);

    if (failures.empty()) {
        if (base > 0)  // global rank 0 (another node) reports the run; this node says it is done
            StatusFile(o.runDir).write(core::statusForExitCode(0), 0,
                                       "node " + std::to_string(o.nodeRank) + ": ranks " + std::to_string(base) + ".." +
                                           std::to_string(base + o.numRanks - 1) + " finished",
                                       0);
        return 0;
    }
    Failure cause = failures.front();
    for (const Failure& f : failures)
        if (!f.endedByLauncher && !(WIFEXITED(f.status) && WEXITSTATUS(f.status) == 4)) {
            cause = f;
            break;
        }
    const int exitCode = WIFEXITED(cause.status) ? WEXITSTATUS(cause.status) : 1;
    // Rank 0 writes status.json itself; rewrite it only when that hides the cause: rank 0 was
    // killed, or it reports another code (its comm_error) than the rank that failed first.
    const bool rank0Reported = rank0Status >= 0 && WIFEXITED(rank0Status);
    if (!rank0Reported || WEXITSTATUS(rank0Status) != exitCode) {
        int64_t step = 0;  // the last step rank 0 reported
        try {
            std::ifstream in(o.runDir + "/status.json");
            step = nlohmann::json::parse(in).value("step", int64_t{0});
        } catch (const std::exception&) {
        }
        StatusFile status(o.runDir);
        status.write(core::statusForExitCode(exitCode), exitCode,
                     "rank " + std::to_string(base + cause.rank) + " " + describe(cause.status) + " (see rank" +
                         std::to_string(base + cause.rank) + ".log); the other ranks then stopped",
                     step);
    }
    return exitCode;
}

}  // namespace wb::rt
