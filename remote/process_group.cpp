// /proc-based process-group inspection (Linux). kill(-pgid, 0) alone is not enough to tell a
// group is gone: it succeeds while a zombie member waits to be reaped (e.g. under a container
// init that never reaps), so liveness looks at each member's state.
#include "remote/process_group.h"

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>
#include <thread>

namespace wb::remote {

namespace {

struct DirCloser {
    void operator()(DIR* dir) const { closedir(dir); }
};

// Parses /proc/PID/stat: "pid (comm) state ppid pgrp ...". comm may contain spaces and ')',
// so split at the LAST ')'.
bool readStat(pid_t pid, GroupMember& member, pid_t& pgrp)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(in, line))
        return false;
    const auto open = line.find('(');
    const auto close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open)
        return false;
    member.pid = pid;
    member.comm = line.substr(open + 1, close - open - 1);
    std::istringstream rest(line.substr(close + 1));
    long ppid = 0;
    long group = 0;
    if (!(rest >> member.state >> ppid >> group))
        return false;
    pgrp = static_cast<pid_t>(group);
    return true;
}

}  // namespace

std::vector<GroupMember> groupMembers(pid_t pgid)
{
    std::vector<GroupMember> members;
    if (pgid <= 0)
        return members;
    std::unique_ptr<DIR, DirCloser> proc(opendir("/proc"));
    if (!proc)
        return members;
    while (const dirent* entry = readdir(proc.get())) {
        char* end = nullptr;
        const long pid = std::strtol(entry->d_name, &end, 10);
        if (pid <= 0 || *end != '\0')
            continue;
        GroupMember member;
        pid_t pgrp = 0;
        // A process may exit between readdir and open: skipping it is right.
        if (readStat(static_cast<pid_t>(pid), member, pgrp) && pgrp == pgid)
            members.push_back(std::move(member));
    }
    return members;
}

std::vector<GroupMember> liveGroupMembers(pid_t pgid)
{
    std::vector<GroupMember> live;
    for (auto& member : groupMembers(pgid))
        if (member.state != 'Z' && member.state != 'X')
            live.push_back(std::move(member));
    return live;
}

bool groupAlive(pid_t pgid)
{
    if (pgid <= 0)
        return false;
    // Our own child (a test, or a launcher that did not double-fork): reap it so it stops
    // counting. ECHILD for anyone else's process; harmless.
    while (waitpid(pgid, nullptr, WNOHANG) > 0) {
    }
    if (kill(-pgid, 0) != 0 && errno == ESRCH)
        return false;
    return !liveGroupMembers(pgid).empty();
}

bool processAlive(pid_t pid)
{
    if (pid <= 1)
        return false;
    GroupMember member;
    pid_t pgrp = 0;
    return readStat(pid, member, pgrp) && member.state != 'Z' && member.state != 'X';
}

bool waitGroupGone(pid_t pgid, std::chrono::milliseconds timeout)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (groupAlive(pgid)) {
        if (std::chrono::steady_clock::now() >= deadline)
            return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

std::string describeMembers(const std::vector<GroupMember>& members)
{
    std::string out;
    for (const auto& member : members) {
        if (!out.empty())
            out += ", ";
        out += std::to_string(member.pid) + " (" + member.comm + ")";
    }
    return out;
}

}  // namespace wb::remote
