// A minimal check helper for the runtime tests (no Qt or gtest on GPU nodes): WB_CHECK records a
// failure with file:line and keeps going; a test's main returns checkExitCode(). Also small
// process helpers (run a child, wait with a timeout). Single-threaded tests only.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <arpa/inet.h>
#include <fcntl.h>
#include <functional>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace wb::test {

inline int& failureCount()
{
    static int failures = 0;
    return failures;
}

inline void recordFailure(const char* file, int line, const std::string& what)
{
    ++failureCount();
    std::cerr << file << ":" << line << ": FAILED: " << what << std::endl;
}

inline int checkExitCode(const char* testName)
{
    if (failureCount() == 0)
        std::cout << testName << ": all checks passed" << std::endl;
    else
        std::cerr << testName << ": " << failureCount() << " check(s) failed" << std::endl;
    return failureCount() == 0 ? 0 : 1;
}

/// A fresh empty folder under the system temp dir.
inline std::filesystem::path makeTempDir(const std::string& prefix)
{
    std::string pattern = (std::filesystem::temp_directory_path() / (prefix + "-XXXXXX")).string();
    if (!::mkdtemp(pattern.data()))
        throw std::runtime_error("mkdtemp failed");
    return pattern;
}

inline std::string readFile(const std::filesystem::path& path)
{
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

/// Starts `args` with stdout+stderr to `logPath`; returns the child's pid.
inline pid_t spawnProcess(const std::vector<std::string>& args, const std::string& logPath)
{
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int fd = ::open(logPath.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            ::dup2(fd, 1);
            ::dup2(fd, 2);
            ::close(fd);
        }
        std::vector<char*> argv;
        for (const auto& a : args)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    return pid;
}

/// Waits for the child; its exit code, 128+signal if killed, −1 on timeout (the child is killed).
inline int waitProcess(pid_t pid, double timeoutSeconds)
{
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeoutSeconds);
    int status = 0;
    while (true) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            return -1;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

inline int runProcess(const std::vector<std::string>& args, const std::string& logPath, double timeoutSeconds)
{
    return waitProcess(spawnProcess(args, logPath), timeoutSeconds);
}

/// A TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick), for a test's
/// rendezvous (MASTER_PORT).
inline int freeLoopbackPort()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

/// Forks `ranks` children running rank(k) (its return value is the child's exit code) and
/// records a failure for each child that does not exit 0 within `timeoutSeconds`.
inline void runForkedRanks(int ranks, const std::function<int(int rank)>& rank, double timeoutSeconds = 60)
{
    std::vector<pid_t> pids;
    for (int k = 0; k < ranks; ++k) {
        const pid_t pid = ::fork();
        if (pid == 0)
            ::_exit(rank(k));
        pids.push_back(pid);
    }
    for (int k = 0; k < ranks; ++k) {
        const int rc = waitProcess(pids[static_cast<size_t>(k)], timeoutSeconds);
        if (rc != 0)
            recordFailure(__FILE__, __LINE__, "rank " + std::to_string(k) + " exited " + std::to_string(rc));
    }
}

}  // namespace wb::test

#define WB_CHECK(cond)                                                            \
    do {                                                                          \
        if (!(cond))                                                              \
            ::wb::test::recordFailure(__FILE__, __LINE__, #cond);                 \
    } while (0)

#define WB_CHECK_MSG(cond, msg)                                                   \
    do {                                                                          \
        if (!(cond)) {                                                            \
            std::ostringstream wbCheckStream;                                     \
            wbCheckStream << #cond << " — " << msg;                               \
            ::wb::test::recordFailure(__FILE__, __LINE__, wbCheckStream.str());   \
        }                                                                         \
    } while (0)

#define WB_CHECK_CLOSE(a, b, tol)                                                 \
    do {                                                                          \
        const double wbA = (a), wbB = (b);                                        \
        if (!(std::fabs(wbA - wbB) <= (tol)))                                     \
            ::wb::test::recordFailure(__FILE__, __LINE__,                         \
                std::string(#a " ≈ " #b ": ") + std::to_string(wbA) + " vs " + std::to_string(wbB)); \
    } while (0)
