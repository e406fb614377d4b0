// A private OpenSSH sshd for one test executable (tests/remote/ssh_test_server.sh): 127.0.0.1 on
// a free port, generated host and user keys, a private ssh_config (alias "wbtest") and
// known_hosts in a temp dir. Main thread only.
#pragma once

#include "remote/ssh_session.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QtTest>

#include <dirent.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace wbtest {

inline std::string readAll(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    std::ostringstream out;
    out << in.rdbuf();
    return out.str();
}

// A port nobody listens on right now (bind to 0, read it back, close). Racy in theory; the
// server start fails loudly if someone takes it in between.
inline int freePort()
{
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    socklen_t len = sizeof addr;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
    ::close(fd);
    return ntohs(addr.sin_port);
}

// (ppid, comm) of a process from /proc/PID/stat; comm may hold spaces and ')'.
inline bool parentAndName(pid_t pid, pid_t& ppid, std::string& comm)
{
    const std::string stat = readAll("/proc/" + std::to_string(pid) + "/stat");
    const auto open = stat.find('(');
    const auto close = stat.rfind(')');
    if (open == std::string::npos || close == std::string::npos)
        return false;
    comm = stat.substr(open + 1, close - open - 1);
    std::istringstream rest(stat.substr(close + 1));
    char state;
    long parent;
    if (!(rest >> state >> parent))
        return false;
    ppid = static_cast<pid_t>(parent);
    return true;
}

// Live (non-zombie) processes on this machine whose command line names `runDir` as --run-dir.
inline std::vector<std::string> processesOfRun(const std::string& runDir)
{
    std::vector<std::string> found;
    DIR* proc = ::opendir("/proc");
    while (const dirent* entry = proc ? ::readdir(proc) : nullptr) {
        const long pid = std::atol(entry->d_name);
        if (pid <= 0)
            continue;
        std::string args = readAll("/proc/" + std::to_string(pid) + "/cmdline");
        std::replace(args.begin(), args.end(), '\0', ' ');
        const std::string stat = readAll("/proc/" + std::to_string(pid) + "/stat");
        const auto close = stat.rfind(')');
        const bool zombie = close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
        if (!zombie && args.find("--run-dir " + runDir) != std::string::npos)
            found.push_back(std::to_string(pid) + ": " + args);
    }
    if (proc)
        ::closedir(proc);
    return found;
}

// Server-side fault injection (tests/remote/fault_shell.sh as the sshd's ForceCommand): the
// first command that contains a rule's pattern really runs, then its answer is lost.
class FaultRules {
public:
    explicit FaultRules(std::string dir) : m_dir(std::move(dir)) { std::filesystem::create_directories(m_dir); }
    /// The sshd_config line that puts the rules in force (SshServer::start's extraConfig).
    std::string sshdConfig() const
    {
        return "ForceCommand " WB_SOURCE_DIR "/tests/remote/fault_shell.sh " + m_dir;
    }
    /// action: "delay SECONDS", "drop" or "slow SECONDS" (fault_shell.sh).
    void add(const std::string& name, const std::string& action, const std::string& pattern) const
    {
        std::ofstream(m_dir + "/" + name + ".rule") << action << "\n" << pattern << "\n";
    }
    /// fired.log: one "NAME rc=N" line per rule that fired.
    std::string fired() const { return readAll(m_dir + "/fired.log"); }

private:
    std::string m_dir;
};

class SshServer {
public:
    /// Starts sshd; returns an empty string or why it could not. `extraConfig`: lines appended
    /// to sshd_config (kept for restarts).
    std::string start(const std::string& hostKey = "host_key", const std::string& extraConfig = {})
    {
        if (!extraConfig.empty())
            m_extraConfig = extraConfig;
        if (!m_dir.isValid())
            return "no temp dir";
        if (m_port == 0)
            m_port = freePort();
        QProcess p;
        p.setProcessChannelMode(QProcess::MergedChannels);
        auto env = QProcessEnvironment::systemEnvironment();
        if (!m_extraConfig.empty())
            env.insert(QStringLiteral("WB_SSHD_EXTRA_CONFIG"), QString::fromStdString(m_extraConfig));
        if (!m_hiddenDirs.empty())
            env.insert(QStringLiteral("WB_SSHD_HIDE_DIRS"), QString::fromStdString(m_hiddenDirs));
        p.setProcessEnvironment(env);
        p.start(QStringLiteral(WB_SOURCE_DIR "/tests/remote/ssh_test_server.sh"),
                {QStringLiteral("start"), QString::fromStdString(dir()), QString::number(m_port),
                 QString::fromStdString(hostKey)});
        p.waitForFinished(30000);
        m_lastExitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        if (m_lastExitCode != 0)
            return "ssh_test_server.sh start failed (exit " + std::to_string(p.exitCode()) +
                   "): " + p.readAll().toStdString();
        m_pid = static_cast<pid_t>(std::atol(readAll(dir() + "/sshd.pid").c_str()));
        return {};
    }

    void stop()
    {
        QProcess::execute(QStringLiteral(WB_SOURCE_DIR "/tests/remote/ssh_test_server.sh"),
                          {QStringLiteral("stop"), QString::fromStdString(dir())});
        m_pid = 0;
    }

    /// Kills (SIGKILL) every sshd process serving a connection: the listener's descendants named
    /// sshd. The listener stays, so the client can reconnect. Returns how many were killed.
    int killSessions()
    {
        std::vector<pid_t> parents = {m_pid};
        std::vector<pid_t> victims;
        for (size_t round = 0; round < 3; ++round) {
            std::vector<pid_t> next;
            DIR* proc = ::opendir("/proc");
            while (const dirent* entry = proc ? ::readdir(proc) : nullptr) {
                const pid_t pid = static_cast<pid_t>(std::atol(entry->d_name));
                pid_t ppid = 0;
                std::string comm;
                if (pid <= 0 || !parentAndName(pid, ppid, comm) || comm != "sshd")
                    continue;
                for (pid_t parent : parents)
                    if (ppid == parent)
                        next.push_back(pid);
            }
            if (proc)
                ::closedir(proc);
            victims.insert(victims.end(), next.begin(), next.end());
            parents = next;
        }
        for (pid_t pid : victims)
            ::kill(pid, SIGKILL);
        return static_cast<int>(victims.size());
    }

    /// The spec for the "wbtest" alias of the private ssh_config.
    wb::remote::SshHostSpec spec(bool acceptNew = false) const
    {
        wb::remote::SshHostSpec spec;
        spec.host = "wbtest";
        spec.sshConfigFile = dir() + "/ssh_config";
        spec.knownHostsFile = dir() + "/known_hosts";
        spec.acceptNewHostKey = acceptNew;
        spec.connectTimeout = std::chrono::seconds(10);
        return spec;
    }

    /// "SHA256:..." of a host key file, as ssh-keygen prints it.
    std::string fingerprint(const std::string& hostKey = "host_key") const
    {
        QProcess p;
        p.start(QStringLiteral("ssh-keygen"),
                {QStringLiteral("-l"), QStringLiteral("-E"), QStringLiteral("sha256"), QStringLiteral("-f"),
                 QString::fromStdString(dir() + "/" + hostKey + ".pub")});
        p.waitForFinished(10000);
        const auto words = QString::fromUtf8(p.readAllStandardOutput()).split(QLatin1Char(' '));
        return words.size() > 1 ? words[1].toStdString() : std::string();
    }

    /// Folders (space-separated, no spaces inside) the server's sessions must not see
    /// (WB_SSHD_HIDE_DIRS of ssh_test_server.sh); used by the next start().
    void setHiddenDirs(const std::string& dirs) { m_hiddenDirs = dirs; }
    /// The script's exit code of the last start(): 77 = not possible here (a skip, not a failure).
    int lastStartExitCode() const { return m_lastExitCode; }

    std::string dir() const { return m_dir.path().toStdString(); }
    int port() const { return m_port; }
    pid_t pid() const { return m_pid; }

private:
    QTemporaryDir m_dir;
    std::string m_extraConfig;
    std::string m_hiddenDirs;
    int m_lastExitCode = 0;
    int m_port = 0;
    pid_t m_pid = 0;
};

}  // namespace wbtest
